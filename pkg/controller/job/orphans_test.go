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

package job

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	clienttesting "k8s.io/client-go/testing"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestReleaseOrphan(t *testing.T) {
	job := makeJob("j").Obj()
	finished := makeJob("j").Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "done")).Obj()
	external := makeJob("j").ManagedBy("example.com/other").Obj()
	hostJobPod := makePod("a", job).Obj()
	hostJobPod.OwnerReferences[0].APIVersion = "batch/v1"

	cases := map[string]struct {
		job        *batchv1.Job
		pod        *corev1.Pod
		standalone bool
		// removedBySync: the Job's sync removed the Pod's finalizer
		// and the Pod informer has not shown it yet.
		removedBySync bool
		want          []string
	}{
		"the pod of a gone job loses its finalizer": {
			pod: makePod("a", job).Obj(), want: []string{"patch a"},
		},
		"standalone: the pod of a gone job loses its finalizer and is deleted": {
			pod: makePod("a", job).Obj(), standalone: true, want: []string{"delete a", "patch a"},
		},
		"standalone: the pod of a gone job without finalizer is deleted": {
			pod: makePod("a", job).NoFinalizer().Obj(), standalone: true, want: []string{"delete a"},
		},
		"standalone: a pod already going is not deleted again": {
			pod: makePod("a", job).Deleted(testNow).Obj(), standalone: true, want: []string{"patch a"},
		},
		"standalone: the pod of a finished job loses its finalizer, not its life": {
			job: finished, pod: makePod("a", finished).Obj(), standalone: true, want: []string{"patch a"},
		},
		"the pod of a finished job whose finalizer its last sync removed is not patched again": {
			job: finished, pod: makePod("a", finished).Obj(), removedBySync: true,
		},
		"the pod of a running job is its sync's business": {
			job: job, pod: makePod("a", job).Obj(),
		},
		"the pod of an externally managed job is left alone": {
			job: external, pod: makePod("a", external).Obj(), standalone: true,
		},
		"a pod without controller loses its finalizer": {
			pod: makePod("a", job).Orphan().Obj(), standalone: true, want: []string{"patch a"},
		},
		"a pod of another server is left alone": {
			pod: makePod("a", job).Identity("other").Obj(), standalone: true,
		},
		"a pod of a host batch/v1 Job is left alone": {
			pod: hostJobPod, standalone: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{cfg: Config{DeletePodsOfDeletedJobs: tc.standalone}})
			if tc.job != nil {
				f.addJobs(t, tc.job)
			}
			f.addPods(t, tc.pod)
			if tc.removedBySync {
				f.finalizerExpect.expect(keyOf(tc.job), tc.pod.UID)
			}
			if err := f.syncOrphans(f.ctx, orphanKey{namespace: "ns", name: "a"}); err != nil {
				t.Fatalf("syncOrphans: %v", err)
			}
			if diff := cmp.Diff(tc.want, podWrites(f.kube), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("pod writes (-want +got):\n%s", diff)
			}
			for _, a := range f.kube.Actions() {
				if d, ok := a.(clienttesting.DeleteAction); ok {
					if uid := d.GetDeleteOptions().Preconditions; uid == nil || uid.UID == nil || *uid.UID != tc.pod.UID {
						t.Errorf("deletion preconditions = %+v, want the pod's UID", uid)
					}
				}
			}
		})
	}
}

// TestSyncOrphansBySelector: the selector of a deleted Job releases the
// Pods of this server it matches, and no other.
func TestSyncOrphansBySelector(t *testing.T) {
	job := makeJob("j").Obj()
	cases := map[string]struct {
		standalone bool
		want       []string
	}{
		"aggregated: finalizers only":     {want: []string{"patch a"}},
		"standalone: finalizers and pods": {standalone: true, want: []string{"delete a", "delete b", "patch a"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{cfg: Config{Identity: "us", DeletePodsOfDeletedJobs: tc.standalone}})
			f.addPods(t,
				makePod("a", job).Identity("us").Obj(),
				makePod("b", job).Identity("us").NoFinalizer().Obj(),
				makePod("c", job).Identity("them").Obj(),
			)
			if err := f.syncOrphans(f.ctx, orphanKey{namespace: "ns", selector: batch.ControllerUIDLabel + "=j-uid"}); err != nil {
				t.Fatalf("syncOrphans: %v", err)
			}
			if diff := cmp.Diff(tc.want, podWrites(f.kube)); diff != "" {
				t.Errorf("pod writes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSweepOrphans: at the start of a term, the Pods of this server whose
// Job is gone go to the orphan worker.
func TestSweepOrphans(t *testing.T) {
	job := makeJob("j").Obj()
	gone := makeJob("gone").Obj()
	replaced := makeJob("j").UID("old-uid").Generated().Obj()
	pods := []*corev1.Pod{
		makePod("running", job).Obj(),
		makePod("of-gone", gone).Obj(),
		makePod("of-gone-no-finalizer", gone).NoFinalizer().Obj(),
		makePod("of-replaced", replaced).Obj(),
		makePod("of-gone-other-server", gone).Identity("other").Obj(),
		makePod("without-controller", gone).Orphan().Obj(),
	}
	cases := map[string]struct {
		standalone bool
		want       []string
	}{
		"aggregated: the pods holding a finalizer": {want: []string{"of-gone", "of-replaced"}},
		"standalone: every pod of a gone job":      {standalone: true, want: []string{"of-gone", "of-gone-no-finalizer", "of-replaced"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{cfg: Config{DeletePodsOfDeletedJobs: tc.standalone}})
			f.shutDownQueues()
			o := newRecordingQueue[orphanKey]()
			f.orphans = o
			f.addJobs(t, job)
			f.addPods(t, pods...)
			f.sweepOrphans(f.logger())
			var got []string
			for _, q := range o.items() {
				got = append(got, q.Key.name)
			}
			if diff := cmp.Diff(tc.want, got, cmpopts.SortSlices(func(a, b string) bool { return a < b })); diff != "" {
				t.Errorf("orphans queued (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunReleasesPodsOfJobsDeletedWhileNobodyLed runs a whole term on
// started informers: the Pods of a Job deleted while no replica led are
// released (and deleted in standalone mode) without any Job event; the
// Pods of a live Job and of another server stay as they are.
func TestRunReleasesPodsOfJobsDeletedWhileNobodyLed(t *testing.T) {
	live := makeJob("live").Obj()
	gone := makeJob("gone").Obj()
	cases := map[string]struct {
		standalone bool
		want       []string
	}{
		"aggregated": {want: []string{"patch of-gone"}},
		"standalone": {standalone: true, want: []string{"delete of-gone", "patch of-gone"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			live := live.DeepCopy()
			live.Status = batchv1.JobStatus{
				StartTime: timeAt(testNow), Active: 1, Ready: new(int32), Terminating: new(int32),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
			}
			kube := newFakeHost()
			for _, p := range []*corev1.Pod{
				makePod("of-live", live).Identity("us").Obj(),
				makePod("of-gone", gone).Identity("us").Obj(),
				makePod("of-gone-elsewhere", gone).Identity("them").Obj(),
			} {
				if err := kube.Tracker().Add(p); err != nil {
					t.Fatal(err)
				}
			}
			f := newFixture(t, fixtureOptions{kube: kube})
			jobs := f.jobs
			if err := jobs.Tracker().Add(live); err != nil {
				t.Fatal(err)
			}
			ctx := f.runTerm(t, Config{Identity: "us", DeletePodsOfDeletedJobs: tc.standalone}, nil)
			var got []string
			err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
				got = podWrites(kube)
				return cmp.Equal(tc.want, got), nil
			})
			if err != nil {
				t.Fatalf("pod writes = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestClaimPods: adoption and release, and one live read of the Job per
// sync however many orphans it adopts.
func TestClaimPods(t *testing.T) {
	job := makeJob("j").Parallelism(3).Completions(3).Obj()
	being := job.DeepCopy()
	being.DeletionTimestamp = timeAt(testNow)
	cases := map[string]struct {
		pods      []*corev1.Pod
		live      *batchv1.Job
		wantPods  []string
		wantGets  int
		wantWrite []string
	}{
		"several orphans: one read of the job, each adopted": {
			pods: []*corev1.Pod{
				makePod("a", job).Orphan().NoFinalizer().Obj(),
				makePod("b", job).Orphan().NoFinalizer().Obj(),
				makePod("c", job).Orphan().Obj(),
			},
			live:      job,
			wantPods:  []string{"a", "b", "c"},
			wantGets:  1,
			wantWrite: []string{"patch a", "patch b", "patch c"},
		},
		"the live job is being deleted: no adoption": {
			pods:     []*corev1.Pod{makePod("a", job).Orphan().Obj(), makePod("b", job).Orphan().Obj()},
			live:     being,
			wantGets: 1,
		},
		"the live job is another with the same name: no adoption": {
			pods:     []*corev1.Pod{makePod("a", job).Orphan().Obj()},
			live:     makeJob("j").UID("other-uid").Generated().Obj(),
			wantGets: 1,
		},
		"orphans of another server, another namespace, or going: not candidates": {
			pods: []*corev1.Pod{
				makePod("a", job).Orphan().Identity("other").Obj(),
				makePod("b", job).Orphan().Deleted(testNow).Obj(),
				func() *corev1.Pod { p := makePod("c", job).Orphan().Obj(); p.Namespace = "elsewhere"; return p }(),
			},
			live: job,
		},
		"an owned pod the selector no longer matches is released": {
			pods:      []*corev1.Pod{makePod("a", job).Obj(), makePod("b", job).Label(batch.ControllerUIDLabel, "x").Obj()},
			live:      job,
			wantPods:  []string{"a"},
			wantWrite: []string{"patch b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{})
			f.cacheJob(t, job)
			if err := f.jobs.Tracker().Add(tc.live); err != nil {
				t.Fatal(err)
			}
			f.addPods(t, tc.pods...)
			pods, err := f.claimPods(f.ctx, job)
			if err != nil {
				t.Fatalf("claimPods: %v", err)
			}
			var names []string
			for _, p := range pods {
				names = append(names, p.Name)
				if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != job.UID || !cmp.Equal(p.Finalizers, []string{batch.JobTrackingFinalizer}) {
					t.Errorf("claimed pod %s: controller %v, finalizers %v; want the job and the tracking finalizer", p.Name, ref, p.Finalizers)
				}
			}
			sortStrings := cmpopts.SortSlices(func(a, b string) bool { return a < b })
			if diff := cmp.Diff(tc.wantPods, names, sortStrings, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("claimed pods (-want +got):\n%s", diff)
			}
			if got := countActions(f.jobs.Actions(), "get", "jobs"); got != tc.wantGets {
				t.Errorf("live reads of the job = %d, want %d", got, tc.wantGets)
			}
			if diff := cmp.Diff(tc.wantWrite, podWrites(f.kube), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("pod writes (-want +got):\n%s", diff)
			}
			// The host holds what was claimed: adopted Pods are the Job's.
			for _, name := range tc.wantPods {
				p, err := f.kube.CoreV1().Pods("ns").Get(f.ctx, name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != types.UID("j-uid") {
					t.Errorf("pod %s in the host: controller %v, want the job", name, ref)
				}
			}
		})
	}
}
