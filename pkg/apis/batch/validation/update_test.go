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

package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

func TestValidateJobUpdate(t *testing.T) {
	mutableTemplate := JobValidationOptions{RequirePrefixedLabels: true, AllowMutableSchedulingDirectives: true, AllowMutablePodResources: true}
	schedulingOnly := JobValidationOptions{RequirePrefixedLabels: true, AllowMutableSchedulingDirectives: true}
	nodeAffinity := &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: []string{"a"}}}}},
	}}
	podAffinity := &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{TopologyKey: "zone"}}}
	gpu := func(n string) corev1.Container {
		return withResources(container("main"), resources(map[corev1.ResourceName]string{"cpu": n}, nil))
	}
	fj := onExitCodes(batch.PodFailurePolicyActionFailJob, batch.PodFailurePolicyOnExitCodesOpIn, 1)

	cases := map[string]struct {
		old, job *batch.Job
		opts     *JobValidationOptions
		want     field.ErrorList
	}{
		"unchanged": {old: makeJob("j").Obj(), job: makeJob("j").Obj()},
		"mutable fields change": {old: makeJob("j").Obj(), job: makeJob("j").Parallelism(3).Suspend(true).Do(func(j *batch.Job) {
			j.Spec.BackoffLimit = ptr.To[int32](1)
			j.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
			j.Spec.TTLSecondsAfterFinished = ptr.To[int32](60)
			j.Labels = map[string]string{"team": "a"}
		}).Obj()},
		"name changes":             {old: makeJob("j").Obj(), job: makeJob("j").Do(func(j *batch.Job) { j.Name = "k" }).Obj(), want: errs(invalid, "metadata.name")},
		"resourceVersion missing":  {old: makeJob("j").Obj(), job: makeJob("j").Do(func(j *batch.Job) { j.ResourceVersion = "" }).Obj(), want: errs(invalid, "metadata.resourceVersion")},
		"spec rules run on update": {old: makeJob("j").Obj(), job: makeJob("j").Parallelism(-1).Obj(), want: errs(invalid, "spec.parallelism")},
		"selector changes": {old: makeJob("j").ManualSelector().Obj(), job: makeJob("j").ManualSelector().Do(func(j *batch.Job) {
			j.Spec.Selector.MatchLabels["tier"] = "x"
			j.Spec.Template.Labels["tier"] = "x"
		}).Obj(), opts: &mutableTemplate, want: errs(invalid, "spec.selector")},
		"completions of a NonIndexed Job change": {old: makeJob("j").Obj(), job: makeJob("j").Completions(2).Obj(), want: errs(invalid, "spec.completions")},
		"Indexed Job scaled with parallelism":    {old: makeJob("j").Indexed(4).Obj(), job: makeJob("j").Indexed(2).Obj()},
		"Indexed Job completions change alone": {old: makeJob("j").Indexed(4).Obj(), job: makeJob("j").Indexed(4).Completions(2).Obj(),
			want: errs(invalid, "spec.completions")},
		"Indexed Job completions unset": {old: makeJob("j").Indexed(4).Obj(), job: makeJob("j").Indexed(4).Do(func(j *batch.Job) { j.Spec.Completions = nil }).Obj(),
			want: errs(required, "spec.completions")},
		"Indexed Job scaled beyond its name": {old: makeJob(nameOfLength(61)).Indexed(10).Obj(), job: makeJob(nameOfLength(61)).Indexed(11).Obj(),
			want: errs(invalid, "metadata.name")},
		"completionMode changes": {old: makeJob("j").Indexed(1).Obj(), job: makeJob("j").Obj(), want: errs(invalid, "spec.completionMode")},
		"podFailurePolicy added": {old: makeJob("j").PodReplacementPolicy(batch.Failed).Obj(), job: makeJob("j").PodFailurePolicy(fj).Obj(),
			want: errs(invalid, "spec.podFailurePolicy")},
		"podFailurePolicy changes": {old: makeJob("j").PodFailurePolicy(fj).Obj(),
			job:  makeJob("j").PodFailurePolicy(onExitCodes(batch.PodFailurePolicyActionFailJob, batch.PodFailurePolicyOnExitCodesOpIn, 2)).Obj(),
			want: errs(invalid, "spec.podFailurePolicy")},
		"backoffLimitPerIndex changes": {old: makeJob("j").Indexed(2).BackoffLimitPerIndex(1).Obj(), job: makeJob("j").Indexed(2).BackoffLimitPerIndex(2).Obj(),
			want: errs(invalid, "spec.backoffLimitPerIndex")},
		"maxFailedIndexes changes": {old: makeJob("j").Indexed(4).BackoffLimitPerIndex(1).MaxFailedIndexes(1).Obj(), job: makeJob("j").Indexed(4).BackoffLimitPerIndex(1).MaxFailedIndexes(2).Obj()},
		"managedBy set":            {old: makeJob("j").Obj(), job: makeJob("j").ManagedBy("kueue.x-k8s.io/multikueue").Obj(), want: errs(invalid, "spec.managedBy")},
		"managedBy unset":          {old: makeJob("j").ManagedBy("kueue.x-k8s.io/multikueue").Obj(), job: makeJob("j").Obj(), want: errs(invalid, "spec.managedBy")},
		"managedBy changes": {old: makeJob("j").ManagedBy("kueue.x-k8s.io/multikueue").Obj(), job: makeJob("j").ManagedBy("kubernetes.io/job-controller").Obj(),
			want: errs(invalid, "spec.managedBy")},
		"successPolicy changes": {old: makeJob("j").Indexed(4).SuccessPolicy(successRules(1)...).Obj(), job: makeJob("j").Indexed(4).SuccessPolicy(successRules(2)...).Obj(),
			want: errs(invalid, "spec.successPolicy")},
		"template changes on a running Job": {old: makeJob("j").Obj(), job: makeJob("j").Containers(gpu("2")).Obj(), want: errs(invalid, "spec.template")},
		"nodeSelector changes without the option": {old: makeJob("j").Suspend(true).Obj(),
			job:  makeJob("j").Suspend(true).Do(func(j *batch.Job) { j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"} }).Obj(),
			want: errs(invalid, "spec.template")},
		"scheduling directives change with the option": {old: makeJob("j").Suspend(true).Obj(), job: makeJob("j").Suspend(true).Do(func(j *batch.Job) {
			j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
			j.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
			j.Spec.Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/gate"}}
			j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity}
			j.Spec.Template.Labels["queue"] = "a"
			j.Spec.Template.Annotations = map[string]string{"note": "x"}
		}).Obj(), opts: &schedulingOnly},
		"node affinity removed with the option": {old: makeJob("j").Suspend(true).Do(func(j *batch.Job) {
			j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity}
		}).Obj(), job: makeJob("j").Suspend(true).Obj(), opts: &schedulingOnly},
		"pod affinity removed with the option": {old: makeJob("j").Suspend(true).Do(func(j *batch.Job) {
			j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity, PodAffinity: podAffinity}
		}).Obj(), job: makeJob("j").Suspend(true).Obj(), opts: &schedulingOnly, want: errs(invalid, "spec.template")},
		"pod affinity added with the option": {old: makeJob("j").Suspend(true).Obj(), job: makeJob("j").Suspend(true).Do(func(j *batch.Job) {
			j.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAffinity: podAffinity}
		}).Obj(), opts: &schedulingOnly, want: errs(invalid, "spec.template")},
		"resources change on a suspended Job with the option": {old: makeJob("j").Suspend(true).Containers(gpu("1")).Obj(),
			job: makeJob("j").Suspend(true).Containers(gpu("2")).Obj(), opts: &mutableTemplate},
		"init container resources change on a suspended Job with the option": {old: makeJob("j").Suspend(true).InitContainers(container("setup")).Obj(),
			job: makeJob("j").Suspend(true).InitContainers(withResources(container("setup"), resources(map[corev1.ResourceName]string{"memory": "1Gi"}, nil))).Obj(), opts: &mutableTemplate},
		"image changes on a suspended Job with the option": {old: makeJob("j").Suspend(true).Obj(),
			job: makeJob("j").Suspend(true).Do(func(j *batch.Job) { j.Spec.Template.Spec.Containers[0].Image = "other" }).Obj(), opts: &mutableTemplate,
			want: errs(invalid, "spec.template.spec")},
		"container added to a suspended Job with the option": {old: makeJob("j").Suspend(true).Obj(),
			job: makeJob("j").Suspend(true).Containers(container("main"), container("sidecar")).Obj(), opts: &mutableTemplate,
			want: errs(invalid, "spec.template.spec")},
		"resources change on a suspended Job without the option": {old: makeJob("j").Suspend(true).Containers(gpu("1")).Obj(),
			job: makeJob("j").Suspend(true).Containers(gpu("2")).Obj(), opts: &schedulingOnly, want: errs(invalid, "spec.template")},
		"resources change on a Job being suspended": {old: makeJob("j").Containers(gpu("1")).Obj(),
			job: makeJob("j").Suspend(true).Containers(gpu("2")).Obj(), opts: &mutableTemplate, want: errs(invalid, "spec.template")},
		"invalid resources on a suspended Job with the option": {old: makeJob("j").Suspend(true).Containers(gpu("1")).Obj(),
			job: makeJob("j").Suspend(true).Containers(gpu("-1")).Obj(), opts: &mutableTemplate, want: errs(invalid, "spec.template.spec.containers[0].resources.requests[cpu]")},
		"selector with an invalid label value kept": {old: makeJob("j").ManualSelector().Do(func(j *batch.Job) {
			j.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a b"}}}
		}).Obj(), job: makeJob("j").ManualSelector().Do(func(j *batch.Job) {
			j.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a b"}}}
		}).Obj(), opts: &JobValidationOptions{PodValidationOptions: corevalidation.PodValidationOptions{AllowInvalidLabelValueInSelector: true}}},
		"generated labels are not rechecked on update": {old: makeJob("j").Do(func(j *batch.Job) { delete(j.Spec.Template.Labels, batch.JobNameLabel) }).Obj(),
			job: makeJob("j").Parallelism(2).Do(func(j *batch.Job) { delete(j.Spec.Template.Labels, batch.JobNameLabel) }).Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opts := JobValidationOptions{RequirePrefixedLabels: true}
			if tc.opts != nil {
				opts = *tc.opts
			}
			old := tc.old.DeepCopy()
			assertErrors(t, tc.want, ValidateJobUpdate(tc.job, tc.old, opts))
			if diff := cmpDiffJob(old, tc.old); diff != "" {
				t.Errorf("validation mutated the old Job: %s", diff)
			}
		})
	}
}
