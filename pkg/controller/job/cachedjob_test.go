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
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// TestTrimForCache keeps a Job this controller runs whole but for its
// managedFields, and keeps of a finished or externally managed Job only a
// doneJob, which stands for a Job with exactly the fields the controller
// reads of it.
func TestTrimForCache(t *testing.T) {
	deleting := metav1.NewTime(testNow)
	finishedAt := metav1.NewTime(testNow.Add(-time.Minute))
	withFields := func(j *batchv1.Job) *batchv1.Job {
		j.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:spec":{}}`)}}
		j.Annotations = map[string]string{"note": "kept"}
		j.Labels = map[string]string{"team": "a"}
		j.Generation = 2
		return j
	}
	running := makeJob("running").Completions(3).Obj()
	suspended := makeJob("suspended").Suspend(true).Obj()
	failing := makeJob("failing").Condition(cond(batchv1.JobFailureTarget, batch.JobReasonBackoffLimitExceeded, "")).Obj()
	ours := makeJob("ours").ManagedBy(batch.JobControllerName).Obj()
	complete := makeJob("complete").Indexed(3).TTLSecondsAfterFinished(60).
		Status(batchtesting.MakeStatus().Succeeded(3).CompletedIndexes("0-2").CompletionTime(finishedAt.Time)).
		Condition(cond(batchv1.JobSuccessCriteriaMet, batch.JobReasonCompletionsReached, "")).
		Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "done")).Obj()
	failed := makeJob("failed").
		Condition(cond(batchv1.JobFailureTarget, batch.JobReasonBackoffLimitExceeded, "")).
		Condition(cond(batchv1.JobFailed, batch.JobReasonBackoffLimitExceeded, "too many")).Obj()
	failed.DeletionTimestamp = &deleting
	external := makeJob("external").ManagedBy("example.com/dispatcher").TTLSecondsAfterFinished(5).
		Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "")).Obj()

	// done is the Job a doneJob stands for: the metadata the informer and
	// the controller key and compare by, and what the controller reads of
	// a Job it no longer syncs.
	done := func(j *batchv1.Job) *batchv1.Job {
		want := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{
			Name: j.Name, Namespace: j.Namespace, UID: j.UID, ResourceVersion: j.ResourceVersion,
			Generation: 2, CreationTimestamp: j.CreationTimestamp, DeletionTimestamp: j.DeletionTimestamp,
		}}
		want.Spec.ManagedBy = j.Spec.ManagedBy
		if isExternal(j) {
			return want
		}
		want.Spec.Selector = j.Spec.Selector
		want.Spec.TTLSecondsAfterFinished = j.Spec.TTLSecondsAfterFinished
		want.Spec.CompletionMode = j.Spec.CompletionMode
		end, _ := decide.Finished(j)
		want.Status.Conditions = []batchv1.JobCondition{{Type: end.Type, Status: end.Status, LastTransitionTime: end.LastTransitionTime}}
		want.Status.CompletionTime = j.Status.CompletionTime
		return want
	}
	for _, tc := range []struct {
		job  *batchv1.Job
		want *batchv1.Job
		// asDone: the cache holds a doneJob, not the Job.
		asDone bool
	}{
		{job: running},
		{job: suspended},
		{job: failing},
		{job: ours},
		{job: complete, asDone: true},
		{job: failed, asDone: true},
		{job: external, asDone: true},
	} {
		t.Run(tc.job.Name, func(t *testing.T) {
			in := withFields(tc.job.DeepCopy())
			want := in.DeepCopy()
			want.ManagedFields = nil
			if tc.asDone {
				want = done(in)
			}
			got, err := TrimForCache(in)
			if err != nil {
				t.Fatal(err)
			}
			if _, isDone := got.(*doneJob); isDone != tc.asDone {
				t.Fatalf("TrimForCache gave a %T; want a doneJob: %v", got, tc.asDone)
			}
			job, ok := jobFrom(got)
			if !ok {
				t.Fatalf("jobFrom(%T) found no Job", got)
			}
			if diff := cmp.Diff(want, job); diff != "" {
				t.Errorf("cached Job (-want +got):\n%s", diff)
			}
			// A second pass (the informer's relist) changes nothing.
			again, err := TrimForCache(got)
			if err != nil || again != got {
				t.Errorf("TrimForCache of its own result = %v, %v; want it unchanged", again, err)
			}
		})
	}

	// Anything else passes through.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if got, err := TrimForCache(pod); err != nil || got != any(pod) {
		t.Errorf("TrimForCache(Pod) = %v, %v; want the Pod itself", got, err)
	}
}

// TestJobCache reads Jobs and doneJobs from an indexer: a Job made from a
// doneJob is the caller's to change, a missing one is NotFound as from a
// lister, and a tombstone stands for the Job it holds.
func TestJobCache(t *testing.T) {
	indexer := cache.NewIndexer(cache.MetaNamespaceKeyFunc, cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc})
	running := makeJob("running").Obj()
	finished := makeJob("finished").TTLSecondsAfterFinished(10).
		Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "")).Obj()
	other := makeJob("other").Obj()
	other.Namespace = "elsewhere"
	for _, j := range []*batchv1.Job{running, finished, other} {
		obj, err := TrimForCache(j.DeepCopy())
		if err != nil {
			t.Fatal(err)
		}
		if err := indexer.Add(obj); err != nil {
			t.Fatal(err)
		}
	}
	c := jobCache{indexer: indexer}

	got, err := c.get("ns", "finished")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != "finished" || !decide.IsFinished(got) || *got.Spec.TTLSecondsAfterFinished != 10 {
		t.Errorf("get(finished) = %+v; want the finished Job with its TTL", got)
	}
	*got.Spec.TTLSecondsAfterFinished = 99
	got.Status.Conditions[0].Status = corev1.ConditionFalse
	again, err := c.get("ns", "finished")
	if err != nil {
		t.Fatal(err)
	}
	if *again.Spec.TTLSecondsAfterFinished != 10 || !decide.IsFinished(again) {
		t.Error("changing a Job made from a doneJob changed the cache")
	}

	if _, err := c.get("ns", "missing"); !apierrors.IsNotFound(err) {
		t.Errorf("get(missing): %v; want NotFound", err)
	}

	all := func(*string, *metav1.LabelSelector) bool { return true }
	jobs, err := c.list("ns", all)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"finished", "running"}, names); diff != "" {
		t.Errorf("list(ns) names (-want +got):\n%s", diff)
	}

	obj, _, err := indexer.GetByKey("ns/finished")
	if err != nil {
		t.Fatal(err)
	}
	fromTombstone, ok := jobFrom(cache.DeletedFinalStateUnknown{Key: "ns/finished", Obj: obj})
	if !ok || fromTombstone.UID != finished.UID {
		t.Errorf("jobFrom(tombstone of a doneJob) = %v, %v; want the finished Job", fromTombstone, ok)
	}
	if _, ok := jobFrom(&corev1.Pod{}); ok {
		t.Error("jobFrom(Pod) found a Job")
	}
}

// TestSelectingJobs finds the Jobs that may adopt a Pod among whole Jobs
// and doneJobs alike: ours whose selector matches, running or finished,
// never another controller's, never one whose selector does not match.
func TestSelectingJobs(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	// Every selector asks for team=a.
	selecting := func(b *jobBuilder) *batchv1.Job {
		j := b.Obj()
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"team": "a"}}
		return j
	}
	running := selecting(makeJob("running"))
	finished := selecting(makeJob("finished").Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "")))
	external := selecting(makeJob("external").ManagedBy("example.com/dispatcher"))
	other := makeJob("other").Obj()
	f.addJobs(t, running, finished, external, other)

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", Labels: map[string]string{"team": "a"}}}
	var names []string
	for _, j := range f.selectingJobs(pod) {
		names = append(names, j.Name)
	}
	slices.Sort(names)
	if diff := cmp.Diff([]string{"finished", "running"}, names); diff != "" {
		t.Errorf("Jobs selecting the Pod (-want +got):\n%s", diff)
	}
	pod.Labels = nil
	if got := f.selectingJobs(pod); len(got) != 0 {
		t.Errorf("a Pod without labels is selected by %d Jobs; want none", len(got))
	}
}
