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
	"errors"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// The sync tests run decide for real: they check that act carries a plan
// out (Pod writes, status writes in order, Events, the memory kept between
// syncs), not every decision, which decide's own tables cover.

func TestSyncJob(t *testing.T) {
	doneAt := testNow.Add(-time.Minute)
	hourAgo := timeAt(testNow.Add(-time.Hour))
	scm := cond(batchv1.JobSuccessCriteriaMet, batch.JobReasonCompletionsReached, "Reached expected number of succeeded pods")
	complete := cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "Reached expected number of succeeded pods")
	backoff := "Job has reached the specified backoff limit"
	deadline := cond(batchv1.JobFailureTarget, batch.JobReasonDeadlineExceeded, "Job was active longer than specified deadline")

	cases := map[string]struct {
		job        *batchv1.Job
		pods       func(job *batchv1.Job) []*corev1.Pod
		wantWrites []batchv1.JobStatus
		wantPods   []string
		wantEvents []string
		wantErr    bool
		// goneFromHost: the Pods are in the cache only.
		goneFromHost bool
		// wantFinishing: the Job waits for its finished status to show.
		wantFinishing bool
	}{
		"a new job starts its pods": {
			job: makeJob("j").Parallelism(2).Completions(3).Obj(),
			wantWrites: []batchv1.JobStatus{{
				StartTime: timeAt(testNow), Active: 2, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
			}},
			wantPods:   []string{"create j-", "create j-"},
			wantEvents: []string{"Normal SuccessfulCreate Created pod: j-1", "Normal SuccessfulCreate Created pod: j-2"},
		},
		"running pods need no write": {
			job: started(makeJob("j")).Status(batchtesting.MakeStatus().
				StartTime(hourAgo.Time).Active(1).Ready(1).Terminating(0).Uncounted(nil, nil)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Phase(corev1.PodRunning).Condition(readyCondition).Obj()}
			},
		},
		"a success is recorded uncounted, its finalizer goes, then it is counted and the job completes": {
			job: started(makeJob("j")).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Phase(corev1.PodSucceeded).ExitCode("main", 0, doneAt).Obj()}
			},
			wantWrites: []batchv1.JobStatus{
				{
					StartTime: hourAgo, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
					UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a-uid"}},
					Conditions:              []batchv1.JobCondition{scm},
				},
				{
					StartTime: hourAgo, CompletionTime: timeAt(testNow), Succeeded: 1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
					UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
					Conditions:              []batchv1.JobCondition{scm, complete},
				},
			},
			wantPods:      []string{"patch a"},
			wantEvents:    []string{"Normal Completed Job completed"},
			wantFinishing: true,
		},
		"a failure past the backoff limit fails the job": {
			job: started(makeJob("j").BackoffLimit(0)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Phase(corev1.PodFailed).ExitCode("main", 1, doneAt).Obj()}
			},
			wantWrites: []batchv1.JobStatus{
				{
					StartTime: hourAgo, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
					UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Failed: []types.UID{"a-uid"}},
					Conditions:              []batchv1.JobCondition{cond(batchv1.JobFailureTarget, batch.JobReasonBackoffLimitExceeded, backoff)},
				},
				{
					StartTime: hourAgo, Failed: 1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
					UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
					Conditions: []batchv1.JobCondition{
						cond(batchv1.JobFailureTarget, batch.JobReasonBackoffLimitExceeded, backoff),
						cond(batchv1.JobFailed, batch.JobReasonBackoffLimitExceeded, backoff),
					},
				},
			},
			wantPods:      []string{"patch a"},
			wantEvents:    []string{"Warning BackoffLimitExceeded " + backoff},
			wantFinishing: true,
		},
		"suspending removes the finalizers, deletes the pods and sets Suspended": {
			job: started(makeJob("j").Suspend(true)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Phase(corev1.PodRunning).Condition(readyCondition).Obj()}
			},
			wantWrites: []batchv1.JobStatus{{
				Ready: ptr.To[int32](0), Terminating: ptr.To[int32](1),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
				Conditions:              []batchv1.JobCondition{cond(batchv1.JobSuspended, "JobSuspended", "Job suspended")},
			}},
			wantPods:   []string{"delete a", "patch a"},
			wantEvents: []string{"Normal SuccessfulDelete Deleted pod: a", "Normal Suspended Job suspended"},
		},
		"suspending a pod the host no longer has: deleted, still ready until the cache catches up": {
			job: started(makeJob("j").Suspend(true)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Phase(corev1.PodRunning).Condition(readyCondition).Obj()}
			},
			goneFromHost: true,
			wantWrites: []batchv1.JobStatus{{
				Ready: ptr.To[int32](1), Terminating: ptr.To[int32](1),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
				Conditions:              []batchv1.JobCondition{cond(batchv1.JobSuspended, "JobSuspended", "Job suspended")},
			}},
			wantPods:   []string{"patch a"},
			wantEvents: []string{"Normal Suspended Job suspended"},
		},
		"an ending job deletes its running pods and keeps their finalizers until counted": {
			job: started(makeJob("j").ActiveDeadlineSeconds(60)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Phase(corev1.PodRunning).Obj()}
			},
			// The deleted Pod of a failing Job counts as failed; the Job
			// stays FailureTarget while the Pod terminates.
			wantWrites: []batchv1.JobStatus{
				{
					StartTime: hourAgo, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](1),
					UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Failed: []types.UID{"a-uid"}},
					Conditions:              []batchv1.JobCondition{deadline},
				},
				{
					StartTime: hourAgo, Failed: 1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](1),
					UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
					Conditions:              []batchv1.JobCondition{deadline},
				},
			},
			wantPods:   []string{"delete a", "patch a"},
			wantEvents: []string{"Normal SuccessfulDelete Deleted pod: a"},
		},
		"an indexed job creates one pod per missing index": {
			job: makeJob("j").Indexed(3).Parallelism(2).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Index(0).Phase(corev1.PodSucceeded).Obj()}
			},
			wantWrites: []batchv1.JobStatus{{
				StartTime: timeAt(testNow), Active: 2, Succeeded: 1, CompletedIndexes: "0",
				Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
			}},
			wantPods:   []string{"create j-1-", "create j-2-", "patch a"},
			wantEvents: []string{"Normal SuccessfulCreate Created pod: j-1-1", "Normal SuccessfulCreate Created pod: j-2-2"},
		},
		"a job of an unknown completion mode is only warned about": {
			job:        makeJob("j").Obj(),
			wantEvents: []string{"Warning UnknownCompletionMode Skipped Job sync because completion mode is unknown"},
		},
	}
	cases["a job of an unknown completion mode is only warned about"].job.Spec.CompletionMode = ptr.To[batchv1.CompletionMode]("Sideways")
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{})
			f.addJobs(t, tc.job)
			if tc.pods != nil {
				for _, p := range tc.pods(tc.job) {
					if tc.goneFromHost {
						if err := f.podStore.Add(p); err != nil {
							t.Fatal(err)
						}
						continue
					}
					f.addPods(t, p)
				}
			}
			err := f.syncJob(t, tc.job)
			if (err != nil) != tc.wantErr {
				t.Fatalf("syncJob error = %v, want an error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.wantWrites, f.written(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("status writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantPods, podWrites(f.kube), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("pod writes (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, f.events(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			if got := f.finishing.has(tc.job.UID); got != tc.wantFinishing {
				t.Errorf("waiting for the finished status to show = %v, want %v", got, tc.wantFinishing)
			}
		})
	}
}

// TestSyncJobCreatesPod diffs a created Pod whole: the plan's template,
// the controller reference and the server's identity.
func TestSyncJobCreatesPod(t *testing.T) {
	cases := map[string]struct {
		identity   string
		wantLabels map[string]string
	}{
		"without identity": {
			wantLabels: map[string]string{
				batch.ControllerUIDLabel: "j-uid", batch.LegacyControllerUIDLabel: "j-uid",
				batch.JobNameLabel: "j", batch.LegacyJobNameLabel: "j", batch.JobCompletionIndexAnnotation: "0",
			},
		},
		"with identity": {
			identity: "server-a",
			wantLabels: map[string]string{
				batch.ControllerUIDLabel: "j-uid", batch.LegacyControllerUIDLabel: "j-uid",
				batch.JobNameLabel: "j", batch.LegacyJobNameLabel: "j", batch.JobCompletionIndexAnnotation: "0",
				batch.ServerIdentityLabel: "server-a",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := makeJob("j").Indexed(1).Obj()
			f := newFixture(t, fixtureOptions{cfg: Config{Identity: tc.identity}})
			f.addJobs(t, job)
			if err := f.syncJob(t, job); err != nil {
				t.Fatalf("syncJob: %v", err)
			}
			pods, err := f.kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := []corev1.Pod{{
				ObjectMeta: metav1.ObjectMeta{
					Name: "j-0-1", GenerateName: "j-0-", Namespace: "ns",
					Labels:      tc.wantLabels,
					Annotations: map[string]string{batch.JobCompletionIndexAnnotation: "0"},
					Finalizers:  []string{batch.JobTrackingFinalizer},
					OwnerReferences: []metav1.OwnerReference{{
						APIVersion: "batch.jobs.dev/v1", Kind: "Job", Name: "j", UID: "j-uid",
						Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
					}},
				},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Hostname:      "j-0",
					Containers: []corev1.Container{{
						Name: "main", Image: "busybox",
						Env: []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
							FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.labels['%s']", batch.JobCompletionIndexAnnotation)},
						}}},
					}},
				},
			}}
			if diff := cmp.Diff(want, pods.Items, cmpopts.IgnoreFields(corev1.Pod{}, "TypeMeta"), cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ManagedFields")); diff != "" {
				t.Errorf("created pods (-want +got):\n%s", diff)
			}
		})
	}
}

// refuseCreates makes the fake host refuse every Pod creation with err.
func refuseCreates(f *fixture, err error) {
	f.kube.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, err
	})
}

// TestSyncJobSlowStart: a refused creation stops the sync after its batch,
// the skipped creations are not expected, and the error sends the Job back
// to the queue.
func TestSyncJobSlowStart(t *testing.T) {
	cases := map[string]struct {
		// refuseAfter creations succeed, the rest are refused.
		refuseAfter  int
		wantRequests int
		wantActive   int32
	}{
		"the first creation refused: one request": {refuseAfter: 0, wantRequests: 1, wantActive: 0},
		// Batches 1 and 2 succeed, the batch of 4 has one refusal.
		"a refusal in the third batch: the batch ends, no fourth": {refuseAfter: 3, wantRequests: 7, wantActive: 6},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := makeJob("j").Parallelism(10).Completions(10).Obj()
			f := newFixture(t, fixtureOptions{})
			f.addJobs(t, job)
			requests := 0
			f.kube.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				// Creations of one batch run in parallel: the count is
				// taken under the fake's lock.
				requests++
				if requests > tc.refuseAfter && requests == tc.refuseAfter+1 {
					return true, nil, errors.New("exceeded quota: pods")
				}
				return false, nil, nil
			})
			err := f.syncJob(t, job)
			if err == nil {
				t.Fatalf("syncJob succeeded, want the creation error")
			}
			if got := countActions(f.kube.Actions(), "create", "pods"); got != tc.wantRequests {
				t.Errorf("creation requests = %d, want %d", got, tc.wantRequests)
			}
			if c, _, _ := f.podExpect.counts("ns/j"); c != int(tc.wantActive) {
				t.Errorf("expected creations = %d, want %d (the successful ones only)", c, tc.wantActive)
			}
			if w := f.written(); len(w) != 1 || w[0].Active != tc.wantActive {
				t.Errorf("status writes = %+v, want one with active %d", w, tc.wantActive)
			}
		})
	}
}

// TestSyncJobNamespaceTerminating: a creation refused because the namespace
// is going is remembered, so that the next sync stops holding a failed Pod
// for a replacement that cannot come.
func TestSyncJobNamespaceTerminating(t *testing.T) {
	job := started(makeJob("j").Indexed(1).BackoffLimitPerIndex(2)).Obj()
	failed := makePod("a", job).Index(0).Phase(corev1.PodFailed).ExitCode("main", 1, testNow.Add(-time.Hour)).Obj()
	f := newFixture(t, fixtureOptions{})
	f.addJobs(t, job)
	f.addPods(t, failed)
	refused := apierrors.NewForbidden(corev1.Resource("pods"), "", errors.New("namespace ns is being terminated"))
	refused.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
	refuseCreates(f, refused)

	if err := f.syncJob(t, job); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	if diff := cmp.Diff([]string{"create j-0-"}, podWrites(f.kube)); diff != "" {
		t.Errorf("first sync pod writes (-want +got): the failed pod waits for its replacement\n%s", diff)
	}
	if !f.nsTerminating.has(job.UID) {
		t.Fatalf("the refusal was not remembered")
	}
	if events := f.events(); len(events) != 0 {
		t.Errorf("events = %v, want none for a namespace being deleted", events)
	}
	if err := f.syncJob(t, job); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if diff := cmp.Diff([]string{"create j-0-", "patch a"}, podWrites(f.kube)); diff != "" {
		t.Errorf("pod writes after the refusal (-want +got): the finalizer must go\n%s", diff)
	}
}

// TestSyncJobFinishedExpectations: once this controller wrote a Job
// finished, syncs of the stale cached copy do nothing until the informer
// shows the finish.
func TestSyncJobFinishedExpectations(t *testing.T) {
	running := started(makeJob("j")).Obj()
	finished := started(makeJob("j")).Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "done")).Obj()
	cases := map[string]struct {
		cached        *batchv1.Job
		finishing     bool
		wantWrites    int
		wantFinishing bool
	}{
		"marked and still running in the cache: skipped":  {cached: running, finishing: true, wantWrites: 0, wantFinishing: true},
		"marked and finished in the cache: the mark goes": {cached: finished, finishing: true, wantWrites: 0},
		"not marked: synced":                              {cached: running, wantWrites: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{})
			f.addJobs(t, tc.cached)
			if tc.finishing {
				f.finishing.add(tc.cached.UID)
			}
			if err := f.syncJob(t, tc.cached); err != nil {
				t.Fatalf("syncJob: %v", err)
			}
			if got := len(f.written()); got != tc.wantWrites {
				t.Errorf("status writes = %d, want %d", got, tc.wantWrites)
			}
			if got := f.finishing.has(tc.cached.UID); got != tc.wantFinishing {
				t.Errorf("marked = %v, want %v", got, tc.wantFinishing)
			}
		})
	}
}

// TestSyncJobRemembersItsStart: a sync of a running Job remembers when it
// began, which spaces the syncs its Pod events queue; a sync that finds
// the Job finished or gone forgets it.
func TestSyncJobRemembersItsStart(t *testing.T) {
	running := started(makeJob("j")).Obj()
	finished := started(makeJob("j")).Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "done")).Obj()
	earlier := testNow.Add(-time.Hour)
	type remembered struct {
		Began time.Time
		Kept  bool
	}
	cases := map[string]struct {
		cached    *batchv1.Job
		finishing bool
		want      remembered
	}{
		"running: this sync's start": {cached: running, want: remembered{testNow, true}},
		"finished: forgotten":        {cached: finished, want: remembered{}},
		"gone: forgotten":            {want: remembered{}},
		"skipped until the informer shows its finish: the earlier start stays": {cached: running, finishing: true, want: remembered{earlier, true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{})
			if tc.cached != nil {
				f.addJobs(t, tc.cached)
				if tc.finishing {
					f.finishing.add(tc.cached.UID)
				}
			}
			f.starts.note("ns/j", earlier)
			if err := f.syncJob(t, running); err != nil {
				t.Fatalf("syncJob: %v", err)
			}
			var got remembered
			got.Began, got.Kept = f.starts.last("ns/j")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("remembered start (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSyncJobStaleCache: a sync whose cached Job is older than the last
// status this controller wrote starts from the Job that write returned; any
// other sync starts from the cache, and the copy kept of the write goes
// once it can no longer stand in for the cache.
func TestSyncJobStaleCache(t *testing.T) {
	job := started(makeJob("j"))
	wrote := func(rv string) *batchv1.Job { return job.ResourceVersion(rv).Obj() }
	// Every sync here creates the Job's Pod and writes its status, based
	// on the Job it started from; the write gets resourceVersion 100 and
	// is kept.
	from := func(rv string) syncOutcome {
		return syncOutcome{PodWrites: []string{"create j-"}, BasedOn: []string{rv}, Syncs: 1, Kept: "100"}
	}
	cases := map[string]struct {
		cached *batchv1.Job
		wrote  *batchv1.Job
		want   syncOutcome
	}{
		"cache older than the last write: from the write": {
			cached: job.ResourceVersion("5").Obj(), wrote: wrote("7"), want: from("7"),
		},
		"versions of different lengths compare as numbers: from the write": {
			cached: job.ResourceVersion("9").Obj(), wrote: wrote("10"), want: from("10"),
		},
		"cache at the last write: from the cache": {
			cached: job.ResourceVersion("7").Obj(), wrote: wrote("7"), want: from("7"),
		},
		"cache past the last write: from the cache": {
			cached: job.ResourceVersion("12").Obj(), wrote: wrote("7"), want: from("12"),
		},
		"cached version not a number: from the cache": {
			cached: job.ResourceVersion("x5").Obj(), wrote: wrote("7"), want: from("x5"),
		},
		"written version not a number: from the cache": {
			cached: job.ResourceVersion("5").Obj(), wrote: wrote("x7"), want: from("5"),
		},
		"the last write went to an older job of that name: from the cache": {
			cached: job.ResourceVersion("5").Obj(),
			wrote:  job.ResourceVersion("7").UID("old-uid").Obj(),
			want:   from("5"),
		},
		"no write kept: from the cache": {
			cached: job.ResourceVersion("5").Obj(), want: from("5"),
		},
		"job gone: the copy goes": {
			wrote: wrote("7"),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{})
			based := f.bumpResourceVersions(100)
			if tc.cached != nil {
				f.addJobs(t, tc.cached)
			}
			if tc.wrote != nil {
				f.ownWrites.wrote("ns/j", tc.wrote)
			}
			got := f.syncOutcome(t, "ns/j", based)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("sync (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSyncJobAfterOwnStatusWrite follows one Job through a sync that writes
// its status twice (the finished Pod made durable, then counted), a sync
// while the informer shows only the first write, and one once it shows the
// second. Started from the first write's copy, the middle sync would count
// the finished Pod again into a write the server refuses.
func TestSyncJobAfterOwnStatusWrite(t *testing.T) {
	job := started(makeJob("j").Parallelism(2).Completions(2)).Active(2).Obj()
	f := newFixture(t, fixtureOptions{})
	based := f.bumpResourceVersions(2)
	f.addJobs(t, job)
	f.addPods(t,
		makePod("a", job).Phase(corev1.PodSucceeded).ExitCode("main", 0, testNow.Add(-time.Minute)).Obj(),
		makePod("b", job).Phase(corev1.PodRunning).Obj())

	// The second write's Job is the one kept.
	first := f.syncOutcome(t, "ns/j", based)
	if diff := cmp.Diff(syncOutcome{PodWrites: []string{"patch a"}, BasedOn: []string{"1", "2"}, Syncs: 1, Kept: "3"}, first); diff != "" {
		t.Fatalf("first sync (-want +got):\n%s", diff)
	}

	latest, err := f.jobs.BatchV1().Jobs("ns").Get(context.Background(), "j", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	interim := latest.DeepCopy()
	interim.ResourceVersion = "2"
	interim.Status.Succeeded = 0
	interim.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a-uid"}}
	f.cacheJob(t, interim)
	f.catchUpPods(t)
	if diff := cmp.Diff(syncOutcome{Syncs: 1, Kept: "3"}, f.syncOutcome(t, "ns/j", based), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("sync while the informer shows the first write (-want +got):\n%s", diff)
	}

	// Nothing is left to do, so nothing is written: the copy goes.
	f.cacheJob(t, latest)
	if diff := cmp.Diff(syncOutcome{Syncs: 1}, f.syncOutcome(t, "ns/j", based), cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("sync once the informer shows the second write (-want +got):\n%s", diff)
	}
}

// syncOutcome is what one sync did: the requests it sent, the
// resourceVersions its status writes were based on, how many syncs the
// metrics counted, and the resourceVersion of the status write of the Job
// still kept after it ("" for none).
type syncOutcome struct {
	PodWrites []string
	BasedOn   []string
	Syncs     float64
	Kept      string
}

// syncOutcome syncs key, which must sync without error, and reports what
// the sync did; based is the record of bumpResourceVersions.
func (f *fixture) syncOutcome(t *testing.T, key string, based *[]string) syncOutcome {
	t.Helper()
	f.kube.ClearActions()
	*based = nil
	syncs := jobSyncs(t)
	if err := f.Controller.syncJob(f.ctx, key); err != nil {
		t.Fatalf("syncJob: %v", err)
	}
	return syncOutcome{
		PodWrites: podWrites(f.kube),
		BasedOn:   *based,
		Syncs:     jobSyncs(t) - syncs,
		Kept:      f.ownWrites.kept(key),
	}
}

// bumpResourceVersions has the fake server give each status write the next
// resourceVersion from first on, as etcd would (its tracker keeps the
// version it is sent). The returned slice records the version each write
// was based on.
func (f *fixture) bumpResourceVersions(first int) *[]string {
	next := first
	based := &[]string{}
	f.jobs.PrependReactor("update", "jobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "status" {
			job := action.(clienttesting.UpdateAction).GetObject().(*batchv1.Job)
			*based = append(*based, job.ResourceVersion)
			job.ResourceVersion = strconv.Itoa(next)
			next++
		}
		return false, nil, nil
	})
	return based
}

// jobSyncs sums job_controller_job_syncs_total over all its labels.
func jobSyncs(t *testing.T) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	total := 0.0
	for _, family := range families {
		if family.GetName() != "job_controller_job_syncs_total" {
			continue
		}
		for _, m := range family.GetMetric() {
			total += m.GetCounter().GetValue()
		}
	}
	return total
}

// kept returns the resourceVersion of the Job kept for key, "" if none.
// wrote records a status write of key that returned written, with no
// update event shown while it was in flight.
func (w *statusWrites) wrote(key string, written *batchv1.Job) {
	w.begin(key)
	w.end(key, written)
}

func (w *statusWrites) kept(key string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if job, ok := w.byJob[key]; ok {
		return job.ResourceVersion
	}
	return ""
}

// TestSyncJobMaxUncountedPods: with more finished Pods than one sync may
// record, successive syncs count them all, and the Job completes only
// when none is left.
func TestSyncJobMaxUncountedPods(t *testing.T) {
	saved := MaxUncountedPods
	MaxUncountedPods = 2
	t.Cleanup(func() { MaxUncountedPods = saved })

	job := started(makeJob("j").Parallelism(5).Completions(5)).Obj()
	f := newFixture(t, fixtureOptions{})
	f.addJobs(t, job)
	for _, name := range []string{"a", "b", "c", "d", "e"} {
		f.addPods(t, makePod(name, job).Phase(corev1.PodSucceeded).ExitCode("main", 0, testNow.Add(-time.Minute)).Obj())
	}
	// The controller's own writes queue no sync: a capped sync queues the
	// next itself.
	q := newRecordingQueue[string]()
	f.queue.ShutDown()
	f.queue = q
	type progress struct {
		Succeeded int32
		Finished  bool
		Patched   int
		Queued    int // syncs of ns/j queued so far, all a batch period ahead
	}
	queued := func() int {
		n := 0
		for _, it := range q.items() {
			if it == (queued[string]{Key: "ns/j", Delay: SyncJobBatchPeriod}) {
				n++
			}
		}
		return n
	}
	var got []progress
	for range 4 {
		latest := f.syncAndCatchUp(t, job)
		job = latest
		got = append(got, progress{Succeeded: latest.Status.Succeeded, Finished: decide.IsFinished(latest),
			Patched: countActions(f.kube.Actions(), "patch", "pods"), Queued: queued()})
		f.finishing.remove(latest.UID)
	}
	want := []progress{{2, false, 2, 1}, {4, false, 4, 2}, {5, true, 5, 2}, {5, true, 5, 2}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("progress sync by sync (-want +got):\n%s", diff)
	}
}

// syncAndCatchUp syncs job, lets the caches catch up with the controller's
// writes, as the informers would between syncs, and returns the Job as
// written.
func (f *fixture) syncAndCatchUp(t *testing.T, job *batchv1.Job) *batchv1.Job {
	t.Helper()
	if err := f.syncJob(t, job); err != nil {
		t.Fatalf("syncJob: %v", err)
	}
	latest, err := f.jobs.BatchV1().Jobs(job.Namespace).Get(context.Background(), job.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	f.cacheJob(t, latest)
	f.catchUpPods(t)
	return latest
}

// catchUpPods copies the fake host's Pods into the informer's cache, and
// observes the finalizer removals, as the Pod informer would.
func (f *fixture) catchUpPods(t *testing.T) {
	t.Helper()
	pods, err := f.kube.CoreV1().Pods("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		p := &pods.Items[i]
		if err := f.podStore.Update(p); err != nil {
			t.Fatal(err)
		}
		if !decide.HasTrackingFinalizer(p) {
			f.finalizerExpect.observe("ns/j", p.UID)
		}
	}
}

// TestSyncJobFailureRecord: the failure record of a sync is kept once the
// status holding the failures is written, and it delays the replacement.
func TestSyncJobFailureRecord(t *testing.T) {
	job := started(makeJob("j").BackoffLimit(6)).Obj()
	failedAt := testNow.Add(-time.Second)
	f := newFixture(t, fixtureOptions{})
	f.addJobs(t, job)
	f.addPods(t, makePod("a", job).Phase(corev1.PodFailed).ExitCode("main", 1, failedAt).Obj())
	f.shutDownQueues()
	q := newRecordingQueue[string]()
	f.queue = q

	if err := f.syncJob(t, job); err != nil {
		t.Fatalf("syncJob: %v", err)
	}
	want := decide.FailureRecord{FailuresSinceSuccess: 1, LastFailure: &failedAt}
	if diff := cmp.Diff(want, f.failures.get("ns/j")); diff != "" {
		t.Errorf("failure record (-want +got):\n%s", diff)
	}
	if got := countActions(f.kube.Actions(), "create", "pods"); got != 0 {
		t.Errorf("creations = %d, want none within the backoff", got)
	}
	if diff := cmp.Diff([]queued[string]{{Key: "ns/j", Delay: 9 * time.Second}}, q.items()); diff != "" {
		t.Errorf("requeue (-want +got):\n%s", diff)
	}
}

// TestSyncJobStatusConflict: a refused status write is the sync's error and
// keeps the failure record unchanged.
func TestSyncJobStatusConflict(t *testing.T) {
	job := started(makeJob("j").BackoffLimit(6)).Obj()
	f := newFixture(t, fixtureOptions{})
	f.addJobs(t, job)
	f.addPods(t, makePod("a", job).Phase(corev1.PodFailed).ExitCode("main", 1, testNow).Obj())
	f.jobs.PrependReactor("update", "jobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewConflict(batchv1.Resource("jobs"), "j", errors.New("changed"))
	})
	err := f.syncJob(t, job)
	if !apierrors.IsConflict(err) {
		t.Fatalf("syncJob error = %v, want the conflict", err)
	}
	if diff := cmp.Diff(decide.FailureRecord{}, f.failures.get("ns/j")); diff != "" {
		t.Errorf("failure record (-want +got):\n%s", diff)
	}
	if got := countActions(f.kube.Actions(), "patch", "pods"); got != 0 {
		t.Errorf("finalizer removals = %d, want none before the status holds the pod", got)
	}
}
