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

	"k8s.io/apimachinery/pkg/types"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestDecideIndexed(t *testing.T) {
	failIndexRule := onExit(failIndex, in, 3)
	runRows(t, map[string]syncRow{
		"a new Indexed Job creates one Pod per index": {
			job: job("j").Indexed(3),
			want: syncResult{Action: created, Create: []string{"j-0-", "j-1-", "j-2-"}, Reason: newPods,
				Interim: status().StartTime(t0).Active(3).Obj()},
		},
		"only the pending indexes get Pods": {
			job:  job("j").Indexed(4).Status(status().StartTime(hourAgo).CompletedIndexes("1").Succeeded(1).Active(1)),
			pods: []*podFx{pod("a").Index(2).Running()},
			want: syncResult{Action: created, Create: []string{"j-0-", "j-3-"}, Reason: newPods,
				Interim: status().StartTime(hourAgo).CompletedIndexes("1").Succeeded(1).Active(3).Obj()},
		},
		"parallelism takes the lowest pending indexes": {
			job:  job("j").Indexed(5).Parallelism(2),
			pods: []*podFx{pod("a").Index(0).Running()},
			want: syncResult{Action: created, Create: []string{"j-1-"}, Reason: newPods,
				Interim: status().StartTime(t0).Active(2).Obj()},
		},
		"a succeeded index goes to completedIndexes": {
			job:  job("j").Indexed(3).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Succeeded(t0), pod("b").Index(1).Running(), pod("c").Index(2).Running()},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Active(2).CompletedIndexes("0").Succeeded(1).Obj(),
				Release: []string{"a"},
			},
		},
		"completedIndexes are written in ascending order": {
			job:  job("j").Indexed(4).Status(status().StartTime(hourAgo).CompletedIndexes("1").Succeeded(1).Active(3)),
			pods: []*podFx{pod("d").Index(3).Succeeded(t0), pod("a").Index(0).Succeeded(t0), pod("c").Index(2).Running()},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Active(1).CompletedIndexes("0,1,3").Succeeded(3).Obj(),
				Release: []string{"a", "d"},
			},
		},
		"two successes of one index count once": {
			job:  job("j").Indexed(2).Status(status().StartTime(hourAgo).Active(1)),
			pods: []*podFx{pod("a").Index(0).Succeeded(t0), pod("b").Index(0).Succeeded(t0), pod("c").Index(1).Running()},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Active(1).CompletedIndexes("0").Succeeded(1).Obj(),
				Release: []string{"a", "b"},
			},
		},
		"all indexes succeeded: the Job completes": {
			job:  job("j").Indexed(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Succeeded(t0), pod("b").Index(1).Succeeded(t0)},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).CompletedIndexes("0,1").Succeeded(2).Condition(reachedSCM()).Obj(),
				Release: []string{"a", "b"},
				Final:   status().StartTime(hourAgo).CompletedIndexes("0,1").Succeeded(2).Condition(reachedSCM()).Condition(reachedComplete()).CompletionTime(t0).Obj(),
				Events:  []string{completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"a failed index gets a new Pod once the backoff is over": {
			job:  job("j").Indexed(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Failed(t0).EndedAt(at(-20 * time.Second)), pod("b").Index(1).Running()},
			want: syncResult{Action: created, Create: []string{"j-0-"}, Reason: replacement, Failures: FailureRecord{1, ago(20 * time.Second)},
				Interim: status().StartTime(hourAgo).Active(2).Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Active(2).Failed(1).Obj(),
			},
		},
		"a duplicated index: the less advanced Pod is deleted": {
			job:  job("j").Indexed(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).ReadySince(at(-time.Minute)), pod("b").Index(0), pod("c").Index(1).Running()},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer"},
				Interim: status().StartTime(hourAgo).Active(2).Ready(1).Terminating(1).Obj()},
		},
		"a Pod without a valid index is deleted": {
			job:  job("j").Indexed(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Running(), pod("b").Running(), pod("c").Index(1).Running()},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer"},
				Interim: status().StartTime(hourAgo).Active(2).Terminating(1).Obj()},
		},
		"elastic scale down: the Pods of indexes out of range are deleted": {
			job:  job("j").Indexed(3).Completions(2).Parallelism(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Running(), pod("b").Index(1).Running(), pod("c").Index(2).ReadySince(at(-time.Minute))},
			want: syncResult{Action: deleted, Delete: []string{"c Excess -finalizer"},
				Interim: status().StartTime(hourAgo).Active(2).Terminating(1).Obj()},
		},
		"elastic scale down: out-of-range successes and failures are ignored": {
			job:  job("j").Indexed(3).Completions(2).Parallelism(2).Status(status().StartTime(hourAgo).CompletedIndexes("0,2").Succeeded(2).Active(1)),
			pods: []*podFx{pod("b").Index(1).Running(), pod("c").Index(2).Succeeded(t0), pod("d").Index(3).Failed(t0)},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Active(1).CompletedIndexes("0").Succeeded(1).Obj(),
				Release: []string{"c", "d"},
			},
		},
		"a successPolicy met ends the Job early and deletes the rest": {
			job:  job("j").Indexed(3).SuccessPolicy(succeededIndexes("0")).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Succeeded(t0), pod("b").Index(1).Running(), pod("c").Index(2).Running()},
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing", "c Finishing"},
				Interim: status().StartTime(hourAgo).Terminating(2).CompletedIndexes("0").Succeeded(1).
					Condition(cond(batchv1.JobSuccessCriteriaMet, "SuccessPolicy", successPolicyMsg0)).Obj(),
				Release: []string{"a", "b", "c"},
			},
		},
		"a successPolicy met and nothing running: Complete with the policy's reason": {
			job:  job("j").Indexed(3).SuccessPolicy(succeededCount(1)).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(1).Succeeded(t0)},
			want: syncResult{Action: reconciling,
				Interim: status().StartTime(hourAgo).CompletedIndexes("1").Succeeded(1).
					Condition(cond(batchv1.JobSuccessCriteriaMet, "SuccessPolicy", successPolicyMsg0)).Obj(),
				Release: []string{"a"},
				Final: status().StartTime(hourAgo).CompletedIndexes("1").Succeeded(1).
					Condition(cond(batchv1.JobSuccessCriteriaMet, "SuccessPolicy", successPolicyMsg0)).
					Condition(cond(batchv1.JobComplete, "SuccessPolicy", successPolicyMsg0)).CompletionTime(t0).Obj(),
				Events: []string{completedEvent}, Finished: "Complete SuccessPolicy",
			},
		},
		"a successPolicy not met: the Job runs on": {
			job:  job("j").Indexed(3).SuccessPolicy(succeededIndexes("0,1")).Status(status().StartTime(hourAgo).Active(2)),
			pods: []*podFx{pod("a").Index(0).Succeeded(t0), pod("b").Index(1).Running(), pod("c").Index(2).Running()},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Active(2).CompletedIndexes("0").Succeeded(1).Obj(),
				Release: []string{"a"},
			},
		},
		"backoffLimitPerIndex: an index out of budget fails; with all others done the Job fails": {
			job:  job("j").Indexed(2).BackoffLimitPerIndex(0).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Failed(t0), pod("b").Index(1).Succeeded(t0)},
			want: syncResult{Action: reconciling,
				Interim: status().StartTime(hourAgo).CompletedIndexes("1").Succeeded(1).FailedIndexes("0").Uncounted(nil, []types.UID{"a"}).
					Condition(cond(batchv1.JobFailureTarget, "FailedIndexes", failedIndexesMsg)).Obj(),
				Release: []string{"a", "b"},
				Final: status().StartTime(hourAgo).CompletedIndexes("1").Succeeded(1).FailedIndexes("0").Failed(1).
					Condition(cond(batchv1.JobFailureTarget, "FailedIndexes", failedIndexesMsg)).
					Condition(cond(batchv1.JobFailed, "FailedIndexes", failedIndexesMsg)).Obj(),
				Events: []string{failedIndexesEvent}, Finished: "Failed FailedIndexes",
			},
		},
		"backoffLimitPerIndex: the failed Pod is held until its replacement exists": {
			job:  job("j").Indexed(2).BackoffLimitPerIndex(1).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Failed(t0).EndedAt(at(-20 * time.Second)), pod("b").Index(1).Running()},
			want: syncResult{Action: created, Create: []string{"j-0- failures=1"}, Reason: replacement,
				Failures: FailureRecord{1, ago(20 * time.Second)},
				Interim:  status().StartTime(hourAgo).Active(2).FailedIndexes("").Obj(),
			},
		},
		"backoffLimitPerIndex: the replacement waits for the index's backoff": {
			job:  job("j").Indexed(2).BackoffLimitPerIndex(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Failed(t0).IndexFailureCount(1).EndedAt(at(-5 * time.Second)), pod("b").Index(1).Running()},
			want: syncResult{Action: created, Requeue: 15 * time.Second, Failures: FailureRecord{1, ago(5 * time.Second)},
				Interim: status().StartTime(hourAgo).Active(1).FailedIndexes("").Obj(),
			},
		},
		"backoffLimitPerIndex: the global record does not delay": {
			job:      job("j").Indexed(2).BackoffLimitPerIndex(1).Status(status().StartTime(hourAgo).Active(1).FailedIndexes("")),
			failures: FailureRecord{5, t0p},
			pods:     []*podFx{pod("b").Index(1).Running()},
			want: syncResult{Action: created, Create: []string{"j-0- failures=0"}, Reason: newPods, Failures: FailureRecord{5, t0p},
				Interim: status().StartTime(hourAgo).Active(2).FailedIndexes("").Obj(),
			},
		},
		"backoffLimitPerIndex: the replacement of the held Pod lets it go in the next sync": {
			job:  job("j").Indexed(2).BackoffLimitPerIndex(1).Status(status().StartTime(hourAgo).Active(2).FailedIndexes("")),
			pods: []*podFx{pod("a").Index(0).Failed(t0).EndedAt(at(-time.Minute)), pod("a2").Index(0).IndexFailureCount(1).Running(), pod("b").Index(1).Running()},
			want: syncResult{Action: tracking, Failures: FailureRecord{1, ago(time.Minute)},
				Interim: status().StartTime(hourAgo).Active(2).FailedIndexes("").Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Active(2).FailedIndexes("").Failed(1).Obj(),
			},
		},
		"backoffLimitPerIndex in a terminating namespace: no Pod is held": {
			job:           job("j").Indexed(2).BackoffLimitPerIndex(1).StartTime(hourAgo),
			pods:          []*podFx{pod("a").Index(0).Failed(t0).EndedAt(at(-20 * time.Second)), pod("b").Index(1).Running()},
			nsTerminating: true,
			want: syncResult{Action: created, Create: []string{"j-0- failures=0"}, Reason: replacement,
				Failures: FailureRecord{1, ago(20 * time.Second)},
				Interim:  status().StartTime(hourAgo).Active(2).FailedIndexes("").Uncounted(nil, []types.UID{"a"}).Obj(),
				Release:  []string{"a"},
				Final:    status().StartTime(hourAgo).Active(2).FailedIndexes("").Failed(1).Obj(),
			},
		},
		"maxFailedIndexes exceeded fails the Job and deletes the running Pods": {
			job:  job("j").Indexed(3).BackoffLimitPerIndex(0).MaxFailedIndexes(0).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Failed(t0), pod("b").Index(1).Running(), pod("c").Index(2).Running()},
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing", "c Finishing"}, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Terminating(2).FailedIndexes("0").Uncounted(nil, []types.UID{"a", "b", "c"}).
					Condition(cond(batchv1.JobFailureTarget, "MaxFailedIndexesExceeded", maxFailedIdxMsg)).Obj(),
				Release: []string{"a", "b", "c"},
				Final: status().StartTime(hourAgo).Terminating(2).FailedIndexes("0").Failed(3).
					Condition(cond(batchv1.JobFailureTarget, "MaxFailedIndexesExceeded", maxFailedIdxMsg)).Obj(),
			},
		},
		"maxFailedIndexes reached, not exceeded: the Job runs on": {
			job:  job("j").Indexed(3).BackoffLimitPerIndex(0).MaxFailedIndexes(1).Status(status().StartTime(hourAgo).Active(2).FailedIndexes("")),
			pods: []*podFx{pod("a").Index(0).Failed(t0), pod("b").Index(1).Running(), pod("c").Index(2).Running()},
			want: syncResult{Action: created, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Active(2).FailedIndexes("0").Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Active(2).FailedIndexes("0").Failed(1).Obj(),
			},
		},
		"a FailIndex rule fails the index at once": {
			job:  job("j").Indexed(2).BackoffLimitPerIndex(3).PodFailurePolicy(failIndexRule).Status(status().StartTime(hourAgo).Active(1).FailedIndexes("")),
			pods: []*podFx{pod("a").Index(0).Failed(t0).ExitCode("main", 3, t0), pod("b").Index(1).Running()},
			want: syncResult{Action: created, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Active(1).FailedIndexes("0").Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{failIndex: 1},
				Final:   status().StartTime(hourAgo).Active(1).FailedIndexes("0").Failed(1).Obj(),
			},
		},
	})
}
