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
	// AllowScheduling is whether spec.scheduling is served (the
	// WorkloadWithJob feature gate). Without it a create that sets the field,
	// or an update that changes it, is refused as Forbidden; the strategy
	// has dropped it by then wherever kube-apiserver drops it, so this is
	// met only by a Job stored with the field while the gate was on.
	AllowScheduling bool
}

// JobStatusValidationOptions switches on the status rules that kube-apiserver
// applies only when the fields they guard change (ratcheting). The rules that
// upstream applies unconditionally are not listed here and always run. The
// fields are grouped by what the rule looks at.
type JobStatusValidationOptions struct {
	// Rules on the change from the old status.
	RejectDecreasingSucceededCounter       bool
	RejectDecreasingFailedCounter          bool
	RejectDisablingTerminalCondition       bool
	RejectStartTimeUpdateForUnsuspendedJob bool
	RejectMutatingCompletionTime           bool

	// Rules on which conditions may stand together.
	RejectCompleteJobWithFailedCondition        bool
	RejectCompleteJobWithFailureTargetCondition bool
	RejectFailedJobWithoutFailureTarget         bool
	RejectCompleteJobWithoutSuccessCriteriaMet  bool

	// Rules tying startTime and completionTime to the conditions.
	RejectCompleteJobWithoutCompletionTime bool
	RejectNotCompleteJobWithCompletionTime bool
	RejectCompletionTimeBeforeStartTime    bool
	RejectFinishedJobWithoutStartTime      bool

	// Rules on the pod counters.
	RejectFinishedJobWithActivePods              bool
	RejectFinishedJobWithTerminatingPods         bool
	RejectFinishedJobWithUncountedTerminatedPods bool
	RejectMoreReadyThanActivePods                bool

	// Rules on completedIndexes and failedIndexes.
	RejectInvalidCompletedIndexes                bool
	RejectInvalidFailedIndexes                   bool
	RejectFailedIndexesOverlappingCompleted      bool
	RejectCompletedIndexesForNonIndexedJob       bool
	RejectFailedIndexesForNoBackoffLimitPerIndex bool
}

// AllStatusRules returns options with every ratcheted status rule switched on.
// It is what the JobStrictStatusValidation feature gate selects.
func AllStatusRules() JobStatusValidationOptions {
	return JobStatusValidationOptions{
		RejectDecreasingSucceededCounter:       true,
		RejectDecreasingFailedCounter:          true,
		RejectDisablingTerminalCondition:       true,
		RejectStartTimeUpdateForUnsuspendedJob: true,
		RejectMutatingCompletionTime:           true,

		RejectCompleteJobWithFailedCondition:        true,
		RejectCompleteJobWithFailureTargetCondition: true,
		RejectFailedJobWithoutFailureTarget:         true,
		RejectCompleteJobWithoutSuccessCriteriaMet:  true,

		RejectCompleteJobWithoutCompletionTime: true,
		RejectNotCompleteJobWithCompletionTime: true,
		RejectCompletionTimeBeforeStartTime:    true,
		RejectFinishedJobWithoutStartTime:      true,

		RejectFinishedJobWithActivePods:              true,
		RejectFinishedJobWithTerminatingPods:         true,
		RejectFinishedJobWithUncountedTerminatedPods: true,
		RejectMoreReadyThanActivePods:                true,

		RejectInvalidCompletedIndexes:                true,
		RejectInvalidFailedIndexes:                   true,
		RejectFailedIndexesOverlappingCompleted:      true,
		RejectCompletedIndexesForNonIndexedJob:       true,
		RejectFailedIndexesForNoBackoffLimitPerIndex: true,
	}
}
