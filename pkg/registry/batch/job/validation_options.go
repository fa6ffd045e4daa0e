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

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	kubefeatures "k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/validation"
	"github.com/batch-apiserver/batch-apiserver/pkg/features"
)

// jobValidationOptions decides how a Job spec is validated: on create (oldJob
// nil) and on update, from the stored Job, as kube-apiserver 1.37's Job
// strategy does. The pod template options are core's, derived from the new
// and old templates by GetValidationOptionsFromPodTemplate, which ratchets
// the template rules that have tightened over releases.
func jobValidationOptions(job, oldJob *batch.Job) validation.JobValidationOptions {
	var oldTemplate *core.PodTemplateSpec
	if oldJob != nil {
		oldTemplate = internalTemplateOrNil(&oldJob.Spec.Template)
	}
	opts := validation.JobValidationOptions{
		PodValidationOptions:  pod.GetValidationOptionsFromPodTemplate(internalTemplateOrNil(&job.Spec.Template), oldTemplate),
		RequirePrefixedLabels: true,
		AllowScheduling:       utilfeature.DefaultFeatureGate.Enabled(features.WorkloadWithJob),
	}
	if oldJob == nil {
		return opts
	}
	// A selector stored under an older, laxer rule may keep its label values.
	opts.AllowInvalidLabelValueInSelector = opts.AllowInvalidLabelValueInSelector || metav1validation.LabelSelectorHasInvalidLabelValue(oldJob.Spec.Selector)
	// Without the gates below, only a suspended Job that never started may
	// change its scheduling directives.
	opts.AllowMutableSchedulingDirectives = ptr.Deref(oldJob.Spec.Suspend, false) && oldJob.Status.StartTime == nil
	mutableTemplate := allowMutablePodTemplate(oldJob)
	if utilfeature.DefaultFeatureGate.Enabled(kubefeatures.MutablePodResourcesForSuspendedJobs) {
		opts.AllowMutablePodResources = mutableTemplate
	}
	if utilfeature.DefaultFeatureGate.Enabled(kubefeatures.MutableSchedulingDirectivesForSuspendedJobs) {
		opts.AllowMutableSchedulingDirectives = mutableTemplate
	}
	// Jobs stored before the prefixed labels existed are not made invalid.
	_, hadJobName := oldJob.Spec.Template.Labels[batch.JobNameLabel]
	_, hadControllerUID := oldJob.Spec.Template.Labels[batch.ControllerUIDLabel]
	opts.RequirePrefixedLabels = hadJobName && hadControllerUID
	return opts
}

// internalTemplateOrNil converts a template for the option and warning
// functions of k8s.io/kubernetes/pkg/api/pod, which only read it. A template
// that does not convert yields nil (no template, as those functions accept);
// validation reports the conversion error itself.
func internalTemplateOrNil(template *corev1.PodTemplateSpec) *core.PodTemplateSpec {
	out, err := validation.InternalPodTemplate(template)
	if err != nil {
		return nil
	}
	return out
}

// dropDisabledTemplateFields clears the template fields whose feature gates
// are off, unless the old template (nil on create) already used them, with
// kube-apiserver's own DropDisabledTemplateFields. The template is written
// back only when something was dropped, so that a template is never rewritten
// for nothing.
func dropDisabledTemplateFields(template, oldTemplate *corev1.PodTemplateSpec) {
	// The conversion aliases memory: convert a copy to get a template that
	// may change, and the original to compare it with.
	original, err := validation.InternalPodTemplate(template)
	if err != nil {
		return
	}
	dropped, err := validation.InternalPodTemplate(template.DeepCopy())
	if err != nil {
		return
	}
	var old *core.PodTemplateSpec
	if oldTemplate != nil {
		old = internalTemplateOrNil(oldTemplate)
	}
	pod.DropDisabledTemplateFields(dropped, old)
	// Both sides come from the same template, one through a generated deep
	// copy, so they are equal field for field unless something was dropped:
	// reflect.DeepEqual says so about seven times faster than
	// apiequality.Semantic, whose equalities (quantities, times, selectors)
	// only matter for values that were produced apart.
	if reflect.DeepEqual(original, dropped) {
		return
	}
	if out, err := validation.ExternalPodTemplate(dropped); err == nil {
		*template = *out
	}
}

// dropDisabledScheduling clears spec.scheduling while WorkloadWithJob is
// off, unless the stored spec (nil on create) already has it, as
// kube-apiserver's Job strategy does: a disabled alpha field is dropped
// silently rather than refused, and a Job stored while the gate was on
// keeps its value (validation then refuses any change to it).
func dropDisabledScheduling(spec, oldSpec *batch.JobSpec) {
	if utilfeature.DefaultFeatureGate.Enabled(features.WorkloadWithJob) || (oldSpec != nil && oldSpec.Scheduling != nil) {
		return
	}
	spec.Scheduling = nil
}

// allowMutablePodTemplate reports whether a stored Job's template may change:
// it is suspended, has no active pods, and either never started or the
// controller has acknowledged the suspension with Suspended=True.
func allowMutablePodTemplate(job *batch.Job) bool {
	suspended := ptr.Deref(job.Spec.Suspend, false)
	notStarted := job.Status.StartTime == nil
	acknowledged := validation.IsConditionTrue(job.Status.Conditions, batch.JobSuspended)
	return suspended && (notStarted || acknowledged) && job.Status.Active == 0
}

// jobStatusValidationOptions decides which status rules run on a status
// write. Upstream runs most rules only when the fields they guard change, so
// an unrelated write is not blocked by a status that is already wrong, and
// the controller gets a sync to repair a status that a spec edit (such as a
// scale-down) made temporarily invalid. With JobStrictStatusValidation on,
// every rule runs on every write.
func jobStatusValidationOptions(job, oldJob *batch.Job) validation.JobStatusValidationOptions {
	if utilfeature.DefaultFeatureGate.Enabled(features.JobStrictStatusValidation) {
		return validation.AllStatusRules()
	}
	oldStatus, status := &oldJob.Status, &job.Status
	conditionChanged := func(t batch.JobConditionType) bool {
		return validation.IsConditionTrue(oldStatus.Conditions, t) != validation.IsConditionTrue(status.Conditions, t)
	}
	finishedChanged := validation.IsJobFinished(oldJob) != validation.IsJobFinished(job)
	completeChanged := conditionChanged(batch.JobComplete)
	failedChanged := conditionChanged(batch.JobFailed)
	failureTargetChanged := conditionChanged(batch.JobFailureTarget)
	successCriteriaMetChanged := conditionChanged(batch.JobSuccessCriteriaMet)
	completedIndexesChanged := oldStatus.CompletedIndexes != status.CompletedIndexes
	failedIndexesChanged := !ptr.Equal(oldStatus.FailedIndexes, status.FailedIndexes)
	activeChanged := oldStatus.Active != status.Active
	startTimeChanged := !ptr.Equal(oldStatus.StartTime, status.StartTime)
	completionTimeChanged := !ptr.Equal(oldStatus.CompletionTime, status.CompletionTime)
	uncountedChanged := !apiequality.Semantic.DeepEqual(oldStatus.UncountedTerminatedPods, status.UncountedTerminatedPods)
	readyChanged := !ptr.Equal(oldStatus.Ready, status.Ready)
	terminatingChanged := !ptr.Equal(oldStatus.Terminating, status.Terminating)

	indexed := ptr.Deref(job.Spec.CompletionMode, batch.NonIndexedCompletion) == batch.IndexedCompletion
	// A suspended Job with no completions finishes without ever starting.
	suspendedWithZeroCompletions := ptr.Deref(job.Spec.Suspend, false) && ptr.Equal(job.Spec.Completions, ptr.To[int32](0))
	// The controller resets startTime when it acknowledges a resume.
	resuming := validation.IsJobResuming(job, oldJob)

	return validation.JobStatusValidationOptions{
		// Elastic Indexed Jobs (completions == parallelism) may scale down,
		// which lowers succeeded.
		RejectDecreasingSucceededCounter:             !indexed || !ptr.Equal(job.Spec.Completions, job.Spec.Parallelism),
		RejectDecreasingFailedCounter:                true,
		RejectDisablingTerminalCondition:             true,
		RejectInvalidCompletedIndexes:                completedIndexesChanged,
		RejectInvalidFailedIndexes:                   failedIndexesChanged,
		RejectCompletedIndexesForNonIndexedJob:       completedIndexesChanged,
		RejectFailedIndexesForNoBackoffLimitPerIndex: failedIndexesChanged,
		RejectFailedIndexesOverlappingCompleted:      failedIndexesChanged || completedIndexesChanged,
		RejectFailedJobWithoutFailureTarget:          failedChanged || failedIndexesChanged,
		RejectCompleteJobWithoutSuccessCriteriaMet:   completeChanged || successCriteriaMetChanged,
		RejectFinishedJobWithActivePods:              finishedChanged || activeChanged,
		RejectFinishedJobWithoutStartTime:            (finishedChanged || startTimeChanged) && !suspendedWithZeroCompletions,
		RejectFinishedJobWithUncountedTerminatedPods: finishedChanged || uncountedChanged,
		RejectStartTimeUpdateForUnsuspendedJob:       startTimeChanged && !resuming,
		RejectCompletionTimeBeforeStartTime:          startTimeChanged || completionTimeChanged,
		RejectMutatingCompletionTime:                 true,
		RejectNotCompleteJobWithCompletionTime:       completeChanged || completionTimeChanged,
		RejectCompleteJobWithoutCompletionTime:       completeChanged || completionTimeChanged,
		RejectCompleteJobWithFailedCondition:         completeChanged || failedChanged,
		RejectCompleteJobWithFailureTargetCondition:  completeChanged || failureTargetChanged,
		RejectMoreReadyThanActivePods:                readyChanged || activeChanged,
		RejectFinishedJobWithTerminatingPods:         finishedChanged || terminatingChanged,
	}
}
