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
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	schedulingv1alpha3ac "k8s.io/client-go/applyconfigurations/scheduling/v1alpha3"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/features"
	batchv1ac "github.com/batch-apiserver/batch-apiserver/pkg/generated/applyconfiguration/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// gangScheduling is spec.scheduling with the gang policy and minCount.
func gangScheduling(minCount int32) *batchv1.JobSchedulingConfiguration {
	return &batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{MinCount: ptr.To(minCount)},
	}}
}

// TestJobScheduling drives spec.scheduling through the whole server with the
// WorkloadWithJob gate off (dropped without a word, as kube-apiserver drops
// it) and on (stored, served in both versions, applied server-side, only
// gang.minCount changes), then off again over a Job stored with it.
func TestJobScheduling(t *testing.T) {
	ts := framework.StartServer(t)
	ctx := testContext(t)
	ns := testNamespace(t)
	clientset, warnings := newTestClientWithWarnings(t, ts.ClientConfig)
	jobs := clientset.BatchV1().Jobs(ns)
	setGate := func(t *testing.T, on bool) {
		featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, featuregatetesting.FeatureOverrides{
			features.GenericWorkload: on,
			features.WorkloadWithJob: on,
		})
	}

	t.Run("gate off: dropped silently", func(t *testing.T) {
		job := newTestJob(ns, "off").Parallelism(2).Obj()
		job.Spec.Scheduling = gangScheduling(2)
		warnings.take()
		created, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if created.Spec.Scheduling != nil {
			t.Errorf("spec.scheduling stored with the gate off: %+v", created.Spec.Scheduling)
		}
		if got := warnings.take(); len(got) != 0 {
			t.Errorf("warnings %q, want none", got)
		}
	})

	t.Run("gate on", func(t *testing.T) {
		setGate(t, true)
		job := newTestJob(ns, "gang").Parallelism(3).Obj()
		job.Spec.Scheduling = gangScheduling(2)
		created, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		if diff := cmp.Diff(gangScheduling(2), created.Spec.Scheduling); diff != "" {
			t.Errorf("stored spec.scheduling (-want +got):\n%s", diff)
		}

		// v1beta1 serves the same field.
		raw, err := clientset.BatchV1beta1().RESTClient().Get().Namespace(ns).Resource("jobs").Name("gang").DoRaw(ctx)
		if err != nil {
			t.Fatalf("get through v1beta1: %v", err)
		}
		var beta struct {
			Spec struct {
				Scheduling *batchv1.JobSchedulingConfiguration `json:"scheduling"`
			} `json:"spec"`
		}
		if err := json.Unmarshal(raw, &beta); err != nil {
			t.Fatalf("decoding v1beta1: %v", err)
		}
		if diff := cmp.Diff(gangScheduling(2), beta.Spec.Scheduling); diff != "" {
			t.Errorf("v1beta1 spec.scheduling (-want +got):\n%s", diff)
		}

		// Server-side apply knows the field's schema, down to the
		// scheduling.k8s.io building blocks.
		apply := newTestJobApply(ns, "applied").WithSpec(batchv1ac.JobSpec().
			WithParallelism(2).
			WithTemplate(newTestJobApply(ns, "applied").Spec.Template).
			WithScheduling(batchv1ac.JobSchedulingConfiguration().
				WithSchedulingPolicy(schedulingv1alpha3ac.WorkloadPodGroupSchedulingPolicy().
					WithGang(schedulingv1alpha3ac.WorkloadPodGroupGangSchedulingPolicy().WithMinCount(2))).
				WithResourceClaims(schedulingv1alpha3ac.WorkloadPodGroupResourceClaim().
					WithName("shared").WithResourceClaimTemplateName("gpus"))))
		applied, err := jobs.Apply(ctx, apply, metav1.ApplyOptions{FieldManager: "test"})
		if err != nil {
			t.Fatalf("apply: %v", err)
		}
		if s := applied.Spec.Scheduling; s == nil || len(s.ResourceClaims) != 1 || ptr.Deref(s.SchedulingPolicy.Gang.MinCount, 0) != 2 {
			t.Errorf("applied spec.scheduling: %+v", s)
		}

		// While it runs, only gang.minCount changes, and never above parallelism.
		update := func(change func(*batchv1.Job)) error {
			current, err := jobs.Get(ctx, "gang", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("get: %v", err)
			}
			change(current)
			_, err = jobs.Update(ctx, current, metav1.UpdateOptions{})
			return err
		}
		if err := update(func(j *batchv1.Job) { j.Spec.Scheduling = gangScheduling(3) }); err != nil {
			t.Errorf("minCount raised to parallelism: %v", err)
		}
		assertTestInvalid(t, update(func(j *batchv1.Job) { j.Spec.Scheduling = gangScheduling(4) }), []metav1.StatusCause{
			{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.scheduling.schedulingPolicy.gang.minCount"},
		})
		assertTestInvalid(t, update(func(j *batchv1.Job) { j.Spec.Scheduling = nil }), []metav1.StatusCause{
			{Type: metav1.CauseTypeFieldValueInvalid, Field: "spec.scheduling"},
		})
	})

	t.Run("gate off again: a stored configuration stays and is frozen", func(t *testing.T) {
		setGate(t, false)
		current, err := jobs.Get(ctx, "gang", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		current.Spec.Parallelism = ptr.To[int32](4)
		updated, err := jobs.Update(ctx, current, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("an update that leaves spec.scheduling alone: %v", err)
		}
		if diff := cmp.Diff(gangScheduling(3), updated.Spec.Scheduling); diff != "" {
			t.Errorf("spec.scheduling after the update (-want +got):\n%s", diff)
		}
		updated.Spec.Scheduling = gangScheduling(4)
		_, err = jobs.Update(ctx, updated, metav1.UpdateOptions{})
		assertTestInvalid(t, err, []metav1.StatusCause{{Type: metav1.CauseTypeForbidden, Field: "spec.scheduling"}})
	})
}
