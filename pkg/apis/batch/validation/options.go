package validation

import (
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

// JobValidationOptions decides how a Job spec is validated. The registry
// strategy computes it from the old and new object; see
// pkg/registry/batch/job/validation_options.go.
type JobValidationOptions struct {
	// PodValidationOptions are core's options for the pod template, which
	// kube-apiserver derives from the old and new template
	// (GetValidationOptionsFromPodTemplate). AllowInvalidLabelValueInSelector
	// also lets an update keep a Job selector whose label values were
	// accepted by an older, laxer validation.
	corevalidation.PodValidationOptions
	// AllowMutableSchedulingDirectives lets an update change the template's
	// node affinity, node selector, tolerations, scheduling gates, labels and
	// annotations.
	AllowMutableSchedulingDirectives bool
	// RequirePrefixedLabels requires the generated template labels with the
	// batch.jobs.dev/ prefix next to the legacy unprefixed ones.
	RequirePrefixedLabels bool
	// AllowMutablePodResources lets an update of a suspended Job change the
	// resources of its containers and init containers.
	AllowMutablePodResources bool
}

// JobStatusValidationOptions switches on the status rules that kube-apiserver
// applies only when the fields they guard change (ratcheting). The rules that
// upstream applies unconditionally are not listed here and always run.
type JobStatusValidationOptions struct {
	RejectDecreasingSucceededCounter             bool
	RejectDecreasingFailedCounter                bool
	RejectDisablingTerminalCondition             bool
	RejectInvalidCompletedIndexes                bool
	RejectInvalidFailedIndexes                   bool
	RejectFailedIndexesOverlappingCompleted      bool
	RejectCompletedIndexesForNonIndexedJob       bool
	RejectFailedIndexesForNoBackoffLimitPerIndex bool
	RejectFailedJobWithoutFailureTarget          bool
	RejectCompleteJobWithoutSuccessCriteriaMet   bool
	RejectFinishedJobWithActivePods              bool
	RejectFinishedJobWithoutStartTime            bool
	RejectFinishedJobWithUncountedTerminatedPods bool
	RejectStartTimeUpdateForUnsuspendedJob       bool
	RejectCompletionTimeBeforeStartTime          bool
	RejectMutatingCompletionTime                 bool
	RejectCompleteJobWithoutCompletionTime       bool
	RejectNotCompleteJobWithCompletionTime       bool
	RejectCompleteJobWithFailedCondition         bool
	RejectCompleteJobWithFailureTargetCondition  bool
	RejectMoreReadyThanActivePods                bool
	RejectFinishedJobWithTerminatingPods         bool
}

// AllStatusRules returns options with every ratcheted status rule switched on.
// It is what the JobStrictStatusValidation feature gate selects.
func AllStatusRules() JobStatusValidationOptions {
	return JobStatusValidationOptions{
		RejectDecreasingSucceededCounter:             true,
		RejectDecreasingFailedCounter:                true,
		RejectDisablingTerminalCondition:             true,
		RejectInvalidCompletedIndexes:                true,
		RejectInvalidFailedIndexes:                   true,
		RejectFailedIndexesOverlappingCompleted:      true,
		RejectCompletedIndexesForNonIndexedJob:       true,
		RejectFailedIndexesForNoBackoffLimitPerIndex: true,
		RejectFailedJobWithoutFailureTarget:          true,
		RejectCompleteJobWithoutSuccessCriteriaMet:   true,
		RejectFinishedJobWithActivePods:              true,
		RejectFinishedJobWithoutStartTime:            true,
		RejectFinishedJobWithUncountedTerminatedPods: true,
		RejectStartTimeUpdateForUnsuspendedJob:       true,
		RejectCompletionTimeBeforeStartTime:          true,
		RejectMutatingCompletionTime:                 true,
		RejectCompleteJobWithoutCompletionTime:       true,
		RejectNotCompleteJobWithCompletionTime:       true,
		RejectCompleteJobWithFailedCondition:         true,
		RejectCompleteJobWithFailureTargetCondition:  true,
		RejectMoreReadyThanActivePods:                true,
		RejectFinishedJobWithTerminatingPods:         true,
	}
}
