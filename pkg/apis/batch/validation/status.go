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
	"fmt"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

// ValidateJobUpdateStatus validates a write to the status subresource. The
// options say which of the ratcheted rules apply; the others always run.
func ValidateJobUpdateStatus(job, oldJob *batch.Job, opts JobStatusValidationOptions) field.ErrorList {
	errs := validateObjectMetaUpdate(&job.ObjectMeta, &oldJob.ObjectMeta, field.NewPath("metadata"))
	statusPath := field.NewPath("status")
	errs = append(errs, validateJobStatus(job, statusPath, opts)...)
	errs = append(errs, validateJobStatusTransition(job, oldJob, statusPath, opts)...)
	return errs
}

// validateJobStatus checks the new status on its own.
func validateJobStatus(job *batch.Job, fldPath *field.Path, opts JobStatusValidationOptions) field.ErrorList {
	status := &job.Status
	errs := validateNonnegative(int64(status.Active), fldPath.Child("active"))
	errs = append(errs, validateNonnegative(int64(status.Succeeded), fldPath.Child("succeeded"))...)
	errs = append(errs, validateNonnegative(int64(status.Failed), fldPath.Child("failed"))...)
	if status.Ready != nil {
		errs = append(errs, validateNonnegative(int64(*status.Ready), fldPath.Child("ready"))...)
	}
	if status.Terminating != nil {
		errs = append(errs, validateNonnegative(int64(*status.Terminating), fldPath.Child("terminating"))...)
	}
	if status.UncountedTerminatedPods != nil {
		errs = append(errs, validateUncountedTerminatedPods(status.UncountedTerminatedPods, fldPath.Child("uncountedTerminatedPods"))...)
	}

	conditionsPath := fldPath.Child("conditions")
	complete := IsJobComplete(job)
	failed := IsJobFailed(job)
	failureTarget := IsConditionTrue(status.Conditions, batch.JobFailureTarget)
	successCriteriaMet := IsConditionTrue(status.Conditions, batch.JobSuccessCriteriaMet)
	finished := complete || failed

	if opts.RejectCompleteJobWithFailedCondition && complete && failed {
		errs = append(errs, field.Invalid(conditionsPath, field.OmitValueType{}, "cannot set Complete=True and Failed=true conditions"))
	}
	if opts.RejectCompleteJobWithFailureTargetCondition && complete && failureTarget {
		errs = append(errs, field.Invalid(conditionsPath, field.OmitValueType{}, "cannot set Complete=True and FailureTarget=true conditions"))
	}
	if opts.RejectNotCompleteJobWithCompletionTime && status.CompletionTime != nil && !complete {
		errs = append(errs, field.Invalid(fldPath.Child("completionTime"), status.CompletionTime, "cannot set completionTime when there is no Complete=True condition"))
	}
	if opts.RejectCompleteJobWithoutCompletionTime && status.CompletionTime == nil && complete {
		errs = append(errs, field.Required(fldPath.Child("completionTime"), "completionTime is required for Complete jobs"))
	}
	if opts.RejectCompletionTimeBeforeStartTime && status.StartTime != nil && status.CompletionTime != nil && status.CompletionTime.Before(status.StartTime) {
		errs = append(errs, field.Invalid(fldPath.Child("completionTime"), status.CompletionTime, "must be equal to or after `startTime`"))
	}
	if opts.RejectFailedJobWithoutFailureTarget && failed && !failureTarget {
		errs = append(errs, field.Invalid(conditionsPath, field.OmitValueType{}, "cannot set Failed=True condition without the FailureTarget=true condition"))
	}
	if opts.RejectCompleteJobWithoutSuccessCriteriaMet && complete && !successCriteriaMet {
		errs = append(errs, field.Invalid(conditionsPath, field.OmitValueType{}, "cannot set Complete=True condition without the SuccessCriteriaMet=true condition"))
	}
	if opts.RejectFinishedJobWithActivePods && status.Active > 0 && finished {
		errs = append(errs, field.Invalid(fldPath.Child("active"), status.Active, "active>0 is invalid for finished job"))
	}
	// A suspended Job with zero completions finishes without ever starting.
	if opts.RejectFinishedJobWithoutStartTime && status.StartTime == nil && finished && !isSuspendedWithZeroCompletions(job) {
		errs = append(errs, field.Required(fldPath.Child("startTime"), "startTime is required for finished job"))
	}
	if opts.RejectFinishedJobWithUncountedTerminatedPods && finished && status.UncountedTerminatedPods != nil &&
		len(status.UncountedTerminatedPods.Failed)+len(status.UncountedTerminatedPods.Succeeded) > 0 {
		errs = append(errs, field.Invalid(fldPath.Child("uncountedTerminatedPods"), status.UncountedTerminatedPods, "must be empty for finished job"))
	}
	errs = append(errs, validateStatusIndexes(job, fldPath, opts)...)
	if opts.RejectFinishedJobWithTerminatingPods && status.Terminating != nil && *status.Terminating > 0 && finished {
		errs = append(errs, field.Invalid(fldPath.Child("terminating"), status.Terminating, "terminating>0 is invalid for finished job"))
	}
	if opts.RejectMoreReadyThanActivePods && status.Ready != nil && *status.Ready > status.Active {
		errs = append(errs, field.Invalid(fldPath.Child("ready"), *status.Ready, "cannot set more ready pods than active"))
	}

	// The SuccessCriteriaMet rules are not ratcheted upstream.
	if successCriteriaMet && failed {
		errs = append(errs, field.Invalid(conditionsPath, field.OmitValueType{}, "cannot set SuccessCriteriaMet=True and Failed=true conditions"))
	}
	if successCriteriaMet && failureTarget {
		errs = append(errs, field.Invalid(conditionsPath, field.OmitValueType{}, "cannot set SuccessCriteriaMet=True and FailureTarget=true conditions"))
	}
	if job.Spec.SuccessPolicy != nil && !successCriteriaMet && complete {
		errs = append(errs, field.Invalid(conditionsPath, field.OmitValueType{}, "cannot set Complete=True for Job with SuccessPolicy unless SuccessCriteriaMet=True"))
	}
	return errs
}

func validateUncountedTerminatedPods(pods *batch.UncountedTerminatedPods, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	// A UID may appear once across both lists.
	seen := make(map[types.UID]struct{}, len(pods.Succeeded)+len(pods.Failed))
	check := func(uids []types.UID, listPath *field.Path) {
		for i, uid := range uids {
			p := listPath.Index(i)
			if uid == "" {
				errs = append(errs, field.Invalid(p, uid, "must not be empty"))
			} else if _, dup := seen[uid]; dup {
				errs = append(errs, field.Duplicate(p, uid))
			} else {
				seen[uid] = struct{}{}
			}
		}
	}
	check(pods.Succeeded, fldPath.Child("succeeded"))
	check(pods.Failed, fldPath.Child("failed"))
	return errs
}

func validateStatusIndexes(job *batch.Job, fldPath *field.Path, opts JobStatusValidationOptions) field.ErrorList {
	var errs field.ErrorList
	status := &job.Status
	completions := job.Spec.Completions
	if opts.RejectInvalidCompletedIndexes && completions != nil {
		if _, err := validateIndexesFormat(status.CompletedIndexes, *completions); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("completedIndexes"), status.CompletedIndexes, fmt.Sprintf("error parsing completedIndexes: %s", err.Error())))
		}
	}
	if opts.RejectInvalidFailedIndexes && completions != nil && job.Spec.BackoffLimitPerIndex != nil && status.FailedIndexes != nil {
		if _, err := validateIndexesFormat(*status.FailedIndexes, *completions); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("failedIndexes"), status.FailedIndexes, fmt.Sprintf("error parsing failedIndexes: %s", err.Error())))
		}
	}
	if opts.RejectCompletedIndexesForNonIndexedJob && len(status.CompletedIndexes) != 0 && !isIndexed(&job.Spec) {
		errs = append(errs, field.Invalid(fldPath.Child("completedIndexes"), status.CompletedIndexes, "cannot set non-empty completedIndexes when non-indexed completion mode"))
	}
	// NonIndexed Jobs never have backoffLimitPerIndex, so this also keeps
	// failedIndexes off them.
	if opts.RejectFailedIndexesForNoBackoffLimitPerIndex && job.Spec.BackoffLimitPerIndex == nil && status.FailedIndexes != nil {
		errs = append(errs, field.Invalid(fldPath.Child("failedIndexes"), *status.FailedIndexes, "cannot set non-null failedIndexes when backoffLimitPerIndex is null"))
	}
	if opts.RejectFailedIndexesOverlappingCompleted && completions != nil && status.FailedIndexes != nil {
		if err := validateFailedIndexesNotOverlapCompleted(status.CompletedIndexes, *status.FailedIndexes, *completions); err != nil {
			errs = append(errs, field.Invalid(fldPath.Child("failedIndexes"), *status.FailedIndexes, err.Error()))
		}
	}
	return errs
}

// validateJobStatusTransition checks the change from the old status.
func validateJobStatusTransition(job, oldJob *batch.Job, fldPath *field.Path, opts JobStatusValidationOptions) field.ErrorList {
	var errs field.ErrorList
	conditionsPath := fldPath.Child("conditions")
	if opts.RejectDisablingTerminalCondition {
		for _, cType := range []batch.JobConditionType{batch.JobFailed, batch.JobComplete, batch.JobFailureTarget} {
			if IsConditionTrue(oldJob.Status.Conditions, cType) && !IsConditionTrue(job.Status.Conditions, cType) {
				errs = append(errs, field.Invalid(conditionsPath, field.OmitValueType{}, fmt.Sprintf("cannot disable the terminal %s=True condition", string(cType))))
			}
		}
	}
	if opts.RejectDecreasingFailedCounter && job.Status.Failed < oldJob.Status.Failed {
		errs = append(errs, field.Invalid(fldPath.Child("failed"), job.Status.Failed, "cannot decrease the failed counter"))
	}
	// Elastic Indexed Jobs (completions == parallelism) may be scaled down,
	// which lowers succeeded.
	if opts.RejectDecreasingSucceededCounter && job.Status.Succeeded < oldJob.Status.Succeeded && !isElasticIndexed(job) {
		errs = append(errs, field.Invalid(fldPath.Child("succeeded"), job.Status.Succeeded, "cannot decrease the succeeded counter"))
	}
	// Clearing completionTime is allowed while the Job is not Complete; the
	// Complete case is caught by RejectCompleteJobWithoutCompletionTime.
	if opts.RejectMutatingCompletionTime && job.Status.CompletionTime != nil && oldJob.Status.CompletionTime != nil &&
		!ptr.Equal(job.Status.CompletionTime, oldJob.Status.CompletionTime) {
		errs = append(errs, field.Invalid(fldPath.Child("completionTime"), job.Status.CompletionTime, "field is immutable"))
	}
	// Setting startTime the first time is allowed, and so is resetting it when
	// the Job resumes.
	if opts.RejectStartTimeUpdateForUnsuspendedJob && oldJob.Status.StartTime != nil &&
		!ptr.Equal(oldJob.Status.StartTime, job.Status.StartTime) && !ptr.Deref(job.Spec.Suspend, false) && !IsJobResuming(job, oldJob) {
		errs = append(errs, field.Invalid(fldPath.Child("startTime"), job.Status.StartTime, "field is immutable for unsuspended job once set"))
	}
	if isJobSuccessCriteriaMet(oldJob) && !isJobSuccessCriteriaMet(job) {
		errs = append(errs, field.Invalid(conditionsPath, field.OmitValueType{}, "cannot disable the SuccessCriteriaMet=True condition"))
	}
	if IsJobComplete(oldJob) && !isJobSuccessCriteriaMet(oldJob) && isJobSuccessCriteriaMet(job) {
		errs = append(errs, field.Invalid(conditionsPath, field.OmitValueType{}, "cannot set SuccessCriteriaMet=True for Job already has Complete=true conditions"))
	}
	return errs
}

// isElasticIndexed reports whether an Indexed Job may be scaled down, which
// upstream allows when completions equals parallelism.
func isElasticIndexed(job *batch.Job) bool {
	return isIndexed(&job.Spec) && ptr.Equal(job.Spec.Completions, job.Spec.Parallelism)
}

func isSuspendedWithZeroCompletions(job *batch.Job) bool {
	return ptr.Deref(job.Spec.Suspend, false) && ptr.Equal(job.Spec.Completions, ptr.To[int32](0))
}

// IsJobResuming reports whether a status write moves the Suspended condition
// from True to False, the controller's acknowledgement of a resume.
func IsJobResuming(job, oldJob *batch.Job) bool {
	return IsConditionTrue(oldJob.Status.Conditions, batch.JobSuspended) && IsConditionFalse(job.Status.Conditions, batch.JobSuspended)
}

// IsJobFinished reports whether the Job has a Complete=True or Failed=True condition.
func IsJobFinished(job *batch.Job) bool { return IsJobComplete(job) || IsJobFailed(job) }

// IsJobComplete reports whether the Job has a Complete=True condition.
func IsJobComplete(job *batch.Job) bool { return jobHasTrue(job, batch.JobComplete) }

// IsJobFailed reports whether the Job has a Failed=True condition.
func IsJobFailed(job *batch.Job) bool { return jobHasTrue(job, batch.JobFailed) }

func isJobSuccessCriteriaMet(job *batch.Job) bool {
	return jobHasTrue(job, batch.JobSuccessCriteriaMet)
}

func jobHasTrue(job *batch.Job, cType batch.JobConditionType) bool {
	return IsConditionTrue(job.Status.Conditions, cType)
}

// IsConditionTrue reports whether the list has a condition of the type with status True.
func IsConditionTrue(list []batch.JobCondition, cType batch.JobConditionType) bool {
	return hasCondition(list, cType, corev1.ConditionTrue)
}

// IsConditionFalse reports whether the list has a condition of the type with status False.
func IsConditionFalse(list []batch.JobCondition, cType batch.JobConditionType) bool {
	return hasCondition(list, cType, corev1.ConditionFalse)
}

// hasCondition looks at every entry: a list may repeat a type, and any entry
// with the status counts.
func hasCondition(list []batch.JobCondition, cType batch.JobConditionType, status corev1.ConditionStatus) bool {
	return slices.ContainsFunc(list, func(c batch.JobCondition) bool { return c.Type == cType && c.Status == status })
}

// validateFailedIndexesNotOverlapCompleted walks both interval lists in
// order. Intervals that do not parse are skipped: the format rules report them.
func validateFailedIndexesNotOverlapCompleted(completedStr, failedStr string, completions int32) error {
	if completedStr == "" || failedStr == "" {
		return nil
	}
	completed := strings.Split(completedStr, ",")
	failed := strings.Split(failedStr, ",")
	var ci, fi int
	cX, cY, cErr := parseIndexInterval(completed[ci], completions)
	fX, fY, fErr := parseIndexInterval(failed[fi], completions)
	for ci < len(completed) && fi < len(failed) {
		switch {
		case cErr != nil:
			ci++
			if ci < len(completed) {
				cX, cY, cErr = parseIndexInterval(completed[ci], completions)
			}
		case fErr != nil:
			fi++
			if fi < len(failed) {
				fX, fY, fErr = parseIndexInterval(failed[fi], completions)
			}
		case cX <= fY && fX <= cY:
			return fmt.Errorf("failedIndexes and completedIndexes overlap at index: %d", max(cX, fX))
		case cX <= fX:
			ci++
			if ci < len(completed) {
				cX, cY, cErr = parseIndexInterval(completed[ci], completions)
			}
		default:
			fi++
			if fi < len(failed) {
				fX, fY, fErr = parseIndexInterval(failed[fi], completions)
			}
		}
	}
	return nil
}

// validateIndexesFormat parses "1,3-5,7" style index lists: increasing,
// non-overlapping intervals below completions. It returns how many indexes
// the list holds.
func validateIndexesFormat(indexes string, completions int32) (int32, error) {
	if indexes == "" {
		return 0, nil
	}
	var total int32
	last := int32(-1)
	for _, interval := range strings.Split(indexes, ",") {
		x, y, err := parseIndexInterval(interval, completions)
		if err != nil {
			return 0, err
		}
		if last >= x {
			return 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", last, x)
		}
		total += y - x + 1
		last = y
	}
	return total, nil
}

func parseIndexInterval(interval string, completions int32) (int32, int32, error) {
	limits := strings.Split(interval, "-")
	if len(limits) > 2 {
		return 0, 0, fmt.Errorf("the fragment %q violates the requirement that an index interval can have at most two parts separated by '-'", interval)
	}
	x, err := strconv.Atoi(limits[0])
	if err != nil {
		return 0, 0, fmt.Errorf("cannot convert string to integer for index: %q", limits[0])
	}
	if x >= int(completions) {
		return 0, 0, fmt.Errorf("too large index: %q", limits[0])
	}
	if len(limits) == 1 {
		return int32(x), int32(x), nil
	}
	y, err := strconv.Atoi(limits[1])
	if err != nil {
		return 0, 0, fmt.Errorf("cannot convert string to integer for index: %q", limits[1])
	}
	if y >= int(completions) {
		return 0, 0, fmt.Errorf("too large index: %q", limits[1])
	}
	if x >= y {
		return 0, 0, fmt.Errorf("non-increasing order, previous: %d, current: %d", x, y)
	}
	return int32(x), int32(y), nil
}
