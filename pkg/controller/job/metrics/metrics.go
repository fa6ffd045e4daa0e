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

// Package metrics defines the metrics of the embedded Job controller. Names,
// labels, help texts and stability levels are those of
// kube-controller-manager's job controller, so dashboards and alerts written
// for it work unchanged.
package metrics

import (
	"sync"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// JobControllerSubsystem is the subsystem (metric name prefix) of every Job
// controller metric.
const JobControllerSubsystem = "job_controller"

// collectors holds every metric declared below, in declaration order, for
// Register.
var collectors []metrics.Registerable

// counter declares a counter of the Job controller subsystem and remembers it
// for Register.
func counter(name string, level metrics.StabilityLevel, help string, labels ...string) *metrics.CounterVec {
	vec := metrics.NewCounterVec(&metrics.CounterOpts{
		Subsystem: JobControllerSubsystem, Name: name, Help: help, StabilityLevel: level,
	}, labels)
	collectors = append(collectors, vec)
	return vec
}

// histogram is counter's twin for a histogram with the given buckets.
func histogram(name string, level metrics.StabilityLevel, help string, buckets []float64, labels ...string) *metrics.HistogramVec {
	vec := metrics.NewHistogramVec(&metrics.HistogramOpts{
		Subsystem: JobControllerSubsystem, Name: name, Help: help, StabilityLevel: level, Buckets: buckets,
	}, labels)
	collectors = append(collectors, vec)
	return vec
}

// The label sets shared by several metrics.
var (
	syncLabels   = []string{"completion_mode", "result", "action"}
	finishLabels = []string{"completion_mode", "result", "reason"}
)

// The metrics. Help texts are byte for byte those of kube-controller-manager,
// including the tabs that its multi-line texts carry, so scrapes of either
// controller show the same metadata. The label values each metric takes are
// the constants further down.
var (
	// JobSyncDurationSeconds is the latency of one sync, by completion mode,
	// result (success, error) and action.
	JobSyncDurationSeconds = histogram("job_sync_duration_seconds", metrics.STABLE,
		"The time it took to sync a job",
		metrics.ExponentialBuckets(0.004, 2, 15), syncLabels...)

	// JobSyncNum counts syncs, with JobSyncDurationSeconds' labels.
	JobSyncNum = counter("job_syncs_total", metrics.STABLE,
		"The number of job syncs", syncLabels...)

	// JobFinishedNum counts Jobs reaching Complete or Failed, by completion
	// mode, result (succeeded, failed) and the condition's reason; a Job that
	// succeeds is counted under CompletionsReached.
	JobFinishedNum = counter("jobs_finished_total", metrics.STABLE,
		"The number of finished jobs", finishLabels...)

	// JobByExternalControllerTotal counts Jobs whose spec.managedBy hands
	// them to another controller, labelled with that value.
	JobByExternalControllerTotal = counter("jobs_by_external_controller_total", metrics.ALPHA,
		"The number of Jobs managed by an external controller", "controller_name")

	// JobPodsFinished counts finished Pods once they are fully accounted
	// for: counted in status and stripped of the tracking finalizer.
	JobPodsFinished = counter("job_pods_finished_total", metrics.STABLE,
		"The number of finished Pods that are fully tracked", "completion_mode", "result")

	// PodFailuresHandledByFailurePolicy counts failed Pods that matched a
	// podFailurePolicy rule, by that rule's action (FailJob, Ignore, Count).
	PodFailuresHandledByFailurePolicy = counter("pod_failures_handled_by_failure_policy_total", metrics.BETA,
		"The number of failed Pods handled by failure policy with\n\t\t\trespect to the failure policy action applied based on the matched\n\t\t\trule. Possible values of the action label correspond to the\n\t\t\tpossible values for the failure policy rule action, which are:\n\t\t\t\"FailJob\", \"Ignore\" and \"Count\".",
		"action")

	// TerminatedPodsTrackingFinalizerTotal counts Failed or Succeeded Pods,
	// owned by a Job or not, as the tracking finalizer is added or removed.
	// Its help text names upstream's finalizer on purpose (see above).
	TerminatedPodsTrackingFinalizerTotal = counter("terminated_pods_tracking_finalizer_total", metrics.BETA,
		"The number of terminated pods (phase=Failed|Succeeded)\nthat have the finalizer batch.kubernetes.io/job-tracking\nThe event label can be \"add\" or \"delete\".",
		"event")

	// JobFinishedIndexesTotal counts the indexes of Indexed Jobs that end,
	// by status and by which backoff limit applies (perIndex, global).
	JobFinishedIndexesTotal = counter("job_finished_indexes_total", metrics.ALPHA,
		"The number of finished indexes. Possible values for the\n\t\t\tstatus label are: \"succeeded\", \"failed\". Possible values for the\n\t\t\tbackoffLimit label are: \"perIndex\" and \"global\"",
		"status", "backoffLimit")

	// JobPodsCreationTotal counts Pod creations the controller attempted, by
	// why the Pod was created and whether the request succeeded.
	JobPodsCreationTotal = counter("job_pods_creation_total", metrics.ALPHA,
		"The number of Pods created by the Job controller labelled with a reason for the Pod creation.\nThis metric also distinguishes between Pods created using different PodReplacementPolicy settings.\nPossible values of the \"reason\" label are:\n\"new\", \"recreate_terminating_or_failed\", \"recreate_failed\".\nPossible values of the \"status\" label are:\n\"succeeded\", \"failed\".",
		"reason", "status")

	// JobRequeueSkips counts syncs dropped because the informer had not yet
	// caught up with a status the controller itself wrote.
	JobRequeueSkips = counter("stale_sync_skips_total", metrics.ALPHA,
		"Total number of Job syncs skipped due to a stale watch cache.", "group", "resource")
)

// The "action" label of JobSyncDurationSeconds and JobSyncNum says what a sync
// did.
const (
	// JobSyncActionReconciling: Pod creations or deletions the controller
	// issued earlier have not all been observed yet, so it waits.
	JobSyncActionReconciling = "reconciling"

	// JobSyncActionTracking: nothing was created or deleted because the
	// active Pods already are what the Job asks for; the usual case.
	JobSyncActionTracking = "tracking"

	// JobSyncActionPodsCreated: Pods were created to reach parallelism.
	JobSyncActionPodsCreated = "pods_created"

	// JobSyncActionPodsDeleted: Pods were deleted, because the Job is
	// suspended or has more active Pods than parallelism.
	JobSyncActionPodsDeleted = "pods_deleted"
)

// Succeeded and Failed are the values of the "result" labels and of the
// "status" label of JobPodsCreationTotal and JobFinishedIndexesTotal.
const Succeeded, Failed = "succeeded", "failed"

// Add and Delete are the values of TerminatedPodsTrackingFinalizerTotal's
// "event" label.
const Add, Delete = "add", "delete"

// The "reason" label of JobPodsCreationTotal says why a Pod was created.
const (
	// PodCreateNew: the first Pod of its slot.
	PodCreateNew = "new"

	// PodRecreateTerminatingOrFailed: a replacement, under
	// podReplacementPolicy TerminatingOrFailed.
	PodRecreateTerminatingOrFailed = "recreate_terminating_or_failed"

	// PodRecreateFailed: a replacement, under podReplacementPolicy Failed.
	PodRecreateFailed = "recreate_failed"
)

var registerOnce sync.Once

// Register adds every Job controller metric to the legacy registry, which is
// served on /metrics. Only the first call does anything.
func Register() {
	registerOnce.Do(func() {
		for _, c := range collectors {
			legacyregistry.MustRegister(c)
		}
	})
}
