package job

import (
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
)

// The metrics a sync reports once its writes succeeded.

// countFinishedPods counts the Pods (and, for an Indexed Job, the indexes)
// that one status write, from before to after, finished tracking.
func countFinishedPods(job *batchv1.Job, before, after *batchv1.JobStatus) {
	mode := decide.CompletionModeLabel(job)
	succeeded := int(after.Succeeded - before.Succeeded)
	if completions := job.Spec.Completions; completions != nil && job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion {
		// An Indexed Job counts its indexes: its succeeded counter
		// follows completedIndexes, which a scale down may cut.
		label := decide.BackoffLimitLabel(job)
		succeeded = decide.IndexCount(after.CompletedIndexes, *completions) - decide.IndexCount(before.CompletedIndexes, *completions)
		if succeeded > 0 {
			metrics.JobFinishedIndexesTotal.WithLabelValues(metrics.Succeeded, label).Add(float64(succeeded))
		}
		if job.Spec.BackoffLimitPerIndex != nil {
			failed := decide.IndexCount(ptr.Deref(after.FailedIndexes, ""), *completions) - decide.IndexCount(ptr.Deref(before.FailedIndexes, ""), *completions)
			if failed > 0 {
				metrics.JobFinishedIndexesTotal.WithLabelValues(metrics.Failed, label).Add(float64(failed))
			}
		}
	}
	if succeeded > 0 {
		metrics.JobPodsFinished.WithLabelValues(mode, metrics.Succeeded).Add(float64(succeeded))
	}
	if failed := after.Failed - before.Failed; failed > 0 {
		metrics.JobPodsFinished.WithLabelValues(mode, metrics.Failed).Add(float64(failed))
	}
}

// countFinishedJob counts a Job this sync finished.
func countFinishedJob(job *batchv1.Job, cond *batchv1.JobCondition) {
	result := metrics.Failed
	if cond.Type == batchv1.JobComplete {
		result = metrics.Succeeded
	}
	metrics.JobFinishedNum.WithLabelValues(decide.CompletionModeLabel(job), result, cond.Reason).Inc()
}

// countCreations counts one sync's Pod creations by why they were made.
func countCreations(reason string, created, failed int) {
	if created > 0 {
		metrics.JobPodsCreationTotal.WithLabelValues(reason, metrics.Succeeded).Add(float64(created))
	}
	if failed > 0 {
		metrics.JobPodsCreationTotal.WithLabelValues(reason, metrics.Failed).Add(float64(failed))
	}
}
