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

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// TTL tells, for a Job with spec.ttlSecondsAfterFinished, how long remains
// at now before the Job is to be deleted (zero once expired), and whether
// the TTL applies at all: the Job has a TTL, is finished, is not being
// deleted already and is this controller's. The clock starts at
// status.completionTime for a complete Job and at the terminal condition's
// transition for a failed one.
func TTL(job *batchv1.Job, now time.Time) (remaining time.Duration, applies bool) {
	ttl := job.Spec.TTLSecondsAfterFinished
	if ttl == nil || job.DeletionTimestamp != nil {
		return 0, false
	}
	if _, external := ExternalManager(job); external {
		return 0, false
	}
	end, finished := Finished(job)
	if !finished {
		return 0, false
	}
	at := end.LastTransitionTime.Time
	if end.Type == batchv1.JobComplete && job.Status.CompletionTime != nil {
		at = job.Status.CompletionTime.Time
	}
	return max(at.Add(time.Duration(*ttl)*time.Second).Sub(now), 0), true
}

// TTLExpired tells whether the Job is due for deletion at now (see TTL).
func TTLExpired(job *batchv1.Job, now time.Time) bool {
	left, applies := TTL(job, now)
	return applies && left == 0
}
