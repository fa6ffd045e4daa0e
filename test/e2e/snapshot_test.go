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
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// jobTrackingFinalizer is the finalizer our controller keeps on a Pod
// until the Pod is counted in its Job's status.
const jobTrackingFinalizer = "batch.jobs.dev/job-tracking"

// restorePod is what TestRestoreReconcilesFromPods compares of a Pod.
type restorePod struct {
	Name, UID  string
	Phase      corev1.PodPhase
	Identity   string
	Finalizers []string
}

// TestRestoreReconcilesFromPods: a standalone server runs a Job of three
// Pods in a host cluster; one Pod has succeeded and is counted. The
// server is snapshotted (`batch-apiserver snapshot save`, running) and
// stopped; while it is down a second Pod succeeds and the third keeps
// running, as a kubelet would go on. The snapshot is restored into a new
// data dir and a server started on it: it keeps its identity (it is in the
// snapshot), counts the second Pod once and releases its finalizer,
// creates no Pod, leaves the running one alone, and completes the Job
// with exactly three successes once the third Pod succeeds.
//
// The host is kube-apiserver alone (no garbage collector, which would
// look a standalone server's Jobs up elsewhere; no controller manager:
// the test makes the namespace's ServiceAccount itself).
func TestRestoreReconcilesFromPods(t *testing.T) {
	skipWithoutOurController(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	host, err := framework.StartClusterWith(ctx, bins, filepath.Join(dir, "host"), framework.ClusterOptions{NoBatchAPIServer: true, NoControllerManager: true})
	if err != nil {
		if host != nil {
			host.DumpLogs(os.Stderr, 40)
		}
		t.Fatal(err)
	}
	t.Cleanup(host.Stop)
	hostCfg := rest.CopyConfig(host.Admin)
	hostCfg.QPS = -1
	hostClient := kubernetes.NewForConfigOrDie(hostCfg)
	kubelet := framework.Kubelet{Client: hostClient}
	const ns = "restore"
	if _, err := hostClient.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := hostClient.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	start := func(name, dataDir string) (*framework.Standalone, framework.Jobs) {
		t.Helper()
		logDir := filepath.Join(dir, name)
		if err := os.MkdirAll(logDir, 0o700); err != nil {
			t.Fatal(err)
		}
		s, err := framework.StartStandalone(ctx, bins.BatchAPIServer, dataDir, logDir, "--kubeconfig="+host.AdminKubeconfig)
		if err != nil {
			t.Fatalf("server %s: %v", name, err)
		}
		t.Cleanup(func() {
			s.Stop()
			if t.Failed() {
				t.Logf("server %s log:\n%s", name, framework.Tail(s.Process.LogFile, 60))
			}
		})
		cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		return s, framework.Jobs{API: framework.OurJobs, Client: dynamic.NewForConfigOrDie(cfg), Namespace: ns}
	}
	identityOf := func(s *framework.Standalone) string {
		t.Helper()
		return loggedIdentity(t, &isolatedServer{name: "restore", server: s})
	}
	// pods returns the Job's Pods as compared, sorted by name.
	pods := func() []restorePod {
		t.Helper()
		list, err := framework.JobPods(ctx, hostClient, ns, "work")
		if err != nil {
			t.Fatal(err)
		}
		var out []restorePod
		for _, p := range list {
			out = append(out, restorePod{Name: p.Name, UID: string(p.UID), Phase: p.Status.Phase,
				Identity: p.Labels[serverIdentityLabel], Finalizers: p.Finalizers})
		}
		slices.SortFunc(out, func(a, b restorePod) int { return strings.Compare(a.Name, b.Name) })
		return out
	}
	// settled waits until the Job's status says active, succeeded, no
	// failure and nothing left uncounted, and its Pods are want.
	settled := func(jobs framework.Jobs, what string, active, succeeded int32, want []restorePod) {
		t.Helper()
		if _, err := framework.WaitForJob(ctx, jobs, "work", jobTimeout, func(j *batchv1.Job) (bool, string) {
			uncounted := j.Status.UncountedTerminatedPods
			return j.Status.Active == active && j.Status.Succeeded == succeeded && j.Status.Failed == 0 &&
				(uncounted == nil || len(uncounted.Succeeded)+len(uncounted.Failed) == 0), what
		}); err != nil {
			t.Fatal(err)
		}
		var got []restorePod
		if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, podsTimeout, true, func(context.Context) (bool, error) {
			got = pods()
			return cmp.Equal(want, got, cmpopts.EquateEmpty()), nil
		}); err != nil {
			t.Fatalf("%s: the pods (-want +got):\n%s", what, cmp.Diff(want, got, cmpopts.EquateEmpty()))
		}
	}

	dataDir := filepath.Join(dir, "data")
	old, jobs := start("old", dataDir)
	identity := identityOf(old)
	job := newJob(3, 3)
	job.Name = "work"
	if _, err := jobs.Create(ctx, job); err != nil {
		t.Fatal(err)
	}
	active, err := framework.WaitForActivePods(ctx, hostClient, ns, "work", 3, podsTimeout)
	if err != nil {
		t.Fatal(err)
	}
	slices.SortFunc(active, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	for i := range active {
		if err := kubelet.Run(ctx, &active[i], true); err != nil {
			t.Fatal(err)
		}
	}
	first, second, third := &active[0], &active[1], &active[2]
	if err := kubelet.Succeed(ctx, first); err != nil {
		t.Fatal(err)
	}
	want := []restorePod{
		{Name: first.Name, UID: string(first.UID), Phase: corev1.PodSucceeded, Identity: identity},
		{Name: second.Name, UID: string(second.UID), Phase: corev1.PodRunning, Identity: identity, Finalizers: []string{jobTrackingFinalizer}},
		{Name: third.Name, UID: string(third.UID), Phase: corev1.PodRunning, Identity: identity, Finalizers: []string{jobTrackingFinalizer}},
	}
	// The barrier before the snapshot: the first Pod counted and
	// released, the other two running and ready.
	settled(jobs, "the first pod counted before the snapshot", 2, 1, want)
	if _, err := framework.WaitForJob(ctx, jobs, "work", jobTimeout, func(j *batchv1.Job) (bool, string) {
		return j.Status.Ready != nil && *j.Status.Ready == 2, "ready 2"
	}); err != nil {
		t.Fatal(err)
	}

	file := filepath.Join(dir, "backup.db")
	if out, err := exec.CommandContext(ctx, bins.BatchAPIServer, "snapshot", "save", file, "--data-dir", dataDir).CombinedOutput(); err != nil {
		t.Fatalf("snapshot save: %v\n%s", err, out)
	}
	old.Stop()

	// While no server runs, the second Pod succeeds and keeps its
	// finalizer: nobody has counted it.
	if err := kubelet.Succeed(ctx, second); err != nil {
		t.Fatal(err)
	}
	restoredDir := filepath.Join(dir, "restored")
	if out, err := exec.CommandContext(ctx, bins.BatchAPIServer, "snapshot", "restore", file, "--data-dir", restoredDir).CombinedOutput(); err != nil {
		t.Fatalf("snapshot restore: %v\n%s", err, out)
	}
	restored, jobs := start("restored", restoredDir)
	if got := identityOf(restored); got != identity {
		t.Errorf("the restored server's identity is %s, want the old server's %s (it is in the snapshot)", got, identity)
	}

	// The restored server counts the second Pod once and releases it,
	// and creates nothing: the third Pod still runs.
	want[1].Phase, want[1].Finalizers = corev1.PodSucceeded, nil
	settled(jobs, "the second pod counted after the restore", 1, 2, want)

	if err := kubelet.Succeed(ctx, third); err != nil {
		t.Fatal(err)
	}
	want[2].Phase, want[2].Finalizers = corev1.PodSucceeded, nil
	settled(jobs, "the third pod counted", 0, 3, want)
	done, err := framework.WaitForJobCondition(ctx, jobs, "work", batchv1.JobComplete, jobTimeout)
	if err != nil {
		t.Fatal(err)
	}
	type counts struct{ Active, Succeeded, Failed int32 }
	if diff := cmp.Diff(counts{Succeeded: 3}, counts{done.Status.Active, done.Status.Succeeded, done.Status.Failed}); diff != "" {
		t.Errorf("the completed job (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want, pods(), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("the pods at the end (-want +got):\n%s", diff)
	}
}
