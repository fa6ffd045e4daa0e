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

package batch

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The hub form of the batch.jobs.dev types. Every served version converts to
// and from it, so its fields mean what the same fields of v1 mean; the
// comments here are brief, and pkg/apis/batch/v1 documents each field for API
// users (those comments are what kubectl explain prints).

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// Job runs Pods from a template until enough of them succeed, with the
// behavior of the Kubernetes batch/v1 Job.
type Job struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the Job's object metadata. See
	// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// spec is the desired behavior. See
	// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status
	// +optional
	Spec JobSpec `json:"spec,omitempty"`

	// status is the state the Job controller last observed. See
	// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status
	// +optional
	Status JobStatus `json:"status,omitempty"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object

// JobList is a list of Jobs.
type JobList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata is the list metadata (resourceVersion, continue). See
	// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
	// +optional
	metav1.ListMeta `json:"metadata,omitempty"`

	// items are the Jobs.
	Items []Job `json:"items"`
}

// CompletionMode is how a Job counts completed Pods.
// +enum
type CompletionMode string

const (
	// NonIndexedCompletion: the Job is complete after .spec.completions
	// successful Pods, which are interchangeable.
	NonIndexedCompletion CompletionMode = "NonIndexed"

	// IndexedCompletion: each Pod has an index in [0, .spec.completions), and
	// the Job is complete when every index has a successful Pod.
	IndexedCompletion CompletionMode = "Indexed"
)

// PodFailurePolicyAction is the action of a pod failure policy rule.
// +enum
type PodFailurePolicyAction string

const (
	// PodFailurePolicyActionFailJob fails the Job and terminates its running
	// Pods.
	PodFailurePolicyActionFailJob PodFailurePolicyAction = "FailJob"

	// PodFailurePolicyActionFailIndex fails the Pod's index without retrying
	// it; it needs backoffLimitPerIndex.
	PodFailurePolicyActionFailIndex PodFailurePolicyAction = "FailIndex"

	// PodFailurePolicyActionIgnore replaces the Pod without counting the
	// failure towards .backoffLimit.
	PodFailurePolicyActionIgnore PodFailurePolicyAction = "Ignore"

	// PodFailurePolicyActionCount counts the failure towards .backoffLimit,
	// as when no rule matches.
	PodFailurePolicyActionCount PodFailurePolicyAction = "Count"
)

// PodFailurePolicyOnExitCodesOperator relates a container's exit code to the
// listed values.
// +enum
type PodFailurePolicyOnExitCodesOperator string

const (
	// PodFailurePolicyOnExitCodesOpIn matches an exit code among the values.
	PodFailurePolicyOnExitCodesOpIn PodFailurePolicyOnExitCodesOperator = "In"
	// PodFailurePolicyOnExitCodesOpNotIn matches an exit code not among the
	// values.
	PodFailurePolicyOnExitCodesOpNotIn PodFailurePolicyOnExitCodesOperator = "NotIn"
)

// PodReplacementPolicy is when a Pod that is going away may be replaced.
// +enum
type PodReplacementPolicy string

const (
	// TerminatingOrFailed replaces a Pod once it is terminating (has a
	// deletionTimestamp) or failed.
	TerminatingOrFailed PodReplacementPolicy = "TerminatingOrFailed"
	// Failed replaces a Pod only once it is fully terminated (phase Failed or
	// Succeeded).
	Failed PodReplacementPolicy = "Failed"
)

// PodFailurePolicyOnExitCodesRequirement matches a failed Pod by the exit codes
// in its container and init container statuses; exit code 0 never matches.
type PodFailurePolicyOnExitCodesRequirement struct {
	// containerName limits the check to one container or init container of
	// the template; nil checks them all.
	// +optional
	ContainerName *string `json:"containerName,omitempty"`

	// operator is In or NotIn: met when at least one checked exit code is (In)
	// or is not (NotIn) in values. Clients treat an unknown operator as not
	// met.
	Operator PodFailurePolicyOnExitCodesOperator `json:"operator"`

	// values: 1 to 255 exit codes, increasing, no duplicates, no 0 with In.
	// +listType=set
	Values []int32 `json:"values"`
}

// PodFailurePolicyOnPodConditionsPattern matches a Pod condition by type and
// status.
type PodFailurePolicyOnPodConditionsPattern struct {
	// type is the Pod condition type to match.
	Type corev1.PodConditionType `json:"type"`

	// status is the condition status to match; defaults to True.
	// +optional
	Status corev1.ConditionStatus `json:"status"`
}

// PodFailurePolicyRule is an action and the requirement a failed Pod must meet
// for it: exactly one of onExitCodes and onPodConditions.
type PodFailurePolicyRule struct {
	// action is FailJob, FailIndex, Ignore or Count. Clients skip a rule whose
	// action they do not know.
	Action PodFailurePolicyAction `json:"action"`

	// onExitCodes matches by container exit codes.
	// +optional
	OnExitCodes *PodFailurePolicyOnExitCodesRequirement `json:"onExitCodes,omitempty"`

	// onPodConditions matches when any pattern (at most 20) matches a Pod
	// condition.
	// +listType=atomic
	// +optional
	OnPodConditions []PodFailurePolicyOnPodConditionsPattern `json:"onPodConditions,omitempty"`
}

// PodFailurePolicy decides how a Pod failure affects the Job.
type PodFailurePolicy struct {
	// rules (at most 20) are tried in order and the first match decides; an
	// unmatched failure counts towards backoffLimit.
	// +listType=atomic
	Rules []PodFailurePolicyRule `json:"rules"`
}

// SuccessPolicy lets an Indexed Job succeed before all its indexes have.
type SuccessPolicy struct {
	// rules (at most 20) are alternatives checked in order; the first one met
	// adds SuccessCriteriaMet, the remaining Pods are removed and the Job ends
	// Complete.
	// +listType=atomic
	Rules []SuccessPolicyRule `json:"rules"`
}

// SuccessPolicyRule sets succeededIndexes, succeededCount, or both.
type SuccessPolicyRule struct {
	// succeededIndexes must all have succeeded; the format is that of
	// status.completedIndexes ("1,3-5,7"), within [0, .spec.completions).
	// nil means no index requirement.
	//
	// +optional
	SucceededIndexes *string `json:"succeededIndexes,omitempty"`

	// succeededCount is the least number of succeeded indexes, counting only
	// those in succeededIndexes when that is set. nil means no count
	// requirement.
	//
	// +optional
	SucceededCount *int32 `json:"succeededCount,omitempty"`
}

// JobSpec is the desired behavior of a Job.
type JobSpec struct {
	// parallelism is the most Pods running at once.
	// +optional
	Parallelism *int32 `json:"parallelism,omitempty"`

	// completions is how many Pods must succeed; nil means any one success
	// finishes the Job.
	// +optional
	Completions *int32 `json:"completions,omitempty"`

	// activeDeadlineSeconds bounds the time the Job may be active, counted
	// from startTime; suspension stops and resets it.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// podFailurePolicy handles failed Pods by rules; it needs restartPolicy
	// Never.
	//
	// +optional
	PodFailurePolicy *PodFailurePolicy `json:"podFailurePolicy,omitempty"`

	// successPolicy lets an Indexed Job succeed early; immutable.
	//
	// +optional
	SuccessPolicy *SuccessPolicy `json:"successPolicy,omitempty"`

	// backoffLimit is the number of retries before the Job fails (defaulted
	// by the versions: 6, or MaxInt32 with backoffLimitPerIndex).
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// backoffLimitPerIndex is the number of retries per index of an Indexed
	// Job with restartPolicy Never; immutable.
	// +optional
	BackoffLimitPerIndex *int32 `json:"backoffLimitPerIndex,omitempty"`

	// maxFailedIndexes is how many indexes may fail before the Job fails; only
	// with backoffLimitPerIndex.
	// +optional
	MaxFailedIndexes *int32 `json:"maxFailedIndexes,omitempty"`

	// selector picks the Job's Pods; usually generated (see manualSelector).
	// See https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`

	// manualSelector, when true, makes the user responsible for unique Pod
	// labels and the selector instead of the system. See
	// https://kubernetes.io/docs/concepts/workloads/controllers/jobs-run-to-completion/#specifying-your-own-pod-selector
	// +optional
	ManualSelector *bool `json:"manualSelector,omitempty"`

	// template is the Pod to run; restartPolicy Never or OnFailure. See
	// https://kubernetes.io/docs/concepts/workloads/controllers/jobs-run-to-completion/
	Template corev1.PodTemplateSpec `json:"template"`

	// ttlSecondsAfterFinished makes a finished Job deletable that many
	// seconds after it finished; nil never.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// completionMode is NonIndexed or Indexed. Indexed Pods get their index in
	// the annotation batch.jobs.dev/job-completion-index, are named
	// `$(job-name)-$(index)-$(random-string)` with hostname
	// `$(job-name)-$(index)`, and need .spec.completions; `.spec.parallelism`
	// is then at most 10^5. A controller skips Jobs with a mode it does not
	// know.
	// +optional
	CompletionMode *CompletionMode `json:"completionMode,omitempty"`

	// suspend stops Pod creation and deletes the active Pods; it resets
	// startTime.
	//
	// +optional
	Suspend *bool `json:"suspend,omitempty"`

	// podReplacementPolicy is TerminatingOrFailed or Failed; only Failed with
	// podFailurePolicy.
	// +optional
	PodReplacementPolicy *PodReplacementPolicy `json:"podReplacementPolicy,omitempty"`

	// managedBy names the reconciling controller; the built-in one takes Jobs
	// without it or with `kubernetes.io/job-controller`. Immutable.
	// +optional
	ManagedBy *string `json:"managedBy,omitempty"`

	// scheduling makes the Job a workload for the scheduler; nil is the basic
	// policy. Alpha, behind WorkloadWithJob; fixed at creation except
	// schedulingPolicy.gang.minCount.
	// +optional
	Scheduling *JobSchedulingConfiguration `json:"scheduling,omitempty"`
}

// JobSchedulingConfiguration is the scheduling.k8s.io building blocks a Job
// hands to the scheduler. Its members are the external scheduling/v1alpha3
// types in every version and here too: batch-apiserver has no internal form
// of the scheduling API, and with one type everywhere the conversion copies
// them as they are.
type JobSchedulingConfiguration struct {
	// schedulingPolicy is basic or gang; only gang.minCount may change.
	// +optional
	SchedulingPolicy *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy `json:"schedulingPolicy,omitempty"`

	// schedulingConstraints places the Job's Pods (topology); immutable.
	// +optional
	SchedulingConstraints *schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints `json:"schedulingConstraints,omitempty"`

	// disruptionMode is single or all; immutable.
	// +optional
	DisruptionMode *schedulingv1alpha3.WorkloadPodGroupDisruptionMode `json:"disruptionMode,omitempty"`

	// resourceClaims are the claims the Job's Pods share, keyed by name, at
	// most 4; immutable.
	// +optional
	ResourceClaims []schedulingv1alpha3.WorkloadPodGroupResourceClaim `json:"resourceClaims,omitempty"`
}

// JobStatus is the observed state of a Job.
type JobStatus struct {
	// conditions: Suspended, Complete, Failed, FailureTarget and
	// SuccessCriteriaMet. Complete and Failed are terminal and exclusive. See
	// https://kubernetes.io/docs/concepts/workloads/controllers/jobs-run-to-completion/
	// +listType=atomic
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []JobCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type"`

	// startTime is when the controller started the Job; unset while suspended
	// before the first resume, and set again on every resume.
	//
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// completionTime is when the Job succeeded; immutable once set.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// active counts the non-terminating Pending and Running Pods.
	// +optional
	Active int32 `json:"active,omitempty"`

	// succeeded counts the Pods in phase Succeeded.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty"`

	// failed counts the Pods in phase Failed.
	// +optional
	Failed int32 `json:"failed,omitempty"`

	// terminating counts the Pending or Running Pods with a deletionTimestamp.
	// +optional
	Terminating *int32 `json:"terminating,omitempty"`

	// completedIndexes lists the completed indexes of an Indexed Job, e.g.
	// "1,3-5,7".
	// +optional
	CompletedIndexes string `json:"completedIndexes,omitempty"`

	// failedIndexes lists the failed indexes when backoffLimitPerIndex is set,
	// in the same format; it never overlaps completedIndexes.
	// +optional
	FailedIndexes *string `json:"failedIndexes,omitempty"`

	// uncountedTerminatedPods holds the terminated Pods whose finalizer the
	// controller is removing before it adds them to the counters.
	// +optional
	UncountedTerminatedPods *UncountedTerminatedPods `json:"uncountedTerminatedPods,omitempty"`

	// ready counts the active, non-terminating Pods with the Ready condition.
	// +optional
	Ready *int32 `json:"ready,omitempty"`
}

// UncountedTerminatedPods holds the UIDs of terminated Pods not yet in the
// status counters.
type UncountedTerminatedPods struct {
	// succeeded are UIDs of succeeded Pods.
	// +listType=set
	// +optional
	Succeeded []types.UID `json:"succeeded,omitempty"`

	// failed are UIDs of failed Pods.
	// +listType=set
	// +optional
	Failed []types.UID `json:"failed,omitempty"`
}

// JobConditionType is the type of a JobCondition.
type JobConditionType string

// The condition types of a Job.
const (
	// JobSuspended is True while the Job is suspended.
	JobSuspended JobConditionType = "Suspended"
	// JobComplete: the Job succeeded.
	JobComplete JobConditionType = "Complete"
	// JobFailed: the Job failed.
	JobFailed JobConditionType = "Failed"
	// JobFailureTarget: the Job is about to fail.
	JobFailureTarget JobConditionType = "FailureTarget"
	// JobSuccessCriteriaMet: the Job met its success criteria.
	JobSuccessCriteriaMet JobConditionType = "SuccessCriteriaMet"
)

// JobCondition is one observation of a Job's state.
type JobCondition struct {
	// type of the condition.
	Type JobConditionType `json:"type"`
	// status is True, False or Unknown.
	Status corev1.ConditionStatus `json:"status"`
	// lastProbeTime is when the condition was last checked.
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty"`
	// lastTransitionTime is when the status last changed.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty"`
	// reason is a short, machine-readable cause of the last transition.
	// +optional
	Reason string `json:"reason,omitempty"`
	// message explains the last transition for humans.
	// +optional
	Message string `json:"message,omitempty"`
}
