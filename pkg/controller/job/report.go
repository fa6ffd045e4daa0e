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
