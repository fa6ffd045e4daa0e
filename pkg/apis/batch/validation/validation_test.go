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
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

var createOpts = JobValidationOptions{RequirePrefixedLabels: true}

func TestValidateJob(t *testing.T) {
	const fj, ij, cnt = batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, batchv1.PodFailurePolicyActionCount
	notIn := batchv1.PodFailurePolicyOnExitCodesOpNotIn
	pfp := "spec.podFailurePolicy.rules[0]"
	sp := "spec.successPolicy.rules"
	ctr := "spec.template.spec.containers[0]"

	cases := map[string]struct {
		job  *batch.Job
		opts *JobValidationOptions
		want field.ErrorList
	}{
		// Object meta.
		"valid NonIndexed Job": {job: makeJob("j").Internal()},
		"valid Indexed Job with every policy": {job: makeJob("j").Indexed(10).BackoffLimitPerIndex(1).MaxFailedIndexes(10).
			PodFailurePolicy(onExitCodes(batchv1.PodFailurePolicyActionFailIndex, ij, 42), onConditions(batchv1.PodFailurePolicyActionIgnore, pattern(corev1.DisruptionTarget, corev1.ConditionTrue))).PodReplacementPolicy(batchv1.Failed).
			SuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0-4"), SucceededCount: ptr.To[int32](5)}).
			ManagedBy("kueue.x-k8s.io/multikueue").Internal()},
		"name is not a DNS subdomain": {job: makeJob("Bad_Name").Internal(), want: errs(invalid, "metadata.name")},
		"name missing":                {job: makeJob("").Internal(), want: errs(required, "metadata.name")},
		"namespace missing": {job: makeJob("j").Do(func(j *batchv1.Job) { j.Namespace = "" }).Internal(),
			want: errs(required, "metadata.namespace")},
		"finalizer neither standard nor qualified": {job: makeJob("j").Do(func(j *batchv1.Job) { j.Finalizers = []string{"mine"} }).Internal(),
			want: errs(invalid, "metadata.finalizers[0]")},
		"standard finalizer": {job: makeJob("j").Do(func(j *batchv1.Job) { j.Finalizers = []string{"orphan"} }).Internal()},
		"Indexed Job whose last pod hostname is not a DNS label": {job: makeJob(nameOfLength(62)).Indexed(10).Internal(),
			want: errs(invalid, "metadata.name")},
		"Indexed Job whose last pod hostname is 63 characters":       {job: makeJob(nameOfLength(61)).Indexed(10).Internal()},
		"Indexed Job with zero completions skips the hostname check": {job: makeJob(nameOfLength(63)).Indexed(0).Internal()},

		// Generated selector.
		"uid missing": {job: makeJob("j").Do(func(j *batchv1.Job) {
			j.UID = ""
			j.Spec.Selector.MatchLabels[batch.ControllerUIDLabel] = ""
			j.Spec.Template.Labels[batch.ControllerUIDLabel] = ""
			j.Spec.Template.Labels[batch.LegacyControllerUIDLabel] = ""
		}).Internal(), want: errs(required, "metadata.uid")},
		"legacy controller-uid label missing": {job: makeJob("j").Do(func(j *batchv1.Job) { delete(j.Spec.Template.Labels, batch.LegacyControllerUIDLabel) }).Internal(),
			want: errs(required, "spec.template.metadata.labels[controller-uid]")},
		"legacy job-name label wrong": {job: makeJob("j").Do(func(j *batchv1.Job) { j.Spec.Template.Labels[batch.LegacyJobNameLabel] = "other" }).Internal(),
			want: errs(invalid, "spec.template.metadata.labels[job-name]")},
		"prefixed labels missing": {job: makeJob("j").Do(func(j *batchv1.Job) {
			delete(j.Spec.Template.Labels, batch.JobNameLabel)
			j.Spec.Selector.MatchLabels = map[string]string{batch.LegacyControllerUIDLabel: string(j.UID)}
			delete(j.Spec.Template.Labels, batch.ControllerUIDLabel)
		}).Internal(), want: errs(required, "spec.template.metadata.labels[batch.jobs.dev/controller-uid]", required, "spec.template.metadata.labels[batch.jobs.dev/job-name]")},
		"prefixed labels missing when not required": {job: makeJob("j").Do(func(j *batchv1.Job) {
			delete(j.Spec.Template.Labels, batch.JobNameLabel)
			j.Spec.Selector.MatchLabels = map[string]string{batch.LegacyControllerUIDLabel: string(j.UID)}
			delete(j.Spec.Template.Labels, batch.ControllerUIDLabel)
		}).Internal(), opts: &JobValidationOptions{}},
		"selector not auto-generated": {job: makeJob("j").Do(func(j *batchv1.Job) {
			j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}}
			j.Spec.Template.Labels["app"] = "x"
		}).Internal(), want: errs(invalid, "spec.selector")},
		"manual selector skips the generated-selector checks": {job: makeJob("j").Do(manualSelector).Internal()},

		// Selector.
		// A nil selector matches nothing, so the template labels are reported too.
		"selector missing": {job: makeJob("j").Do(func(j *batchv1.Job) { j.Spec.Selector = nil }).Internal(),
			want: errs(required, "spec.selector", invalid, "spec.template.metadata.labels")},
		"selector invalid": {job: makeJob("j").Do(manualSelector).Do(func(j *batchv1.Job) {
			j.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}
		}).Internal(), want: errs(invalid, "spec.selector.matchExpressions[0].operator")},
		"selector does not match template labels": {job: makeJob("j").Do(manualSelector).Do(func(j *batchv1.Job) { j.Spec.Template.Labels["app"] = "y" }).Internal(),
			want: errs(invalid, "spec.template.metadata.labels")},

		// Counts.
		"negative parallelism":             {job: makeJob("j").Parallelism(-1).Internal(), want: errs(invalid, "spec.parallelism")},
		"negative completions":             {job: makeJob("j").Completions(-1).Internal(), want: errs(invalid, "spec.completions")},
		"negative activeDeadlineSeconds":   {job: makeJob("j").Do(func(j *batchv1.Job) { j.Spec.ActiveDeadlineSeconds = ptr.To[int64](-1) }).Internal(), want: errs(invalid, "spec.activeDeadlineSeconds")},
		"negative backoffLimit":            {job: makeJob("j").Do(func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](-1) }).Internal(), want: errs(invalid, "spec.backoffLimit")},
		"negative ttlSecondsAfterFinished": {job: makeJob("j").Do(func(j *batchv1.Job) { j.Spec.TTLSecondsAfterFinished = ptr.To[int32](-1) }).Internal(), want: errs(invalid, "spec.ttlSecondsAfterFinished")},
		"negative backoffLimitPerIndex":    {job: makeJob("j").Indexed(2).BackoffLimitPerIndex(-1).Internal(), want: errs(invalid, "spec.backoffLimitPerIndex")},
		"negative maxFailedIndexes":        {job: makeJob("j").Indexed(2).BackoffLimitPerIndex(1).MaxFailedIndexes(-1).Internal(), want: errs(invalid, "spec.maxFailedIndexes")},
		"zero counts": {job: makeJob("j").Parallelism(0).Completions(0).Do(func(j *batchv1.Job) {
			j.Spec.ActiveDeadlineSeconds = ptr.To[int64](0)
			j.Spec.BackoffLimit = ptr.To[int32](0)
			j.Spec.TTLSecondsAfterFinished = ptr.To[int32](0)
		}).Internal()},
		"maxFailedIndexes without backoffLimitPerIndex": {job: makeJob("j").Indexed(2).MaxFailedIndexes(1).Internal(),
			want: errs(required, "spec.backoffLimitPerIndex")},

		// managedBy.
		"managedBy reserved value":       {job: makeJob("j").ManagedBy("kubernetes.io/job-controller").Internal()},
		"managedBy not domain-prefixed":  {job: makeJob("j").ManagedBy("kueue").Internal(), want: errs(invalid, "spec.managedBy")},
		"managedBy with invalid domain":  {job: makeJob("j").ManagedBy("Kueue_/mk").Internal(), want: errs(invalid, "spec.managedBy")},
		"managedBy 63 characters":        {job: makeJob("j").ManagedBy("example.com/" + nameOfLength(51)).Internal()},
		"managedBy longer than 63":       {job: makeJob("j").ManagedBy("example.com/" + nameOfLength(52)).Internal(), want: errs(tooLong, "spec.managedBy")},
		"completionMode not supported":   {job: makeJob("j").Do(func(j *batchv1.Job) { j.Spec.CompletionMode = ptr.To[batchv1.CompletionMode]("Sometimes") }).Internal(), want: errs(notSupported, "spec.completionMode")},
		"Indexed without completions":    {job: makeJob("j").Indexed(2).Do(func(j *batchv1.Job) { j.Spec.Completions = nil }).Internal(), want: errs(required, "spec.completions")},
		"Indexed parallelism above 10^5": {job: makeJob("j").Indexed(10).Parallelism(100_001).Internal(), want: errs(invalid, "spec.parallelism")},
		"Indexed parallelism 10^5":       {job: makeJob("j").Indexed(10).Parallelism(100_000).Internal()},
		"maxFailedIndexes above completions": {job: makeJob("j").Indexed(5).BackoffLimitPerIndex(1).MaxFailedIndexes(6).Internal(),
			want: errs(invalid, "spec.maxFailedIndexes")},
		"maxFailedIndexes equal to completions": {job: makeJob("j").Indexed(5).BackoffLimitPerIndex(1).MaxFailedIndexes(5).Internal()},
		"maxFailedIndexes above 10^5": {job: makeJob("j").Indexed(100_000).BackoffLimitPerIndex(1).MaxFailedIndexes(100_001).Internal(),
			want: errs(invalid, "spec.maxFailedIndexes", invalid, "spec.maxFailedIndexes")},
		"completions above 10^5 with backoffLimitPerIndex needs maxFailedIndexes": {job: makeJob("j").Indexed(100_001).Parallelism(10).BackoffLimitPerIndex(1).Internal(),
			want: errs(required, "spec.maxFailedIndexes")},
		"completions above 10^5 with backoffLimitPerIndex caps parallelism": {job: makeJob("j").Indexed(100_001).Parallelism(10_001).BackoffLimitPerIndex(1).MaxFailedIndexes(10).Internal(),
			want: errs(invalid, "spec.parallelism")},
		"completions above 10^5 with backoffLimitPerIndex caps maxFailedIndexes": {job: makeJob("j").Indexed(100_001).Parallelism(10).BackoffLimitPerIndex(1).MaxFailedIndexes(10_001).Internal(),
			want: errs(invalid, "spec.maxFailedIndexes")},
		"completions above 10^5 with backoffLimitPerIndex at the limits": {job: makeJob("j").Indexed(100_001).Parallelism(10_000).BackoffLimitPerIndex(1).MaxFailedIndexes(10_000).Internal()},
		"completions above 10^5 without backoffLimitPerIndex":            {job: makeJob("j").Indexed(1_000_000).Parallelism(100_000).Internal()},
		"backoffLimitPerIndex on NonIndexed": {job: makeJob("j").BackoffLimitPerIndex(1).Internal(),
			want: errs(invalid, "spec.backoffLimitPerIndex")},
		"maxFailedIndexes on NonIndexed": {job: makeJob("j").MaxFailedIndexes(1).Internal(),
			want: errs(invalid, "spec.maxFailedIndexes", required, "spec.backoffLimitPerIndex")},

		// podFailurePolicy.
		"podFailurePolicy with 20 rules": {job: makeJob("j").PodFailurePolicy(repeatRule(onExitCodes(fj, ij, 1), 20)...).PodReplacementPolicy(batchv1.Failed).Internal()},
		"podFailurePolicy with 21 rules": {job: makeJob("j").PodFailurePolicy(repeatRule(onExitCodes(fj, ij, 1), 21)...).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(tooMany, "spec.podFailurePolicy.rules")},
		"rule action missing": {job: makeJob("j").PodFailurePolicy(onExitCodes("", ij, 1)).PodReplacementPolicy(batchv1.Failed).Internal(), want: errs(required, pfp+".action")},
		"rule action not supported": {job: makeJob("j").PodFailurePolicy(onExitCodes("Retry", ij, 1)).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(notSupported, pfp+".action")},
		"FailIndex without backoffLimitPerIndex": {job: makeJob("j").Indexed(2).PodFailurePolicy(onExitCodes(batchv1.PodFailurePolicyActionFailIndex, ij, 1)).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(invalid, pfp+".action")},
		"rule with both requirements": {job: makeJob("j").PodFailurePolicy(batchv1.PodFailurePolicyRule{Action: fj,
			OnExitCodes:     &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: ij, Values: []int32{1}},
			OnPodConditions: patterns(1)}).PodReplacementPolicy(batchv1.Failed).Internal(), want: errs(invalid, pfp)},
		"rule with no requirement": {job: makeJob("j").PodFailurePolicy(batchv1.PodFailurePolicyRule{Action: fj}).PodReplacementPolicy(batchv1.Failed).Internal(), want: errs(invalid, pfp)},
		"onExitCodes operator missing": {job: makeJob("j").PodFailurePolicy(onExitCodes(fj, "", 1)).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(required, pfp+".onExitCodes.operator")},
		"onExitCodes operator not supported": {job: makeJob("j").PodFailurePolicy(onExitCodes(fj, "Between", 1)).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(notSupported, pfp+".onExitCodes.operator")},
		"onExitCodes containerName unknown": {job: makeJob("j").PodFailurePolicy(onExitCodes(fj, ij, 1)).PodReplacementPolicy(batchv1.Failed).Do(func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy.Rules[0].OnExitCodes.ContainerName = ptr.To("sidecar")
		}).Internal(), want: errs(invalid, pfp+".onExitCodes.containerName")},
		"onExitCodes containerName of an init container": {job: makeJob("j").InitContainers(container("setup")).PodFailurePolicy(onExitCodes(fj, ij, 1)).PodReplacementPolicy(batchv1.Failed).Do(func(j *batchv1.Job) {
			j.Spec.PodFailurePolicy.Rules[0].OnExitCodes.ContainerName = ptr.To("setup")
		}).Internal()},
		"onExitCodes without values": {job: makeJob("j").PodFailurePolicy(onExitCodes(fj, ij)).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(invalid, pfp+".onExitCodes.values")},
		"onExitCodes with 255 values": {job: makeJob("j").PodFailurePolicy(onExitCodes(fj, ij, exitCodes(255)...)).PodReplacementPolicy(batchv1.Failed).Internal()},
		"onExitCodes with 256 values": {job: makeJob("j").PodFailurePolicy(onExitCodes(fj, ij, exitCodes(256)...)).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(tooMany, pfp+".onExitCodes.values")},
		"onExitCodes In 0": {job: makeJob("j").PodFailurePolicy(onExitCodes(fj, ij, 0, 1)).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(invalid, pfp+".onExitCodes.values[0]")},
		"onExitCodes NotIn 0": {job: makeJob("j").PodFailurePolicy(onExitCodes(cnt, notIn, 0)).PodReplacementPolicy(batchv1.Failed).Internal()},
		"onExitCodes duplicate value": {job: makeJob("j").PodFailurePolicy(onExitCodes(fj, ij, 1, 1)).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(duplicate, pfp+".onExitCodes.values[1]")},
		"onExitCodes not ordered": {job: makeJob("j").PodFailurePolicy(onExitCodes(fj, ij, 2, 1)).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(invalid, pfp+".onExitCodes.values")},
		"onPodConditions with 20 patterns": {job: makeJob("j").PodFailurePolicy(onConditions(fj, patterns(20)...)).PodReplacementPolicy(batchv1.Failed).Internal()},
		"onPodConditions with 21 patterns": {job: makeJob("j").PodFailurePolicy(onConditions(fj, patterns(21)...)).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(tooMany, pfp+".onPodConditions")},
		"onPodConditions type not a qualified name": {job: makeJob("j").PodFailurePolicy(onConditions(fj, pattern("Bad Type", corev1.ConditionTrue))).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(invalid, pfp+".onPodConditions[0].type")},
		"onPodConditions status missing": {job: makeJob("j").PodFailurePolicy(onConditions(fj, pattern(corev1.DisruptionTarget, ""))).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(required, pfp+".onPodConditions[0].status")},
		"onPodConditions status not supported": {job: makeJob("j").PodFailurePolicy(onConditions(fj, pattern(corev1.DisruptionTarget, "Maybe"))).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(notSupported, pfp+".onPodConditions[0].status")},
		"podFailurePolicy with restartPolicy OnFailure": {job: makeJob("j").RestartPolicy(corev1.RestartPolicyOnFailure).PodFailurePolicy(onExitCodes(fj, ij, 1)).PodReplacementPolicy(batchv1.Failed).Internal(),
			want: errs(invalid, "spec.template.spec.restartPolicy")},
		"podFailurePolicy with podReplacementPolicy TerminatingOrFailed": {job: makeJob("j").PodFailurePolicy(onExitCodes(fj, ij, 1)).PodReplacementPolicy(batchv1.Failed).PodReplacementPolicy(batchv1.TerminatingOrFailed).Internal(),
			want: errs(notSupported, "spec.podReplacementPolicy")},
		"podReplacementPolicy not supported": {job: makeJob("j").PodReplacementPolicy("Eventually").Internal(),
			want: errs(notSupported, "spec.podReplacementPolicy")},
		"podReplacementPolicy Failed": {job: makeJob("j").PodReplacementPolicy(batchv1.Failed).Internal()},

		// successPolicy.
		"successPolicy on NonIndexed": {job: makeJob("j").SuccessPolicy(successRules(1)...).Internal(), want: errs(invalid, "spec.successPolicy")},
		"successPolicy without rules": {job: makeJob("j").Indexed(5).SuccessPolicy().Internal(), want: errs(required, sp)},
		"successPolicy with 20 rules": {job: makeJob("j").Indexed(5).SuccessPolicy(successRules(20)...).Internal()},
		"successPolicy with 21 rules": {job: makeJob("j").Indexed(5).SuccessPolicy(successRules(21)...).Internal(), want: errs(tooMany, sp)},
		"successPolicy rule empty":    {job: makeJob("j").Indexed(5).SuccessPolicy(batchv1.SuccessPolicyRule{}).Internal(), want: errs(required, sp+"[0]")},
		"succeededIndexes malformed": {job: makeJob("j").Indexed(5).SuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("1-2-3")}).Internal(),
			want: errs(invalid, sp+"[0].succeededIndexes")},
		"succeededIndexes out of range": {job: makeJob("j").Indexed(5).SuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0,5")}).Internal(),
			want: errs(invalid, sp+"[0].succeededIndexes")},
		"succeededIndexes not increasing": {job: makeJob("j").Indexed(5).SuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("3,1")}).Internal(),
			want: errs(invalid, sp+"[0].succeededIndexes")},
		"succeededIndexes of 64KiB": {job: makeJob("j").Indexed(5).SuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To(strings.Repeat("0", 64*1024))}).Internal()},
		"succeededIndexes longer than 64KiB": {job: makeJob("j").Indexed(5).SuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To(strings.Repeat("0", 64*1024+1))}).Internal(),
			want: errs(tooLong, sp+"[0].succeededIndexes")},
		"succeededCount negative": {job: makeJob("j").Indexed(5).SuccessPolicy(batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](-1)}).Internal(),
			want: errs(invalid, sp+"[0].succeededCount")},
		"succeededCount above completions": {job: makeJob("j").Indexed(5).SuccessPolicy(batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](6)}).Internal(),
			want: errs(invalid, sp+"[0].succeededCount")},
		"succeededCount above the succeededIndexes size": {job: makeJob("j").Indexed(5).SuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0-2"), SucceededCount: ptr.To[int32](4)}).Internal(),
			want: errs(invalid, sp+"[0].succeededCount")},
		"succeededCount equal to the succeededIndexes size": {job: makeJob("j").Indexed(5).SuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0-2"), SucceededCount: ptr.To[int32](3)}).Internal()},

		// Restart policy.
		"restartPolicy OnFailure": {job: makeJob("j").RestartPolicy(corev1.RestartPolicyOnFailure).Internal()},
		"restartPolicy Always (the pod default)": {job: makeJob("j").RestartPolicy(corev1.RestartPolicyAlways).Internal(),
			want: errs(required, "spec.template.spec.restartPolicy")},
		"restartPolicy empty": {job: makeJob("j").RestartPolicy("").Internal(),
			want: errs(required, "spec.template.spec.restartPolicy", required, "spec.template.spec.restartPolicy")},
		"restartPolicy not supported": {job: makeJob("j").RestartPolicy("Sometimes").Internal(),
			want: errs(notSupported, "spec.template.spec.restartPolicy", notSupported, "spec.template.spec.restartPolicy")},

		// Pod template.
		"template label key invalid": {job: makeJob("j").Do(func(j *batchv1.Job) { j.Spec.Template.Labels["a b"] = "c" }).Internal(),
			want: errs(invalid, "spec.template.labels")},
		"template annotation key invalid": {job: makeJob("j").Do(func(j *batchv1.Job) { j.Spec.Template.Annotations = map[string]string{"a b": "c"} }).Internal(),
			want: errs(invalid, "spec.template.annotations")},
		"no containers":           {job: makeJob("j").Containers().Internal(), want: errs(required, "spec.template.spec.containers")},
		"container name missing":  {job: makeJob("j").Containers(container("")).Internal(), want: errs(required, ctr+".name")},
		"container name invalid":  {job: makeJob("j").Containers(container("Main")).Internal(), want: errs(invalid, ctr+".name")},
		"container name 63 long":  {job: makeJob("j").Containers(container(nameOfLength(63))).Internal()},
		"container name 64 long":  {job: makeJob("j").Containers(container(nameOfLength(64))).Internal(), want: errs(invalid, ctr+".name")},
		"container name repeated": {job: makeJob("j").Containers(container("main"), container("main")).Internal(), want: errs(duplicate, "spec.template.spec.containers[1].name")},
		"init container name taken by a container": {job: makeJob("j").InitContainers(container("main")).Internal(),
			want: errs(duplicate, "spec.template.spec.initContainers[0].name")},
		"init container name invalid": {job: makeJob("j").InitContainers(container("-setup")).Internal(),
			want: errs(invalid, "spec.template.spec.initContainers[0].name")},
		"image missing": {job: makeJob("j").Containers(func() corev1.Container { c := container("main"); c.Image = ""; return c }()).Internal(),
			want: errs(required, ctr+".image")},
		"init container image missing": {job: makeJob("j").InitContainers(func() corev1.Container { c := container("setup"); c.Image = ""; return c }()).Internal(),
			want: errs(required, "spec.template.spec.initContainers[0].image")},
		"imagePullPolicy missing": {job: makeJob("j").Containers(func() corev1.Container { c := container("main"); c.ImagePullPolicy = ""; return c }()).Internal(),
			want: errs(required, ctr+".imagePullPolicy")},
		"terminationMessagePolicy not supported": {job: makeJob("j").Containers(func() corev1.Container { c := container("main"); c.TerminationMessagePolicy = "Tail"; return c }()).Internal(),
			want: errs(notSupported, ctr+".terminationMessagePolicy")},
		"terminationGracePeriodSeconds missing": {job: makeJob("j").Do(func(j *batchv1.Job) { j.Spec.Template.Spec.TerminationGracePeriodSeconds = nil }).Internal(),
			want: errs(required, "spec.template.spec.terminationGracePeriodSeconds")},
		"dnsPolicy not supported": {job: makeJob("j").Do(func(j *batchv1.Job) { j.Spec.Template.Spec.DNSPolicy = "Public" }).Internal(),
			want: errs(notSupported, "spec.template.spec.dnsPolicy")},
		"nodeSelector value invalid": {job: makeJob("j").Do(func(j *batchv1.Job) { j.Spec.Template.Spec.NodeSelector = map[string]string{"zone": "a b"} }).Internal(),
			want: errs(invalid, "spec.template.spec.nodeSelector")},
		"ephemeral containers": {job: makeJob("j").Do(func(j *batchv1.Job) {
			// Defaulted, as every template reaching validation is.
			j.Spec.Template.Spec.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}}}
		}).Internal(), want: errs(forbidden, "spec.template.spec.ephemeralContainers")},
		"container port valid":        {job: makeJob("j").Containers(withPorts(container("main"), tcp(8080), tcp(65535))).Internal()},
		"container port missing":      {job: makeJob("j").Containers(withPorts(container("main"), tcp(0))).Internal(), want: errs(required, ctr+".ports[0].containerPort")},
		"container port out of range": {job: makeJob("j").Containers(withPorts(container("main"), tcp(65536))).Internal(), want: errs(invalid, ctr+".ports[0].containerPort")},
		"host port out of range":      {job: makeJob("j").Containers(withPorts(container("main"), corev1.ContainerPort{ContainerPort: 80, HostPort: 70000, Protocol: "TCP"})).Internal(), want: errs(invalid, ctr+".ports[0].hostPort")},
		"port protocol not supported": {job: makeJob("j").Containers(withPorts(container("main"), corev1.ContainerPort{ContainerPort: 80, Protocol: "QUIC"})).Internal(), want: errs(notSupported, ctr+".ports[0].protocol")},
		"port protocol missing":       {job: makeJob("j").Containers(withPorts(container("main"), corev1.ContainerPort{ContainerPort: 80})).Internal(), want: errs(required, ctr+".ports[0].protocol")},
		"port name invalid":           {job: makeJob("j").Containers(withPorts(container("main"), corev1.ContainerPort{Name: "http_port", ContainerPort: 80, Protocol: "TCP"})).Internal(), want: errs(invalid, ctr+".ports[0].name")},
		"port name repeated":          {job: makeJob("j").Containers(withPorts(container("main"), corev1.ContainerPort{Name: "http", ContainerPort: 80, Protocol: "TCP"}, corev1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: "TCP"})).Internal(), want: errs(duplicate, ctr+".ports[1].name")},
		"host port used by two containers": {job: makeJob("j").Containers(withPorts(container("a"), corev1.ContainerPort{ContainerPort: 80, HostPort: 8080, Protocol: "TCP"}), withPorts(container("b"), corev1.ContainerPort{ContainerPort: 81, HostPort: 8080, Protocol: "TCP"})).Internal(),
			want: errs(duplicate, "spec.template.spec.containers[1].ports[0].hostPort")},
		"resources within limits": {job: makeJob("j").Containers(withResources(container("main"), resources(
			map[corev1.ResourceName]string{"cpu": "1", "memory": "1Gi", "example.com/gpu": "2"},
			map[corev1.ResourceName]string{"cpu": "1", "memory": "2Gi", "example.com/gpu": "2"}))).Internal()},
		"resource quantity negative": {job: makeJob("j").Containers(withResources(container("main"), resources(nil, map[corev1.ResourceName]string{"cpu": "-1"}))).Internal(),
			want: errs(invalid, ctr+".resources.limits[cpu]")},
		"request above limit": {job: makeJob("j").Containers(withResources(container("main"), resources(map[corev1.ResourceName]string{"memory": "2Gi"}, map[corev1.ResourceName]string{"memory": "1Gi"}))).Internal(),
			want: errs(invalid, ctr+".resources.requests")},
		"resource name not standard": {job: makeJob("j").Containers(withResources(container("main"), resources(map[corev1.ResourceName]string{"gpu": "1"}, nil))).Internal(),
			want: errs(invalid, ctr+".resources.requests[gpu]", invalid, ctr+".resources.requests[gpu]")},
		"resource name not for containers": {job: makeJob("j").Containers(withResources(container("main"), resources(map[corev1.ResourceName]string{"pods": "1"}, nil))).Internal(),
			want: errs(invalid, ctr+".resources.requests[pods]")},
		"extended resource fractional": {job: makeJob("j").Containers(withResources(container("main"), resources(map[corev1.ResourceName]string{"example.com/gpu": "500m"}, map[corev1.ResourceName]string{"example.com/gpu": "500m"}))).Internal(),
			want: errs(invalid, ctr+".resources.requests[example.com/gpu]", invalid, ctr+".resources.limits[example.com/gpu]")},
		"extended resource without limit": {job: makeJob("j").Containers(withResources(container("main"), resources(map[corev1.ResourceName]string{"example.com/gpu": "1"}, nil))).Internal(),
			want: errs(required, ctr+".resources.limits")},
		"extended resource request below limit": {job: makeJob("j").Containers(withResources(container("main"), resources(map[corev1.ResourceName]string{"example.com/gpu": "1"}, map[corev1.ResourceName]string{"example.com/gpu": "2"}))).Internal(),
			want: errs(invalid, ctr+".resources.requests")},
		"hugepages without cpu or memory": {job: makeJob("j").Containers(withResources(container("main"), resources(nil, map[corev1.ResourceName]string{"hugepages-2Mi": "2Mi"}))).Internal(),
			want: errs(forbidden, ctr+".resources")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			opts := createOpts
			if tc.opts != nil {
				opts = *tc.opts
			}
			assertErrors(t, tc.want, ValidateJob(tc.job, opts))
		})
	}
}

func TestValidateGeneratedSelector(t *testing.T) {
	cases := map[string]struct {
		job             *batch.Job
		requirePrefixed bool
		want            field.ErrorList
	}{
		"generated labels present": {job: makeJob("j").Internal(), requirePrefixed: true},
		"manual selector":          {job: makeJob("j").Do(manualSelector).Internal(), requirePrefixed: true},
		"no selector":              {job: makeJob("j").Do(func(j *batchv1.Job) { j.Spec.Selector = nil }).Internal(), requirePrefixed: true},
		"prefixed labels wrong": {job: makeJob("j").Do(func(j *batchv1.Job) {
			j.Spec.Template.Labels[batch.JobNameLabel] = "x"
			j.Spec.Template.Labels[batch.ControllerUIDLabel] = "x"
		}).Internal(), requirePrefixed: true, want: errs(invalid, "spec.template.metadata.labels[batch.jobs.dev/controller-uid]",
			invalid, "spec.template.metadata.labels[batch.jobs.dev/job-name]")},
		"legacy selector with prefixed labels wrong but not required": {job: makeJob("j").Do(func(j *batchv1.Job) {
			j.Spec.Selector.MatchLabels = map[string]string{batch.LegacyControllerUIDLabel: string(j.UID)}
			j.Spec.Template.Labels[batch.JobNameLabel] = "x"
		}).Internal()},
		"prefixed selector when prefixed labels are not required": {job: makeJob("j").Internal(), want: errs(invalid, "spec.selector")},
		"selector on another uid": {job: makeJob("j").Do(func(j *batchv1.Job) {
			j.Spec.Selector.MatchLabels[batch.ControllerUIDLabel] = "other"
		}).Internal(), requirePrefixed: true, want: errs(invalid, "spec.selector")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assertErrors(t, tc.want, validateGeneratedSelector(tc.job, tc.requirePrefixed))
		})
	}
}
