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

package integration

import (
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	batchv1beta1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1beta1"
	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// v1beta1DeprecationWarning is the Warning header kube-apiserver's generic
// endpoints send for every request to a deprecated version, built from the
// prerelease-lifecycle tags of v1beta1.Job (deprecated in 1.37, removed three
// minors later).
const v1beta1DeprecationWarning = "batch.jobs.dev/v1beta1 Job is deprecated in v1.37+, unavailable in v1.40+; use batch.jobs.dev/v1 Job"

// TestJobAPI drives one server through every verb of the jobs resource and
// its status subresource. The subtests share the server (each in its own
// namespace) because starting one costs more than most of them.
//
// The watch cache shares equal values among the Jobs it holds (the
// containers of every Job of one template are one list), which is safe
// only as long as no request writes a value read from storage in place. A
// witness Job, left alone while the subtests go through every verb on Jobs
// of the same template, must read back unchanged once they are done.
func TestJobAPI(t *testing.T) {
	ts := framework.StartServer(t)
	ctx := testContext(t)
	ns := testNamespace(t)
	witnesses := newTestClient(t, ts).BatchV1().Jobs(ns)
	witness, err := witnesses.Create(ctx, newTestJob(ns, "witness").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating the witness job: %v", err)
	}
	t.Run("verbs", func(t *testing.T) { testJobVerbs(t, ts) })
	got, err := witnesses.Get(ctx, witness.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the witness job: %v", err)
	}
	if diff := cmp.Diff(witness, got, ignoreTypeMeta); diff != "" {
		t.Errorf("the subtests changed a job they never wrote (-created +now):\n%s", diff)
	}
}

// testJobVerbs runs the subtests of TestJobAPI in parallel.
func testJobVerbs(t *testing.T, ts *framework.TestServer) {
	for _, tc := range []struct {
		name string
		test func(*testing.T, *framework.TestServer)
	}{
		{"create", testJobCreate},
		{"get and list with selectors", testJobGetList},
		{"watch", testJobWatch},
		{"update", testJobUpdate},
		{"update status", testJobUpdateStatus},
		{"patch", testJobPatch},
		{"bad patch", testJobBadPatch},
		{"delete", testJobDelete},
		{"v1beta1", testJobV1beta1},
		{"bad input", testJobBadInput},
		{"apply with two managers", testJobApplyTwoManagers},
		{"apply status", testJobApplyStatus},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.test(t, ts)
		})
	}
}

// testJobCreate checks what the server makes of a new Job: status cleared,
// generation 1, the generated selector and template labels, and the defaults
// kube-apiserver applies to batch/v1, compared as whole objects.
func testJobCreate(t *testing.T, ts *framework.TestServer) {
	ctx := testContext(t)
	ns := testNamespace(t)
	clientset := newTestClient(t, ts)
	client := clientset.BatchV1().Jobs(ns)

	startTime := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	cases := []struct {
		name string
		job  *batchv1.Job
		want func(uid string) *batchv1.Job
	}{
		{
			name: "generated selector and labels, defaults, status cleared",
			job: newTestJob(ns, "generated").Status(batchv1.JobStatus{
				StartTime: &startTime, Active: 2, Succeeded: 1,
				Conditions: []batchv1.JobCondition{newTestJobCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, "")},
			}).Obj(),
			want: func(uid string) *batchv1.Job {
				labels := newTestJobGeneratedLabels("generated", uid)
				return &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "generated", Generation: 1, Labels: labels},
					Spec: batchv1.JobSpec{
						Parallelism:    ptr.To[int32](1),
						Completions:    ptr.To[int32](1),
						BackoffLimit:   ptr.To[int32](6),
						Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{testLabelControllerUID: uid}},
						ManualSelector: ptr.To(false),
						Template: corev1.PodTemplateSpec{
							ObjectMeta: metav1.ObjectMeta{Labels: labels},
							Spec:       newTestJobDefaultedPodSpec("main"),
						},
						CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
						Suspend:              ptr.To(false),
						PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
					},
				}
			},
		},
		{
			name: "manual selector: nothing generated, Job labels from the template",
			job: newTestJob(ns, "manual").
				ManualSelector(map[string]string{"app": "manual"}).
				TemplateLabels(map[string]string{"app": "manual"}).
				Completions(3).Parallelism(2).Suspend(true).Obj(),
			want: func(string) *batchv1.Job {
				return &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "manual", Generation: 1, Labels: map[string]string{"app": "manual"}},
					Spec: batchv1.JobSpec{
						Parallelism:    ptr.To[int32](2),
						Completions:    ptr.To[int32](3),
						BackoffLimit:   ptr.To[int32](6),
						Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{"app": "manual"}},
						ManualSelector: ptr.To(true),
						Template: corev1.PodTemplateSpec{
							ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "manual"}},
							Spec:       newTestJobDefaultedPodSpec("main"),
						},
						CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
						Suspend:              ptr.To(true),
						PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
					},
				}
			},
		},
		{
			name: "indexed with per-index backoff and a pod failure policy",
			job: func() *batchv1.Job {
				j := newTestJob(ns, "indexed").Completions(4).Obj()
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
				j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
					Action:          batchv1.PodFailurePolicyActionIgnore,
					OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
				}}}
				return j
			}(),
			want: func(uid string) *batchv1.Job {
				labels := newTestJobGeneratedLabels("indexed", uid)
				return &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "indexed", Generation: 1, Labels: labels},
					Spec: batchv1.JobSpec{
						Parallelism:          ptr.To[int32](1),
						Completions:          ptr.To[int32](4),
						BackoffLimit:         ptr.To[int32](math.MaxInt32),
						BackoffLimitPerIndex: ptr.To[int32](1),
						PodFailurePolicy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
							Action: batchv1.PodFailurePolicyActionIgnore,
							OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{
								Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
							}},
						}}},
						Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{testLabelControllerUID: uid}},
						ManualSelector: ptr.To(false),
						Template: corev1.PodTemplateSpec{
							ObjectMeta: metav1.ObjectMeta{Labels: labels},
							Spec:       newTestJobDefaultedPodSpec("main"),
						},
						CompletionMode:       ptr.To(batchv1.IndexedCompletion),
						Suspend:              ptr.To(false),
						PodReplacementPolicy: ptr.To(batchv1.Failed),
					},
				}
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			created, err := client.Create(ctx, tc.job, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating job: %v", err)
			}
			if created.UID == "" || created.ResourceVersion == "" || created.CreationTimestamp.IsZero() {
				t.Errorf("server-set metadata missing: uid %q, resourceVersion %q, creationTimestamp %v",
					created.UID, created.ResourceVersion, created.CreationTimestamp)
			}
			if diff := cmp.Diff(tc.want(string(created.UID)), created, ignoreServerSetMeta, ignoreTypeMeta); diff != "" {
				t.Errorf("created job (-want +got):\n%s", diff)
			}
			got, err := client.Get(ctx, tc.job.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("getting job: %v", err)
			}
			if diff := cmp.Diff(created, got, ignoreTypeMeta); diff != "" {
				t.Errorf("get after create (-create +get):\n%s", diff)
			}
		})
	}

	t.Run("same name twice", func(t *testing.T) {
		_, err := client.Create(ctx, newTestJob(ns, "generated").Obj(), metav1.CreateOptions{})
		if !apierrors.IsAlreadyExists(err) {
			t.Errorf("creating a second job with the same name: got %v, want AlreadyExists", err)
		}
	})
}

// testJobGetList checks get, and list with label selectors and the field
// selectors metadata.name and status.successful.
func testJobGetList(t *testing.T, ts *framework.TestServer) {
	ctx := testContext(t)
	ns := testNamespace(t)
	clientset := newTestClient(t, ts)
	client := clientset.BatchV1().Jobs(ns)

	jobs := map[string]*batchv1.Job{}
	for _, j := range []*batchv1.Job{
		newTestJob(ns, "a").Labels(map[string]string{"tier": "x"}).Obj(),
		newTestJob(ns, "b").Labels(map[string]string{"tier": "y"}).Obj(),
		newTestJob(ns, "c").Completions(3).Obj(),
	} {
		created, err := client.Create(ctx, j, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating job %s: %v", j.Name, err)
		}
		jobs[j.Name] = created
	}
	// status.successful is status.succeeded, which only the status subresource writes.
	c := jobs["c"].DeepCopy()
	c.Status.Succeeded = 2
	c, err := client.UpdateStatus(ctx, c, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating status of c: %v", err)
	}
	jobs["c"] = c

	got, err := client.Get(ctx, "b", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting b: %v", err)
	}
	if diff := cmp.Diff(jobs["b"], got, ignoreTypeMeta); diff != "" {
		t.Errorf("get b (-created +got):\n%s", diff)
	}
	if _, err := client.Get(ctx, "missing", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("getting a missing job: got %v, want NotFound", err)
	}

	for _, tc := range []struct {
		name string
		opts metav1.ListOptions
		want []string
	}{
		{name: "everything", want: []string{"a", "b", "c"}},
		{name: "label equality", opts: metav1.ListOptions{LabelSelector: "tier=x"}, want: []string{"a"}},
		{name: "label set", opts: metav1.ListOptions{LabelSelector: "tier in (x,y)"}, want: []string{"a", "b"}},
		{name: "label absent", opts: metav1.ListOptions{LabelSelector: "!tier"}, want: []string{"c"}},
		{name: "generated label", opts: metav1.ListOptions{LabelSelector: testLabelLegacyJobName + "=c"}, want: []string{"c"}},
		{name: "metadata.name", opts: metav1.ListOptions{FieldSelector: "metadata.name=b"}, want: []string{"b"}},
		{name: "metadata.name not equal", opts: metav1.ListOptions{FieldSelector: "metadata.name!=b"}, want: []string{"a", "c"}},
		{name: "metadata.namespace", opts: metav1.ListOptions{FieldSelector: "metadata.namespace=" + ns}, want: []string{"a", "b", "c"}},
		{name: "status.successful", opts: metav1.ListOptions{FieldSelector: "status.successful=2"}, want: []string{"c"}},
		{name: "status.successful zero", opts: metav1.ListOptions{FieldSelector: "status.successful=0"}, want: []string{"a", "b"}},
		{name: "label and field", opts: metav1.ListOptions{LabelSelector: "tier", FieldSelector: "metadata.name!=a"}, want: []string{"b"}},
		{name: "nothing matches", opts: metav1.ListOptions{FieldSelector: "status.successful=7"}, want: nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, err := client.List(ctx, tc.opts)
			if err != nil {
				t.Fatalf("listing: %v", err)
			}
			var want []batchv1.Job
			for _, name := range tc.want {
				want = append(want, *jobs[name])
			}
			if diff := cmp.Diff(want, list.Items, ignoreTypeMeta, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("listed jobs (-want +got):\n%s", diff)
			}
			if list.ResourceVersion == "" {
				t.Errorf("list has no resourceVersion")
			}
		})
	}

	t.Run("unsupported field selector", func(t *testing.T) {
		_, err := client.List(ctx, metav1.ListOptions{FieldSelector: "spec.parallelism=1"})
		if !apierrors.IsBadRequest(err) {
			t.Errorf("listing with field selector spec.parallelism: got %v, want BadRequest", err)
		}
	})
}

// testJobWatch checks that a watch delivers ADDED, MODIFIED and DELETED in
// order with the objects the writes returned, and that a watch resumed from
// a resourceVersion delivers only what came after it.
func testJobWatch(t *testing.T, ts *framework.TestServer) {
	ctx := testContext(t)
	ns := testNamespace(t)
	clientset := newTestClient(t, ts)
	client := clientset.BatchV1().Jobs(ns)

	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing: %v", err)
	}
	w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
	if err != nil {
		t.Fatalf("watching: %v", err)
	}
	defer w.Stop()

	created, err := client.Create(ctx, newTestJob(ns, "watched").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating: %v", err)
	}
	modified := created.DeepCopy()
	modified.Spec.Parallelism = ptr.To[int32](2)
	modified, err = client.Update(ctx, modified, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating: %v", err)
	}
	if err := client.Delete(ctx, "watched", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting: %v", err)
	}
	// A Job created after the delete: the next event of a resumed watch
	// must be this one, which shows it delivered nothing in between.
	sentinel, err := client.Create(ctx, newTestJob(ns, "sentinel").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating sentinel: %v", err)
	}

	type event struct {
		Type watch.EventType
		Job  *batchv1.Job
	}
	all := []event{
		{watch.Added, created},
		{watch.Modified, modified},
		{watch.Deleted, modified},
		{watch.Added, sentinel},
	}
	receive := func(t *testing.T, w watch.Interface, want []event) {
		t.Helper()
		var got []event
		for range want {
			ev := nextTestWatchEvent(ctx, t, w)
			job, ok := ev.Object.(*batchv1.Job)
			if !ok {
				t.Fatalf("watch event %s carries %T, want *v1.Job: %v", ev.Type, ev.Object, ev.Object)
			}
			if ev.Type == watch.Deleted {
				// The deleted object is the last stored state at the
				// delete's resourceVersion; compare the rest.
				if job.ResourceVersion == modified.ResourceVersion {
					t.Errorf("DELETED object has the resourceVersion of the last update %s", job.ResourceVersion)
				}
				job = job.DeepCopy()
				job.ResourceVersion = modified.ResourceVersion
			}
			got = append(got, event{ev.Type, job})
		}
		if diff := cmp.Diff(want, got, ignoreTypeMeta); diff != "" {
			t.Errorf("watch events (-want +got):\n%s", diff)
		}
	}

	t.Run("from the list", func(t *testing.T) { receive(t, w, all) })
	for _, tc := range []struct {
		name string
		rv   string
		want []event
	}{
		{"resumed after the create", created.ResourceVersion, all[1:]},
		{"resumed after the update", modified.ResourceVersion, all[2:]},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: tc.rv})
			if err != nil {
				t.Fatalf("watching from %s: %v", tc.rv, err)
			}
			defer w.Stop()
			receive(t, w, tc.want)
		})
	}
	t.Run("filtered by name", func(t *testing.T) {
		w, err := client.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion, FieldSelector: "metadata.name=sentinel"})
		if err != nil {
			t.Fatalf("watching: %v", err)
		}
		defer w.Stop()
		receive(t, w, all[3:])
	})
}

// testJobUpdate checks that a spec change bumps the generation, a metadata
// change does not, the status in an update is ignored, and a stale
// resourceVersion is a conflict.
func testJobUpdate(t *testing.T, ts *framework.TestServer) {
	ctx := testContext(t)
	ns := testNamespace(t)
	clientset := newTestClient(t, ts)
	client := clientset.BatchV1().Jobs(ns)

	created, err := client.Create(ctx, newTestJob(ns, "update").Completions(3).Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating: %v", err)
	}

	req := created.DeepCopy()
	req.Spec.Parallelism = ptr.To[int32](3)
	req.Status = batchv1.JobStatus{Active: 3, Succeeded: 1}
	updated, err := client.Update(ctx, req, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating spec: %v", err)
	}
	want := created.DeepCopy()
	want.Spec.Parallelism = ptr.To[int32](3)
	want.Generation = 2
	if diff := cmp.Diff(want, updated, ignoreTypeMeta, ignoreWriteMeta); diff != "" {
		t.Errorf("after a spec update, status ignored (-want +got):\n%s", diff)
	}

	req = updated.DeepCopy()
	req.Labels["touched"] = "yes"
	relabelled, err := client.Update(ctx, req, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating labels: %v", err)
	}
	want = updated.DeepCopy()
	want.Labels["touched"] = "yes"
	if diff := cmp.Diff(want, relabelled, ignoreTypeMeta, ignoreWriteMeta); diff != "" {
		t.Errorf("after a metadata update, generation kept (-want +got):\n%s", diff)
	}

	stale := created.DeepCopy()
	stale.Spec.Parallelism = ptr.To[int32](1)
	if _, err := client.Update(ctx, stale, metav1.UpdateOptions{}); !apierrors.IsConflict(err) {
		t.Errorf("update with a stale resourceVersion: got %v, want Conflict", err)
	}
	if _, err := client.Update(ctx, newTestJob(ns, "never-created").Obj(), metav1.UpdateOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("update of a missing job: got %v, want NotFound (PUT does not create)", err)
	}
}

// testJobUpdateStatus checks the status subresource: spec changes in the
// request are ignored, the status is kept, the generation does not move, and
// a later spec update keeps the status.
func testJobUpdateStatus(t *testing.T, ts *framework.TestServer) {
	ctx := testContext(t)
	ns := testNamespace(t)
	clientset := newTestClient(t, ts)
	client := clientset.BatchV1().Jobs(ns)

	created, err := client.Create(ctx, newTestJob(ns, "status").Completions(3).Parallelism(2).Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating: %v", err)
	}
	startTime := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	status := batchv1.JobStatus{
		StartTime: &startTime,
		Active:    2,
		Ready:     ptr.To[int32](1),
		Succeeded: 1,
		Failed:    1,
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{
			Succeeded: []types.UID{"pod-1"},
		},
	}
	req := created.DeepCopy()
	req.Spec.Parallelism = ptr.To[int32](1)
	req.Status = status
	got, err := client.UpdateStatus(ctx, req, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating status: %v", err)
	}
	want := created.DeepCopy()
	want.Status = status
	if diff := cmp.Diff(want, got, ignoreTypeMeta, ignoreWriteMeta); diff != "" {
		t.Errorf("after UpdateStatus, spec ignored (-want +got):\n%s", diff)
	}

	req = got.DeepCopy()
	req.Spec.Parallelism = ptr.To[int32](3)
	req.Status = batchv1.JobStatus{}
	got, err = client.Update(ctx, req, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating spec: %v", err)
	}
	want.Spec.Parallelism = ptr.To[int32](3)
	want.Generation = 2
	if diff := cmp.Diff(want, got, ignoreTypeMeta, ignoreWriteMeta); diff != "" {
		t.Errorf("after a spec update, status kept (-want +got):\n%s", diff)
	}

	req = got.DeepCopy()
	req.Status.Succeeded = 0
	_, err = client.UpdateStatus(ctx, req, metav1.UpdateOptions{})
	assertTestInvalid(t, err, []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "status.succeeded"}})
}

// testJobPatch checks merge, strategic merge and JSON patches of the spec
// and of the status subresource.
func testJobPatch(t *testing.T, ts *framework.TestServer) {
	ctx := testContext(t)
	ns := testNamespace(t)
	clientset := newTestClient(t, ts)
	client := clientset.BatchV1().Jobs(ns)

	t.Run("merge and JSON patch of the spec", func(t *testing.T) {
		job, err := client.Create(ctx, newTestJob(ns, "spec").Completions(5).Obj(), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating: %v", err)
		}
		want := job.DeepCopy()

		got, err := client.Patch(ctx, "spec", types.MergePatchType,
			[]byte(`{"metadata":{"labels":{"patched":"merge"}},"spec":{"parallelism":3},"status":{"active":3}}`), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("merge patch: %v", err)
		}
		want.Labels["patched"] = "merge"
		want.Spec.Parallelism = ptr.To[int32](3)
		want.Generation = 2
		if diff := cmp.Diff(want, got, ignoreTypeMeta, ignoreWriteMeta); diff != "" {
			t.Errorf("after merge patch (-want +got):\n%s", diff)
		}

		got, err = client.Patch(ctx, "spec", types.JSONPatchType, []byte(`[
			{"op": "test", "path": "/spec/parallelism", "value": 3},
			{"op": "replace", "path": "/spec/parallelism", "value": 4},
			{"op": "add", "path": "/metadata/annotations", "value": {"patched": "json"}}
		]`), metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("JSON patch: %v", err)
		}
		want.Annotations = map[string]string{"patched": "json"}
		want.Spec.Parallelism = ptr.To[int32](4)
		want.Generation = 3
		if diff := cmp.Diff(want, got, ignoreTypeMeta, ignoreWriteMeta); diff != "" {
			t.Errorf("after JSON patch (-want +got):\n%s", diff)
		}
	})

	t.Run("strategic merge patch merges template containers by name", func(t *testing.T) {
		// Only a suspended Job that never started may change its template,
		// and then only container resources.
		job, err := client.Create(ctx, newTestJob(ns, "containers").Containers("a", "b").Suspend(true).Obj(), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating: %v", err)
		}
		body := []byte(`{"spec":{"template":{"spec":{"containers":[{"name":"b","resources":{"requests":{"cpu":"100m"}}}]}}}}`)

		// A merge patch replaces the whole list: container a is gone, which
		// is a template change beyond resources.
		_, err = client.Patch(ctx, "containers", types.MergePatchType, body, metav1.PatchOptions{})
		if !apierrors.IsInvalid(err) {
			t.Errorf("merge patch replacing the containers: got %v, want Invalid", err)
		}

		got, err := client.Patch(ctx, "containers", types.StrategicMergePatchType, body, metav1.PatchOptions{})
		if err != nil {
			t.Fatalf("strategic merge patch: %v", err)
		}
		want := job.DeepCopy()
		want.Spec.Template.Spec.Containers[1].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		want.Generation = 2
		if diff := cmp.Diff(want, got, ignoreTypeMeta, ignoreWriteMeta); diff != "" {
			t.Errorf("after strategic merge patch (-want +got):\n%s", diff)
		}
	})

	t.Run("strategic merge patch of status merges conditions by type", func(t *testing.T) {
		job, err := client.Create(ctx, newTestJob(ns, "conditions").Obj(), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating: %v", err)
		}
		want := job.DeepCopy()
		for _, step := range []struct {
			patch string
			want  []batchv1.JobCondition
		}{
			{
				// The spec in a status patch is ignored.
				patch: `{"spec":{"parallelism":9},"status":{"conditions":[{"type":"Suspended","status":"False","reason":"Resumed"}]}}`,
				want:  []batchv1.JobCondition{newTestJobCondition(batchv1.JobSuspended, corev1.ConditionFalse, "Resumed")},
			},
			{
				// Without a $setElementOrder directive, strategic merge
				// puts the patched items first, then the others.
				patch: `{"status":{"conditions":[{"type":"FailureTarget","status":"True","reason":"PodFailurePolicy"}]}}`,
				want: []batchv1.JobCondition{
					newTestJobCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, "PodFailurePolicy"),
					newTestJobCondition(batchv1.JobSuspended, corev1.ConditionFalse, "Resumed"),
				},
			},
			{
				// The existing Suspended condition is updated where it is, not added twice.
				patch: `{"status":{"conditions":[{"type":"Suspended","status":"True","reason":"JobSuspended"}]}}`,
				want: []batchv1.JobCondition{
					newTestJobCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, "PodFailurePolicy"),
					newTestJobCondition(batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended"),
				},
			},
		} {
			got, err := client.Patch(ctx, "conditions", types.StrategicMergePatchType, []byte(step.patch), metav1.PatchOptions{}, "status")
			if err != nil {
				t.Fatalf("status patch %s: %v", step.patch, err)
			}
			want.Status.Conditions = step.want
			if diff := cmp.Diff(want, got, ignoreTypeMeta, ignoreWriteMeta); diff != "" {
				t.Errorf("after status patch %s (-want +got):\n%s", step.patch, diff)
			}
		}

		// A merge patch replaces the list: dropping FailureTarget=True is refused.
		_, err = client.Patch(ctx, "conditions", types.MergePatchType,
			[]byte(`{"status":{"conditions":[{"type":"Suspended","status":"False"}]}}`), metav1.PatchOptions{}, "status")
		assertTestInvalid(t, err, []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "status.conditions"}})

		got, err := client.Patch(ctx, "conditions", types.JSONPatchType,
			[]byte(`[{"op":"replace","path":"/status/active","value":1}]`), metav1.PatchOptions{}, "status")
		if err != nil {
			t.Fatalf("JSON patch of status: %v", err)
		}
		want.Status.Active = 1
		if diff := cmp.Diff(want, got, ignoreTypeMeta, ignoreWriteMeta); diff != "" {
			t.Errorf("after JSON patch of status (-want +got):\n%s", diff)
		}
	})
}

// testJobBadPatch checks that patches the server cannot apply get a 4xx
// Status with the right reason. A few malformed strategic merge and apply
// patches still get a 500 from k8s.io/apiserver and apimachinery v0.37.2
// (kube-apiserver 1.37 answers the same); they are pinned separately so that
// the day the libraries (or this server) map them to 4xx, the change shows.
func testJobBadPatch(t *testing.T, ts *framework.TestServer) {
	ctx := testContext(t)
	ns := testNamespace(t)
	clientset := newTestClient(t, ts)
	client := clientset.BatchV1().Jobs(ns)
	if _, err := client.Create(ctx, newTestJob(ns, "target").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating: %v", err)
	}

	type badPatch struct {
		name        string
		job         string
		patchType   types.PatchType
		body        string
		subresource []string
		wantCode    int32
		wantReason  metav1.StatusReason
	}
	apply := func(spec string) string {
		return `{"apiVersion":"batch.jobs.dev/v1","kind":"Job","metadata":{"name":"target"},"spec":` + spec + `}`
	}
	run := func(t *testing.T, tc badPatch) {
		_, err := client.Patch(ctx, tc.job, tc.patchType, []byte(tc.body), metav1.PatchOptions{FieldManager: "bad-patcher"}, tc.subresource...)
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			t.Fatalf("patch %s: got %v, want a Status error", tc.body, err)
		}
		got := status.Status()
		if got.Code != tc.wantCode || got.Reason != tc.wantReason {
			t.Errorf("patch %s: got %d %q (%s), want %d %q", tc.body, got.Code, got.Reason, got.Message, tc.wantCode, tc.wantReason)
		}
	}

	for _, tc := range []badPatch{
		{"merge patch not JSON", "target", types.MergePatchType, `{"spec":`, nil, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"merge patch not an object", "target", types.MergePatchType, `[1,2]`, nil, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"strategic merge patch not JSON", "target", types.StrategicMergePatchType, `{"spec":`, nil, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"strategic merge patch list where an object is", "target", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":"main"}}}}`, nil, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
		{"JSON patch not a list", "target", types.JSONPatchType, `{"op":"replace"}`, nil, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"JSON patch test fails", "target", types.JSONPatchType, `[{"op":"test","path":"/spec/parallelism","value":99}]`, nil, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
		{"JSON patch path missing", "target", types.JSONPatchType, `[{"op":"replace","path":"/spec/nope/deeper","value":1}]`, nil, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
		{"JSON patch unknown op", "target", types.JSONPatchType, `[{"op":"frobnicate","path":"/spec/parallelism","value":1}]`, nil, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
		{"wrong type in a field", "target", types.MergePatchType, `{"spec":{"parallelism":"three"}}`, nil, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
		{"invalid result", "target", types.MergePatchType, `{"spec":{"parallelism":-1}}`, nil, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
		{"immutable field", "target", types.MergePatchType, `{"spec":{"completions":2}}`, nil, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
		{"invalid status result", "target", types.MergePatchType, `{"status":{"active":-1}}`, []string{"status"}, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
		{"apply not YAML", "target", types.ApplyPatchType, `spec: [`, nil, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"apply without apiVersion", "target", types.ApplyPatchType, `{"kind":"Job","metadata":{"name":"target"}}`, nil, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"apply invalid result", "target", types.ApplyPatchType, apply(`{"activeDeadlineSeconds":-1}`), nil, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid},
		{"missing job", "missing", types.MergePatchType, `{"spec":{"parallelism":2}}`, nil, http.StatusNotFound, metav1.StatusReasonNotFound},
		{"missing job status", "missing", types.MergePatchType, `{"status":{"active":1}}`, []string{"status"}, http.StatusNotFound, metav1.StatusReasonNotFound},
	} {
		t.Run(tc.name, func(t *testing.T) { run(t, tc) })
	}

	// Errors that strategicpatch and the SSA type converter return as plain
	// Go errors: kube-apiserver answers them with 500
	// (kubernetes/kubernetes#139253 and #122480 for apply); the registry
	// reports them as 400 (docs/deviations.md).
	for _, tc := range []badPatch{
		{"strategic merge patch list item without its merge key", "target", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"image":"busybox:1.37"}]}}}}`, nil, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"strategic merge patch unknown directive", "target", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"containers":[{"$patch":"bogus","name":"main"}]}}}}`, nil, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"strategic merge patch element order not a list", "target", types.StrategicMergePatchType, `{"spec":{"template":{"spec":{"$setElementOrder/containers":"main"}}}}`, nil, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"apply field not in the schema", "target", types.ApplyPatchType, apply(`{"bogusField":1}`), nil, http.StatusBadRequest, metav1.StatusReasonBadRequest},
		{"apply wrong type in a field", "target", types.ApplyPatchType, apply(`{"parallelism":"three"}`), nil, http.StatusBadRequest, metav1.StatusReasonBadRequest},
	} {
		t.Run("plain error as 400: "+tc.name, func(t *testing.T) { run(t, tc) })
	}
}

// testJobDelete checks delete, delete with a precondition, and delete
// collection; a deleted Job is gone (404).
func testJobDelete(t *testing.T, ts *framework.TestServer) {
	ctx := testContext(t)
	ns := testNamespace(t)
	clientset := newTestClient(t, ts)
	client := clientset.BatchV1().Jobs(ns)

	for _, j := range []*batchv1.Job{
		newTestJob(ns, "single").Obj(),
		newTestJob(ns, "doomed-1").Labels(map[string]string{"group": "doomed"}).Obj(),
		newTestJob(ns, "doomed-2").Labels(map[string]string{"group": "doomed"}).Obj(),
		newTestJob(ns, "kept").Labels(map[string]string{"group": "kept"}).Obj(),
	} {
		if _, err := client.Create(ctx, j, metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating %s: %v", j.Name, err)
		}
	}

	err := client.Delete(ctx, "single", metav1.DeleteOptions{Preconditions: metav1.NewUIDPreconditions("not-the-uid")})
	if !apierrors.IsConflict(err) {
		t.Errorf("delete with a wrong UID precondition: got %v, want Conflict", err)
	}
	if err := client.Delete(ctx, "single", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting: %v", err)
	}
	if _, err := client.Get(ctx, "single", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("get after delete: got %v, want NotFound", err)
	}
	if err := client.Delete(ctx, "single", metav1.DeleteOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("second delete: got %v, want NotFound", err)
	}

	if err := client.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{LabelSelector: "group=doomed"}); err != nil {
		t.Fatalf("deleting collection: %v", err)
	}
	for _, name := range []string{"doomed-1", "doomed-2"} {
		if _, err := client.Get(ctx, name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get %s after delete collection: got %v, want NotFound", name, err)
		}
	}
	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing: %v", err)
	}
	var names []string
	for _, j := range list.Items {
		names = append(names, j.Name)
	}
	if diff := cmp.Diff([]string{"kept"}, names); diff != "" {
		t.Errorf("jobs left after delete collection (-want +got):\n%s", diff)
	}
}

// testJobV1beta1 checks the deprecated version: same objects as v1 (one
// storage), and the deprecation Warning header on every request to it but
// none on v1.
func testJobV1beta1(t *testing.T, ts *framework.TestServer) {
	ctx := testContext(t)
	ns := testNamespace(t)
	client, warnings := newTestClientWithWarnings(t, ts.ClientConfig)
	beta := client.BatchV1beta1().Jobs(ns)

	betaJob := &batchv1beta1.Job{}
	convertTestJob(t, newTestJob(ns, "beta").Completions(2).Obj(), betaJob)
	created, err := beta.Create(ctx, betaJob, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating through v1beta1: %v", err)
	}
	if diff := cmp.Diff([]string{v1beta1DeprecationWarning}, warnings.take()); diff != "" {
		t.Errorf("v1beta1 create warnings (-want +got):\n%s", diff)
	}

	got, err := beta.Get(ctx, "beta", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting through v1beta1: %v", err)
	}
	if diff := cmp.Diff([]string{v1beta1DeprecationWarning}, warnings.take()); diff != "" {
		t.Errorf("v1beta1 get warnings (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(created, got, ignoreTypeMeta); diff != "" {
		t.Errorf("v1beta1 get after create (-create +get):\n%s", diff)
	}

	if _, err := beta.List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("listing through v1beta1: %v", err)
	}
	if diff := cmp.Diff([]string{v1beta1DeprecationWarning}, warnings.take()); diff != "" {
		t.Errorf("v1beta1 list warnings (-want +got):\n%s", diff)
	}

	// v1 serves the same object, without a warning.
	gotV1, err := client.BatchV1().Jobs(ns).Get(ctx, "beta", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting through v1: %v", err)
	}
	if w := warnings.take(); len(w) != 0 {
		t.Errorf("v1 get warnings: %q, want none", w)
	}
	wantV1 := &batchv1.Job{}
	convertTestJob(t, got, wantV1)
	if diff := cmp.Diff(wantV1, gotV1, ignoreTypeMeta); diff != "" {
		t.Errorf("v1 view of the v1beta1 job (-v1beta1 +v1):\n%s", diff)
	}
	if gotV1.Spec.Selector == nil || gotV1.Spec.Selector.MatchLabels[testLabelControllerUID] != string(gotV1.UID) {
		t.Errorf("v1beta1 create did not generate the selector: %v", gotV1.Spec.Selector)
	}

	// A write through v1 is seen through v1beta1.
	gotV1.Spec.Parallelism = ptr.To[int32](2)
	if _, err := client.BatchV1().Jobs(ns).Update(ctx, gotV1, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating through v1: %v", err)
	}
	got, err = beta.Get(ctx, "beta", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting through v1beta1: %v", err)
	}
	if got.Spec.Parallelism == nil || *got.Spec.Parallelism != 2 || got.Generation != 2 {
		t.Errorf("v1beta1 after a v1 update: parallelism %v generation %d, want 2 and 2", got.Spec.Parallelism, got.Generation)
	}
}

// testJobBadInput checks the answers to bodies the server cannot take: not
// JSON or the wrong kind (400), an unknown field under fieldValidation=Strict
// (400; a warning otherwise), over the request size limit (413), an invalid
// Job (422 with every field path).
func testJobBadInput(t *testing.T, ts *framework.TestServer) {
	ctx := testContext(t)
	ns := testNamespace(t)
	clientset, warnings := newTestClientWithWarnings(t, ts.ClientConfig)
	client := clientset.BatchV1().Jobs(ns)

	t.Run("invalid JSON", func(t *testing.T) {
		err := clientset.BatchV1().RESTClient().Post().Namespace(ns).Resource("jobs").
			SetHeader("Content-Type", "application/json").
			Body([]byte(`{"apiVersion":"batch.jobs.dev/v1","kind":"Job","metadata":`)).
			Do(ctx).Error()
		assertTestStatus(t, err, http.StatusBadRequest, metav1.StatusReasonBadRequest)
	})

	t.Run("wrong kind", func(t *testing.T) {
		err := clientset.BatchV1().RESTClient().Post().Namespace(ns).Resource("jobs").
			SetHeader("Content-Type", "application/json").
			Body([]byte(`{"apiVersion":"batch.jobs.dev/v1","kind":"CronJob","metadata":{"name":"cron"}}`)).
			Do(ctx).Error()
		assertTestStatus(t, err, http.StatusBadRequest, metav1.StatusReasonBadRequest)
	})

	t.Run("unknown field", func(t *testing.T) {
		body := []byte(`{"apiVersion":"batch.jobs.dev/v1","kind":"Job","metadata":{"name":"unknown-field"},"spec":{"bogus":1,` +
			`"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"busybox:1.36"}]}}}}`)
		post := func(fieldValidation string) error {
			return clientset.BatchV1().RESTClient().Post().Namespace(ns).Resource("jobs").
				Param("fieldValidation", fieldValidation).Param("dryRun", metav1.DryRunAll).
				SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Error()
		}
		assertTestStatus(t, post(metav1.FieldValidationStrict), http.StatusBadRequest, metav1.StatusReasonBadRequest)
		warnings.take()
		// Without a directive the server warns, as kube-apiserver does (dry run: nothing is stored).
		if err := post(""); err != nil {
			t.Fatalf("dry-run create with an unknown field: %v", err)
		}
		if diff := cmp.Diff([]string{`unknown field "spec.bogus"`}, warnings.take()); diff != "" {
			t.Errorf("warnings (-want +got):\n%s", diff)
		}
	})

	t.Run("body over the 3 MiB limit", func(t *testing.T) {
		job := newTestJob(ns, "huge").Annotation("huge", strings.Repeat("x", 3<<20)).Obj()
		_, err := client.Create(ctx, job, metav1.CreateOptions{})
		assertTestStatus(t, err, http.StatusRequestEntityTooLarge, metav1.StatusReasonRequestEntityTooLarge)
	})

	t.Run("invalid job", func(t *testing.T) {
		job := newTestJob(ns, "invalid").Parallelism(-1).RestartPolicy(corev1.RestartPolicyAlways).Obj()
		_, err := client.Create(ctx, job, metav1.CreateOptions{})
		assertTestInvalid(t, err, []metav1.StatusCause{
			{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.parallelism"},
			// Always (the pod default) is refused as "Required", as upstream does.
			{Type: metav1.CauseTypeFieldValueRequired, Field: "spec.template.spec.restartPolicy"},
		})
	})

	list, err := client.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing: %v", err)
	}
	if len(list.Items) != 0 {
		t.Errorf("refused requests left %d jobs behind", len(list.Items))
	}
}

// assertTestStatus checks that err is a Status error with code and reason.
func assertTestStatus(t *testing.T, err error, code int32, reason metav1.StatusReason) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("got %v, want a %d %s Status", err, code, reason)
	}
	if got := status.Status(); got.Code != code || got.Reason != reason {
		t.Errorf("got %d %s (%s), want %d %s", got.Code, got.Reason, got.Message, code, reason)
	}
}

// assertTestInvalid checks that err is a 422 Invalid Status whose causes are
// exactly want, compared by type and field.
func assertTestInvalid(t *testing.T, err error, want []metav1.StatusCause) {
	t.Helper()
	assertTestStatus(t, err, http.StatusUnprocessableEntity, metav1.StatusReasonInvalid)
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("invalid error without details: %v", err)
	}
	got := status.Status().Details.Causes
	sortCauses := cmpopts.SortSlices(func(a, b metav1.StatusCause) bool {
		return a.Field < b.Field || (a.Field == b.Field && a.Type < b.Type)
	})
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(metav1.StatusCause{}, "Message"), sortCauses); diff != "" {
		t.Errorf("causes (-want +got):\n%s", diff)
	}
}

// convertTestJob converts between v1 and v1beta1, which have the same JSON shape.
func convertTestJob(t *testing.T, in, out any) {
	t.Helper()
	data, err := json.Marshal(in)
	if err != nil {
		t.Fatalf("encoding %T: %v", in, err)
	}
	if err := json.Unmarshal(data, out); err != nil {
		t.Fatalf("decoding %T: %v", out, err)
	}
}
