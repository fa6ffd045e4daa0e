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
	"reflect"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	kubefeatures "k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/validation"
	"github.com/batch-apiserver/batch-apiserver/pkg/features"
)

var (
	optsT0 = metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	optsT1 = metav1.NewTime(optsT0.Add(time.Minute))
)

// newOptsJob starts the stored Job the option deciders look at: started,
// two of four completions active, without backoffLimit, manualSelector,
// podReplacementPolicy or a template spec.
func newOptsJob() *batchtesting.JobBuilder {
	return batchtesting.MakeJob("j").UID("uid").Generated().Parallelism(2).Completions(4).
		StartTime(optsT0.Time).Active(2).
		Do(func(j *batchv1.Job) {
			j.Spec.BackoffLimit, j.Spec.ManualSelector, j.Spec.PodReplacementPolicy = nil, nil, nil
			j.Spec.Template.Spec = corev1.PodSpec{}
		})
}

func TestJobValidationOptions(t *testing.T) {
	suspended := func() *batchtesting.JobBuilder {
		return newOptsJob().Do(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true); j.Status.StartTime = nil; j.Status.Active = 0 })
	}
	mutable := validation.JobValidationOptions{RequirePrefixedLabels: true, AllowMutableSchedulingDirectives: true, AllowMutablePodResources: true}
	cases := map[string]struct {
		old   *batch.Job
		gates map[featuregate.Feature]bool
		want  validation.JobValidationOptions
	}{
		"create":                           {want: validation.JobValidationOptions{RequirePrefixedLabels: true}},
		"running Job":                      {old: newOptsJob().Internal(), want: validation.JobValidationOptions{RequirePrefixedLabels: true}},
		"suspended Job that never started": {old: suspended().Internal(), want: mutable},
		"suspended Job that started, before the controller acknowledged": {old: suspended().Do(func(j *batchv1.Job) { j.Status.StartTime = &optsT0 }).Internal(),
			want: validation.JobValidationOptions{RequirePrefixedLabels: true}},
		"suspended Job that started, acknowledged": {old: suspended().Do(func(j *batchv1.Job) { j.Status.StartTime = &optsT0 }).Condition(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}).Internal(),
			want: mutable},
		"suspended Job with active pods": {old: suspended().Condition(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}).Do(func(j *batchv1.Job) { j.Status.Active = 1 }).Internal(),
			want: validation.JobValidationOptions{RequirePrefixedLabels: true}},
		"Job resuming with the Suspended condition still true": {old: newOptsJob().Do(func(j *batchv1.Job) { j.Status.Active = 0 }).Condition(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}).Internal(),
			want: validation.JobValidationOptions{RequirePrefixedLabels: true}},
		"Job stored without the prefixed labels": {old: newOptsJob().Do(func(j *batchv1.Job) { delete(j.Spec.Template.Labels, batch.JobNameLabel) }).Internal(),
			want: validation.JobValidationOptions{}},
		"Job stored with an invalid label value in its selector": {old: newOptsJob().Do(func(j *batchv1.Job) {
			j.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a b"}}}
		}).Internal(), want: validation.JobValidationOptions{RequirePrefixedLabels: true, PodValidationOptions: corevalidation.PodValidationOptions{AllowInvalidLabelValueInSelector: true}}},
		"suspended Job that started, acknowledged, without MutableSchedulingDirectivesForSuspendedJobs": {
			old:   suspended().Do(func(j *batchv1.Job) { j.Status.StartTime = &optsT0 }).Condition(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}).Internal(),
			gates: map[featuregate.Feature]bool{kubefeatures.MutableSchedulingDirectivesForSuspendedJobs: false},
			want:  validation.JobValidationOptions{RequirePrefixedLabels: true, AllowMutablePodResources: true}},
		"suspended Job that never started, without MutableSchedulingDirectivesForSuspendedJobs": {
			old:   suspended().Internal(),
			gates: map[featuregate.Feature]bool{kubefeatures.MutableSchedulingDirectivesForSuspendedJobs: false},
			want:  mutable},
		"suspended Job that never started, without MutablePodResourcesForSuspendedJobs": {
			old:   suspended().Internal(),
			gates: map[featuregate.Feature]bool{kubefeatures.MutablePodResourcesForSuspendedJobs: false},
			want:  validation.JobValidationOptions{RequirePrefixedLabels: true, AllowMutableSchedulingDirectives: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for gate, on := range tc.gates {
				featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, gate, on)
			}
			job := newOptsJob().Internal()
			// The pod template options are core's, from the templates; the
			// cases pin what the Job strategy decides on top of them.
			want := tc.want
			var oldTemplate *core.PodTemplateSpec
			if tc.old != nil {
				oldTemplate = internalTemplateOrNil(&tc.old.Spec.Template)
			}
			want.PodValidationOptions = pod.GetValidationOptionsFromPodTemplate(internalTemplateOrNil(&job.Spec.Template), oldTemplate)
			want.AllowInvalidLabelValueInSelector = tc.want.AllowInvalidLabelValueInSelector
			if diff := cmp.Diff(want, jobValidationOptions(job, tc.old)); diff != "" {
				t.Errorf("unexpected options (-want,+got):\n%s", diff)
			}
		})
	}
}

// alwaysOn are the status rules upstream applies to every write of a
// NonIndexed Job, whatever changed.
func alwaysOn() validation.JobStatusValidationOptions {
	return validation.JobStatusValidationOptions{
		RejectDecreasingSucceededCounter: true,
		RejectDecreasingFailedCounter:    true,
		RejectDisablingTerminalCondition: true,
		RejectMutatingCompletionTime:     true,
	}
}

func withOpts(f func(*validation.JobStatusValidationOptions)) validation.JobStatusValidationOptions {
	o := alwaysOn()
	f(&o)
	return o
}

func TestJobStatusValidationOptions(t *testing.T) {
	base := newOptsJob
	indexed := func() *batchtesting.JobBuilder {
		return newOptsJob().Do(func(j *batchv1.Job) {
			j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
			j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
		})
	}
	cases := map[string]struct {
		old, job *batch.Job
		want     validation.JobStatusValidationOptions
	}{
		"nothing changed": {old: base().Internal(), job: base().Internal(), want: alwaysOn()},
		"elastic Indexed Job may lower succeeded": {old: indexed().Do(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](4) }).Internal(),
			job:  indexed().Do(func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](4) }).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) { o.RejectDecreasingSucceededCounter = false })},
		"Indexed Job with parallelism below completions": {old: indexed().Internal(), job: indexed().Internal(), want: alwaysOn()},
		"completedIndexes changed": {old: indexed().Internal(), job: indexed().Do(func(j *batchv1.Job) { j.Status.CompletedIndexes = "0" }).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectInvalidCompletedIndexes = true
				o.RejectCompletedIndexesForNonIndexedJob = true
				o.RejectFailedIndexesOverlappingCompleted = true
			})},
		"failedIndexes changed": {old: indexed().Internal(), job: indexed().Do(func(j *batchv1.Job) { j.Status.FailedIndexes = ptr.To("1") }).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectInvalidFailedIndexes = true
				o.RejectFailedIndexesForNoBackoffLimitPerIndex = true
				o.RejectFailedIndexesOverlappingCompleted = true
				o.RejectFailedJobWithoutFailureTarget = true
			})},
		"Failed set": {old: base().Condition(batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}).Internal(), job: base().Condition(batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}).Condition(batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue}).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectFailedJobWithoutFailureTarget = true
				o.RejectCompleteJobWithFailedCondition = true
				o.RejectFinishedJobWithActivePods = true
				o.RejectFinishedJobWithoutStartTime = true
				o.RejectFinishedJobWithUncountedTerminatedPods = true
				o.RejectFinishedJobWithTerminatingPods = true
			})},
		"FailureTarget set": {old: base().Internal(), job: base().Condition(batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue}).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) { o.RejectCompleteJobWithFailureTargetCondition = true })},
		"SuccessCriteriaMet set": {old: base().Internal(), job: base().Condition(batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) { o.RejectCompleteJobWithoutSuccessCriteriaMet = true })},
		"Complete set": {old: base().Condition(batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}).Internal(),
			job: base().Condition(batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}).Condition(batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectCompleteJobWithoutSuccessCriteriaMet = true
				o.RejectFinishedJobWithActivePods = true
				o.RejectFinishedJobWithoutStartTime = true
				o.RejectFinishedJobWithUncountedTerminatedPods = true
				o.RejectNotCompleteJobWithCompletionTime = true
				o.RejectCompleteJobWithoutCompletionTime = true
				o.RejectCompleteJobWithFailedCondition = true
				o.RejectCompleteJobWithFailureTargetCondition = true
				o.RejectFinishedJobWithTerminatingPods = true
			})},
		"Complete set on a suspended Job with zero completions": {
			old: base().Do(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true); j.Spec.Completions = ptr.To[int32](0) }).Internal(),
			job: base().Do(func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true); j.Spec.Completions = ptr.To[int32](0) }).
				Condition(batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}).Condition(batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectCompleteJobWithoutSuccessCriteriaMet = true
				o.RejectFinishedJobWithActivePods = true
				o.RejectFinishedJobWithUncountedTerminatedPods = true
				o.RejectNotCompleteJobWithCompletionTime = true
				o.RejectCompleteJobWithoutCompletionTime = true
				o.RejectCompleteJobWithFailedCondition = true
				o.RejectCompleteJobWithFailureTargetCondition = true
				o.RejectFinishedJobWithTerminatingPods = true
			})},
		"active changed": {old: base().Internal(), job: base().Do(func(j *batchv1.Job) { j.Status.Active = 3 }).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectFinishedJobWithActivePods = true
				o.RejectMoreReadyThanActivePods = true
			})},
		"ready changed": {old: base().Internal(), job: base().Do(func(j *batchv1.Job) { j.Status.Ready = ptr.To[int32](1) }).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) { o.RejectMoreReadyThanActivePods = true })},
		"terminating changed": {old: base().Internal(), job: base().Do(func(j *batchv1.Job) { j.Status.Terminating = ptr.To[int32](1) }).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) { o.RejectFinishedJobWithTerminatingPods = true })},
		"uncounted pods changed": {old: base().Internal(), job: base().Do(func(j *batchv1.Job) {
			j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Failed: []types.UID{"p"}}
		}).Internal(), want: withOpts(func(o *validation.JobStatusValidationOptions) { o.RejectFinishedJobWithUncountedTerminatedPods = true })},
		"uncounted pods emptied to the same meaning": {old: base().Do(func(j *batchv1.Job) { j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{} }).Internal(),
			job: base().Do(func(j *batchv1.Job) {
				j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Failed: []types.UID{}}
			}).Internal(),
			want: alwaysOn()},
		"startTime changed": {old: base().Internal(), job: base().Do(func(j *batchv1.Job) { j.Status.StartTime = &optsT1 }).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectFinishedJobWithoutStartTime = true
				o.RejectStartTimeUpdateForUnsuspendedJob = true
				o.RejectCompletionTimeBeforeStartTime = true
			})},
		"startTime reset when the Job resumes": {old: base().Condition(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionTrue}).Internal(),
			job: base().Condition(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionFalse}).Do(func(j *batchv1.Job) { j.Status.StartTime = &optsT1 }).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectFinishedJobWithoutStartTime = true
				o.RejectCompletionTimeBeforeStartTime = true
			})},
		"completionTime changed": {old: base().Internal(), job: base().Do(func(j *batchv1.Job) { j.Status.CompletionTime = &optsT1 }).Internal(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectCompletionTimeBeforeStartTime = true
				o.RejectNotCompleteJobWithCompletionTime = true
				o.RejectCompleteJobWithoutCompletionTime = true
			})},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, jobStatusValidationOptions(tc.job, tc.old)); diff != "" {
				t.Errorf("unexpected options (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestJobStatusValidationOptionsStrict(t *testing.T) {
	featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.JobStrictStatusValidation, true)
	old := newOptsJob().Internal()
	job := newOptsJob().Internal()
	want := validation.AllStatusRules()
	if diff := cmp.Diff(want, jobStatusValidationOptions(job, old)); diff != "" {
		t.Errorf("with JobStrictStatusValidation every rule must be on (-want,+got):\n%s", diff)
	}
	// Every field of the options struct is a Reject… switch: all must be on.
	v := reflect.ValueOf(want)
	for i := range v.NumField() {
		if !v.Field(i).Bool() {
			t.Errorf("AllStatusRules leaves %s off", v.Type().Field(i).Name)
		}
	}
}
