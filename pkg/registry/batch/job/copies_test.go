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

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// TestCreateMultiKueueCopy runs a create through PrepareForCreate and
// Validate, as the store does, for copies of a Job made in another cluster
// (whose UID is managerUID): only MultiKueue's verbatim copy gets a selector
// of its own; every other copy is refused as batch/v1 refuses it.
func TestCreateMultiKueueCopy(t *testing.T) {
	const managerUID = "0d6f5b7e-1111-4222-8333-944455556666"
	const labelsPath = "spec.template.metadata.labels"
	// copied is the manager's Job as the adapter sends it: the manager's
	// generated selector and labels, MultiKueue's labels.
	copied := func() *batchtesting.JobBuilder {
		return testJob("j").UID(managerUID).Generated().UID(testJobUID).
			Label(multiKueueOriginLabel, "manager").
			Label("kueue.x-k8s.io/prebuilt-workload-name", "job-j-abcde")
	}
	cases := map[string]struct {
		job      *batch.Job
		want     *batch.Job
		wantErrs field.ErrorList
	}{
		"verbatim copy: selector and controller-uid labels regenerated": {
			job: copied().Internal(),
			want: testJob("j").Generated().Generation(1).
				Label(multiKueueOriginLabel, "manager").
				Label("kueue.x-k8s.io/prebuilt-workload-name", "job-j-abcde").Internal(),
		},
		"copy without the legacy controller-uid label: regenerated too": {
			job: copied().Do(func(j *batchv1.Job) { delete(j.Spec.Template.Labels, batch.LegacyControllerUIDLabel) }).Internal(),
			want: testJob("j").Generated().Generation(1).
				Label(multiKueueOriginLabel, "manager").
				Label("kueue.x-k8s.io/prebuilt-workload-name", "job-j-abcde").Internal(),
		},
		"copy without MultiKueue's origin label: refused as upstream": {
			job: copied().Do(func(j *batchv1.Job) { delete(j.Labels, multiKueueOriginLabel) }).Internal(),
			want: testJob("j").UID(managerUID).Generated().UID(testJobUID).Generation(1).
				Label("kueue.x-k8s.io/prebuilt-workload-name", "job-j-abcde").Internal(),
			wantErrs: fieldErrs(
				field.ErrorTypeInvalid, labelsPath+"[batch.jobs.dev/controller-uid]",
				field.ErrorTypeInvalid, labelsPath+"[controller-uid]",
				field.ErrorTypeInvalid, "spec.selector",
			),
		},
		"copy with manualSelector: the selector is the user's": {
			job: copied().ManualSelector(true).Internal(),
			want: testJob("j").UID(managerUID).Generated().UID(testJobUID).Generation(1).ManualSelector(true).
				Label(multiKueueOriginLabel, "manager").
				Label("kueue.x-k8s.io/prebuilt-workload-name", "job-j-abcde").Internal(),
		},
		"copy whose selector selects more than controller-uid: refused": {
			job: copied().Do(func(j *batchv1.Job) { j.Spec.Selector.MatchLabels["app"] = "a" }).TemplateLabel("app", "a").Internal(),
			want: testJob("j").UID(managerUID).Generated().UID(testJobUID).Generation(1).TemplateLabel("app", "a").
				Do(func(j *batchv1.Job) { j.Spec.Selector.MatchLabels["app"] = "a" }).
				Label(multiKueueOriginLabel, "manager").
				Label("kueue.x-k8s.io/prebuilt-workload-name", "job-j-abcde").Internal(),
			wantErrs: fieldErrs(
				field.ErrorTypeInvalid, labelsPath+"[batch.jobs.dev/controller-uid]",
				field.ErrorTypeInvalid, labelsPath+"[controller-uid]",
				field.ErrorTypeInvalid, "spec.selector",
			),
		},
		"copy with match expressions: refused": {
			job: copied().Do(func(j *batchv1.Job) {
				j.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpDoesNotExist}}
			}).Internal(),
			want: testJob("j").UID(managerUID).Generated().UID(testJobUID).Generation(1).Do(func(j *batchv1.Job) {
				j.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: metav1.LabelSelectorOpDoesNotExist}}
			}).Label(multiKueueOriginLabel, "manager").
				Label("kueue.x-k8s.io/prebuilt-workload-name", "job-j-abcde").Internal(),
			wantErrs: fieldErrs(
				field.ErrorTypeInvalid, labelsPath+"[batch.jobs.dev/controller-uid]",
				field.ErrorTypeInvalid, labelsPath+"[controller-uid]",
				field.ErrorTypeInvalid, "spec.selector",
			),
		},
		"copy whose template names another UID than its selector: refused": {
			job: copied().TemplateLabel(batch.ControllerUIDLabel, "another").Internal(),
			want: testJob("j").UID(managerUID).Generated().UID(testJobUID).Generation(1).
				TemplateLabel(batch.ControllerUIDLabel, "another").
				Label(multiKueueOriginLabel, "manager").
				Label("kueue.x-k8s.io/prebuilt-workload-name", "job-j-abcde").Internal(),
			wantErrs: fieldErrs(
				field.ErrorTypeInvalid, labelsPath+"[batch.jobs.dev/controller-uid]",
				field.ErrorTypeInvalid, labelsPath+"[controller-uid]",
				field.ErrorTypeInvalid, "spec.selector",
				field.ErrorTypeInvalid, labelsPath,
			),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			s := NewStrategy(testScheme())
			s.PrepareForCreate(context.Background(), tc.job)
			errs := s.Validate(context.Background(), tc.job)
			if diff := cmp.Diff(tc.want, tc.job); diff != "" {
				t.Errorf("Job after create (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErrs, errs, byTypeAndField...); diff != "" {
				t.Errorf("create errors (-want,+got):\n%s\ngot: %v", diff, errs)
			}
		})
	}
}
