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

	corev1 "k8s.io/api/core/v1"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// TestDecideInterplay has the rows where policies meet: which end wins,
// how suspension, deadlines, backoff and the finalizer protocol combine.
func TestDecideInterplay(t *testing.T) {
	deadlineFT := cond(batchv1.JobFailureTarget, "DeadlineExceeded", deadlineMsg)
	failedIdxFT := cond(batchv1.JobFailureTarget, "FailedIndexes", failedIndexesMsg)
	failedIdxFailed := cond(batchv1.JobFailed, "FailedIndexes", failedIndexesMsg)
	disruptionMsg := "Pod ns/a has condition DisruptionTarget matching FailJob rule at index 0"
	initMsg := "Container init for pod ns/a failed with exit code 5 matching FailJob rule at index 0"
	bMsg := "Container main for pod ns/b failed with exit code 42 matching FailJob rule at index 0"
	pfpFT := func(msg string) batchv1.JobCondition { return cond(batchv1.JobFailureTarget, "PodFailurePolicy", msg) }
	pfpFailed := func(msg string) batchv1.JobCondition { return cond(batchv1.JobFailed, "PodFailurePolicy", msg) }
	resumed := condAt(batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", t0)

	runRows(t, map[string]syncRow{
		"a FailJob wins over the backoffLimit": {
			job:  job("j").backoffLimit(0).failurePolicy(onExit(failJob, in, 42)).started(hourAgo),
			pods: []*podFx{pod("a").failed().exit("main", 42)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).uncounted(nil, []string{"a"}).cond(pfpFT(exit42FailJobMsg)).obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{failJob: 1},
				Final:   status().start(hourAgo).failed(1).cond(pfpFT(exit42FailJobMsg)).cond(pfpFailed(exit42FailJobMsg)).obj(),
				Events:  []string{"Warning PodFailurePolicy: " + exit42FailJobMsg}, Finished: "Failed PodFailurePolicy",
			},
		},
		"a FailJob on a Pod condition names the condition": {
			job:  job("j").failurePolicy(onCond(failJob, corev1.DisruptionTarget, corev1.ConditionTrue)).started(hourAgo),
			pods: []*podFx{pod("a").failed().disrupted()},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).uncounted(nil, []string{"a"}).cond(pfpFT(disruptionMsg)).obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{failJob: 1},
				Final:   status().start(hourAgo).failed(1).cond(pfpFT(disruptionMsg)).cond(pfpFailed(disruptionMsg)).obj(),
				Events:  []string{"Warning PodFailurePolicy: " + disruptionMsg}, Finished: "Failed PodFailurePolicy",
			},
		},
		"a FailJob on an init container": {
			job:  job("j").failurePolicy(onExitOf("init", failJob, in, 5)).started(hourAgo),
			pods: []*podFx{pod("a").failed().initExit("init", 5)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).uncounted(nil, []string{"a"}).cond(pfpFT(initMsg)).obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{failJob: 1},
				Final:   status().start(hourAgo).failed(1).cond(pfpFT(initMsg)).cond(pfpFailed(initMsg)).obj(),
				Events:  []string{"Warning PodFailurePolicy: " + initMsg}, Finished: "Failed PodFailurePolicy",
			},
		},
		"a FailJob Pod counted before still fails the Job": {
			job:  job("j").failurePolicy(onExit(failJob, in, 42)).status(status().start(hourAgo).failed(1)),
			pods: []*podFx{pod("a").failed().exit("main", 42).untracked()},
			want: syncResult{Action: reconciling,
				Interim: status().start(hourAgo).failed(1).cond(pfpFT(exit42FailJobMsg)).obj(),
				Final:   status().start(hourAgo).failed(1).cond(pfpFT(exit42FailJobMsg)).cond(pfpFailed(exit42FailJobMsg)).obj(),
				Events:  []string{"Warning PodFailurePolicy: " + exit42FailJobMsg}, Finished: "Failed PodFailurePolicy",
			},
		},
		"the backoffLimit wins over the deadline": {
			job:  job("j").backoffLimit(0).deadline(10).started(at(-time.Minute)),
			pods: []*podFx{pod("a").failed()},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().start(at(-time.Minute)).uncounted(nil, []string{"a"}).cond(backoffFT()).obj(),
				Release: []string{"a"},
				Final:   status().start(at(-time.Minute)).failed(1).cond(backoffFT()).cond(backoffFailed()).obj(),
				Events:  []string{backoffEvent}, Finished: "Failed BackoffLimitExceeded",
			},
		},
		"past the deadline without Pods: the Job fails at once": {
			job: job("j").deadline(10).started(at(-time.Minute)),
			want: syncResult{Action: reconciling,
				Interim: status().start(at(-time.Minute)).cond(deadlineFT).obj(),
				Final: status().start(at(-time.Minute)).cond(deadlineFT).
					cond(cond(batchv1.JobFailed, "DeadlineExceeded", deadlineMsg)).obj(),
				Events: []string{"Warning DeadlineExceeded: " + deadlineMsg}, Finished: "Failed DeadlineExceeded",
			},
		},
		"exactly at the deadline the Job fails": {
			job: job("j").deadline(60).started(at(-time.Minute)),
			want: syncResult{Action: reconciling,
				Interim: status().start(at(-time.Minute)).cond(deadlineFT).obj(),
				Final: status().start(at(-time.Minute)).cond(deadlineFT).
					cond(cond(batchv1.JobFailed, "DeadlineExceeded", deadlineMsg)).obj(),
				Events: []string{"Warning DeadlineExceeded: " + deadlineMsg}, Finished: "Failed DeadlineExceeded",
			},
		},
		"a second before the deadline: a sync a second later": {
			job: job("j").deadline(60).started(at(-59 * time.Second)),
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods, Requeue: time.Second,
				Interim: status().start(at(-59 * time.Second)).active(1).obj()},
		},
		"the deadline and the backoff: the earlier sync is asked for": {
			job:  job("j").deadline(60).started(at(-55 * time.Second)),
			pods: []*podFx{pod("a").failed()},
			want: syncResult{Action: created, Requeue: 5 * time.Second, Failures: FailureRecord{1, t0p},
				Interim: status().start(at(-55*time.Second)).uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Final:   status().start(at(-55 * time.Second)).failed(1).obj(),
			},
		},
		"a suspended Job's deadline does not run": {
			job:  job("j").suspend().deadline(10).status(status().start(hourAgo).cond(suspendedCond(hourAgo))),
			want: syncResult{Action: deleted},
		},
		"a resumed Job's deadline counts from the resumption": {
			job: job("j").deadline(10).status(bare().cond(suspendedCond(hourAgo))),
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods, Requeue: 10 * time.Second,
				Events:  []string{resumedEvent},
				Interim: status().start(t0).active(1).cond(resumed).obj(),
			},
		},
		"a Suspended condition already True: Pods deleted, no Event": {
			job:  job("j").suspend().status(status().cond(suspendedCond(hourAgo)).active(1)),
			pods: []*podFx{pod("a").running()},
			want: syncResult{Action: deleted, Delete: []string{"a Suspended -finalizer"},
				Interim: status().terminating(1).cond(suspendedCond(hourAgo)).obj()},
		},
		"a failed suspension deletion keeps the Pod active; the condition changes anyway": {
			job:        job("j").suspend().started(hourAgo),
			pods:       []*podFx{pod("a").running()},
			failDelete: []string{"a"},
			want: syncResult{Action: deleted, Delete: []string{"a Suspended -finalizer"},
				Events:  []string{suspendedEvent},
				Interim: status().active(1).cond(suspendedCond(t0)).obj(),
			},
		},
		"unmet expectations: a suspended Job's Pods run on and its condition waits": {
			job:               job("j").suspend(),
			pods:              []*podFx{pod("a").running()},
			expectationsUnmet: true,
			want:              syncResult{Action: reconciling, Interim: status().active(1).obj()},
		},
		"a ready Pod deleted on finishing is no longer ready": {
			job:  job("j").backoffLimit(0).parallelism(2).status(status().start(hourAgo).active(1).ready(1)),
			pods: []*podFx{pod("a").failed(), pod("b").ready()},
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing"}, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).terminating(1).uncounted(nil, []string{"a", "b"}).cond(backoffFT()).obj(),
				Release: []string{"a", "b"},
				Final:   status().start(hourAgo).terminating(1).failed(2).cond(backoffFT()).obj(),
			},
		},
		"a ready Pod found gone on scale down stays in the ready count until the next sync": {
			job:      job("j").started(hourAgo),
			pods:     []*podFx{pod("a").ready(), pod("b").readySince(at(-time.Second))},
			notFound: []string{"b"},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer"},
				Interim: status().start(hourAgo).active(1).ready(2).terminating(1).obj()},
		},
		"a ready Pod found gone on finishing leaves the ready count": {
			job:      job("j").backoffLimit(0).parallelism(2).status(status().start(hourAgo).active(1).ready(1)),
			pods:     []*podFx{pod("a").failed(), pod("b").ready()},
			notFound: []string{"b"},
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing"}, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).terminating(1).uncounted(nil, []string{"a", "b"}).cond(backoffFT()).obj(),
				Release: []string{"a", "b"},
				Final:   status().start(hourAgo).terminating(1).failed(2).cond(backoffFT()).obj(),
			},
		},
		"unmet expectations: the Pods of an ending Job are deleted all the same": {
			job:               job("j").backoffLimit(0).parallelism(2).started(hourAgo),
			pods:              []*podFx{pod("a").failed(), pod("b").running()},
			expectationsUnmet: true,
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing"}, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).terminating(1).uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).terminating(1).failed(1).obj(),
			},
		},
		"a terminating Pod holds the Job's Failed condition back": {
			job:  job("j").status(status().start(hourAgo).cond(backoffFT())),
			pods: []*podFx{pod("a").running().deleted()},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).terminating(1).uncounted(nil, []string{"a"}).cond(backoffFT()).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).terminating(1).failed(1).cond(backoffFT()).obj(),
			},
		},
		"a terminating Pod holds the Job's Complete condition back": {
			job:  job("j").replaceFailedOnly().status(status().start(hourAgo).succeeded(1).cond(reachedSCM())),
			pods: []*podFx{pod("a").running().deleted()},
			want: syncResult{Action: reconciling,
				Interim: status().start(hourAgo).succeeded(1).terminating(1).cond(reachedSCM()).obj(),
				Release: []string{"a"},
			},
		},
		"enough successes with a Pod still running: the surplus is deleted and the Job ends once it is gone": {
			job:  job("j").parallelism(2).started(hourAgo),
			pods: []*podFx{pod("a").succeeded(), pod("b").running()},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer"},
				Interim: status().start(hourAgo).terminating(1).uncounted([]string{"a"}, nil).cond(reachedSCM()).obj(),
				Release: []string{"a", "b"},
				Final:   status().start(hourAgo).terminating(1).succeeded(1).cond(reachedSCM()).obj(),
			},
		},
		"successes below completions with parallelism left: no Pod beyond what is missing": {
			job:  job("j").completions(2).parallelism(2).started(hourAgo),
			pods: []*podFx{pod("a").succeeded(), pod("b").running()},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).active(1).uncounted([]string{"a"}, nil).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).active(1).succeeded(1).obj(),
			},
		},
		"a Pod listed as failed stays failed though it succeeded": {
			job:  job("j").status(status().start(hourAgo).uncounted(nil, []string{"a"})),
			pods: []*podFx{pod("a").succeeded()},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).uncounted(nil, []string{"a"}).cond(reachedSCM()).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).failed(1).cond(reachedSCM()).cond(reachedComplete()).done(t0).obj(),
				Events:  []string{completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"a Pod that lost its finalizer while uncounted is counted": {
			job:  job("j").status(status().start(hourAgo).uncounted(nil, []string{"a"})),
			pods: []*podFx{pod("a").failed().untracked()},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: replacement,
				Interim: status().start(hourAgo).active(1).failed(1).obj()},
		},
		"a Job being deleted counts its failed Pods and lets every finalizer go": {
			job:  job("j").deleting().parallelism(2).started(hourAgo),
			pods: []*podFx{pod("a").failed(), pod("b").running()},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).active(1).uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a", "b"},
				Final:   status().start(hourAgo).active(1).failed(1).obj(),
			},
		},
		"a failure after the last success is all the record keeps": {
			job:      job("j").completions(3).started(hourAgo),
			failures: FailureRecord{3, ago(time.Minute)},
			pods:     []*podFx{pod("a").succeeded().endedAt(at(-30 * time.Second)), pod("b").failed().endedAt(at(-10 * time.Second))},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: replacement, Failures: FailureRecord{1, ago(10 * time.Second)},
				Interim: status().start(hourAgo).active(1).uncounted([]string{"a"}, []string{"b"}).obj(),
				Release: []string{"a", "b"},
				Final:   status().start(hourAgo).active(1).succeeded(1).failed(1).obj(),
			},
		},
		"failures before the last success are forgotten": {
			job:      job("j").completions(3).started(hourAgo),
			failures: FailureRecord{3, ago(time.Minute)},
			pods:     []*podFx{pod("a").failed().endedAt(at(-30 * time.Second)), pod("b").succeeded().endedAt(at(-10 * time.Second))},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: replacement,
				Interim: status().start(hourAgo).active(1).uncounted([]string{"b"}, []string{"a"}).obj(),
				Release: []string{"a", "b"},
				Final:   status().start(hourAgo).active(1).succeeded(1).failed(1).obj(),
			},
		},
		"the backoff doubles with each failure": {
			job:      job("j").started(hourAgo),
			failures: FailureRecord{3, ago(30 * time.Second)},
			want: syncResult{Action: created, Requeue: 10 * time.Second, Failures: FailureRecord{3, ago(30 * time.Second)},
				Interim: status().start(hourAgo).obj()},
		},
		"the backoff is capped by MaxPodBackoff": {
			job:      job("j").started(hourAgo),
			failures: FailureRecord{5, ago(10 * time.Second)},
			opts:     Options{MaxPodBackoff: 30 * time.Second},
			want: syncResult{Action: created, Requeue: 20 * time.Second, Failures: FailureRecord{5, ago(10 * time.Second)},
				Interim: status().start(hourAgo).obj()},
		},
		"a namespace terminating changes nothing for a Job without backoffLimitPerIndex": {
			job:           job("j").started(hourAgo),
			nsTerminating: true,
			want:          syncResult{Action: created, Create: []string{"j-"}, Reason: newPods, Interim: status().start(hourAgo).active(1).obj()},
		},
		"every creation refused: nothing active": {
			job:     job("j").indexed(2),
			created: intp(0),
			want:    syncResult{Action: created, Create: []string{"j-0-", "j-1-"}, Reason: newPods, Interim: status().start(t0).obj()},
		},
		"indexed, podReplacementPolicy Failed: a terminating Pod holds its index": {
			job:  job("j").indexed(2).replaceFailedOnly().started(hourAgo),
			pods: []*podFx{pod("a").index(0).running().deleted(), pod("b").index(1).running()},
			want: syncResult{Action: tracking, Interim: status().start(hourAgo).active(1).terminating(1).obj()},
		},
		"indexed, TerminatingOrFailed: a terminating Pod's index is replaced after the backoff": {
			job:  job("j").indexed(2).started(hourAgo),
			pods: []*podFx{pod("a").index(0).running().deleted(), pod("b").index(1).running()},
			want: syncResult{Action: created, Requeue: 10 * time.Second, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).active(1).terminating(1).uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).active(1).terminating(1).failed(1).obj(),
			},
		},
		"indexed: MaxUncountedPods caps the Pods released, not the indexes found": {
			job:  job("j").indexed(3).started(hourAgo),
			pods: []*podFx{pod("a").index(0).succeeded(), pod("b").index(1).succeeded(), pod("c").index(2).succeeded()},
			opts: Options{MaxUncountedPods: 2},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).completed("0-2").succeeded(3).cond(reachedSCM()).obj(),
				Release: []string{"a", "b"},
			},
		},
		"indexed: a Pod whose finalizer removal is in flight still marks its index": {
			job:      job("j").indexed(2).started(hourAgo),
			pods:     []*podFx{pod("a").index(0).succeeded(), pod("b").index(1).running()},
			inFlight: []string{"a"},
			want:     syncResult{Action: tracking, Interim: status().start(hourAgo).active(1).completed("0").succeeded(1).obj()},
		},
		"failed indexes win over the successPolicy": {
			job:  job("j").indexed(3).backoffLimitPerIndex(0).successPolicy(succeededIndexes("0")).started(hourAgo),
			pods: []*podFx{pod("a").index(0).succeeded(), pod("b").index(1).failed().endedAt(at(-time.Minute)), pod("c").index(2).succeeded()},
			want: syncResult{Action: reconciling,
				Interim: status().start(hourAgo).completed("0,2").succeeded(2).failedIdx("1").uncounted(nil, []string{"b"}).cond(failedIdxFT).obj(),
				Release: []string{"a", "b", "c"},
				Final:   status().start(hourAgo).completed("0,2").succeeded(2).failedIdx("1").failed(1).cond(failedIdxFT).cond(failedIdxFailed).obj(),
				Events:  []string{failedIndexesEvent}, Finished: "Failed FailedIndexes",
			},
		},
		"a FailJob wins over the successPolicy": {
			job:  job("j").indexed(2).failurePolicy(onExit(failJob, in, 42)).successPolicy(succeededIndexes("0")).started(hourAgo),
			pods: []*podFx{pod("a").index(0).succeeded(), pod("b").index(1).failed().exit("main", 42)},
			want: syncResult{Action: reconciling,
				Interim: status().start(hourAgo).completed("0").succeeded(1).uncounted(nil, []string{"b"}).cond(pfpFT(bMsg)).obj(),
				Release: []string{"a", "b"},
				Actions: map[batchv1.PodFailurePolicyAction]int{failJob: 1},
				Final:   status().start(hourAgo).completed("0").succeeded(1).failed(1).cond(pfpFT(bMsg)).cond(pfpFailed(bMsg)).obj(),
				Events:  []string{"Warning PodFailurePolicy: " + bMsg}, Finished: "Failed PodFailurePolicy",
			},
		},
		"an ignored failure of an index passes on as an ignored count": {
			job: job("j").indexed(2).backoffLimitPerIndex(1).failurePolicy(onCond(ignore, corev1.DisruptionTarget, corev1.ConditionTrue)).
				started(hourAgo),
			pods: []*podFx{pod("a").index(0).failed().disrupted().endedAt(at(-20 * time.Second)), pod("b").index(1).running()},
			want: syncResult{Action: created, Create: []string{"j-0- failures=0 ignored=1"}, Reason: newPods,
				Failures: FailureRecord{1, ago(20 * time.Second)},
				Interim:  status().start(hourAgo).active(2).failedIdx("").obj(),
			},
		},
		"of two failed Pods of an index, the one with more failures is held": {
			job: job("j").indexed(1).backoffLimitPerIndex(3).started(hourAgo),
			pods: []*podFx{pod("a").index(0).failures(1).failed().endedAt(at(-2 * time.Minute)),
				pod("b").index(0).failed().endedAt(at(-time.Minute))},
			want: syncResult{Action: created, Create: []string{"j-0- failures=2"}, Reason: replacement,
				Failures: FailureRecord{2, ago(time.Minute)},
				Interim:  status().start(hourAgo).active(1).failedIdx("").uncounted(nil, []string{"b"}).obj(),
				Release:  []string{"b"},
				Final:    status().start(hourAgo).active(1).failedIdx("").failed(1).obj(),
			},
		},
		"maxFailedIndexes wins over the successPolicy": {
			job: job("j").indexed(3).backoffLimitPerIndex(0).maxFailedIndexes(0).successPolicy(succeededCount(1)).started(hourAgo),
			pods: []*podFx{pod("a").index(0).succeeded(), pod("b").index(1).failed().endedAt(at(-time.Minute)),
				pod("c").index(2).running()},
			want: syncResult{Action: reconciling, Delete: []string{"c Finishing"},
				Interim: status().start(hourAgo).terminating(1).completed("0").succeeded(1).failedIdx("1").uncounted(nil, []string{"b", "c"}).
					cond(cond(batchv1.JobFailureTarget, "MaxFailedIndexesExceeded", maxFailedIdxMsg)).obj(),
				Release: []string{"a", "b", "c"},
				Final: status().start(hourAgo).terminating(1).completed("0").succeeded(1).failedIdx("1").failed(2).
					cond(cond(batchv1.JobFailureTarget, "MaxFailedIndexesExceeded", maxFailedIdxMsg)).obj(),
			},
		},
		"a FailureTarget whose Failed write fails a removal: counted, not finished": {
			job:         job("j").parallelism(2).status(status().start(hourAgo).cond(backoffFT())),
			pods:        []*podFx{pod("a").failed(), pod("b").failed()},
			failRemoval: []string{"b"},
			want: syncResult{Action: reconciling, Failures: FailureRecord{2, t0p},
				Interim: status().start(hourAgo).uncounted(nil, []string{"a", "b"}).cond(backoffFT()).obj(),
				Release: []string{"a", "b"},
				Final:   status().start(hourAgo).failed(1).uncounted(nil, []string{"b"}).cond(backoffFT()).obj(),
			},
		},
	})
}
