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

package decide

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// A sync of one Job is three pure steps with the controller's actions in
// between, because what the controller does next depends on what its
// requests achieved:
//
//	plan := Decide(snapshot)                 // the Pods to delete and create
//	  ... the controller deletes and creates Pods ...
//	track := plan.AfterPods(podOutcome)      // the first status write, the finalizers to remove
//	  ... the controller writes track.Interim, removes the finalizers ...
//	final := track.AfterFinalizers(removed, failed) // the second status write, the end of the Job
//	  ... the controller writes final.Status ...
//
// Nothing in this package reads a clock, calls a client or starts a
// goroutine: every input is in the Snapshot, every output in the returned
// values. The functions never modify the Snapshot's Job or Pods.

// Options are the controller's tunables that change decisions. Fields
// left zero take DefaultOptions.
type Options struct {
	// MaxUncountedPods bounds how many finished Pods one sync moves into
	// status.uncountedTerminatedPods (upstream: 500).
	MaxUncountedPods int
	// MaxPodChangesPerSync bounds the Pods one sync creates or deletes
	// (upstream: 500).
	MaxPodChangesPerSync int
	// PodBackoff is the delay before the first replacement of a failed
	// Pod; it doubles with every further failure (upstream: 10s).
	PodBackoff time.Duration
	// MaxPodBackoff caps that delay (upstream: 10m).
	MaxPodBackoff time.Duration
	// BatchPeriod is the shortest delay before a Job is looked at again
	// after a backoff (upstream's syncJobBatchPeriod: 1s).
	BatchPeriod time.Duration
}

// FailureRecord is what the controller keeps in memory between syncs of a
// Job (not in its status) to space out replacements of failed Pods: the
// failures since the last success and when the last of them happened.
type FailureRecord struct {
	FailuresSinceSuccess int32
	LastFailure          *time.Time
}

// Snapshot is everything a decision is made from.
type Snapshot struct {
	// Job is the Job as the informer has it. Read only.
	Job *batchv1.Job
	// Pods are the Pods the Job controls (after adoption and release), as
	// the informer has them. Read only.
	Pods []*corev1.Pod
	// Now is the time of the sync.
	Now time.Time
	// ExpectationsMet tells whether every Pod creation and deletion the
	// controller requested for this Job has been observed.
	ExpectationsMet bool
	// FinalizersInFlight are the Pods whose tracking finalizer removal was
	// requested but not observed yet: they count as finalizer-less.
	FinalizersInFlight sets.Set[types.UID]
	// Failures is the record kept since the previous sync.
	Failures FailureRecord
	// NamespaceTerminating tells that a Pod creation of this Job was refused
	// because its namespace is being deleted.
	NamespaceTerminating bool
	// SchedulingGroup, when set, is the spec.schedulingGroup of every Pod
	// to create: the Job's PodGroup (see PlanPodGroup).
	SchedulingGroup *corev1.PodSchedulingGroup
	Options         Options
}

// DeletionReason says why a Pod is deleted.
type DeletionReason string

const (
	// DeleteFinishing: the Job reached a terminal condition; the Pod keeps
	// its finalizer until it is counted. Upstream raises no deletion
	// expectation for these.
	DeleteFinishing DeletionReason = "Finishing"
	// DeleteSuspended: the Job is suspended.
	DeleteSuspended DeletionReason = "Suspended"
	// DeleteExcess: more Pods run than the Job wants (parallelism lowered,
	// completions reached, duplicate or out-of-range index).
	DeleteExcess DeletionReason = "Excess"
)

// PodDeletion is one Pod to delete.
type PodDeletion struct {
	Pod    *corev1.Pod
	Reason DeletionReason
	// RemoveFinalizer: patch the tracking finalizer away before deleting
	// (the Pod is not counted: suspension and scale down).
	RemoveFinalizer bool
}

// PodCreation is one Pod to create.
type PodCreation struct {
	// Index is the completion index, or -1 for a NonIndexed Job.
	Index int
	// Template is the Pod template to create the Pod from, with the
	// tracking finalizer, and for an Indexed Job the index annotation,
	// label, environment variable, hostname and failure counts. It may be
	// shared between creations: read only.
	Template *corev1.PodTemplateSpec
	// GenerateName is the name prefix of the Pod.
	GenerateName string
}

// Event is an Event to record on the Job.
type Event struct {
	Type    string // corev1.EventTypeNormal or corev1.EventTypeWarning
	Reason  string
	Message string
}

// Plan is the first step of a sync: Pod work, and everything the later
// steps need to know of the decision.
type Plan struct {
	// SyncAction is the job_sync_duration_seconds "action" label
	// (metrics.JobSyncAction*); empty when the sync is not to be measured
	// (unknown completion mode, finished Job).
	SyncAction string
	// Deletions are done before Creations; a Plan has one or the other.
	Deletions []PodDeletion
	// Creations are done in slow-start batches (1, 2, 4, ...), stopping
	// after the first batch with a failure.
	Creations []PodCreation
	// CreationReason is the job_pods_creation_total "reason" label for
	// the Creations (metrics.PodCreateNew, ...).
	CreationReason string
	// RequeueAfter, when positive, asks to sync the Job again after that
	// long (replacement backoff, active deadline).
	RequeueAfter time.Duration
	// Failures is the record to keep once the first status write of this
	// sync succeeded. When Tracking.Interim is nil there is no such write
	// and the record is left as it was, as upstream does.
	Failures FailureRecord
	// Events to record now.
	Events []Event

	// The rest is for AfterPods.
	state *syncState
}

// PodOutcome is what the controller's Pod requests achieved.
type PodOutcome struct {
	// Deleted holds, for each of Plan.Deletions in order, whether the Pod
	// is gone or going (a NotFound counts as deleted).
	Deleted []bool
	// Created is how many of Plan.Creations were created; the rest failed
	// or were skipped after a failed slow-start batch. A creation refused
	// because the namespace is terminating counts as created (and does not
	// fail its batch), as upstream: the Job's status counts that Pod active
	// until the next sync, which has Snapshot.NamespaceTerminating.
	Created int
	// NotFound, optional, holds for each of Plan.Deletions whether the Pod
	// was found gone already (NotFound on the finalizer patch or the
	// delete). For a Suspended or Excess deletion such a Pod counts as
	// deleted but, as upstream, is not taken off status.ready.
	NotFound []bool
}

// Tracking is the second step of a sync: the first status write (finished
// Pods recorded as uncounted, interim conditions) and the finalizers that
// can go once it is stored.
type Tracking struct {
	// Interim is the status to write before any finalizer is removed, or
	// nil when nothing needs writing first.
	Interim *batchv1.JobStatus
	// RemoveFinalizers are the Pods whose tracking finalizer to remove once
	// Interim (if any) is written.
	RemoveFinalizers []*corev1.Pod
	// PolicyActions counts the failed Pods handled by each pod failure
	// policy action (job_pods_failures_handled_by_failure_policy_total),
	// to record once Interim is written (at once when Interim is nil).
	PolicyActions map[batchv1.PodFailurePolicyAction]int
	// Events to record now.
	Events []Event
	// Capped is set when the sync took on Options.MaxUncountedPods
	// finished Pods and left the others: the Job must be synced again,
	// which nothing else may bring about (the controller's own writes
	// queue no sync).
	Capped bool

	// The rest is for AfterFinalizers.
	state *syncState
}

// Final is the last step of a sync: the second status write. When a
// finalizer removal failed, Status keeps the progress made (Pods counted)
// and Finished is nil: the controller writes it and retries the sync.
type Final struct {
	// Status to write, or nil when it would not change.
	Status *batchv1.JobStatus
	// Finished is the Complete or Failed condition this write sets, or nil.
	Finished *batchv1.JobCondition
	// Events to record once Status is written.
	Events []Event
}

// syncState carries the decision from one step to the next. Its fields are
// the Decide implementation's business.
type syncState struct {
	job             *batchv1.Job
	opts            Options
	now             time.Time
	expectationsMet bool
	nsTerminating   bool
	schedulingGroup *corev1.PodSchedulingGroup
	indexed         bool
	// completions of an Indexed Job: indexes at or above it are ignored.
	completions int
	// perIndex is backoffLimitPerIndex, when set.
	perIndex *int32

	// status is the status being built, a copy of the Job's.
	status   *batchv1.JobStatus
	pods     []*corev1.Pod
	inFlight sets.Set[types.UID]
	// uncountedSucceeded and uncountedFailed are the Job's
	// status.uncountedTerminatedPods as the sync found it.
	uncountedSucceeded sets.Set[types.UID]
	uncountedFailed    sets.Set[types.UID]

	activePods  []*corev1.Pod
	ready       int32
	terminating int32
	// succeeded and failed count the Pods counted, uncounted and new.
	succeeded int32
	failed    int32
	record    FailureRecord

	succeededBefore  indexSet
	succeededIndexes indexSet
	failedIndexes    indexSet
	held             map[int]*corev1.Pod

	// ending is the condition the Job is heading to: FailureTarget,
	// SuccessCriteriaMet, or the Failed that follows an earlier
	// FailureTarget; nil while it runs on.
	ending *batchv1.JobCondition
	// finishing: Decide found an ending and planned its deletions.
	finishing bool
	// managed: Decide managed the Pods (the expectations were met).
	managed bool

	// Set by AfterPods for AfterFinalizers.
	withFinalizer sets.Set[types.UID]
	releasing     []*corev1.Pod
	capped        bool
}
