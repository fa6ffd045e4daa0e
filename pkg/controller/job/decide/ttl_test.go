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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestTTL(t *testing.T) {
	type ttl struct {
		Remaining time.Duration
		Applies   bool
		Expired   bool
	}
	complete := condAt(batchv1.JobComplete, corev1.ConditionTrue, "CompletionsReached", "", at(-time.Minute))
	failed := condAt(batchv1.JobFailed, corev1.ConditionTrue, "BackoffLimitExceeded", "", at(-30*time.Second))
	cases := map[string]struct {
		job  *batchv1.Job
		want ttl
	}{
		"no TTL":        {job: job("j").Status(bare().Condition(complete)).Obj()},
		"not finished":  {job: job("j").TTLSecondsAfterFinished(10).Obj()},
		"being deleted": {job: job("j").TTLSecondsAfterFinished(10).Deleting(t0).Status(bare().Condition(complete)).Obj()},
		"another controller's Job": {
			job: job("j").TTLSecondsAfterFinished(10).ManagedBy("example.com/other").Status(bare().Condition(complete)).Obj(),
		},
		"complete: from the completion time": {
			job:  job("j").TTLSecondsAfterFinished(100).Status(bare().Condition(complete).CompletionTime(at(-20 * time.Second))).Obj(),
			want: ttl{80 * time.Second, true, false},
		},
		"complete without a completion time: from the condition": {
			job:  job("j").TTLSecondsAfterFinished(100).Status(bare().Condition(complete)).Obj(),
			want: ttl{40 * time.Second, true, false},
		},
		"failed: from the condition": {
			job:  job("j").TTLSecondsAfterFinished(100).Status(bare().Condition(failed).CompletionTime(at(-90 * time.Second))).Obj(),
			want: ttl{70 * time.Second, true, false},
		},
		"expired exactly now": {
			job:  job("j").TTLSecondsAfterFinished(60).Status(bare().Condition(complete).CompletionTime(at(-time.Minute))).Obj(),
			want: ttl{0, true, true},
		},
		"expired long ago: zero, not negative": {
			job:  job("j").TTLSecondsAfterFinished(0).Status(bare().Condition(failed)).Obj(),
			want: ttl{0, true, true},
		},
		"a Complete condition that is False does not finish": {
			job: job("j").TTLSecondsAfterFinished(0).Status(bare().Condition(condAt(batchv1.JobComplete, corev1.ConditionFalse, "", "", hourAgo))).Obj(),
		},
		"our own managedBy value applies": {
			job:  job("j").TTLSecondsAfterFinished(0).ManagedBy("kubernetes.io/job-controller").Status(bare().Condition(failed)).Obj(),
			want: ttl{0, true, true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			left, applies := TTL(tc.job, t0)
			got := ttl{left, applies, TTLExpired(tc.job, t0)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("TTL (-want +got):\n%s", diff)
			}
		})
	}
}
