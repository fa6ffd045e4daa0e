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
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// TestTrimForCache keeps the template of the Jobs this controller may
// still create Pods for and drops it from the others; managedFields go
// from every Job, and nothing else changes.
func TestTrimForCache(t *testing.T) {
	withFields := func(j *batchv1.Job) *batchv1.Job {
		j.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate,
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}}}
		j.Annotations = map[string]string{"note": "kept"}
		return j
	}
	running := makeJob("running").Completions(3).Obj()
	suspended := makeJob("suspended").Suspend(true).Obj()
	failing := makeJob("failing").Condition(cond(batchv1.JobFailureTarget, batch.JobReasonBackoffLimitExceeded, "")).Obj()
	complete := makeJob("complete").TTLSecondsAfterFinished(60).
		Condition(cond(batchv1.JobSuccessCriteriaMet, batch.JobReasonCompletionsReached, "")).
		Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "done")).Obj()
	failed := makeJob("failed").
		Condition(cond(batchv1.JobFailureTarget, batch.JobReasonBackoffLimitExceeded, "")).
		Condition(cond(batchv1.JobFailed, batch.JobReasonBackoffLimitExceeded, "too many")).Obj()
	external := makeJob("external").ManagedBy("example.com/dispatcher").Obj()
	ours := makeJob("ours").ManagedBy(batch.JobControllerName).Obj()

	for _, tc := range []struct {
		job          *batchv1.Job
		keepTemplate bool
	}{
		{running, true},
		{suspended, true},
		{failing, true},
		{ours, true},
		{complete, false},
		{failed, false},
		{external, false},
	} {
		t.Run(tc.job.Name, func(t *testing.T) {
			if len(tc.job.Spec.Template.Spec.Containers) == 0 {
				t.Fatal("the test Job has no template to drop")
			}
			want := tc.job.DeepCopy()
			if !tc.keepTemplate {
				want.Spec.Template = corev1.PodTemplateSpec{}
			}
			got, err := TrimForCache(withFields(tc.job.DeepCopy()))
			if err != nil {
				t.Fatal(err)
			}
			want.Annotations = map[string]string{"note": "kept"}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("cached Job (-want +got):\n%s", diff)
			}
		})
	}

	// Anything else passes through.
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"}}
	if got, err := TrimForCache(pod); err != nil || got != any(pod) {
		t.Errorf("TrimForCache(Pod) = %v, %v; want the Pod itself", got, err)
	}
}
