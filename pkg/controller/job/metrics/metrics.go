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

var (
	// JobSyncDurationSeconds tracks the latency of Job syncs. Label values:
	//   completion_mode: Indexed, NonIndexed
	//   result:          success, error
	//   action:          reconciling, tracking, pods_created, pods_deleted
	JobSyncDurationSeconds = metrics.NewHistogramVec(
		&metrics.HistogramOpts{
			Subsystem:      JobControllerSubsystem,
			Name:           "job_sync_duration_seconds",
			Help:           "The time it took to sync a job",
			StabilityLevel: metrics.STABLE,
			Buckets:        metrics.ExponentialBuckets(0.004, 2, 15),
		},
		[]string{"completion_mode", "result", "action"},
	)

	// JobSyncNum counts Job syncs. Label values as JobSyncDurationSeconds.
	JobSyncNum = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      JobControllerSubsystem,
			Name:           "job_syncs_total",
			Help:           "The number of job syncs",
			StabilityLevel: metrics.STABLE,
		},
		[]string{"completion_mode", "result", "action"},
	)

	// JobFinishedNum counts the Jobs that finish. Label values:
	//   completion_mode: Indexed, NonIndexed
	//   result:          failed, succeeded
	//   reason:          BackoffLimitExceeded, DeadlineExceeded, PodFailurePolicy,
	//                    FailedIndexes, MaxFailedIndexesExceeded, SuccessPolicy,
	//                    CompletionsReached (the reason counted for successful Jobs)
	JobFinishedNum = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      JobControllerSubsystem,
			Name:           "jobs_finished_total",
			Help:           "The number of finished jobs",
			StabilityLevel: metrics.STABLE,
		},
		[]string{"completion_mode", "result", "reason"},
	)

	// JobByExternalControllerTotal counts the Jobs the controller left to an
	// external controller; controller_name is the Job's spec.managedBy.
	JobByExternalControllerTotal = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      JobControllerSubsystem,
			Name:           "jobs_by_external_controller_total",
			Help:           "The number of Jobs managed by an external controller",
			StabilityLevel: metrics.ALPHA,
		},
		[]string{"controller_name"},
	)

	// JobPodsFinished counts the finished Pods the controller has finished
	// tracking (counted in status and finalizer removed). Label values:
	//   completion_mode: Indexed, NonIndexed
	//   result:          failed, succeeded
	JobPodsFinished = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      JobControllerSubsystem,
			Name:           "job_pods_finished_total",
			Help:           "The number of finished Pods that are fully tracked",
			StabilityLevel: metrics.STABLE,
		},
		[]string{"completion_mode", "result"},
	)

	// PodFailuresHandledByFailurePolicy counts the failed Pods matched by a
	// pod failure policy rule, by the rule's action: FailJob, Ignore, Count.
	PodFailuresHandledByFailurePolicy = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem: JobControllerSubsystem,
			Name:      "pod_failures_handled_by_failure_policy_total",
			Help: `The number of failed Pods handled by failure policy with
			respect to the failure policy action applied based on the matched
			rule. Possible values of the action label correspond to the
			possible values for the failure policy rule action, which are:
			"FailJob", "Ignore" and "Count".`,
			StabilityLevel: metrics.BETA,
		},
		[]string{"action"},
	)

	// TerminatedPodsTrackingFinalizerTotal counts terminated Pods (Failed or
	// Succeeded) gaining ("add") or losing ("delete") the tracking finalizer,
	// whether or not a Job owns them.
	TerminatedPodsTrackingFinalizerTotal = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem: JobControllerSubsystem,
			Name:      "terminated_pods_tracking_finalizer_total",
			// The help text keeps upstream's wording (and its finalizer name) so
			// that scrapes of this controller and of kube-controller-manager
			// carry the same metadata.
			Help: `The number of terminated pods (phase=Failed|Succeeded)
that have the finalizer batch.kubernetes.io/job-tracking
The event label can be "add" or "delete".`,
			StabilityLevel: metrics.BETA,
		},
		[]string{"event"},
	)

	// JobFinishedIndexesTotal counts the finished indexes of Indexed Jobs.
	// Label values:
	//   status:       succeeded, failed
	//   backoffLimit: perIndex, global
	JobFinishedIndexesTotal = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem: JobControllerSubsystem,
			Name:      "job_finished_indexes_total",
			Help: `The number of finished indexes. Possible values for the
			status label are: "succeeded", "failed". Possible values for the
			backoffLimit label are: "perIndex" and "global"`,
		},
		[]string{"status", "backoffLimit"},
	)

	// JobPodsCreationTotal counts the Pods the controller tried to create, by
	// why it created them and whether the create succeeded. Label values:
	//   reason: new, recreate_terminating_or_failed, recreate_failed
	//   status: succeeded, failed
	JobPodsCreationTotal = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem: JobControllerSubsystem,
			Name:      "job_pods_creation_total",
			Help: `The number of Pods created by the Job controller labelled with a reason for the Pod creation.
This metric also distinguishes between Pods created using different PodReplacementPolicy settings.
Possible values of the "reason" label are:
"new", "recreate_terminating_or_failed", "recreate_failed".
Possible values of the "status" label are:
"succeeded", "failed".`,
		},
		[]string{"reason", "status"},
	)

	// JobRequeueSkips counts the Job syncs skipped because the informer cache
	// was older than what the controller had already written.
	JobRequeueSkips = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      JobControllerSubsystem,
			Name:           "stale_sync_skips_total",
			Help:           "Total number of Job syncs skipped due to a stale watch cache.",
			StabilityLevel: metrics.ALPHA,
		},
		[]string{"group", "resource"},
	)
)

// Values of the "action" label of JobSyncDurationSeconds and JobSyncNum.
const (
	// JobSyncActionReconciling: the Job's creation/deletion expectations are
	// not satisfied yet; the controller waits for the Pod changes it issued.
	JobSyncActionReconciling = "reconciling"
	// JobSyncActionTracking: expectations are satisfied and the active Pods
	// match what the Job wants, so the sync created or deleted nothing. Most
	// syncs are this.
	JobSyncActionTracking = "tracking"
	// JobSyncActionPodsCreated: the sync created Pods (fewer active than
	// parallelism).
	JobSyncActionPodsCreated = "pods_created"
	// JobSyncActionPodsDeleted: the sync deleted Pods (Job suspended, or more
	// active than parallelism).
	JobSyncActionPodsDeleted = "pods_deleted"
)

// Values of the "result" labels, and of the "status" label of
// JobPodsCreationTotal and JobFinishedIndexesTotal.
const (
	Succeeded = "succeeded"
	Failed    = "failed"
)

// Values of the "event" label of TerminatedPodsTrackingFinalizerTotal.
const (
	Add    = "add"
	Delete = "delete"
)

// Values of the "reason" label of JobPodsCreationTotal.
const (
	// PodCreateNew: a Pod for a slot that had none.
	PodCreateNew = "new"
	// PodRecreateTerminatingOrFailed: a replacement created under
	// podReplacementPolicy TerminatingOrFailed.
	PodRecreateTerminatingOrFailed = "recreate_terminating_or_failed"
	// PodRecreateFailed: a replacement created under podReplacementPolicy
	// Failed.
	PodRecreateFailed = "recreate_failed"
)

var registerMetrics sync.Once

// Register registers the Job controller metrics into the legacy registry
// (served on /metrics). Calling it more than once is harmless.
func Register() {
	registerMetrics.Do(func() {
		legacyregistry.MustRegister(JobSyncDurationSeconds)
		legacyregistry.MustRegister(JobSyncNum)
		legacyregistry.MustRegister(JobFinishedNum)
		legacyregistry.MustRegister(JobPodsFinished)
		legacyregistry.MustRegister(PodFailuresHandledByFailurePolicy)
		legacyregistry.MustRegister(TerminatedPodsTrackingFinalizerTotal)
		legacyregistry.MustRegister(JobFinishedIndexesTotal)
		legacyregistry.MustRegister(JobPodsCreationTotal)
		legacyregistry.MustRegister(JobByExternalControllerTotal)
		legacyregistry.MustRegister(JobRequeueSkips)
	})
}
