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

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestDecideIndexed(t *testing.T) {
	failIndexRule := onExit(failIndex, in, 3)
	runRows(t, map[string]syncRow{
		"a new Indexed Job creates one Pod per index": {
			job: job("j").indexed(3),
			want: syncResult{Action: created, Create: []string{"j-0-", "j-1-", "j-2-"}, Reason: newPods,
				Interim: status().start(t0).active(3).obj()},
		},
		"only the pending indexes get Pods": {
			job:  job("j").indexed(4).status(status().start(hourAgo).completed("1").succeeded(1).active(1)),
			pods: []*podFx{pod("a").index(2).running()},
			want: syncResult{Action: created, Create: []string{"j-0-", "j-3-"}, Reason: newPods,
				Interim: status().start(hourAgo).completed("1").succeeded(1).active(3).obj()},
		},
		"parallelism takes the lowest pending indexes": {
			job:  job("j").indexed(5).parallelism(2),
			pods: []*podFx{pod("a").index(0).running()},
			want: syncResult{Action: created, Create: []string{"j-1-"}, Reason: newPods,
				Interim: status().start(t0).active(2).obj()},
		},
		"a succeeded index goes to completedIndexes": {
			job:  job("j").indexed(3).started(hourAgo),
			pods: []*podFx{pod("a").index(0).succeeded(), pod("b").index(1).running(), pod("c").index(2).running()},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).active(2).completed("0").succeeded(1).obj(),
				Release: []string{"a"},
			},
		},
		"completedIndexes are written in ascending order": {
			job:  job("j").indexed(4).status(status().start(hourAgo).completed("1").succeeded(1).active(3)),
			pods: []*podFx{pod("d").index(3).succeeded(), pod("a").index(0).succeeded(), pod("c").index(2).running()},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).active(1).completed("0,1,3").succeeded(3).obj(),
				Release: []string{"a", "d"},
			},
		},
		"two successes of one index count once": {
			job:  job("j").indexed(2).status(status().start(hourAgo).active(1)),
			pods: []*podFx{pod("a").index(0).succeeded(), pod("b").index(0).succeeded(), pod("c").index(1).running()},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).active(1).completed("0").succeeded(1).obj(),
				Release: []string{"a", "b"},
			},
		},
		"all indexes succeeded: the Job completes": {
			job:  job("j").indexed(2).started(hourAgo),
			pods: []*podFx{pod("a").index(0).succeeded(), pod("b").index(1).succeeded()},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).completed("0,1").succeeded(2).cond(reachedSCM()).obj(),
				Release: []string{"a", "b"},
				Final:   status().start(hourAgo).completed("0,1").succeeded(2).cond(reachedSCM()).cond(reachedComplete()).done(t0).obj(),
				Events:  []string{completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"a failed index gets a new Pod once the backoff is over": {
			job:  job("j").indexed(2).started(hourAgo),
			pods: []*podFx{pod("a").index(0).failed().endedAt(at(-20 * time.Second)), pod("b").index(1).running()},
			want: syncResult{Action: created, Create: []string{"j-0-"}, Reason: replacement, Failures: FailureRecord{1, ago(20 * time.Second)},
				Interim: status().start(hourAgo).active(2).uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).active(2).failed(1).obj(),
			},
		},
		"a duplicated index: the less advanced Pod is deleted": {
			job:  job("j").indexed(2).started(hourAgo),
			pods: []*podFx{pod("a").index(0).ready(), pod("b").index(0), pod("c").index(1).running()},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer"},
				Interim: status().start(hourAgo).active(2).ready(1).terminating(1).obj()},
		},
		"a Pod without a valid index is deleted": {
			job:  job("j").indexed(2).started(hourAgo),
			pods: []*podFx{pod("a").index(0).running(), pod("b").running(), pod("c").index(1).running()},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer"},
				Interim: status().start(hourAgo).active(2).terminating(1).obj()},
		},
		"elastic scale down: the Pods of indexes out of range are deleted": {
			job:  job("j").indexed(3).completions(2).parallelism(2).started(hourAgo),
			pods: []*podFx{pod("a").index(0).running(), pod("b").index(1).running(), pod("c").index(2).ready()},
			want: syncResult{Action: deleted, Delete: []string{"c Excess -finalizer"},
				Interim: status().start(hourAgo).active(2).terminating(1).obj()},
		},
		"elastic scale down: out-of-range successes and failures are ignored": {
			job:  job("j").indexed(3).completions(2).parallelism(2).status(status().start(hourAgo).completed("0,2").succeeded(2).active(1)),
			pods: []*podFx{pod("b").index(1).running(), pod("c").index(2).succeeded(), pod("d").index(3).failed()},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).active(1).completed("0").succeeded(1).obj(),
				Release: []string{"c", "d"},
			},
		},
		"a successPolicy met ends the Job early and deletes the rest": {
			job:  job("j").indexed(3).successPolicy(succeededIndexes("0")).started(hourAgo),
			pods: []*podFx{pod("a").index(0).succeeded(), pod("b").index(1).running(), pod("c").index(2).running()},
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing", "c Finishing"},
				Interim: status().start(hourAgo).terminating(2).completed("0").succeeded(1).
					cond(cond(batchv1.JobSuccessCriteriaMet, "SuccessPolicy", successPolicyMsg0)).obj(),
				Release: []string{"a", "b", "c"},
			},
		},
		"a successPolicy met and nothing running: Complete with the policy's reason": {
			job:  job("j").indexed(3).successPolicy(succeededCount(1)).started(hourAgo),
			pods: []*podFx{pod("a").index(1).succeeded()},
			want: syncResult{Action: reconciling,
				Interim: status().start(hourAgo).completed("1").succeeded(1).
					cond(cond(batchv1.JobSuccessCriteriaMet, "SuccessPolicy", successPolicyMsg0)).obj(),
				Release: []string{"a"},
				Final: status().start(hourAgo).completed("1").succeeded(1).
					cond(cond(batchv1.JobSuccessCriteriaMet, "SuccessPolicy", successPolicyMsg0)).
					cond(cond(batchv1.JobComplete, "SuccessPolicy", successPolicyMsg0)).done(t0).obj(),
				Events: []string{completedEvent}, Finished: "Complete SuccessPolicy",
			},
		},
		"a successPolicy not met: the Job runs on": {
			job:  job("j").indexed(3).successPolicy(succeededIndexes("0,1")).status(status().start(hourAgo).active(2)),
			pods: []*podFx{pod("a").index(0).succeeded(), pod("b").index(1).running(), pod("c").index(2).running()},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).active(2).completed("0").succeeded(1).obj(),
				Release: []string{"a"},
			},
		},
		"backoffLimitPerIndex: an index out of budget fails; with all others done the Job fails": {
			job:  job("j").indexed(2).backoffLimitPerIndex(0).started(hourAgo),
			pods: []*podFx{pod("a").index(0).failed(), pod("b").index(1).succeeded()},
			want: syncResult{Action: reconciling,
				Interim: status().start(hourAgo).completed("1").succeeded(1).failedIdx("0").uncounted(nil, []string{"a"}).
					cond(cond(batchv1.JobFailureTarget, "FailedIndexes", failedIndexesMsg)).obj(),
				Release: []string{"a", "b"},
				Final: status().start(hourAgo).completed("1").succeeded(1).failedIdx("0").failed(1).
					cond(cond(batchv1.JobFailureTarget, "FailedIndexes", failedIndexesMsg)).
					cond(cond(batchv1.JobFailed, "FailedIndexes", failedIndexesMsg)).obj(),
				Events: []string{failedIndexesEvent}, Finished: "Failed FailedIndexes",
			},
		},
		"backoffLimitPerIndex: the failed Pod is held until its replacement exists": {
			job:  job("j").indexed(2).backoffLimitPerIndex(1).started(hourAgo),
			pods: []*podFx{pod("a").index(0).failed().endedAt(at(-20 * time.Second)), pod("b").index(1).running()},
			want: syncResult{Action: created, Create: []string{"j-0- failures=1"}, Reason: replacement,
				Failures: FailureRecord{1, ago(20 * time.Second)},
				Interim:  status().start(hourAgo).active(2).failedIdx("").obj(),
			},
		},
		"backoffLimitPerIndex: the replacement waits for the index's backoff": {
			job:  job("j").indexed(2).backoffLimitPerIndex(2).started(hourAgo),
			pods: []*podFx{pod("a").index(0).failed().failures(1).endedAt(at(-5 * time.Second)), pod("b").index(1).running()},
			want: syncResult{Action: created, Requeue: 15 * time.Second, Failures: FailureRecord{1, ago(5 * time.Second)},
				Interim: status().start(hourAgo).active(1).failedIdx("").obj(),
			},
		},
		"backoffLimitPerIndex: the global record does not delay": {
			job:      job("j").indexed(2).backoffLimitPerIndex(1).status(status().start(hourAgo).active(1).failedIdx("")),
			failures: FailureRecord{5, t0p},
			pods:     []*podFx{pod("b").index(1).running()},
			want: syncResult{Action: created, Create: []string{"j-0- failures=0"}, Reason: newPods, Failures: FailureRecord{5, t0p},
				Interim: status().start(hourAgo).active(2).failedIdx("").obj(),
			},
		},
		"backoffLimitPerIndex: the replacement of the held Pod lets it go in the next sync": {
			job:  job("j").indexed(2).backoffLimitPerIndex(1).status(status().start(hourAgo).active(2).failedIdx("")),
			pods: []*podFx{pod("a").index(0).failed().endedAt(at(-time.Minute)), pod("a2").index(0).failures(1).running(), pod("b").index(1).running()},
			want: syncResult{Action: tracking, Failures: FailureRecord{1, ago(time.Minute)},
				Interim: status().start(hourAgo).active(2).failedIdx("").uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).active(2).failedIdx("").failed(1).obj(),
			},
		},
		"backoffLimitPerIndex in a terminating namespace: no Pod is held": {
			job:           job("j").indexed(2).backoffLimitPerIndex(1).started(hourAgo),
			pods:          []*podFx{pod("a").index(0).failed().endedAt(at(-20 * time.Second)), pod("b").index(1).running()},
			nsTerminating: true,
			want: syncResult{Action: created, Create: []string{"j-0- failures=0"}, Reason: replacement,
				Failures: FailureRecord{1, ago(20 * time.Second)},
				Interim:  status().start(hourAgo).active(2).failedIdx("").uncounted(nil, []string{"a"}).obj(),
				Release:  []string{"a"},
				Final:    status().start(hourAgo).active(2).failedIdx("").failed(1).obj(),
			},
		},
		"maxFailedIndexes exceeded fails the Job and deletes the running Pods": {
			job:  job("j").indexed(3).backoffLimitPerIndex(0).maxFailedIndexes(0).started(hourAgo),
			pods: []*podFx{pod("a").index(0).failed(), pod("b").index(1).running(), pod("c").index(2).running()},
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing", "c Finishing"}, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).terminating(2).failedIdx("0").uncounted(nil, []string{"a", "b", "c"}).
					cond(cond(batchv1.JobFailureTarget, "MaxFailedIndexesExceeded", maxFailedIdxMsg)).obj(),
				Release: []string{"a", "b", "c"},
				Final: status().start(hourAgo).terminating(2).failedIdx("0").failed(3).
					cond(cond(batchv1.JobFailureTarget, "MaxFailedIndexesExceeded", maxFailedIdxMsg)).obj(),
			},
		},
		"maxFailedIndexes reached, not exceeded: the Job runs on": {
			job:  job("j").indexed(3).backoffLimitPerIndex(0).maxFailedIndexes(1).status(status().start(hourAgo).active(2).failedIdx("")),
			pods: []*podFx{pod("a").index(0).failed(), pod("b").index(1).running(), pod("c").index(2).running()},
			want: syncResult{Action: created, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).active(2).failedIdx("0").uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).active(2).failedIdx("0").failed(1).obj(),
			},
		},
		"a FailIndex rule fails the index at once": {
			job:  job("j").indexed(2).backoffLimitPerIndex(3).failurePolicy(failIndexRule).status(status().start(hourAgo).active(1).failedIdx("")),
			pods: []*podFx{pod("a").index(0).failed().exit("main", 3), pod("b").index(1).running()},
			want: syncResult{Action: created, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).active(1).failedIdx("0").uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{failIndex: 1},
				Final:   status().start(hourAgo).active(1).failedIdx("0").failed(1).obj(),
			},
		},
	})
}
