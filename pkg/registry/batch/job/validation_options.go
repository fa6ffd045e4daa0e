package job

import (
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/validation"
	"github.com/batch-apiserver/batch-apiserver/pkg/features"
)

// jobValidationOptions decides how a Job spec is validated: on create (oldJob
// nil) and on update, from the stored Job. It follows kube-apiserver 1.37,
// where MutablePodResourcesForSuspendedJobs and
// MutableSchedulingDirectivesForSuspendedJobs are beta and on.
func jobValidationOptions(job, oldJob *batch.Job) validation.JobValidationOptions {
	opts := validation.JobValidationOptions{RequirePrefixedLabels: true}
	if oldJob == nil {
		return opts
	}
	// A selector stored under an older, laxer rule may keep its label values.
	opts.AllowInvalidLabelValueInSelector = metav1validation.LabelSelectorHasInvalidLabelValue(oldJob.Spec.Selector)
	mutableTemplate := allowMutablePodTemplate(oldJob)
	opts.AllowMutableSchedulingDirectives = mutableTemplate
	opts.AllowMutablePodResources = mutableTemplate
	// Jobs stored before the prefixed labels existed are not made invalid.
	_, hadJobName := oldJob.Spec.Template.Labels[batch.JobNameLabel]
	_, hadControllerUID := oldJob.Spec.Template.Labels[batch.ControllerUIDLabel]
	opts.RequirePrefixedLabels = hadJobName && hadControllerUID
	return opts
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
