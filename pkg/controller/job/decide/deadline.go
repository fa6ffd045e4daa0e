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

// activeDeadlineSeconds counts from status.startTime, which a suspension
// clears and a resumption sets again: the deadline is on continuous
// activity. A suspended Job has no deadline running.

// deadlineLeft returns how long the Job has before its active deadline,
// and false when no deadline runs: none is set, the Job has not started or
// it is suspended. The duration is zero or negative once the deadline has
// passed.
func deadlineLeft(job *batchv1.Job, start *time.Time, now time.Time) (time.Duration, bool) {
	if job.Spec.ActiveDeadlineSeconds == nil || start == nil || suspended(job) {
		return 0, false
	}
	limit := time.Duration(*job.Spec.ActiveDeadlineSeconds) * time.Second
	return limit - now.Sub(*start), true
}

// DeadlineResync tells whether a Job update needs a sync of its own when
// its active deadline falls, and in how long (zero or negative: now): the
// Job has started and its activeDeadlineSeconds is new or changed. Other
// updates reach the deadline through the resync every sync asks for.
func DeadlineResync(old, cur *batchv1.Job, now time.Time) (time.Duration, bool) {
	ads := cur.Spec.ActiveDeadlineSeconds
	if cur.Status.StartTime == nil || ads == nil {
		return 0, false
	}
	if prev := old.Spec.ActiveDeadlineSeconds; prev != nil && *prev == *ads {
		return 0, false
	}
	return time.Duration(*ads)*time.Second - now.Sub(cur.Status.StartTime.Time), true
}
