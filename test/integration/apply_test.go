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
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	batchv1ac "github.com/batch-apiserver/batch-apiserver/pkg/generated/applyconfiguration/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// newTestJobApply returns the apply configuration of the smallest valid Job.
func newTestJobApply(namespace, name string) *batchv1ac.JobApplyConfiguration {
	return batchv1ac.Job(name, namespace).
		WithSpec(batchv1ac.JobSpec().
			WithTemplate(corev1ac.PodTemplateSpec().
				WithSpec(corev1ac.PodSpec().
					WithRestartPolicy(corev1.RestartPolicyNever).
					WithContainers(corev1ac.Container().WithName("main").WithImage("busybox:1.36")))))
}

// testJobApplyTwoManagers checks server-side apply of the main resource:
// two managers own different fields, a conflicting apply is refused with
// the field and its owner, Force takes the field over, and the status in an
// apply of the main resource is ignored and not owned.
func testJobApplyTwoManagers(t *testing.T, ts *framework.TestServer) {
	ctx := testContext(t)
	ns := testNamespace(t)
	clientset := newTestClient(t, ts)
	client := clientset.BatchV1().Jobs(ns)

	alice := newTestJobApply(ns, "shared").WithLabels(map[string]string{"owner": "alice"})
	alice.Spec.WithCompletions(4).WithParallelism(1)
	alice.WithStatus(batchv1ac.JobStatus().WithActive(3))
	created, err := client.Apply(ctx, alice, metav1.ApplyOptions{FieldManager: "alice"})
	if err != nil {
		t.Fatalf("apply by alice: %v", err)
	}
	uid := string(created.UID)
	want := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "shared", Generation: 1, Labels: map[string]string{"owner": "alice"}},
		Spec: batchv1.JobSpec{
			Parallelism:    ptr.To[int32](1),
			Completions:    ptr.To[int32](4),
			BackoffLimit:   ptr.To[int32](6),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{testLabelControllerUID: uid}},
			ManualSelector: ptr.To(false),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: newTestJobGeneratedLabels("shared", uid)},
				Spec:       newTestJobDefaultedPodSpec("main"),
			},
			CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
			Suspend:              ptr.To(false),
			PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
		},
	}
	if diff := cmp.Diff(want, created, ignoreServerSetMeta, ignoreTypeMeta); diff != "" {
		t.Errorf("job created by apply, status ignored (-want +got):\n%s", diff)
	}
	assertTestManagedFields(t, created, map[string]testFieldOwnership{
		"alice": {
			owns:        []fieldpath.Path{testFieldPath("metadata", "labels", "owner"), testFieldPath("spec", "parallelism"), testFieldPath("spec", "completions"), testFieldPath("spec", "template", "spec", "restartPolicy")},
			doesNotOwn:  []fieldpath.Path{testFieldPath("status"), testFieldPath("status", "active"), testFieldPath("spec", "backoffLimit")},
			subresource: "",
		},
	})

	bob := batchv1ac.Job("shared", ns).
		WithLabels(map[string]string{"team": "bob"}).
		WithAnnotations(map[string]string{"reviewed-by": "bob"})
	got, err := client.Apply(ctx, bob, metav1.ApplyOptions{FieldManager: "bob"})
	if err != nil {
		t.Fatalf("apply by bob: %v", err)
	}
	want.Labels["team"] = "bob"
	want.Annotations = map[string]string{"reviewed-by": "bob"}
	if diff := cmp.Diff(want, got, ignoreServerSetMeta, ignoreTypeMeta); diff != "" {
		t.Errorf("job after bob's apply (-want +got):\n%s", diff)
	}
	ownership := map[string]testFieldOwnership{
		"alice": {
			owns:       []fieldpath.Path{testFieldPath("metadata", "labels", "owner"), testFieldPath("spec", "parallelism")},
			doesNotOwn: []fieldpath.Path{testFieldPath("metadata", "labels", "team"), testFieldPath("metadata", "annotations", "reviewed-by")},
		},
		"bob": {
			owns:       []fieldpath.Path{testFieldPath("metadata", "labels", "team"), testFieldPath("metadata", "annotations", "reviewed-by")},
			doesNotOwn: []fieldpath.Path{testFieldPath("metadata", "labels", "owner"), testFieldPath("spec", "parallelism")},
		},
	}
	assertTestManagedFields(t, got, ownership)

	// Bob now wants parallelism 2, which alice owns.
	bob.WithSpec(batchv1ac.JobSpec().WithParallelism(2))
	_, err = client.Apply(ctx, bob, metav1.ApplyOptions{FieldManager: "bob"})
	if !apierrors.IsConflict(err) {
		t.Fatalf("conflicting apply by bob: got %v, want Conflict", err)
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		t.Fatalf("conflict without details: %v", err)
	}
	causes := status.Status().Details.Causes
	if diff := cmp.Diff([]metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Field: ".spec.parallelism"}}, causes,
		cmpopts.IgnoreFields(metav1.StatusCause{}, "Message")); diff != "" {
		t.Errorf("conflict causes (-want +got):\n%s", diff)
	}

	got, err = client.Apply(ctx, bob, metav1.ApplyOptions{FieldManager: "bob", Force: true})
	if err != nil {
		t.Fatalf("forced apply by bob: %v", err)
	}
	want.Spec.Parallelism = ptr.To[int32](2)
	want.Generation = 2
	if diff := cmp.Diff(want, got, ignoreServerSetMeta, ignoreTypeMeta); diff != "" {
		t.Errorf("job after bob's forced apply (-want +got):\n%s", diff)
	}
	ownership["alice"] = testFieldOwnership{
		owns:       []fieldpath.Path{testFieldPath("metadata", "labels", "owner"), testFieldPath("spec", "completions")},
		doesNotOwn: []fieldpath.Path{testFieldPath("spec", "parallelism")},
	}
	ownership["bob"] = testFieldOwnership{
		owns: []fieldpath.Path{testFieldPath("metadata", "labels", "team"), testFieldPath("spec", "parallelism")},
	}
	assertTestManagedFields(t, got, ownership)

	// An apply that leaves out a field its manager owned (and nobody else
	// does) removes it.
	bob = batchv1ac.Job("shared", ns).
		WithLabels(map[string]string{"team": "bob"}).
		WithSpec(batchv1ac.JobSpec().WithParallelism(2))
	got, err = client.Apply(ctx, bob, metav1.ApplyOptions{FieldManager: "bob"})
	if err != nil {
		t.Fatalf("apply by bob without the annotation: %v", err)
	}
	want.Annotations = nil
	if diff := cmp.Diff(want, got, ignoreServerSetMeta, ignoreTypeMeta); diff != "" {
		t.Errorf("job after bob dropped his annotation (-want +got):\n%s", diff)
	}
}

// testJobApplyStatus checks server-side apply of the status subresource by
// controllers: the spec in a status apply is ignored, two status managers
// own different fields, and conditions are an atomic list (as in batch/v1),
// so a second manager applying them conflicts.
func testJobApplyStatus(t *testing.T, ts *framework.TestServer) {
	ctx := testContext(t)
	ns := testNamespace(t)
	clientset := newTestClient(t, ts)
	client := clientset.BatchV1().Jobs(ns)

	user := newTestJobApply(ns, "status")
	user.Spec.WithParallelism(2).WithCompletions(4)
	created, err := client.Apply(ctx, user, metav1.ApplyOptions{FieldManager: "user"})
	if err != nil {
		t.Fatalf("apply by user: %v", err)
	}

	startTime := metav1.NewTime(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC))
	controller := batchv1ac.Job("status", ns).
		WithSpec(batchv1ac.JobSpec().WithParallelism(7)).
		WithStatus(batchv1ac.JobStatus().
			WithStartTime(startTime).
			WithActive(2).
			WithReady(1).
			WithConditions(batchv1ac.JobCondition().WithType(batchv1.JobSuspended).WithStatus(corev1.ConditionFalse).WithReason("Resumed")))
	got, err := client.ApplyStatus(ctx, controller, metav1.ApplyOptions{FieldManager: "job-controller"})
	if err != nil {
		t.Fatalf("status apply by the controller: %v", err)
	}
	want := created.DeepCopy()
	want.Status = batchv1.JobStatus{
		StartTime:  &startTime,
		Active:     2,
		Ready:      ptr.To[int32](1),
		Conditions: []batchv1.JobCondition{newTestJobCondition(batchv1.JobSuspended, corev1.ConditionFalse, "Resumed")},
	}
	if diff := cmp.Diff(want, got, ignoreTypeMeta, ignoreWriteMeta); diff != "" {
		t.Errorf("job after the controller's status apply, spec ignored (-want +got):\n%s", diff)
	}
	ownership := map[string]testFieldOwnership{
		"user": {
			owns:       []fieldpath.Path{testFieldPath("spec", "parallelism")},
			doesNotOwn: []fieldpath.Path{testFieldPath("status")},
		},
		"job-controller": {
			subresource: "status",
			owns:        []fieldpath.Path{testFieldPath("status", "active"), testFieldPath("status", "ready"), testFieldPath("status", "startTime"), testFieldPath("status", "conditions")},
			doesNotOwn:  []fieldpath.Path{testFieldPath("spec"), testFieldPath("spec", "parallelism")},
		},
	}
	assertTestManagedFields(t, got, ownership)

	kueue := batchv1ac.Job("status", ns).WithStatus(batchv1ac.JobStatus().WithFailed(1))
	got, err = client.ApplyStatus(ctx, kueue, metav1.ApplyOptions{FieldManager: "kueue"})
	if err != nil {
		t.Fatalf("status apply by kueue: %v", err)
	}
	want.Status.Failed = 1
	if diff := cmp.Diff(want, got, ignoreTypeMeta, ignoreWriteMeta); diff != "" {
		t.Errorf("job after kueue's status apply (-want +got):\n%s", diff)
	}
	ownership["kueue"] = testFieldOwnership{
		subresource: "status",
		owns:        []fieldpath.Path{testFieldPath("status", "failed")},
		doesNotOwn:  []fieldpath.Path{testFieldPath("status", "active"), testFieldPath("status", "conditions")},
	}
	assertTestManagedFields(t, got, ownership)

	for _, tc := range []struct {
		name   string
		status *batchv1ac.JobStatusApplyConfiguration
		field  string
	}{
		{"a counter", batchv1ac.JobStatus().WithFailed(1).WithActive(1), ".status.active"},
		{"a condition of another type", batchv1ac.JobStatus().WithFailed(1).WithConditions(
			batchv1ac.JobCondition().WithType(batchv1.JobFailureTarget).WithStatus(corev1.ConditionTrue)), ".status.conditions"},
	} {
		t.Run("conflict on "+tc.name, func(t *testing.T) {
			_, err := client.ApplyStatus(ctx, batchv1ac.Job("status", ns).WithStatus(tc.status), metav1.ApplyOptions{FieldManager: "kueue"})
			if !apierrors.IsConflict(err) {
				t.Fatalf("conflicting status apply by kueue: got %v, want Conflict", err)
			}
			var status apierrors.APIStatus
			if !errors.As(err, &status) || status.Status().Details == nil {
				t.Fatalf("conflict without details: %v", err)
			}
			if diff := cmp.Diff([]metav1.StatusCause{{Type: metav1.CauseTypeFieldManagerConflict, Field: tc.field}}, status.Status().Details.Causes,
				cmpopts.IgnoreFields(metav1.StatusCause{}, "Message")); diff != "" {
				t.Errorf("conflict causes (-want +got):\n%s", diff)
			}
		})
	}
}

// testFieldOwnership is what one field manager must and must not own.
type testFieldOwnership struct {
	subresource string
	owns        []fieldpath.Path
	doesNotOwn  []fieldpath.Path
}

// testFieldPath builds a field path of struct fields and map keys.
func testFieldPath(elements ...string) fieldpath.Path {
	parts := make([]any, len(elements))
	for i, e := range elements {
		parts[i] = e
	}
	return fieldpath.MakePathOrDie(parts...)
}

// assertTestManagedFields checks that the Job's managedFields hold exactly one
// Apply entry for batch.jobs.dev/v1 per manager in want, on the right
// subresource, owning the listed fields and nothing under the ones it must not own.
func assertTestManagedFields(t *testing.T, job *batchv1.Job, want map[string]testFieldOwnership) {
	t.Helper()
	seen := map[string]bool{}
	for _, entry := range job.ManagedFields {
		ownership, ok := want[entry.Manager]
		if !ok {
			t.Errorf("unexpected managedFields entry for manager %q (%s %s)", entry.Manager, entry.Operation, entry.Subresource)
			continue
		}
		if seen[entry.Manager] {
			t.Errorf("manager %q has more than one managedFields entry", entry.Manager)
		}
		seen[entry.Manager] = true
		if entry.Operation != metav1.ManagedFieldsOperationApply || entry.APIVersion != "batch.jobs.dev/v1" || entry.Subresource != ownership.subresource {
			t.Errorf("manager %q: operation %s apiVersion %s subresource %q, want Apply batch.jobs.dev/v1 %q",
				entry.Manager, entry.Operation, entry.APIVersion, entry.Subresource, ownership.subresource)
		}
		set := &fieldpath.Set{}
		if entry.FieldsV1 == nil {
			t.Errorf("manager %q owns no fields", entry.Manager)
			continue
		}
		if err := set.FromJSON(entry.FieldsV1.GetRawReader()); err != nil {
			t.Errorf("manager %q: parsing fieldsV1: %v", entry.Manager, err)
			continue
		}
		for _, p := range ownership.owns {
			if !set.Has(p) {
				t.Errorf("manager %q does not own %s; owns:\n%s", entry.Manager, p, set)
			}
		}
		for _, p := range ownership.doesNotOwn {
			set.Iterate(func(owned fieldpath.Path) {
				if len(owned) >= len(p) && owned[:len(p)].Equals(p) {
					t.Errorf("manager %q owns %s (under %s)", entry.Manager, owned, p)
				}
			})
		}
	}
	for manager := range want {
		if !seen[manager] {
			t.Errorf("no managedFields entry for manager %q", manager)
		}
	}
}
