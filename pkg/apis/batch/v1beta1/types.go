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

package v1beta1

import (
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// +genclient
// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +k8s:prerelease-lifecycle-gen:introduced=1.36
// +k8s:prerelease-lifecycle-gen:deprecated=1.37
// +k8s:prerelease-lifecycle-gen:replacement=batch.jobs.dev,v1,Job

// Job runs Pods from a template until enough of them succeed, or gives up
// after too many failures. batch-apiserver serves it in the batch.jobs.dev
// group with the behavior of the Kubernetes batch/v1 Job. This version is
// deprecated: use batch.jobs.dev/v1.
type Job struct {
	metav1.TypeMeta `json:",inline"`
	// metadata carries the Job's name, namespace, labels, annotations and the
	// fields the system maintains. See
	// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
	// +optional
	metav1.ObjectMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// spec is what the Job should do: the Pods to run, how many must succeed,
	// and how failures are retried. See
	// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status
	// +optional
	Spec JobSpec `json:"spec,omitempty" protobuf:"bytes,2,opt,name=spec"`

	// status is what the Job controller last observed about the Job. See
	// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#spec-and-status
	// +optional
	Status JobStatus `json:"status,omitempty" protobuf:"bytes,3,opt,name=status"`
}

// +k8s:deepcopy-gen:interfaces=k8s.io/apimachinery/pkg/runtime.Object
// +k8s:prerelease-lifecycle-gen:introduced=1.36
// +k8s:prerelease-lifecycle-gen:deprecated=1.37
// +k8s:prerelease-lifecycle-gen:replacement=batch.jobs.dev,v1,Job

// JobList is a list of Jobs.
type JobList struct {
	metav1.TypeMeta `json:",inline"`
	// metadata carries the list's resourceVersion and continuation token. See
	// https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata
	// +optional
	metav1.ListMeta `json:"metadata,omitempty" protobuf:"bytes,1,opt,name=metadata"`

	// items are the Jobs in the list.
	Items []Job `json:"items" protobuf:"bytes,2,rep,name=items"`
}

// CompletionMode is how a Job counts the Pods that completed.
// +enum
type CompletionMode string

const (
	// NonIndexedCompletion treats the Job's Pods as interchangeable: the Job
	// is complete once .spec.completions of them have succeeded.
	NonIndexedCompletion CompletionMode = "NonIndexed"

	// IndexedCompletion gives each Pod a completion index from 0 to
	// .spec.completions-1: the Job is complete once every index has a Pod
	// that succeeded.
	IndexedCompletion CompletionMode = "Indexed"
)

// PodFailurePolicyAction is what a pod failure policy rule does with a failed
// Pod that meets its requirement.
// +enum
type PodFailurePolicyAction string

const (
	// PodFailurePolicyActionFailJob fails the whole Job and terminates its
	// running Pods.
	PodFailurePolicyActionFailJob PodFailurePolicyAction = "FailJob"

	// PodFailurePolicyActionFailIndex fails the Pod's index, which is then
	// not retried. Only allowed when backoffLimitPerIndex is set.
	PodFailurePolicyActionFailIndex PodFailurePolicyAction = "FailIndex"

	// PodFailurePolicyActionIgnore leaves the failure out of .status.failed,
	// so it does not count towards .backoffLimit, and replaces the Pod.
	PodFailurePolicyActionIgnore PodFailurePolicyAction = "Ignore"

	// PodFailurePolicyActionCount counts the failure as if no rule had
	// matched: .status.failed goes up and is checked against .backoffLimit.
	PodFailurePolicyActionCount PodFailurePolicyAction = "Count"
)

// PodFailurePolicyOnExitCodesOperator relates a container's exit code to the
// listed values.
// +enum
type PodFailurePolicyOnExitCodesOperator string

const (
	// PodFailurePolicyOnExitCodesOpIn matches an exit code that is among the
	// values.
	PodFailurePolicyOnExitCodesOpIn PodFailurePolicyOnExitCodesOperator = "In"
	// PodFailurePolicyOnExitCodesOpNotIn matches an exit code that is not
	// among the values.
	PodFailurePolicyOnExitCodesOpNotIn PodFailurePolicyOnExitCodesOperator = "NotIn"
)

// PodReplacementPolicy is when the Job controller may create a Pod to replace
// one that is going away.
// +enum
type PodReplacementPolicy string

const (
	// TerminatingOrFailed replaces a Pod as soon as it is terminating (it has
	// a metadata.deletionTimestamp) or has failed.
	TerminatingOrFailed PodReplacementPolicy = "TerminatingOrFailed"
	// Failed replaces a Pod only after it has fully terminated, in phase
	// Failed or Succeeded.
	Failed PodReplacementPolicy = "Failed"
)

// PodFailurePolicyOnExitCodesRequirement matches a failed Pod by the exit
// codes of its containers: the .state.terminated.exitCode of each entry of the
// Pod's .status.containerStatuses (app containers) and
// .status.initContainerStatuses (init containers). Containers that exited with
// code 0 never take part.
type PodFailurePolicyOnExitCodesRequirement struct {
	// containerName narrows the check to the one container or init container
	// of this name, which must be a name from the Pod template. Null checks
	// every container.
	// +optional
	ContainerName *string `json:"containerName,omitempty" protobuf:"bytes,1,opt,name=containerName"`

	// operator says how the exit codes must relate to values. Containers that
	// exited with code 0 are left out. The requirement is met when, among the
	// checked containers (all of them unless containerName is set):
	//
	//   - In: at least one exit code is in values;
	//   - NotIn: at least one exit code is not in values.
	//
	// Other operators may be added later: a client that does not know the
	// operator should take the requirement as not met.
	Operator PodFailurePolicyOnExitCodesOperator `json:"operator" protobuf:"bytes,2,req,name=operator"`

	// values are the exit codes the operator compares with: 1 to 255 of them,
	// in increasing order, without duplicates. With the In operator, 0 is not
	// allowed.
	// +listType=set
	Values []int32 `json:"values" protobuf:"varint,3,rep,name=values"`
}

// PodFailurePolicyOnPodConditionsPattern matches a condition of a failed Pod
// by its type and status.
type PodFailurePolicyOnPodConditionsPattern struct {
	// type is the Pod condition type to match; a condition matches when its
	// type is equal to it.
	Type corev1.PodConditionType `json:"type" protobuf:"bytes,1,req,name=type"`

	// status is the condition status to match (True, False or Unknown); a
	// condition matches when its status is equal to it. Defaults to True.
	// +optional
	Status corev1.ConditionStatus `json:"status" protobuf:"bytes,2,req,name=status"`
}

// PodFailurePolicyRule pairs a requirement on a failed Pod with the action
// taken when the Pod meets it. Each rule sets exactly one of onExitCodes and
// onPodConditions.
type PodFailurePolicyRule struct {
	// action is taken on a failed Pod that meets this rule. One of:
	//
	//   - FailJob: the Job is marked Failed and all its running Pods are
	//     terminated.
	//   - FailIndex: the Pod's index is marked failed and is not retried.
	//   - Ignore: the failure does not count towards .backoffLimit, and a
	//     replacement Pod is created.
	//   - Count: the failure is handled as by default, counting towards
	//     .backoffLimit.
	//
	// Other actions may be added later: a client that does not know the
	// action should skip the rule.
	Action PodFailurePolicyAction `json:"action" protobuf:"bytes,1,req,name=action"`

	// onExitCodes matches the failed Pod by its containers' exit codes.
	// +optional
	OnExitCodes *PodFailurePolicyOnExitCodesRequirement `json:"onExitCodes,omitempty" protobuf:"bytes,2,opt,name=onExitCodes"`

	// onPodConditions matches the failed Pod by its conditions: the rule is
	// met when at least one of these patterns (at most 20) matches a condition
	// of the Pod.
	// +listType=atomic
	// +optional
	OnPodConditions []PodFailurePolicyOnPodConditionsPattern `json:"onPodConditions,omitempty" protobuf:"bytes,3,opt,name=onPodConditions"`
}

// PodFailurePolicy decides, Pod failure by Pod failure, whether the failure
// counts towards the Job's backoffLimit, is ignored, or fails the Job or the
// Pod's index outright.
type PodFailurePolicy struct {
	// rules are tried in order against each Pod failure, and the first rule
	// that matches decides; the later ones are not looked at. A failure that
	// no rule matches is counted the default way: .status.failed goes up and
	// is checked against backoffLimit. At most 20 rules.
	// +listType=atomic
	Rules []PodFailurePolicyRule `json:"rules" protobuf:"bytes,1,opt,name=rules"`
}

// SuccessPolicy lets an Indexed Job succeed once chosen indexes have
// succeeded, without waiting for all of them.
type SuccessPolicy struct {
	// rules are alternative ways for the Job to succeed before
	// `.status.succeeded >= .spec.completions`. They are checked in order, and
	// the first one the Job meets wins: the Job gets the "SuccessCriteriaMet"
	// condition, its remaining Pods are removed, and it ends with the
	// "Complete" condition. At most 20 rules.
	// +listType=atomic
	Rules []SuccessPolicyRule `json:"rules" protobuf:"bytes,1,opt,name=rules"`
}

// SuccessPolicyRule is one way for a Job to succeed early. It sets
// succeededIndexes, succeededCount, or both.
type SuccessPolicyRule struct {
	// succeededIndexes are indexes that must all be among the Job's succeeded
	// indexes. They are written as a comma-separated list of decimal integers
	// and hyphenated ranges in increasing order, without overlaps, all between
	// 0 and .spec.completions-1: for example "1,3-5,7" stands for 1, 3, 4, 5
	// and 7. At most 64KiB. Null has no default and sets no index requirement.
	//
	// +optional
	SucceededIndexes *string `json:"succeededIndexes,omitempty" protobuf:"bytes,1,opt,name=succeededIndexes"`

	// succeededCount is the least number of succeeded indexes the rule needs.
	// With succeededIndexes also set, only the indexes listed there count:
	// with succeededIndexes "1-4" and succeededCount 3, succeeded indexes 1, 3
	// and 5 do not meet the rule, since only 1 and 3 are in the range. It must
	// not be negative, nor exceed .spec.completions or the number of indexes
	// in succeededIndexes. Null has no default and sets no count requirement.
	//
	// +optional
	SucceededCount *int32 `json:"succeededCount,omitempty" protobuf:"varint,2,opt,name=succeededCount"`
}

// JobSpec is the desired behavior of a Job.
type JobSpec struct {
	// parallelism is the most Pods the Job runs at once. Fewer run when less
	// work is left, that is when
	// (.spec.completions - .status.successful) < .spec.parallelism. Must not
	// be negative. Defaults to 1.
	// +optional
	Parallelism *int32 `json:"parallelism,omitempty" protobuf:"varint,1,opt,name=parallelism"`

	// completions is how many Pods must succeed for the Job to succeed. Null
	// means that any one Pod succeeding ends the Job successfully, and lets
	// parallelism be any positive number; 1 caps parallelism at 1 and ends
	// the Job with the one Pod's success. Must not be negative. Defaults to 1
	// when parallelism is unset too. Immutable, except that an Indexed Job may
	// change it together with parallelism, to the same value.
	// +optional
	Completions *int32 `json:"completions,omitempty" protobuf:"varint,2,opt,name=completions"`

	// activeDeadlineSeconds is how long, in seconds counted from startTime,
	// the Job may stay active before the system terminates it. Must not be
	// negative. Suspending the Job stops this clock; resuming it starts the
	// clock again from zero.
	// +optional
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty" protobuf:"varint,3,opt,name=activeDeadlineSeconds"`

	// podFailurePolicy decides how failed Pods are handled, with rules that
	// each pair a requirement with an action. Without it, every failed Pod
	// increments .status.failed, which is checked against backoffLimit. It
	// needs the Pod template's restartPolicy to be Never: OnFailure is not
	// allowed with it. Immutable.
	//
	// +optional
	PodFailurePolicy *PodFailurePolicy `json:"podFailurePolicy,omitempty" protobuf:"bytes,11,opt,name=podFailurePolicy"`

	// successPolicy lets the Job be declared succeeded before all of its Pods
	// have; once it is met, the Pods still running are terminated. Without
	// it, the Job succeeds only when the number of succeeded Pods reaches
	// completions. Only for Indexed Jobs. Immutable.
	//
	// +optional
	SuccessPolicy *SuccessPolicy `json:"successPolicy,omitempty" protobuf:"bytes,16,opt,name=successPolicy"`

	// backoffLimit is how many retries the Job gets before it is marked
	// failed. Must not be negative. Defaults to 6, or to 2147483647 when
	// backoffLimitPerIndex is set (Indexed Jobs only).
	// +optional
	BackoffLimit *int32 `json:"backoffLimit,omitempty" protobuf:"varint,7,opt,name=backoffLimit"`

	// backoffLimitPerIndex is how many retries each index gets before that
	// index is marked failed. Each Pod carries the failure count of its index
	// in the annotation batch.jobs.dev/job-index-failure-count. Only for Jobs
	// with completionMode Indexed whose Pods have restartPolicy Never. Must
	// not be negative. Immutable.
	// +optional
	BackoffLimitPerIndex *int32 `json:"backoffLimitPerIndex,omitempty" protobuf:"varint,12,opt,name=backoffLimitPerIndex"`

	// maxFailedIndexes is how many indexes may fail, with backoffLimitPerIndex
	// set, before the whole Job is marked Failed and stopped. Null lets every
	// index run to the end (the Job then fails if any index failed). Only
	// allowed with backoffLimitPerIndex. Null or between 0 and completions
	// (and at most 10^5); when completions exceeds 10^5 it is required and at
	// most 10^4.
	// +optional
	MaxFailedIndexes *int32 `json:"maxFailedIndexes,omitempty" protobuf:"varint,13,opt,name=maxFailedIndexes"`

	// selector is the label query that picks out the Pods the Job counts. The
	// system usually sets it (see manualSelector). It must match the Pod
	// template's labels. Immutable. See
	// https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty" protobuf:"bytes,4,opt,name=selector"`

	// manualSelector says who picks the Pod labels and the selector. False or
	// unset: the system generates labels unique to this Job, adds them to the
	// Pod template and builds the selector from them. True: you supply both,
	// and labels that are not unique can make this Job and others misbehave.
	// Leave it unset unless you are sure you need it. Jobs created through the
	// old extensions/v1beta1 API may have manualSelector=true. See
	// https://kubernetes.io/docs/concepts/workloads/controllers/jobs-run-to-completion/#specifying-your-own-pod-selector
	// +optional
	ManualSelector *bool `json:"manualSelector,omitempty" protobuf:"varint,5,opt,name=manualSelector"`

	// template is the Pod the Job creates for each attempt. Its
	// spec.restartPolicy must be Never or OnFailure. See
	// https://kubernetes.io/docs/concepts/workloads/controllers/jobs-run-to-completion/
	Template corev1.PodTemplateSpec `json:"template" protobuf:"bytes,6,opt,name=template"`

	// ttlSecondsAfterFinished lets a finished Job (Complete or Failed) be
	// deleted automatically this many seconds after it finished; 0 makes it
	// eligible at once. The deletion honors the Job's lifecycle guarantees,
	// such as finalizers. Unset, the Job is never deleted automatically. Must
	// not be negative.
	// +optional
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty" protobuf:"varint,8,opt,name=ttlSecondsAfterFinished"`

	// completionMode is how the Job counts completed Pods: `NonIndexed` (the
	// default) or `Indexed`. Immutable.
	//
	// `NonIndexed`: the Pods are interchangeable, and the Job is complete once
	// .spec.completions of them have succeeded.
	//
	// `Indexed`: each Pod gets a completion index from 0 to
	// .spec.completions-1, in the annotation batch.jobs.dev/job-completion-index,
	// and the Job is complete once each index has one Pod that succeeded.
	// .spec.completions is then required, and `.spec.parallelism` may be at
	// most 10^5. The Pods are named `$(job-name)-$(index)-$(random-string)`
	// and their hostname is `$(job-name)-$(index)`.
	//
	// Other modes may be added later. A Job controller that does not know the
	// mode, as can happen with version skew during an upgrade, leaves the Job
	// untouched.
	// +optional
	CompletionMode *CompletionMode `json:"completionMode,omitempty" protobuf:"bytes,9,opt,name=completionMode,casttype=CompletionMode"`

	// suspend, while true, keeps the Job controller from creating Pods. A Job
	// created suspended gets no Pods; suspending a Job that is running (the
	// flag going from false to true) deletes all its active Pods, which the
	// workload must be able to survive. Suspending also clears startTime, and
	// so restarts the activeDeadlineSeconds clock. Defaults to false.
	//
	// +optional
	Suspend *bool `json:"suspend,omitempty" protobuf:"varint,10,opt,name=suspend"`

	// podReplacementPolicy is when a Pod that is going away may be replaced.
	// One of:
	//
	//   - TerminatingOrFailed: as soon as the Pod is terminating (it has a
	//     metadata.deletionTimestamp) or has failed.
	//   - Failed: only once the Pod has fully terminated, in phase Failed or
	//     Succeeded.
	//
	// With podFailurePolicy set, Failed is the only allowed value, and the
	// default; otherwise the default is TerminatingOrFailed.
	// +optional
	PodReplacementPolicy *PodReplacementPolicy `json:"podReplacementPolicy,omitempty" protobuf:"bytes,14,opt,name=podReplacementPolicy,casttype=podReplacementPolicy"`

	// managedBy names the controller that reconciles the Job. The built-in Job
	// controller takes Jobs without it, or with the reserved value
	// `kubernetes.io/job-controller`, and leaves any other value to the
	// controller it names. It is a domain-prefixed path such as acme.io/foo:
	// before the first "/" a DNS subdomain (RFC 1123), after it HTTP path
	// characters (RFC 3986); at most 63 characters. Immutable.
	// +optional
	ManagedBy *string `json:"managedBy,omitempty" protobuf:"bytes,15,opt,name=managedBy"`

	// scheduling asks the scheduler to treat the Job's Pods as one workload:
	// how they are placed (a basic policy, Pod after Pod as usual, or a gang
	// policy, where a minimum number of them is placed together or none is),
	// topology constraints, whether they may be disrupted one by one or only
	// together, and ResourceClaims they share. A Job without it is scheduled
	// as with the basic policy.
	// Alpha: the server keeps this field only with the WorkloadWithJob
	// feature gate on. It cannot be added to or removed from an existing Job,
	// and nothing in it changes after creation but
	// schedulingPolicy.gang.minCount.
	//
	// +optional
	// +featureGate=WorkloadWithJob
	Scheduling *JobSchedulingConfiguration `json:"scheduling,omitempty" protobuf:"bytes,17,opt,name=scheduling"`
}

// JobSchedulingConfiguration is how a Job is scheduled as a workload, put
// together from the building blocks of the scheduling.k8s.io API.
type JobSchedulingConfiguration struct {
	// schedulingPolicy is basic or gang (exactly one). It can be neither
	// added nor removed after creation, nor switched between basic and gang;
	// the only change allowed is to gang.minCount, which may never exceed
	// the Job's parallelism.
	//
	// +optional
	SchedulingPolicy *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy `json:"schedulingPolicy,omitempty" protobuf:"bytes,1,opt,name=schedulingPolicy"`

	// schedulingConstraints restrict where the Job's Pods are placed, such as
	// a topology domain they must share. Immutable.
	//
	// +optional
	SchedulingConstraints *schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints `json:"schedulingConstraints,omitempty" protobuf:"bytes,2,opt,name=schedulingConstraints"`

	// disruptionMode says whether the Job's Pods may be disrupted each on its
	// own (single) or only all together (all, which needs the gang policy).
	// Immutable, set or unset alike.
	//
	// +optional
	DisruptionMode *schedulingv1alpha3.WorkloadPodGroupDisruptionMode `json:"disruptionMode,omitempty" protobuf:"bytes,3,opt,name=disruptionMode"`

	// resourceClaims lists ResourceClaims the Job's Pods may share: a Pod
	// uses the devices allocated to one of them by declaring, in its own
	// spec.resourceClaims, a claim with the same name that refers to the same
	// ResourceClaim or ResourceClaimTemplate. At most 4, the limit of the
	// PodGroup they end up in. Immutable: no entry may be added, removed or
	// changed.
	//
	// +listType=map
	// +listMapKey=name
	// +patchStrategy=merge
	// +patchMergeKey=name
	// +optional
	ResourceClaims []schedulingv1alpha3.WorkloadPodGroupResourceClaim `json:"resourceClaims,omitempty" patchStrategy:"merge" patchMergeKey:"name" protobuf:"bytes,4,rep,name=resourceClaims"`
}

// JobStatus is the observed state of a Job.
type JobStatus struct {
	// conditions are the latest observations of the Job's state. The Job
	// controller sets Failed=True when the Job fails, Complete=True when it
	// completes, and Suspended=True while it is suspended (turned to False
	// when it is resumed).
	//
	// Complete and Failed are terminal: a Job with either one True has
	// finished. A Job never has both, nor Complete together with
	// FailureTarget. Once True, Complete, Failed and FailureTarget cannot be
	// turned off.
	//
	// See https://kubernetes.io/docs/concepts/workloads/controllers/jobs-run-to-completion/
	// +listType=atomic
	// +patchStrategy=merge
	// +patchMergeKey=type
	// +optional
	Conditions []JobCondition `json:"conditions,omitempty" patchStrategy:"merge" patchMergeKey:"type" protobuf:"bytes,1,rep,name=conditions"`

	// startTime is when the Job controller began working on the Job, in RFC
	// 3339 form and UTC. A Job created suspended has none until it is first
	// resumed, and every resume sets it anew. Once set, it may be removed only
	// while the Job is suspended, and never changed while the Job runs or
	// after it has finished.
	//
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty" protobuf:"bytes,2,opt,name=startTime"`

	// completionTime is when the Job finished successfully, in RFC 3339 form
	// and UTC; it is set then and in no other case. It cannot be changed or
	// removed, and is never earlier than startTime. Separate operations are
	// not guaranteed to observe it in happens-before order.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty" protobuf:"bytes,3,opt,name=completionTime"`

	// active is the number of Pending and Running Pods that are not
	// terminating (have no deletionTimestamp). Zero once the Job has finished.
	// +optional
	Active int32 `json:"active,omitempty" protobuf:"varint,4,opt,name=active"`

	// succeeded is the number of Pods that reached phase Succeeded. It only
	// grows for a given spec, except that scaling an elastic Indexed Job down
	// may lower it.
	// +optional
	Succeeded int32 `json:"succeeded,omitempty" protobuf:"varint,5,opt,name=succeeded"`

	// failed is the number of Pods that reached phase Failed. It only grows.
	// +optional
	Failed int32 `json:"failed,omitempty" protobuf:"varint,6,opt,name=failed"`

	// terminating is the number of Pods being terminated: in phase Pending or
	// Running, with a deletionTimestamp.
	// +optional
	Terminating *int32 `json:"terminating,omitempty" protobuf:"varint,11,opt,name=terminating"`

	// completedIndexes lists the completed indexes of an Indexed Job
	// (.spec.completionMode "Indexed") as comma-separated decimal integers in
	// increasing order, where a run of three or more consecutive indexes is
	// written as its first and last index joined by a hyphen: indexes 1, 3,
	// 4, 5 and 7 read "1,3-5,7".
	// +optional
	CompletedIndexes string `json:"completedIndexes,omitempty" protobuf:"bytes,7,opt,name=completedIndexes"`

	// failedIndexes lists the failed indexes when spec.backoffLimitPerIndex is
	// set, in the format of `completedIndexes`: for example "1,3-5,7". An index
	// is never both completed and failed.
	// +optional
	FailedIndexes *string `json:"failedIndexes,omitempty" protobuf:"bytes,10,opt,name=failedIndexes"`

	// uncountedTerminatedPods lists the UIDs of terminated Pods that the Job
	// controller has not yet added to the status counters.
	//
	// The controller creates each Pod with a finalizer, and accounts for a
	// Pod that succeeded or failed in three steps:
	//
	//  1. it adds the Pod's UID to the matching list in this field;
	//  2. it removes the finalizer from the Pod;
	//  3. it removes the UID from the list and increments the matching
	//     counter.
	//
	// Empty for old Jobs that are not tracked this way, and for finished Jobs.
	// +optional
	UncountedTerminatedPods *UncountedTerminatedPods `json:"uncountedTerminatedPods,omitempty" protobuf:"bytes,8,opt,name=uncountedTerminatedPods"`

	// ready is the number of active Pods that have the Ready condition and
	// are not terminating (have no deletionTimestamp).
	// +optional
	Ready *int32 `json:"ready,omitempty" protobuf:"varint,9,opt,name=ready"`
}

// UncountedTerminatedPods holds the UIDs of terminated Pods that the Job's
// status counters do not include yet.
type UncountedTerminatedPods struct {
	// succeeded are the UIDs of Pods that succeeded.
	// +listType=set
	// +optional
	Succeeded []types.UID `json:"succeeded,omitempty" protobuf:"bytes,1,rep,name=succeeded,casttype=k8s.io/apimachinery/pkg/types.UID"`

	// failed are the UIDs of Pods that failed.
	// +listType=set
	// +optional
	Failed []types.UID `json:"failed,omitempty" protobuf:"bytes,2,rep,name=failed,casttype=k8s.io/apimachinery/pkg/types.UID"`
}

// JobConditionType is the type of a JobCondition.
type JobConditionType string

// The condition types of a Job.
const (
	// JobSuspended is True while the Job is suspended.
	JobSuspended JobConditionType = "Suspended"
	// JobComplete means the Job finished successfully.
	JobComplete JobConditionType = "Complete"
	// JobFailed means the Job failed.
	JobFailed JobConditionType = "Failed"
	// JobFailureTarget means the Job is going to fail: the controller is
	// terminating its Pods before it adds Failed.
	JobFailureTarget JobConditionType = "FailureTarget"
	// JobSuccessCriteriaMet means the Job met its success criteria: the
	// controller is terminating its remaining Pods before it adds Complete.
	JobSuccessCriteriaMet JobConditionType = "SuccessCriteriaMet"
)

// JobCondition is one observation of a Job's state.
type JobCondition struct {
	// type of the condition: Suspended, Complete, Failed, FailureTarget or
	// SuccessCriteriaMet.
	Type JobConditionType `json:"type" protobuf:"bytes,1,opt,name=type,casttype=JobConditionType"`
	// status of the condition: True, False or Unknown.
	Status corev1.ConditionStatus `json:"status" protobuf:"bytes,2,opt,name=status,casttype=k8s.io/api/core/v1.ConditionStatus"`
	// lastProbeTime is when the condition was last checked.
	// +optional
	LastProbeTime metav1.Time `json:"lastProbeTime,omitempty" protobuf:"bytes,3,opt,name=lastProbeTime"`
	// lastTransitionTime is when the condition last changed status.
	// +optional
	LastTransitionTime metav1.Time `json:"lastTransitionTime,omitempty" protobuf:"bytes,4,opt,name=lastTransitionTime"`
	// reason is a short, machine-readable cause of the last transition.
	// +optional
	Reason string `json:"reason,omitempty" protobuf:"bytes,5,opt,name=reason"`
	// message explains the last transition for humans.
	// +optional
	Message string `json:"message,omitempty" protobuf:"bytes,6,opt,name=message"`
}
