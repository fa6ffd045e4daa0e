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
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
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
	fj := onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 1)

	cases := map[string]struct {
		old, job *batch.Job
		opts     *JobValidationOptions
		want     field.ErrorList
	}{
		"unchanged": {old: makeJob("j").Internal(), job: makeJob("j").Internal()},
		"mutable fields change": {old: makeJob("j").Internal(), job: makeJob("j").Parallelism(3).Suspend(true).Do(func(j *batchv1.Job) {
			j.Spec.BackoffLimit = ptr.To[int32](1)
			j.Spec.ActiveDeadlineSeconds = ptr.To[int64](60)
			j.Spec.TTLSecondsAfterFinished = ptr.To[int32](60)
			j.Labels = map[string]string{"team": "a"}
		}).Internal()},
		"name changes":             {old: makeJob("j").Internal(), job: makeJob("j").Do(func(j *batchv1.Job) { j.Name = "k" }).Internal(), want: errs(invalid, "metadata.name")},
		"resourceVersion missing":  {old: makeJob("j").Internal(), job: makeJob("j").Do(func(j *batchv1.Job) { j.ResourceVersion = "" }).Internal(), want: errs(invalid, "metadata.resourceVersion")},
		"spec rules run on update": {old: makeJob("j").Internal(), job: makeJob("j").Parallelism(-1).Internal(), want: errs(invalid, "spec.parallelism")},
		"selector changes": {old: makeJob("j").Do(manualSelector).Internal(), job: makeJob("j").Do(manualSelector).Do(func(j *batchv1.Job) {
			j.Spec.Selector.MatchLabels["tier"] = "x"
			j.Spec.Template.Labels["tier"] = "x"
		}).Internal(), opts: &mutableTemplate, want: errs(invalid, "spec.selector")},
		"completions of a NonIndexed Job change": {old: makeJob("j").Internal(), job: makeJob("j").Completions(2).Internal(), want: errs(invalid, "spec.completions")},
		"Indexed Job scaled with parallelism":    {old: makeJob("j").Indexed(4).Internal(), job: makeJob("j").Indexed(2).Internal()},
		"Indexed Job completions change alone": {old: makeJob("j").Indexed(4).Internal(), job: makeJob("j").Indexed(4).Completions(2).Internal(),
			want: errs(invalid, "spec.completions")},
		"Indexed Job completions unset": {old: makeJob("j").Indexed(4).Internal(), job: makeJob("j").Indexed(4).Do(func(j *batchv1.Job) { j.Spec.Completions = nil }).Internal(),
			want: errs(required, "spec.completions")},
		"Indexed Job scaled beyond its name": {old: makeJob(nameOfLength(61)).Indexed(10).Internal(), job: makeJob(nameOfLength(61)).Indexed(11).Internal(),
			want: errs(invalid, "metadata.name")},
		"completionMode changes": {old: makeJob("j").Indexed(1).Internal(), job: makeJob("j").Internal(), want: errs(invalid, "spec.completionMode")},
		"podFailurePolicy added": {old: makeJob("j").PodReplacementPolicy(batchv1.Failed).Internal(), job: makeJob("j").PodFailurePolicy(fj).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(invalid, "spec.podFailurePolicy")},
		"podFailurePolicy changes": {old: makeJob("j").PodFailurePolicy(fj).PodReplacementPolicy(batchv1.Failed).Internal(),
			job:  makeJob("j").PodFailurePolicy(onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 2)).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(invalid, "spec.podFailurePolicy")},
		"backoffLimitPerIndex changes": {old: makeJob("j").Indexed(2).BackoffLimitPerIndex(1).Internal(), job: makeJob("j").Indexed(2).BackoffLimitPerIndex(2).Internal(),
			want: errs(invalid, "spec.backoffLimitPerIndex")},
		"maxFailedIndexes changes": {old: makeJob("j").Indexed(4).BackoffLimitPerIndex(1).MaxFailedIndexes(1).Internal(), job: makeJob("j").Indexed(4).BackoffLimitPerIndex(1).MaxFailedIndexes(2).Internal()},
		"managedBy set":            {old: makeJob("j").Internal(), job: makeJob("j").ManagedBy("kueue.x-k8s.io/multikueue").Internal(), want: errs(invalid, "spec.managedBy")},
		"managedBy unset":          {old: makeJob("j").ManagedBy("kueue.x-k8s.io/multikueue").Internal(), job: makeJob("j").Internal(), want: errs(invalid, "spec.managedBy")},
		"managedBy changes": {old: makeJob("j").ManagedBy("kueue.x-k8s.io/multikueue").Internal(), job: makeJob("j").ManagedBy("kubernetes.io/job-controller").Internal(),
			want: errs(invalid, "spec.managedBy")},
		"successPolicy changes": {old: makeJob("j").Indexed(4).SuccessPolicy(successRules(1)...).Internal(), job: makeJob("j").Indexed(4).SuccessPolicy(successRules(2)...).Internal(),
			want: errs(invalid, "spec.successPolicy")},
		"template changes on a running Job": {old: makeJob("j").Internal(), job: makeJob("j").Containers(gpu("2")).Internal(), want: errs(invalid, "spec.template")},
		"nodeSelector changes without the option": {old: makeJob("j").Suspend(true).Internal(),
			job:  makeJob("j").Suspend(true).Do(func(j *batchv1.Job) { j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"} }).Internal(),
			want: errs(invalid, "spec.template")},
		"scheduling directives change with the option": {old: makeJob("j").Suspend(true).Internal(), job: makeJob("j").Suspend(true).Do(func(j *batchv1.Job) {
			j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a"}
			j.Spec.Template.Spec.Tolerations = []corev1.Toleration{{Key: "gpu", Operator: corev1.TolerationOpExists}}
			j.Spec.Template.Spec.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/gate"}}
			j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity}
			j.Spec.Template.Labels["queue"] = "a"
			j.Spec.Template.Annotations = map[string]string{"note": "x"}
		}).Internal(), opts: &schedulingOnly},
		"node affinity removed with the option": {old: makeJob("j").Suspend(true).Do(func(j *batchv1.Job) {
			j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity}
		}).Internal(), job: makeJob("j").Suspend(true).Internal(), opts: &schedulingOnly},
		"pod affinity removed with the option": {old: makeJob("j").Suspend(true).Do(func(j *batchv1.Job) {
			j.Spec.Template.Spec.Affinity = &corev1.Affinity{NodeAffinity: nodeAffinity, PodAffinity: podAffinity}
		}).Internal(), job: makeJob("j").Suspend(true).Internal(), opts: &schedulingOnly, want: errs(invalid, "spec.template")},
		"pod affinity added with the option": {old: makeJob("j").Suspend(true).Internal(), job: makeJob("j").Suspend(true).Do(func(j *batchv1.Job) {
			j.Spec.Template.Spec.Affinity = &corev1.Affinity{PodAffinity: podAffinity}
		}).Internal(), opts: &schedulingOnly, want: errs(invalid, "spec.template")},
		"resources change on a suspended Job with the option": {old: makeJob("j").Suspend(true).Containers(gpu("1")).Internal(),
			job: makeJob("j").Suspend(true).Containers(gpu("2")).Internal(), opts: &mutableTemplate},
		"init container resources change on a suspended Job with the option": {old: makeJob("j").Suspend(true).InitContainers(container("setup")).Internal(),
			job: makeJob("j").Suspend(true).InitContainers(withResources(container("setup"), resources(map[corev1.ResourceName]string{"memory": "1Gi"}, nil))).Internal(), opts: &mutableTemplate},
		"image changes on a suspended Job with the option": {old: makeJob("j").Suspend(true).Internal(),
			job: makeJob("j").Suspend(true).Do(func(j *batchv1.Job) { j.Spec.Template.Spec.Containers[0].Image = "other" }).Internal(), opts: &mutableTemplate,
			want: errs(invalid, "spec.template.spec")},
		"container added to a suspended Job with the option": {old: makeJob("j").Suspend(true).Internal(),
			job: makeJob("j").Suspend(true).Containers(container("main"), container("sidecar")).Internal(), opts: &mutableTemplate,
			want: errs(invalid, "spec.template.spec")},
		"resources change on a suspended Job without the option": {old: makeJob("j").Suspend(true).Containers(gpu("1")).Internal(),
			job: makeJob("j").Suspend(true).Containers(gpu("2")).Internal(), opts: &schedulingOnly, want: errs(invalid, "spec.template")},
		"resources change on a Job being suspended": {old: makeJob("j").Containers(gpu("1")).Internal(),
			job: makeJob("j").Suspend(true).Containers(gpu("2")).Internal(), opts: &mutableTemplate, want: errs(invalid, "spec.template")},
		"invalid resources on a suspended Job with the option": {old: makeJob("j").Suspend(true).Containers(gpu("1")).Internal(),
			job: makeJob("j").Suspend(true).Containers(gpu("-1")).Internal(), opts: &mutableTemplate, want: errs(invalid, "spec.template.spec.containers[0].resources.requests[cpu]")},
		"selector with an invalid label value kept": {old: makeJob("j").Do(manualSelector).Do(func(j *batchv1.Job) {
			j.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a b"}}}
		}).Internal(), job: makeJob("j").Do(manualSelector).Do(func(j *batchv1.Job) {
			j.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a b"}}}
		}).Internal(), opts: &JobValidationOptions{PodValidationOptions: corevalidation.PodValidationOptions{AllowInvalidLabelValueInSelector: true}}},
		"generated labels are not rechecked on update": {old: makeJob("j").Do(func(j *batchv1.Job) { delete(j.Spec.Template.Labels, batch.JobNameLabel) }).Internal(),
			job: makeJob("j").Parallelism(2).Do(func(j *batchv1.Job) { delete(j.Spec.Template.Labels, batch.JobNameLabel) }).Internal()},
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
