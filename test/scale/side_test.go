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

package scale

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// The two sides of every comparison.
const (
	sideKCM  = "kcm"
	sideOurs = "ours"
)

// Finalizers each controller puts on the Pods it tracks.
const (
	kcmFinalizer  = "batch.kubernetes.io/job-tracking"
	oursFinalizer = "batch.jobs.dev/job-tracking"
)

// schedulerQPS and schedulerBurst are kube-scheduler's client rate on both
// sides: high enough that binding Pods is not what limits either
// controller (its default of 50 would cap both near 3 000 Pods a minute).
const (
	schedulerQPS   = 500
	schedulerBurst = 1000
)

// clientRate is the client rate of the Job controller of a side; zero
// means the side's default.
type clientRate struct {
	name  string
	qps   int
	burst int
}

var (
	rateDefaults = clientRate{name: "defaults"}
	rateRaised   = clientRate{name: "equal", qps: 100, burst: 200}
)

// controllers of kube-controller-manager on both sides: what Jobs and their
// Pods need on any cluster (a Pod needs its namespace's default
// ServiceAccount, deleted Jobs need the garbage collector, a namespace
// deletion needs its controller, deleted unscheduled Pods need the pod
// garbage collector). kube-controller-manager's side adds job-controller.
var commonControllers = []string{
	"garbage-collector-controller",
	"namespace-controller",
	"serviceaccount-controller",
	"serviceaccount-token-controller",
	"pod-garbage-collector-controller",
}

// side is one fresh host cluster with one Job controller, simulated nodes
// and the clients the workloads use.
type side struct {
	name     string
	rate     clientRate
	cluster  *framework.Cluster
	etcd     *framework.EtcdCluster
	gvr      schema.GroupVersionResource
	finalize string
	// apiPath is the path of the Jobs of a namespace, %s the namespace.
	apiPath string
	dyn     dynamic.Interface
	kube    kubernetes.Interface
	// host is a rest config of kube-apiserver without a client rate limit.
	host      *rest.Config
	scheduler *framework.Process
	kwok      *framework.Process
	// effectiveRate says what the controller's rate was ("20/30").
	effectiveRate string
}

// env is what every side of a run shares.
type env struct {
	dir    string
	bins   *framework.Binaries
	sbins  *framework.ScaleBinaries
	stages []string
	nodes  int
}

// newEnv finds the binaries and the KWOK stages.
func newEnv(t *testing.T, nodes int) *env {
	t.Helper()
	dir := t.TempDir()
	bins, err := framework.FindBinaries(dir)
	if err != nil {
		t.Fatal(err)
	}
	sbins, err := framework.FindScaleBinaries(bins)
	if err != nil {
		t.Fatal(err)
	}
	stages, err := stageFiles(bins.RepoRoot)
	if err != nil {
		t.Fatal(err)
	}
	return &env{dir: dir, bins: bins, sbins: sbins, stages: stages, nodes: nodes}
}

// kwokModule is the module the upstream stages are read from, at the
// version hack/tools/kwok pins.
const kwokModule = "sigs.k8s.io/kwok"

// stageFiles returns the KWOK Stages of the scale tests: two of KWOK's own
// fast stages, read from the module cache at the version
// hack/tools/kwok/go.mod pins (node-initialize makes a Node Ready,
// pod-delete removes a deleted Pod), and ours from testdata/stages (a
// scheduled Pod runs, without the IP KWOK's pod-ready would give it; a
// Job's Pod succeeds or fails after a delay).
func stageFiles(root string) ([]string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", kwokModule)
	cmd.Dir = filepath.Join(root, "hack", "tools", "kwok")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("locating %s in the module cache (run hack/build-scale-bins.sh): %w", kwokModule, err)
	}
	dir := strings.TrimSpace(string(out))
	if dir == "" {
		return nil, fmt.Errorf("%s is not in the module cache (run hack/build-scale-bins.sh)", kwokModule)
	}
	files := []string{
		filepath.Join(dir, "kustomize", "stage", "node", "fast", "node-initialize.yaml"),
		filepath.Join(dir, "kustomize", "stage", "pod", "fast", "pod-delete.yaml"),
		filepath.Join(root, "test", "scale", "testdata", "stages", "pod-ready.yaml"),
		filepath.Join(root, "test", "scale", "testdata", "stages", "pod-complete.yaml"),
		filepath.Join(root, "test", "scale", "testdata", "stages", "pod-fail.yaml"),
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, err
		}
	}
	return files, nil
}

// startSide starts a fresh host cluster for side name at rate: its own
// etcd process, kube-apiserver, kube-controller-manager (with
// job-controller for kcm, without it for ours), batch-apiserver for ours,
// kube-scheduler, kwok and e.nodes Nodes. It stops when the test ends.
func (e *env) startSide(ctx context.Context, t *testing.T, name string, rate clientRate) *side {
	t.Helper()
	dir := filepath.Join(e.dir, name+"-"+rate.name)
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o700); err != nil {
		t.Fatal(err)
	}
	etcd, err := framework.StartEtcdClusterWith(ctx, filepath.Join(dir, "etcd"), logDir, 1,
		framework.EtcdClusterOptions{Fsync: true, QuotaBackendBytes: 8 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Stop)

	opts := framework.ClusterOptions{EtcdEndpoints: etcd.Endpoints}
	s := &side{name: name, rate: rate, etcd: etcd}
	switch name {
	case sideKCM:
		opts.NoBatchAPIServer = true
		opts.KubeControllers = append(append([]string{}, commonControllers...), "job-controller")
		s.effectiveRate = "20/30"
		if rate.qps > 0 {
			opts.KubeControllerManagerArgs = rateFlags(rate)
			s.effectiveRate = fmt.Sprintf("%d/%d", rate.qps, rate.burst)
		}
		opts.KubeControllerManagerArgs = append(opts.KubeControllerManagerArgs, strings.Fields(os.Getenv(EnvKCMArgs))...)
		s.gvr = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
		s.apiPath = "/apis/batch/v1/namespaces/%s/jobs"
		s.finalize = kcmFinalizer
	case sideOurs:
		opts.KubeControllers = commonControllers
		s.effectiveRate = "default"
		if rate.qps > 0 {
			has, err := batchHasRateFlags(e.bins.BatchAPIServer)
			if err != nil {
				t.Fatal(err)
			}
			if has {
				opts.BatchAPIServerArgs = rateFlags(rate)
				s.effectiveRate = fmt.Sprintf("%d/%d", rate.qps, rate.burst)
			} else {
				t.Logf("%s has no --kube-api-qps: our controller runs at its own rate", e.bins.BatchAPIServer)
			}
		}
		// kube-controller-manager runs without leader election here
		// (framework.Cluster): so does our controller, rather than renew
		// its Lease on the host every second with the e2e timings.
		opts.BatchAPIServerArgs = append(opts.BatchAPIServerArgs, "--leader-elect=false")
		opts.BatchAPIServerArgs = append(opts.BatchAPIServerArgs, strings.Fields(os.Getenv(EnvOursArgs))...)
		s.gvr = schema.GroupVersionResource{Group: "batch.jobs.dev", Version: "v1", Resource: "jobs"}
		s.apiPath = "/apis/batch.jobs.dev/v1/namespaces/%s/jobs"
		s.finalize = oursFinalizer
	default:
		t.Fatalf("unknown side %q", name)
	}
	cluster, err := framework.StartClusterWith(ctx, e.bins, filepath.Join(dir, "cluster"), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	if keep := os.Getenv(EnvLogs); keep != "" {
		// The side is stopped by then (side.stop), and the temporary
		// directory removed only after it (t.TempDir's cleanup ran
		// first, so it runs last).
		t.Cleanup(func() { keepLogs(t, filepath.Join(keep, name+"-"+rate.name), logDir, cluster.LogDir) })
	}
	s.cluster = cluster
	if s.scheduler, err = cluster.StartKubeScheduler(ctx, e.sbins.KubeScheduler, schedulerQPS, schedulerBurst); err != nil {
		t.Fatal(err)
	}
	if s.kwok, err = cluster.StartKWOK(e.sbins.KWOK, e.stages); err != nil {
		t.Fatal(err)
	}
	if err := cluster.CreateKWOKNodes(ctx, e.nodes); err != nil {
		cluster.DumpLogs(os.Stderr, 30)
		t.Fatal(err)
	}
	// The harness's own clients must not be what limits a run.
	s.host = rest.CopyConfig(cluster.Admin)
	s.host.QPS, s.host.Burst = -1, 0
	if s.dyn, err = dynamic.NewForConfig(s.host); err != nil {
		t.Fatal(err)
	}
	if s.kube, err = kubernetes.NewForConfig(s.host); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s (%s): cluster up, %d kwok nodes Ready", name, s.effectiveRate, e.nodes)
	return s
}

// keepLogs copies the *.log files of dirs into dst.
func keepLogs(t *testing.T, dst string, dirs ...string) {
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Logf("keeping logs: %v", err)
		return
	}
	for _, dir := range dirs {
		logs, _ := filepath.Glob(filepath.Join(dir, "*.log"))
		for _, src := range logs {
			data, err := os.ReadFile(src)
			if err == nil {
				err = os.WriteFile(filepath.Join(dst, filepath.Base(src)), data, 0o644)
			}
			if err != nil {
				t.Logf("keeping %s: %v", src, err)
			}
		}
	}
}

func rateFlags(r clientRate) []string {
	return []string{"--kube-api-qps=" + strconv.Itoa(r.qps), "--kube-api-burst=" + strconv.Itoa(r.burst)}
}

// batchHasRateFlags tells whether the batch-apiserver binary has
// --kube-api-qps and --kube-api-burst.
func batchHasRateFlags(bin string) (bool, error) {
	out, err := exec.Command(bin, "--help").CombinedOutput()
	if err != nil && len(out) == 0 {
		return false, fmt.Errorf("%s --help: %w", bin, err)
	}
	return strings.Contains(string(out), "--kube-api-qps") && strings.Contains(string(out), "--kube-api-burst"), nil
}

// processes returns the side's processes by name, read again on every
// call (a restart replaces a server's process).
func (s *side) processes() map[string]*framework.Process {
	ps := map[string]*framework.Process{
		"etcd":                    s.etcd.Members[0],
		"kube-apiserver":          s.cluster.KubeAPIServer,
		"kube-controller-manager": s.cluster.KubeControllerManager,
		"kube-scheduler":          s.scheduler,
		"kwok":                    s.kwok,
	}
	if s.cluster.BatchAPIServer != nil {
		ps["batch-apiserver"] = s.cluster.BatchAPIServer
	}
	return ps
}

// controllerProcess is the process the Job controller runs in.
func (s *side) controllerProcess() *framework.Process {
	if s.name == sideOurs {
		return s.cluster.BatchAPIServer
	}
	return s.cluster.KubeControllerManager
}

// jobServerProcess is the process that serves the side's Jobs.
func (s *side) jobServerProcess() *framework.Process {
	if s.name == sideOurs {
		return s.cluster.BatchAPIServer
	}
	return s.cluster.KubeAPIServer
}

// jobServerEndpoint is the address of the process that serves the
// side's Jobs and a client with the admin's credentials there: for ours
// batch-apiserver's own port, for kcm kube-apiserver.
func (s *side) jobServerEndpoint() (string, *http.Client, error) {
	cfg, url := s.host, s.cluster.HostURL
	if s.name == sideOurs {
		cfg, url = s.cluster.BatchAdminConfig(), s.cluster.BatchURL
	}
	client, err := rest.HTTPClientFor(cfg)
	return url, client, err
}

// newNamespace creates a namespace and waits for its default
// ServiceAccount (Pods are refused without it).
func (s *side) newNamespace(ctx context.Context, t *testing.T, name string) {
	t.Helper()
	if _, err := s.kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := s.kube.CoreV1().ServiceAccounts(name).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("namespace %s: no default ServiceAccount: %v", name, err)
	}
	if s.name == sideOurs {
		// The aggregated server admits Jobs into namespaces its informer
		// has seen.
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			_, err := s.dyn.Resource(s.gvr).Namespace(name).List(ctx, metav1.ListOptions{Limit: 1})
			return err == nil, nil
		})
		if err != nil {
			t.Fatalf("namespace %s: Jobs cannot be listed: %v", name, err)
		}
	}
}

// deleteNamespace deletes a namespace and waits (up to limit) until it is
// gone, so that the next workload does not pay for its deletion.
func (s *side) deleteNamespace(ctx context.Context, t *testing.T, name string, limit time.Duration) {
	t.Helper()
	if err := s.kube.CoreV1().Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Logf("deleting namespace %s: %v", name, err)
		return
	}
	start := time.Now()
	err := wait.PollUntilContextTimeout(ctx, time.Second, limit, true, func(ctx context.Context) (bool, error) {
		_, err := s.kube.CoreV1().Namespaces().Get(ctx, name, metav1.GetOptions{})
		return err != nil, nil
	})
	if err != nil {
		t.Logf("%s: namespace %s still terminating after %v; going on", s.name, name, limit)
		return
	}
	t.Logf("%s: namespace %s deleted in %v", s.name, name, time.Since(start).Round(time.Second))
}
