/*
Copyright The batch-apiserver Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package upgrade

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

const (
	rollNamespace = "upgrade-roll"
	// rollWriters is how many clients write through the APIService
	// without pause during the whole roll.
	rollWriters = 3
	// jobNameLabel is the label the controller puts on a Job's Pods.
	jobNameLabel = "batch.jobs.dev/job-name"
	// Lines of the Job controller's log that bound a term in which it
	// acts (creates Pods, writes status).
	controllerStartedLog = `"Starting the Job controller"`
	controllerStoppedLog = `"Stopped the Job controller"`
)

// inFlight are the Jobs whose Pods are held running during the roll.
var inFlight = []struct {
	name                     string
	indexed                  bool
	completions, parallelism int32
}{
	{name: "inflight-plain", completions: 2, parallelism: 2},
	{name: "inflight-indexed", indexed: true, completions: 3, parallelism: 3},
}

// replica is one batch-apiserver behind the APIServices.
type replica struct {
	*framework.BatchReplica
	name, version string
}

func (r *replica) hostPort() string {
	u, err := url.Parse(r.URL)
	if err != nil {
		panic(err)
	}
	return u.Host
}

// TestRollingUpgradeAndRollback runs two replicas of the previous version
// behind the APIServices on a three-member etcd, with clients writing Jobs
// and status through kube-apiserver without pause and Jobs whose Pods are
// held running; it replaces the replicas one at a time by this version (a
// new replica ready and in the Service before an old one leaves it, as a
// Deployment with maxUnavailable 0 does), then rolls back the same way.
// After each replacement every acknowledged write is there; after each
// direction the in-flight Jobs have the same Pods; the Job controller acts
// from one replica at a time; and once released the Jobs complete with no
// Pod created twice.
func TestRollingUpgradeAndRollback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	// The directory (logs, certificates) is kept when the test fails.
	root, err := os.MkdirTemp("", "batch-apiserver-rolling-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kept %s", root)
			return
		}
		_ = os.RemoveAll(root)
	})
	logDir := filepath.Join(root, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		t.Fatal(err)
	}

	etcd, err := framework.StartEtcdCluster(ctx, filepath.Join(root, "etcd"), logDir, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Stop)
	oldBins := *bins
	oldBins.BatchAPIServer = vers.Old
	c, err := framework.StartClusterWith(ctx, &oldBins, filepath.Join(root, "cluster"), framework.ClusterOptions{
		EtcdEndpoints:       etcd.Endpoints,
		NoBatchAPIServer:    true,
		NoControllerManager: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Stop)
	t.Cleanup(func() {
		if t.Failed() {
			var b strings.Builder
			c.DumpLogs(&b, 40)
			t.Log(b.String())
		}
	})
	if err := c.PrepareBatchReplicas(); err != nil {
		t.Fatal(err)
	}
	proxy, err := framework.StartServiceProxy(fmt.Sprintf("127.0.0.1:%d", c.BatchPort))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(proxy.Close)

	replicaArgs := []string{"--etcd-servers=" + strings.Join(etcd.Endpoints, ",")}
	var started []*replica
	startReplica := func(bin, version, name string) *replica {
		t.Helper()
		args := append([]string(nil), replicaArgs...)
		if !closesConnectionsAtOnce(version) {
			args = append(args, gracefulStopArgs...)
		}
		r, err := c.StartBatchReplicaOf(ctx, bin, name, args...)
		if err != nil {
			t.Fatalf("starting replica %s (%s): %v", name, version, err)
		}
		rep := &replica{BatchReplica: r, name: name, version: version}
		started = append(started, rep)
		return rep
	}
	current := []*replica{startReplica(vers.Old, vers.OldName, "old-a"), startReplica(vers.Old, vers.OldName, "old-b")}
	setEndpoints := func() {
		var eps []string
		for _, r := range current {
			eps = append(eps, r.hostPort())
		}
		proxy.SetEndpoints(eps...)
	}
	setEndpoints()
	if err := c.RegisterAPIServices(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := c.AdminClient.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: rollNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// No kube-controller-manager runs here (nothing of it is under test),
	// so its ServiceAccount controller does not make the namespace's
	// default ServiceAccount, which admission wants for every Pod.
	if _, err := c.AdminClient.CoreV1().ServiceAccounts(rollNamespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Every client goes through kube-apiserver and the APIServices.
	client, err := framework.WriteLoadClient(c.Admin)
	if err != nil {
		t.Fatal(err)
	}

	pods := watchPods(ctx, t, c, rollNamespace)
	held := startInFlight(ctx, t, c, client, pods)

	acked := framework.NewAckedWrites()
	loadCtx, stopLoad := context.WithCancel(ctx)
	load := framework.RunWriteLoad(loadCtx, client, rollNamespace, "load", rollWriters, acked)
	defer func() { stopLoad(); load.Wait() }()
	// The load must be under way before the first replica goes.
	waitFor(ctx, t, "the load's first acknowledged writes", func() bool { cr, up := acked.Counts(); return cr > 0 && up > 0 })

	type direction struct {
		// version is the one rolled to, stopping the one the replicas run.
		name, bin, version, stopping string
		writesBefore                 int
		handovers                    []time.Duration
		refused                      map[string]int
		examples                     map[string]string
	}
	directions := []*direction{
		{name: "upgrade", bin: vers.New, version: vers.NewName, stopping: vers.OldName},
		{name: "rollback", bin: vers.Old, version: vers.OldName, stopping: vers.NewName},
	}
	for _, d := range directions {
		cr, up := acked.Counts()
		d.writesBefore = cr + up
		failedBefore, _ := acked.Failures()
		for i := range current {
			out := current[i]
			in := startReplica(d.bin, d.version, fmt.Sprintf("%s-%d", d.name, i))
			// The new replica is ready; it joins the Service, then the
			// old one leaves it and is stopped, as a terminating Pod is
			// taken out of the endpoints.
			current[i] = in
			setEndpoints()
			wasLeading := leads(t, out)
			stopped := time.Now()
			t.Logf("%s: %s in the Service, %s out and stopped at %s", d.name, in.name, out.name, stopped.Format("15:04:05.000"))
			c.StopProcess(out.Process)
			if wasLeading {
				d.handovers = append(d.handovers, waitNewLeader(ctx, t, current, stopped))
			}
			verifyWrites(ctx, t, acked, client, fmt.Sprintf("%s, replica %d of %d replaced by %s", d.name, i+1, len(current), in.name))
		}
		failedAfter, examples := acked.Failures()
		d.refused, d.examples = map[string]int{}, examples
		for code, n := range failedAfter {
			if n > failedBefore[code] {
				d.refused[code] = n - failedBefore[code]
			}
		}
		if diff := cmp.Diff(held, pods.snapshot()); diff != "" {
			t.Errorf("%s: the in-flight Jobs' Pods changed (-before +after):\n%s", d.name, diff)
		}
	}
	stopLoad()
	load.Wait()
	verifyWrites(ctx, t, acked, client, "after the load")

	if overlaps := actingOverlaps(t, started); len(overlaps) > 0 {
		t.Errorf("two replicas ran the Job controller at once:\n%s", strings.Join(overlaps, "\n"))
	}
	refused := 0
	for _, d := range directions {
		for code, n := range d.refused {
			refused += n
			if code == "401" && readyBeforeFrontProxyCA(d.version) {
				continue
			}
			if code == "503" && closesConnectionsAtOnce(d.stopping) {
				t.Logf("%s to %s: %d requests met a stopping %s replica (503): %q", d.name, d.version, n, d.stopping, d.examples[code])
				continue
			}
			t.Errorf("%s to %s: %d requests failed at the APIService with %s; first: %q", d.name, d.version, n, code, d.examples[code])
		}
	}

	releaseInFlight(ctx, t, c, client, pods)
	if diff := cmp.Diff(held.created(), pods.snapshot().created()); diff != "" {
		t.Errorf("Pods created for the in-flight Jobs other than those held before the roll (-held +all):\n%s", diff)
	}

	cr, up := acked.Counts()
	for _, d := range directions {
		t.Logf("%s to %s: writes acknowledged before it began %d; requests refused at the APIService %v; handover of the Job controller after the leader stopped: %v", d.name, d.version, d.writesBefore, d.refused, d.handovers)
	}
	t.Logf("rolling: 3 etcd members, 2 replicas %s -> %s -> %s, %d writers through the APIService: %d creates and %d status writes acknowledged, all found; %d in-flight Pods kept their UIDs; requests refused at the APIService: %d; connections the Service could not place: %d",
		vers.OldName, vers.NewName, vers.OldName, rollWriters, cr, up, len(held.Pods), refused, proxy.DialFailures())
}

// readyBeforeFrontProxyCA tells the releases whose /readyz passed before
// delegated authentication had loaded the front-proxy CA, so that for a
// moment after joining the Service a replica answered forwarded requests
// with 401 (fixed in v0.2.0: certs.RequestHeaderReady). A roll to one of
// them may see those 401s and nothing else.
func readyBeforeFrontProxyCA(version string) bool { return version == "v0.1.0" }

// gracefulStopArgs are the Deployment's flags for leaving a Service
// (artifacts/deploy/deployment.yaml), with a shorter delay: here the replica
// leaves the endpoints before it gets SIGTERM, so the delay only has to let
// each connection to it carry one more answer, with Connection: close.
var gracefulStopArgs = []string{"--shutdown-delay-duration=2s", "--disable-http2-serving"}

// closesConnectionsAtOnce tells the releases that, on SIGTERM, stopped
// listening and closed their connections at once: a write the aggregator
// sent on one of them as it closed was answered 503 and not retried by the
// client. From v0.2.0 a stopping replica serves on through
// --shutdown-delay-duration with Connection: close on every answer, then
// answers 429 with Retry-After until those in flight are done
// (--shutdown-send-retry-after). Stopping one of the older ones may show
// those 503s; they also lack the flags of gracefulStopArgs.
func closesConnectionsAtOnce(version string) bool { return version == "v0.1.0" }

// verifyWrites checks that every write acknowledged so far is stored. The
// list that reads them back is retried, as any client's read would be,
// while the replica that answers it refuses it.
func verifyWrites(ctx context.Context, t *testing.T, acked *framework.AckedWrites, client versioned.Interface, when string) {
	t.Helper()
	var found int
	var lost []string
	var readErrs []string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		var err error
		found, lost, err = acked.Verify(ctx, client, rollNamespace, "load-")
		if err != nil {
			readErrs = append(readErrs, err.Error())
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		t.Fatalf("%s: reading the load's Jobs back: %v (errors: %q)", when, err, readErrs)
	}
	if len(readErrs) > 0 {
		t.Logf("%s: the read back was refused %d times first: %q", when, len(readErrs), readErrs)
	}
	if len(lost) > 0 {
		t.Errorf("%s: %d acknowledged writes lost or wrong: %v", when, len(lost), lost)
	}
	t.Logf("%s: %d Jobs of the load found with every acknowledged write", when, found)
}

// podRecord is what the test saw of the in-flight Jobs' Pods: every Pod
// ever added, by UID, with its Job, and which were deleted.
type podRecord struct {
	Pods    map[string]string
	Deleted map[string]bool
}

func (p podRecord) created() map[string]string { return p.Pods }

// podWatch records the Pods of a namespace from an informer.
type podWatch struct {
	mu  sync.Mutex
	rec podRecord
	// list is the informer's cache.
	list func() []*corev1.Pod
}

func (w *podWatch) snapshot() podRecord {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := podRecord{Pods: map[string]string{}, Deleted: map[string]bool{}}
	for k, v := range w.rec.Pods {
		out.Pods[k] = v
	}
	for k, v := range w.rec.Deleted {
		out.Deleted[k] = v
	}
	return out
}

func watchPods(ctx context.Context, t *testing.T, c *framework.Cluster, ns string) *podWatch {
	t.Helper()
	w := &podWatch{rec: podRecord{Pods: map[string]string{}, Deleted: map[string]bool{}}}
	factory := informers.NewSharedInformerFactoryWithOptions(c.AdminClient, 0, informers.WithNamespace(ns))
	inf := factory.Core().V1().Pods()
	_, err := inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			p := obj.(*corev1.Pod)
			w.mu.Lock()
			defer w.mu.Unlock()
			w.rec.Pods[string(p.UID)] = p.Labels[jobNameLabel]
		},
		DeleteFunc: func(obj any) {
			p, ok := obj.(*corev1.Pod)
			if !ok {
				tomb, ok := obj.(cache.DeletedFinalStateUnknown)
				if !ok {
					return
				}
				if p, ok = tomb.Obj.(*corev1.Pod); !ok {
					return
				}
			}
			w.mu.Lock()
			defer w.mu.Unlock()
			w.rec.Deleted[string(p.UID)] = true
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	t.Cleanup(factory.Shutdown)
	factory.WaitForCacheSync(ctx.Done())
	w.list = func() []*corev1.Pod {
		ps, _ := inf.Lister().Pods(ns).List(everything)
		return ps
	}
	return w
}

// startInFlight creates the in-flight Jobs, plays the kubelet to hold
// their Pods running and ready, waits until the controller counts them
// ready, and returns the Pods it holds.
func startInFlight(ctx context.Context, t *testing.T, c *framework.Cluster, client versioned.Interface, pods *podWatch) podRecord {
	t.Helper()
	for _, j := range inFlight {
		job := makeJob(j.name).Obj()
		job.Spec.Completions, job.Spec.Parallelism = ptr.To(j.completions), ptr.To(j.parallelism)
		if j.indexed {
			job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		}
		if _, err := client.BatchV1().Jobs(rollNamespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating in-flight Job %s: %v", j.name, err)
		}
	}
	kubelet := framework.Kubelet{Client: c.AdminClient}
	want := 0
	for _, j := range inFlight {
		want += int(j.parallelism)
	}
	waitFor(ctx, t, "the in-flight Jobs' Pods", func() bool { return len(pods.list()) == want })
	for _, p := range pods.list() {
		if err := kubelet.Run(ctx, p, true); err != nil {
			t.Fatalf("running Pod %s: %v", p.Name, err)
		}
	}
	for _, j := range inFlight {
		waitFor(ctx, t, fmt.Sprintf("Job %s to count %d ready Pods", j.name, j.parallelism), func() bool {
			job, err := client.BatchV1().Jobs(rollNamespace).Get(ctx, j.name, metav1.GetOptions{})
			return err == nil && ptr.Deref(job.Status.Ready, 0) == j.parallelism && job.Status.Active == j.parallelism
		})
	}
	return pods.snapshot()
}

// releaseInFlight ends every held Pod Succeeded and waits for the Jobs to
// be Complete with their completions counted once and every Pod's
// tracking finalizer released.
func releaseInFlight(ctx context.Context, t *testing.T, c *framework.Cluster, client versioned.Interface, pods *podWatch) {
	t.Helper()
	kubelet := framework.Kubelet{Client: c.AdminClient}
	for _, p := range pods.list() {
		if err := kubelet.Succeed(ctx, p); err != nil {
			t.Fatalf("ending Pod %s: %v", p.Name, err)
		}
	}
	for _, j := range inFlight {
		waitFor(ctx, t, "Job "+j.name+" to complete", func() bool {
			job, err := client.BatchV1().Jobs(rollNamespace).Get(ctx, j.name, metav1.GetOptions{})
			return err == nil && isComplete(job)
		})
		job, err := client.BatchV1().Jobs(rollNamespace).Get(ctx, j.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if job.Status.Succeeded != j.completions || job.Status.Failed != 0 {
			t.Errorf("Job %s: succeeded %d failed %d, want %d and 0", j.name, job.Status.Succeeded, job.Status.Failed, j.completions)
		}
	}
	waitFor(ctx, t, "the tracking finalizers to be released", func() bool {
		for _, p := range pods.list() {
			if len(p.Finalizers) > 0 {
				return false
			}
		}
		return true
	})
}

func isComplete(job *batchv1.Job) bool {
	for _, cond := range job.Status.Conditions {
		if cond.Type == batchv1.JobComplete && cond.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// leads reports whether r's Job controller is running: its log has a
// start of the controller after its last stop.
func leads(t *testing.T, r *replica) bool {
	terms := actingTerms(t, r)
	return len(terms) > 0 && terms[len(terms)-1].end.IsZero()
}

// waitNewLeader waits until one of the current replicas runs the Job
// controller and returns how long after stopped it started.
func waitNewLeader(ctx context.Context, t *testing.T, current []*replica, stopped time.Time) time.Duration {
	t.Helper()
	var took time.Duration
	waitFor(ctx, t, "a replica to take the Job controller over", func() bool {
		for _, r := range current {
			if terms := actingTerms(t, r); len(terms) > 0 && terms[len(terms)-1].end.IsZero() {
				took = terms[len(terms)-1].start.Sub(stopped)
				return true
			}
		}
		return false
	})
	return took.Round(time.Millisecond)
}

// term is a span in which one replica's Job controller acted.
type term struct {
	replica    string
	start, end time.Time
}

// actingTerms reads the terms of r's Job controller from its log.
func actingTerms(t *testing.T, r *replica) []term {
	t.Helper()
	var terms []term
	for _, line := range readLines(t, r.Process.LogFile) {
		switch {
		case strings.Contains(line, controllerStartedLog):
			terms = append(terms, term{replica: r.name, start: klogTime(t, line)})
		case strings.Contains(line, controllerStoppedLog) && len(terms) > 0 && terms[len(terms)-1].end.IsZero():
			terms[len(terms)-1].end = klogTime(t, line)
		}
	}
	return terms
}

// actingOverlaps returns the pairs of terms, across every replica that
// ran, in which two Job controllers acted at the same time.
func actingOverlaps(t *testing.T, replicas []*replica) []string {
	var all []term
	for _, r := range replicas {
		all = append(all, actingTerms(t, r)...)
	}
	sort.Slice(all, func(i, j int) bool { return all[i].start.Before(all[j].start) })
	var out []string
	for i := 1; i < len(all); i++ {
		prev, next := all[i-1], all[i]
		if prev.end.IsZero() || next.start.Before(prev.end) {
			out = append(out, fmt.Sprintf("%s acted %s-%s, %s from %s", prev.replica, prev.start.Format("15:04:05.000000"), prev.end.Format("15:04:05.000000"), next.replica, next.start.Format("15:04:05.000000")))
		}
	}
	t.Logf("Job controller terms: %d, across %d replicas", len(all), len(replicas))
	return out
}

// waitFor polls cond until it holds, failing the test at ctx's end.
func waitFor(ctx context.Context, t *testing.T, what string, cond func() bool) {
	t.Helper()
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(context.Context) (bool, error) { return cond(), nil })
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, err)
	}
}
