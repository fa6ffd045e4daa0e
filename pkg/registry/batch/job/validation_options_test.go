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
	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/validation"
	"github.com/batch-apiserver/batch-apiserver/pkg/features"
)

var (
	optsT0 = metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	optsT1 = metav1.NewTime(optsT0.Add(time.Minute))
)

// optsJob builds the stored Jobs the option deciders look at.
type optsJob struct{ job *batch.Job }

func newOptsJob() *optsJob {
	return &optsJob{job: &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "default", UID: "uid"},
		Spec: batch.JobSpec{
			Parallelism:    ptr.To[int32](2),
			Completions:    ptr.To[int32](4),
			CompletionMode: ptr.To(batch.NonIndexedCompletion),
			Suspend:        ptr.To(false),
			Selector:       &metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUIDLabel: "uid"}},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
				batch.ControllerUIDLabel: "uid", batch.LegacyControllerUIDLabel: "uid", batch.JobNameLabel: "j", batch.LegacyJobNameLabel: "j",
			}}},
		},
		Status: batch.JobStatus{StartTime: &optsT0, Active: 2},
	}}
}

func (o *optsJob) do(f func(*batch.Job)) *optsJob { f(o.job); return o }
func (o *optsJob) obj() *batch.Job                { return o.job.DeepCopy() }
func (o *optsJob) cond(t batch.JobConditionType, s corev1.ConditionStatus) *optsJob {
	o.job.Status.Conditions = append(o.job.Status.Conditions, batch.JobCondition{Type: t, Status: s})
	return o
}

func TestJobValidationOptions(t *testing.T) {
	suspended := func() *optsJob {
		return newOptsJob().do(func(j *batch.Job) { j.Spec.Suspend = ptr.To(true); j.Status.StartTime = nil; j.Status.Active = 0 })
	}
	mutable := validation.JobValidationOptions{RequirePrefixedLabels: true, AllowMutableSchedulingDirectives: true, AllowMutablePodResources: true}
	cases := map[string]struct {
		old   *batch.Job
		gates map[featuregate.Feature]bool
		want  validation.JobValidationOptions
	}{
		"create":                           {want: validation.JobValidationOptions{RequirePrefixedLabels: true}},
		"running Job":                      {old: newOptsJob().obj(), want: validation.JobValidationOptions{RequirePrefixedLabels: true}},
		"suspended Job that never started": {old: suspended().obj(), want: mutable},
		"suspended Job that started, before the controller acknowledged": {old: suspended().do(func(j *batch.Job) { j.Status.StartTime = &optsT0 }).obj(),
			want: validation.JobValidationOptions{RequirePrefixedLabels: true}},
		"suspended Job that started, acknowledged": {old: suspended().do(func(j *batch.Job) { j.Status.StartTime = &optsT0 }).cond(batch.JobSuspended, corev1.ConditionTrue).obj(),
			want: mutable},
		"suspended Job with active pods": {old: suspended().cond(batch.JobSuspended, corev1.ConditionTrue).do(func(j *batch.Job) { j.Status.Active = 1 }).obj(),
			want: validation.JobValidationOptions{RequirePrefixedLabels: true}},
		"Job resuming with the Suspended condition still true": {old: newOptsJob().do(func(j *batch.Job) { j.Status.Active = 0 }).cond(batch.JobSuspended, corev1.ConditionTrue).obj(),
			want: validation.JobValidationOptions{RequirePrefixedLabels: true}},
		"Job stored without the prefixed labels": {old: newOptsJob().do(func(j *batch.Job) { delete(j.Spec.Template.Labels, batch.JobNameLabel) }).obj(),
			want: validation.JobValidationOptions{}},
		"Job stored with an invalid label value in its selector": {old: newOptsJob().do(func(j *batch.Job) {
			j.Spec.Selector.MatchExpressions = []metav1.LabelSelectorRequirement{{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"a b"}}}
		}).obj(), want: validation.JobValidationOptions{RequirePrefixedLabels: true, PodValidationOptions: corevalidation.PodValidationOptions{AllowInvalidLabelValueInSelector: true}}},
		"suspended Job that started, acknowledged, without MutableSchedulingDirectivesForSuspendedJobs": {
			old:   suspended().do(func(j *batch.Job) { j.Status.StartTime = &optsT0 }).cond(batch.JobSuspended, corev1.ConditionTrue).obj(),
			gates: map[featuregate.Feature]bool{kubefeatures.MutableSchedulingDirectivesForSuspendedJobs: false},
			want:  validation.JobValidationOptions{RequirePrefixedLabels: true, AllowMutablePodResources: true}},
		"suspended Job that never started, without MutableSchedulingDirectivesForSuspendedJobs": {
			old:   suspended().obj(),
			gates: map[featuregate.Feature]bool{kubefeatures.MutableSchedulingDirectivesForSuspendedJobs: false},
			want:  mutable},
		"suspended Job that never started, without MutablePodResourcesForSuspendedJobs": {
			old:   suspended().obj(),
			gates: map[featuregate.Feature]bool{kubefeatures.MutablePodResourcesForSuspendedJobs: false},
			want:  validation.JobValidationOptions{RequirePrefixedLabels: true, AllowMutableSchedulingDirectives: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			for gate, on := range tc.gates {
				featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, gate, on)
			}
			job := newOptsJob().obj()
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
	indexed := func() *optsJob {
		return newOptsJob().do(func(j *batch.Job) {
			j.Spec.CompletionMode = ptr.To(batch.IndexedCompletion)
			j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
		})
	}
	cases := map[string]struct {
		old, job *batch.Job
		want     validation.JobStatusValidationOptions
	}{
		"nothing changed": {old: base().obj(), job: base().obj(), want: alwaysOn()},
		"elastic Indexed Job may lower succeeded": {old: indexed().do(func(j *batch.Job) { j.Spec.Parallelism = ptr.To[int32](4) }).obj(),
			job:  indexed().do(func(j *batch.Job) { j.Spec.Parallelism = ptr.To[int32](4) }).obj(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) { o.RejectDecreasingSucceededCounter = false })},
		"Indexed Job with parallelism below completions": {old: indexed().obj(), job: indexed().obj(), want: alwaysOn()},
		"completedIndexes changed": {old: indexed().obj(), job: indexed().do(func(j *batch.Job) { j.Status.CompletedIndexes = "0" }).obj(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectInvalidCompletedIndexes = true
				o.RejectCompletedIndexesForNonIndexedJob = true
				o.RejectFailedIndexesOverlappingCompleted = true
			})},
		"failedIndexes changed": {old: indexed().obj(), job: indexed().do(func(j *batch.Job) { j.Status.FailedIndexes = ptr.To("1") }).obj(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectInvalidFailedIndexes = true
				o.RejectFailedIndexesForNoBackoffLimitPerIndex = true
				o.RejectFailedIndexesOverlappingCompleted = true
				o.RejectFailedJobWithoutFailureTarget = true
			})},
		"Failed set": {old: base().cond(batch.JobFailureTarget, corev1.ConditionTrue).obj(), job: base().cond(batch.JobFailureTarget, corev1.ConditionTrue).cond(batch.JobFailed, corev1.ConditionTrue).obj(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectFailedJobWithoutFailureTarget = true
				o.RejectCompleteJobWithFailedCondition = true
				o.RejectFinishedJobWithActivePods = true
				o.RejectFinishedJobWithoutStartTime = true
				o.RejectFinishedJobWithUncountedTerminatedPods = true
				o.RejectFinishedJobWithTerminatingPods = true
			})},
		"FailureTarget set": {old: base().obj(), job: base().cond(batch.JobFailureTarget, corev1.ConditionTrue).obj(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) { o.RejectCompleteJobWithFailureTargetCondition = true })},
		"SuccessCriteriaMet set": {old: base().obj(), job: base().cond(batch.JobSuccessCriteriaMet, corev1.ConditionTrue).obj(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) { o.RejectCompleteJobWithoutSuccessCriteriaMet = true })},
		"Complete set": {old: base().cond(batch.JobSuccessCriteriaMet, corev1.ConditionTrue).obj(),
			job: base().cond(batch.JobSuccessCriteriaMet, corev1.ConditionTrue).cond(batch.JobComplete, corev1.ConditionTrue).obj(),
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
			old: base().do(func(j *batch.Job) { j.Spec.Suspend = ptr.To(true); j.Spec.Completions = ptr.To[int32](0) }).obj(),
			job: base().do(func(j *batch.Job) { j.Spec.Suspend = ptr.To(true); j.Spec.Completions = ptr.To[int32](0) }).
				cond(batch.JobSuccessCriteriaMet, corev1.ConditionTrue).cond(batch.JobComplete, corev1.ConditionTrue).obj(),
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
		"active changed": {old: base().obj(), job: base().do(func(j *batch.Job) { j.Status.Active = 3 }).obj(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectFinishedJobWithActivePods = true
				o.RejectMoreReadyThanActivePods = true
			})},
		"ready changed": {old: base().obj(), job: base().do(func(j *batch.Job) { j.Status.Ready = ptr.To[int32](1) }).obj(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) { o.RejectMoreReadyThanActivePods = true })},
		"terminating changed": {old: base().obj(), job: base().do(func(j *batch.Job) { j.Status.Terminating = ptr.To[int32](1) }).obj(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) { o.RejectFinishedJobWithTerminatingPods = true })},
		"uncounted pods changed": {old: base().obj(), job: base().do(func(j *batch.Job) {
			j.Status.UncountedTerminatedPods = &batch.UncountedTerminatedPods{Failed: []types.UID{"p"}}
		}).obj(), want: withOpts(func(o *validation.JobStatusValidationOptions) { o.RejectFinishedJobWithUncountedTerminatedPods = true })},
		"uncounted pods emptied to the same meaning": {old: base().do(func(j *batch.Job) { j.Status.UncountedTerminatedPods = &batch.UncountedTerminatedPods{} }).obj(),
			job: base().do(func(j *batch.Job) {
				j.Status.UncountedTerminatedPods = &batch.UncountedTerminatedPods{Failed: []types.UID{}}
			}).obj(),
			want: alwaysOn()},
		"startTime changed": {old: base().obj(), job: base().do(func(j *batch.Job) { j.Status.StartTime = &optsT1 }).obj(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectFinishedJobWithoutStartTime = true
				o.RejectStartTimeUpdateForUnsuspendedJob = true
				o.RejectCompletionTimeBeforeStartTime = true
			})},
		"startTime reset when the Job resumes": {old: base().cond(batch.JobSuspended, corev1.ConditionTrue).obj(),
			job: base().cond(batch.JobSuspended, corev1.ConditionFalse).do(func(j *batch.Job) { j.Status.StartTime = &optsT1 }).obj(),
			want: withOpts(func(o *validation.JobStatusValidationOptions) {
				o.RejectFinishedJobWithoutStartTime = true
				o.RejectCompletionTimeBeforeStartTime = true
			})},
		"completionTime changed": {old: base().obj(), job: base().do(func(j *batch.Job) { j.Status.CompletionTime = &optsT1 }).obj(),
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
	old := newOptsJob().obj()
	job := newOptsJob().obj()
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
