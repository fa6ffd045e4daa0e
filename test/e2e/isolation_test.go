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

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// serverIdentityLabel is the label our controller puts on its Pods, naming
// the server (the storage) they belong to.
const serverIdentityLabel = "batch.jobs.dev/server-identity"

// identityLogRE finds the identity a server logs at startup.
var identityLogRE = regexp.MustCompile(`"Server identity"[^\n]*\bidentity="([0-9a-f-]{36})"`)

// isolatedServer is one standalone batch-apiserver of
// TestStandaloneServersOnOneHost.
type isolatedServer struct {
	name   string
	server *framework.Standalone
	jobs   framework.Jobs
	// identity is the one it logged at startup.
	identity string
}

// TestStandaloneServersOnOneHost runs two standalone batch-apiservers, each
// on its own data dir, against the same host cluster with nothing but
// --kubeconfig, as a new user would. Each runs a Job of the same name in
// the same namespace: both Jobs run (the servers do not compete for one
// Lease), every Pod carries its own server's identity, and neither server
// touches the other's Pods, not even when the other's Job is deleted.
//
// The host is a cluster of its own, kube-apiserver and
// kube-controller-manager without an aggregated batch-apiserver: on the
// package's cluster the garbage collector would look the standalone
// servers' Jobs up through the APIServices, in the aggregated server, and
// delete their Pods as orphans.
func TestStandaloneServersOnOneHost(t *testing.T) {
	skipWithoutOurController(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hostCluster, err := framework.StartClusterWith(ctx, bins, filepath.Join(t.TempDir(), "host"), framework.ClusterOptions{NoBatchAPIServer: true})
	if err != nil {
		if hostCluster != nil {
			hostCluster.DumpLogs(os.Stderr, 40)
		}
		t.Fatal(err)
	}
	t.Cleanup(hostCluster.Stop)
	hostCfg := rest.CopyConfig(hostCluster.Admin)
	hostCfg.QPS, hostCfg.Burst = -1, 0
	host := kubernetes.NewForConfigOrDie(hostCfg)
	kubelet := framework.Kubelet{Client: host}

	ns := "two-servers"
	if _, err := host.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// Pods need the namespace's default ServiceAccount.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := host.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		t.Fatalf("the default ServiceAccount of %s: %v", ns, err)
	}

	servers := []*isolatedServer{{name: "a"}, {name: "b"}}
	for _, s := range servers {
		dir := filepath.Join(t.TempDir(), s.name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		s.server, err = framework.StartStandalone(ctx, bins.BatchAPIServer, filepath.Join(dir, "data"), dir, "--kubeconfig="+hostCluster.AdminKubeconfig)
		if err != nil {
			t.Fatalf("server %s: %v", s.name, err)
		}
		t.Cleanup(func() {
			s.server.Stop()
			if t.Failed() {
				t.Logf("server %s log:\n%s", s.name, framework.Tail(s.server.Process.LogFile, 60))
			}
		})
		cfg, err := clientcmd.BuildConfigFromFlags("", s.server.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		s.jobs = framework.Jobs{API: framework.OurJobs, Client: dynamic.NewForConfigOrDie(cfg), Namespace: ns}
	}
	// On each server a Job named alike on both and one of its own: the
	// other server finds no Job of that name, so it would take its Pods
	// for Pods of a deleted Job.
	var all []*serverJob
	for _, s := range servers {
		for _, j := range []struct {
			name string
			n    int32
		}{{"work", 2}, {"solo-" + s.name, 1}} {
			job := newJob(j.n, j.n)
			job.Name = j.name
			created, err := s.jobs.Create(ctx, job)
			if err != nil {
				t.Fatalf("server %s: %v", s.name, err)
			}
			all = append(all, &serverJob{server: s, job: created, n: j.n})
		}
	}

	// Every Job gets its Pods, each labelled with the identity its own
	// server logged.
	for _, sj := range all {
		pods, err := sj.waitPods(ctx, host, fmt.Sprintf("%d active pods", sj.n), func(pods []corev1.Pod) bool {
			return len(framework.ActivePods(pods)) == int(sj.n)
		})
		if err != nil {
			t.Fatal(err)
		}
		sj.pods = pods
	}
	a, b := servers[0], servers[1]
	for _, s := range servers {
		s.identity = loggedIdentity(t, s)
	}
	if a.identity == b.identity {
		t.Fatalf("both servers logged the identity %s; two data dirs must give two identities", a.identity)
	}
	for _, sj := range all {
		for _, p := range sj.pods {
			if got := p.Labels[serverIdentityLabel]; got != sj.server.identity {
				t.Errorf("pod %s of %s: label %s=%q, want %q", p.Name, sj, serverIdentityLabel, got, sj.server.identity)
			}
		}
	}

	// A's Pods run; B's Job "work" succeeds. B's solo Pod is evicted
	// (deleted, then Failed as a kubelet ends it): B counts the failure
	// and replaces it, A must not take it for a Pod of a deleted Job and
	// remove its finalizer first. Both of B's Jobs complete with their
	// exact counts; then B's Job "work" is deleted (B deletes its Pods:
	// standalone mode has no garbage collector).
	bWork, bSolo := all[2], all[3]
	for _, sj := range all {
		for i := range sj.pods {
			var err error
			if sj == bWork {
				err = kubelet.Succeed(ctx, &sj.pods[i])
			} else {
				err = kubelet.Run(ctx, &sj.pods[i], true)
			}
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	evicted := bSolo.pods[0]
	if err := host.CoreV1().Pods(ns).Delete(ctx, evicted.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("evicting pod %s of %s: %v", evicted.Name, bSolo, err)
	}
	// The pod garbage collector may have failed it first; B then removed
	// its finalizer, and it is gone.
	if err := kubelet.Fail(ctx, &evicted, "main", 137); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	replacement, err := bSolo.waitPods(ctx, host, "a replacement of the evicted pod", func(pods []corev1.Pod) bool {
		return slices.ContainsFunc(framework.ActivePods(pods), func(p corev1.Pod) bool { return p.UID != evicted.UID })
	})
	if err != nil {
		t.Fatal(err)
	}
	bSolo.pods = framework.ActivePods(replacement)
	bSolo.failed = 1
	if err := kubelet.Succeed(ctx, &bSolo.pods[0]); err != nil {
		t.Fatal(err)
	}
	for _, sj := range all {
		if sj.server == b {
			sj.wantComplete(ctx, t)
		}
	}
	if err := b.jobs.Client.Resource(framework.OurJobs.GVR).Namespace(ns).Delete(ctx, bWork.job.Name,
		metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		t.Fatalf("deleting %s: %v", bWork, err)
	}
	if _, err := bWork.waitPods(ctx, host, "the pods gone after the job was deleted", func(pods []corev1.Pod) bool {
		return len(pods) == 0
	}); err != nil {
		t.Fatal(err)
	}

	// A's Pods are the ones it created, untouched: running, tracked, none
	// deleted or replaced. B's remaining Pod is as B left it.
	for _, sj := range all {
		switch {
		case sj.server == a:
			sj.wantPods(ctx, t, host, corev1.PodRunning, "batch.jobs.dev/job-tracking")
		case sj != bWork:
			sj.wantPods(ctx, t, host, corev1.PodSucceeded)
		}
	}

	// A still tracks its Pods: they succeed and A's Jobs complete with
	// their exact counts. B's remaining Pod is still as B left it.
	for _, sj := range all {
		if sj.server != a {
			continue
		}
		for i := range sj.pods {
			if err := kubelet.Succeed(ctx, &sj.pods[i]); err != nil {
				t.Fatal(err)
			}
		}
		sj.wantComplete(ctx, t)
		sj.wantPods(ctx, t, host, corev1.PodSucceeded)
	}
	bSolo.wantPods(ctx, t, host, corev1.PodSucceeded)
}

// serverJob is one Job of one of the servers and the Pods it first got.
type serverJob struct {
	server *isolatedServer
	job    *batchv1.Job
	// n is the Job's completions and parallelism.
	n int32
	// failed is the number of failed Pods its status must end with.
	failed int32
	// pods are the Pods it got (after the replacement of an evicted one).
	pods []corev1.Pod
}

func (sj *serverJob) String() string {
	return fmt.Sprintf("job %s of server %s", sj.job.Name, sj.server.name)
}

// listPods lists the Job's Pods by their controller-uid label (Jobs of
// both servers share a name, and so the job-name label).
func (sj *serverJob) listPods(ctx context.Context, host kubernetes.Interface) ([]corev1.Pod, error) {
	list, err := host.CoreV1().Pods(sj.job.Namespace).List(ctx, metav1.ListOptions{
		LabelSelector: "batch.jobs.dev/controller-uid=" + string(sj.job.UID)})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of %s: %w", sj, err)
	}
	return list.Items, nil
}

// waitPods polls the Job's Pods until done says so.
func (sj *serverJob) waitPods(ctx context.Context, host kubernetes.Interface, what string, done func([]corev1.Pod) bool) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, podsTimeout, true, func(ctx context.Context) (bool, error) {
		if err := sj.server.server.Process.Exited(); err != nil {
			return false, err
		}
		var err error
		if pods, err = sj.listPods(ctx, host); err != nil {
			return false, nil
		}
		return done(pods), nil
	})
	if err != nil {
		return pods, fmt.Errorf("%s: waiting for %s: %w; last seen %s", sj, what, err, framework.DescribePods(pods))
	}
	return pods, nil
}

// podState is what wantPods compares of a Pod.
type podState struct {
	Name, UID, Phase, Identity string
	Deleting                   bool
	Finalizers                 []string
}

// wantPods checks that the Job's Pods are exactly the ones it first got,
// not being deleted, in phase with finalizers, labelled with their
// server's identity.
func (sj *serverJob) wantPods(ctx context.Context, t *testing.T, host kubernetes.Interface, phase corev1.PodPhase, finalizers ...string) {
	t.Helper()
	pods, err := sj.listPods(ctx, host)
	if err != nil {
		t.Fatal(err)
	}
	var want, got []podState
	for _, p := range sj.pods {
		want = append(want, podState{Name: p.Name, UID: string(p.UID), Phase: string(phase), Identity: sj.server.identity, Finalizers: finalizers})
	}
	for _, p := range pods {
		got = append(got, podState{Name: p.Name, UID: string(p.UID), Phase: string(p.Status.Phase),
			Identity: p.Labels[serverIdentityLabel], Deleting: p.DeletionTimestamp != nil, Finalizers: p.Finalizers})
	}
	byName := func(x, y podState) int { return strings.Compare(x.Name, y.Name) }
	slices.SortFunc(want, byName)
	slices.SortFunc(got, byName)
	if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
		t.Fatalf("the pods of %s (-want +got):\n%s", sj, diff)
	}
}

// wantComplete waits for the Job to be Complete and checks its counters:
// n Pods succeeded, failed Pods failed.
func (sj *serverJob) wantComplete(ctx context.Context, t *testing.T) {
	t.Helper()
	job, err := framework.WaitForJob(ctx, sj.server.jobs, sj.job.Name, jobTimeout, func(j *batchv1.Job) (bool, string) {
		return framework.HasJobCondition(j, batchv1.JobComplete), "waiting for condition Complete=True"
	})
	if err != nil {
		t.Fatalf("%s: %v", sj, err)
	}
	type counts struct {
		UID                       types.UID
		Active, Succeeded, Failed int32
	}
	if diff := cmp.Diff(counts{UID: sj.job.UID, Succeeded: sj.n, Failed: sj.failed}, counts{job.UID, job.Status.Active, job.Status.Succeeded, job.Status.Failed}); diff != "" {
		t.Errorf("%s: the completed job (-want +got):\n%s", sj, diff)
	}
}

// loggedIdentity is the identity s logged at startup.
func loggedIdentity(t *testing.T, s *isolatedServer) string {
	t.Helper()
	data, err := os.ReadFile(s.server.Process.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	m := identityLogRE.FindSubmatch(data)
	if m == nil {
		t.Fatalf("server %s logged no identity (%s)", s.name, identityLogRE)
	}
	return string(m[1])
}
