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
	"k8s.io/apimachinery/pkg/types"

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
			job:  job("j").BackoffLimit(0).PodFailurePolicy(onExit(failJob, in, 42)).StartTime(hourAgo),
			pods: []*podFx{pod("a").Failed(t0).ExitCode("main", 42, t0)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"}).Condition(pfpFT(exit42FailJobMsg)).Obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{failJob: 1},
				Final:   status().StartTime(hourAgo).Failed(1).Condition(pfpFT(exit42FailJobMsg)).Condition(pfpFailed(exit42FailJobMsg)).Obj(),
				Events:  []string{"Warning PodFailurePolicy: " + exit42FailJobMsg}, Finished: "Failed PodFailurePolicy",
			},
		},
		"a FailJob on a Pod condition names the condition": {
			job:  job("j").PodFailurePolicy(onCond(failJob, corev1.DisruptionTarget, corev1.ConditionTrue)).StartTime(hourAgo),
			pods: []*podFx{pod("a").Failed(t0).Disrupted()},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"}).Condition(pfpFT(disruptionMsg)).Obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{failJob: 1},
				Final:   status().StartTime(hourAgo).Failed(1).Condition(pfpFT(disruptionMsg)).Condition(pfpFailed(disruptionMsg)).Obj(),
				Events:  []string{"Warning PodFailurePolicy: " + disruptionMsg}, Finished: "Failed PodFailurePolicy",
			},
		},
		"a FailJob on an init container": {
			job:  job("j").PodFailurePolicy(onExitOf("init", failJob, in, 5)).StartTime(hourAgo),
			pods: []*podFx{pod("a").Failed(t0).InitExitCode("init", 5, t0)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"}).Condition(pfpFT(initMsg)).Obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{failJob: 1},
				Final:   status().StartTime(hourAgo).Failed(1).Condition(pfpFT(initMsg)).Condition(pfpFailed(initMsg)).Obj(),
				Events:  []string{"Warning PodFailurePolicy: " + initMsg}, Finished: "Failed PodFailurePolicy",
			},
		},
		"a FailJob Pod counted before still fails the Job": {
			job:  job("j").PodFailurePolicy(onExit(failJob, in, 42)).Status(status().StartTime(hourAgo).Failed(1)),
			pods: []*podFx{pod("a").Failed(t0).ExitCode("main", 42, t0).NoFinalizer()},
			want: syncResult{Action: reconciling,
				Interim: status().StartTime(hourAgo).Failed(1).Condition(pfpFT(exit42FailJobMsg)).Obj(),
				Final:   status().StartTime(hourAgo).Failed(1).Condition(pfpFT(exit42FailJobMsg)).Condition(pfpFailed(exit42FailJobMsg)).Obj(),
				Events:  []string{"Warning PodFailurePolicy: " + exit42FailJobMsg}, Finished: "Failed PodFailurePolicy",
			},
		},
		"the backoffLimit wins over the deadline": {
			job:  job("j").BackoffLimit(0).ActiveDeadlineSeconds(10).StartTime(at(-time.Minute)),
			pods: []*podFx{pod("a").Failed(t0)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(at(-time.Minute)).Uncounted(nil, []types.UID{"a"}).Condition(backoffFT()).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(at(-time.Minute)).Failed(1).Condition(backoffFT()).Condition(backoffFailed()).Obj(),
				Events:  []string{backoffEvent}, Finished: "Failed BackoffLimitExceeded",
			},
		},
		"past the deadline without Pods: the Job fails at once": {
			job: job("j").ActiveDeadlineSeconds(10).StartTime(at(-time.Minute)),
			want: syncResult{Action: reconciling,
				Interim: status().StartTime(at(-time.Minute)).Condition(deadlineFT).Obj(),
				Final: status().StartTime(at(-time.Minute)).Condition(deadlineFT).
					Condition(cond(batchv1.JobFailed, "DeadlineExceeded", deadlineMsg)).Obj(),
				Events: []string{"Warning DeadlineExceeded: " + deadlineMsg}, Finished: "Failed DeadlineExceeded",
			},
		},
		"exactly at the deadline the Job fails": {
			job: job("j").ActiveDeadlineSeconds(60).StartTime(at(-time.Minute)),
			want: syncResult{Action: reconciling,
				Interim: status().StartTime(at(-time.Minute)).Condition(deadlineFT).Obj(),
				Final: status().StartTime(at(-time.Minute)).Condition(deadlineFT).
					Condition(cond(batchv1.JobFailed, "DeadlineExceeded", deadlineMsg)).Obj(),
				Events: []string{"Warning DeadlineExceeded: " + deadlineMsg}, Finished: "Failed DeadlineExceeded",
			},
		},
		"a second before the deadline: a sync a second later": {
			job: job("j").ActiveDeadlineSeconds(60).StartTime(at(-59 * time.Second)),
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods, Requeue: time.Second,
				Interim: status().StartTime(at(-59 * time.Second)).Active(1).Obj()},
		},
		"the deadline and the backoff: the earlier sync is asked for": {
			job:  job("j").ActiveDeadlineSeconds(60).StartTime(at(-55 * time.Second)),
			pods: []*podFx{pod("a").Failed(t0)},
			want: syncResult{Action: created, Requeue: 5 * time.Second, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(at(-55*time.Second)).Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(at(-55 * time.Second)).Failed(1).Obj(),
			},
		},
		"a suspended Job's deadline does not run": {
			job:  job("j").Suspend(true).ActiveDeadlineSeconds(10).Status(status().StartTime(hourAgo).Condition(suspendedCond(hourAgo))),
			want: syncResult{Action: deleted},
		},
		"a resumed Job's deadline counts from the resumption": {
			job: job("j").ActiveDeadlineSeconds(10).Status(bare().Condition(suspendedCond(hourAgo))),
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods, Requeue: 10 * time.Second,
				Events:  []string{resumedEvent},
				Interim: status().StartTime(t0).Active(1).Condition(resumed).Obj(),
			},
		},
		"a Suspended condition already True: Pods deleted, no Event": {
			job:  job("j").Suspend(true).Status(status().Condition(suspendedCond(hourAgo)).Active(1)),
			pods: []*podFx{pod("a").Running()},
			want: syncResult{Action: deleted, Delete: []string{"a Suspended -finalizer"},
				Interim: status().Terminating(1).Condition(suspendedCond(hourAgo)).Obj()},
		},
		"a failed suspension deletion keeps the Pod active; the condition changes anyway": {
			job:        job("j").Suspend(true).StartTime(hourAgo),
			pods:       []*podFx{pod("a").Running()},
			failDelete: []string{"a"},
			want: syncResult{Action: deleted, Delete: []string{"a Suspended -finalizer"},
				Events:  []string{suspendedEvent},
				Interim: status().Active(1).Condition(suspendedCond(t0)).Obj(),
			},
		},
		"unmet expectations: a suspended Job's Pods run on and its condition waits": {
			job:               job("j").Suspend(true),
			pods:              []*podFx{pod("a").Running()},
			expectationsUnmet: true,
			want:              syncResult{Action: reconciling, Interim: status().Active(1).Obj()},
		},
		"a ready Pod deleted on finishing is no longer ready": {
			job:  job("j").BackoffLimit(0).Parallelism(2).Status(status().StartTime(hourAgo).Active(1).Ready(1)),
			pods: []*podFx{pod("a").Failed(t0), pod("b").ReadySince(at(-time.Minute))},
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing"}, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Terminating(1).Uncounted(nil, []types.UID{"a", "b"}).Condition(backoffFT()).Obj(),
				Release: []string{"a", "b"},
				Final:   status().StartTime(hourAgo).Terminating(1).Failed(2).Condition(backoffFT()).Obj(),
			},
		},
		"a ready Pod found gone on scale down stays in the ready count until the next sync": {
			job:      job("j").StartTime(hourAgo),
			pods:     []*podFx{pod("a").ReadySince(at(-time.Minute)), pod("b").ReadySince(at(-time.Second))},
			notFound: []string{"b"},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer"},
				Interim: status().StartTime(hourAgo).Active(1).Ready(2).Terminating(1).Obj()},
		},
		"a ready Pod found gone on finishing leaves the ready count": {
			job:      job("j").BackoffLimit(0).Parallelism(2).Status(status().StartTime(hourAgo).Active(1).Ready(1)),
			pods:     []*podFx{pod("a").Failed(t0), pod("b").ReadySince(at(-time.Minute))},
			notFound: []string{"b"},
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing"}, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Terminating(1).Uncounted(nil, []types.UID{"a", "b"}).Condition(backoffFT()).Obj(),
				Release: []string{"a", "b"},
				Final:   status().StartTime(hourAgo).Terminating(1).Failed(2).Condition(backoffFT()).Obj(),
			},
		},
		"unmet expectations: the Pods of an ending Job are deleted all the same": {
			job:               job("j").BackoffLimit(0).Parallelism(2).StartTime(hourAgo),
			pods:              []*podFx{pod("a").Failed(t0), pod("b").Running()},
			expectationsUnmet: true,
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing"}, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Terminating(1).Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Terminating(1).Failed(1).Obj(),
			},
		},
		"a terminating Pod holds the Job's Failed condition back": {
			job:  job("j").Status(status().StartTime(hourAgo).Condition(backoffFT())),
			pods: []*podFx{pod("a").Running().Deleted(t0)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Terminating(1).Uncounted(nil, []types.UID{"a"}).Condition(backoffFT()).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Terminating(1).Failed(1).Condition(backoffFT()).Obj(),
			},
		},
		"a terminating Pod holds the Job's Complete condition back": {
			job:  job("j").PodReplacementPolicy(batchv1.Failed).Status(status().StartTime(hourAgo).Succeeded(1).Condition(reachedSCM())),
			pods: []*podFx{pod("a").Running().Deleted(t0)},
			want: syncResult{Action: reconciling,
				Interim: status().StartTime(hourAgo).Succeeded(1).Terminating(1).Condition(reachedSCM()).Obj(),
				Release: []string{"a"},
			},
		},
		"enough successes with a Pod still running: the surplus is deleted and the Job ends once it is gone": {
			job:  job("j").Parallelism(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Succeeded(t0), pod("b").Running()},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer"},
				Interim: status().StartTime(hourAgo).Terminating(1).Uncounted([]types.UID{"a"}, nil).Condition(reachedSCM()).Obj(),
				Release: []string{"a", "b"},
				Final:   status().StartTime(hourAgo).Terminating(1).Succeeded(1).Condition(reachedSCM()).Obj(),
			},
		},
		"successes below completions with parallelism left: no Pod beyond what is missing": {
			job:  job("j").Completions(2).Parallelism(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Succeeded(t0), pod("b").Running()},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Active(1).Uncounted([]types.UID{"a"}, nil).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Active(1).Succeeded(1).Obj(),
			},
		},
		"a Pod listed as failed stays failed though it succeeded": {
			job:  job("j").Status(status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"})),
			pods: []*podFx{pod("a").Succeeded(t0)},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"}).Condition(reachedSCM()).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Failed(1).Condition(reachedSCM()).Condition(reachedComplete()).CompletionTime(t0).Obj(),
				Events:  []string{completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"a Pod that lost its finalizer while uncounted is counted": {
			job:  job("j").Status(status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"})),
			pods: []*podFx{pod("a").Failed(t0).NoFinalizer()},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: replacement,
				Interim: status().StartTime(hourAgo).Active(1).Failed(1).Obj()},
		},
		"a Job being deleted counts its failed Pods and lets every finalizer go": {
			job:  job("j").Deleting(t0).Parallelism(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Failed(t0), pod("b").Running()},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Active(1).Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a", "b"},
				Final:   status().StartTime(hourAgo).Active(1).Failed(1).Obj(),
			},
		},
		"a failure after the last success is all the record keeps": {
			job:      job("j").Completions(3).StartTime(hourAgo),
			failures: FailureRecord{3, ago(time.Minute)},
			pods:     []*podFx{pod("a").Succeeded(t0).EndedAt(at(-30 * time.Second)), pod("b").Failed(t0).EndedAt(at(-10 * time.Second))},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: replacement, Failures: FailureRecord{1, ago(10 * time.Second)},
				Interim: status().StartTime(hourAgo).Active(1).Uncounted([]types.UID{"a"}, []types.UID{"b"}).Obj(),
				Release: []string{"a", "b"},
				Final:   status().StartTime(hourAgo).Active(1).Succeeded(1).Failed(1).Obj(),
			},
		},
		"failures before the last success are forgotten": {
			job:      job("j").Completions(3).StartTime(hourAgo),
			failures: FailureRecord{3, ago(time.Minute)},
			pods:     []*podFx{pod("a").Failed(t0).EndedAt(at(-30 * time.Second)), pod("b").Succeeded(t0).EndedAt(at(-10 * time.Second))},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: replacement,
				Interim: status().StartTime(hourAgo).Active(1).Uncounted([]types.UID{"b"}, []types.UID{"a"}).Obj(),
				Release: []string{"a", "b"},
				Final:   status().StartTime(hourAgo).Active(1).Succeeded(1).Failed(1).Obj(),
			},
		},
		"the backoff doubles with each failure": {
			job:      job("j").StartTime(hourAgo),
			failures: FailureRecord{3, ago(30 * time.Second)},
			want: syncResult{Action: created, Requeue: 10 * time.Second, Failures: FailureRecord{3, ago(30 * time.Second)},
				Interim: status().StartTime(hourAgo).Obj()},
		},
		"the backoff is capped by MaxPodBackoff": {
			job:      job("j").StartTime(hourAgo),
			failures: FailureRecord{5, ago(10 * time.Second)},
			opts:     Options{MaxPodBackoff: 30 * time.Second},
			want: syncResult{Action: created, Requeue: 20 * time.Second, Failures: FailureRecord{5, ago(10 * time.Second)},
				Interim: status().StartTime(hourAgo).Obj()},
		},
		"a namespace terminating changes nothing for a Job without backoffLimitPerIndex": {
			job:           job("j").StartTime(hourAgo),
			nsTerminating: true,
			want:          syncResult{Action: created, Create: []string{"j-"}, Reason: newPods, Interim: status().StartTime(hourAgo).Active(1).Obj()},
		},
		"every creation refused: nothing active": {
			job:     job("j").Indexed(2),
			created: intp(0),
			want:    syncResult{Action: created, Create: []string{"j-0-", "j-1-"}, Reason: newPods, Interim: status().StartTime(t0).Obj()},
		},
		"indexed, podReplacementPolicy Failed: a terminating Pod holds its index": {
			job:  job("j").Indexed(2).PodReplacementPolicy(batchv1.Failed).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Running().Deleted(t0), pod("b").Index(1).Running()},
			want: syncResult{Action: tracking, Interim: status().StartTime(hourAgo).Active(1).Terminating(1).Obj()},
		},
		"indexed, TerminatingOrFailed: a terminating Pod's index is replaced after the backoff": {
			job:  job("j").Indexed(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Running().Deleted(t0), pod("b").Index(1).Running()},
			want: syncResult{Action: created, Requeue: 10 * time.Second, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Active(1).Terminating(1).Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Active(1).Terminating(1).Failed(1).Obj(),
			},
		},
		"indexed: MaxUncountedPods caps the Pods released, not the indexes found": {
			job:  job("j").Indexed(3).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Succeeded(t0), pod("b").Index(1).Succeeded(t0), pod("c").Index(2).Succeeded(t0)},
			opts: Options{MaxUncountedPods: 2},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).CompletedIndexes("0-2").Succeeded(3).Condition(reachedSCM()).Obj(),
				Release: []string{"a", "b"},
			},
		},
		"indexed: a Pod whose finalizer removal is in flight still marks its index": {
			job:      job("j").Indexed(2).StartTime(hourAgo),
			pods:     []*podFx{pod("a").Index(0).Succeeded(t0), pod("b").Index(1).Running()},
			inFlight: []string{"a"},
			want:     syncResult{Action: tracking, Interim: status().StartTime(hourAgo).Active(1).CompletedIndexes("0").Succeeded(1).Obj()},
		},
		"failed indexes win over the successPolicy": {
			job:  job("j").Indexed(3).BackoffLimitPerIndex(0).SuccessPolicy(succeededIndexes("0")).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Succeeded(t0), pod("b").Index(1).Failed(t0).EndedAt(at(-time.Minute)), pod("c").Index(2).Succeeded(t0)},
			want: syncResult{Action: reconciling,
				Interim: status().StartTime(hourAgo).CompletedIndexes("0,2").Succeeded(2).FailedIndexes("1").Uncounted(nil, []types.UID{"b"}).Condition(failedIdxFT).Obj(),
				Release: []string{"a", "b", "c"},
				Final:   status().StartTime(hourAgo).CompletedIndexes("0,2").Succeeded(2).FailedIndexes("1").Failed(1).Condition(failedIdxFT).Condition(failedIdxFailed).Obj(),
				Events:  []string{failedIndexesEvent}, Finished: "Failed FailedIndexes",
			},
		},
		"a FailJob wins over the successPolicy": {
			job:  job("j").Indexed(2).PodFailurePolicy(onExit(failJob, in, 42)).SuccessPolicy(succeededIndexes("0")).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Succeeded(t0), pod("b").Index(1).Failed(t0).ExitCode("main", 42, t0)},
			want: syncResult{Action: reconciling,
				Interim: status().StartTime(hourAgo).CompletedIndexes("0").Succeeded(1).Uncounted(nil, []types.UID{"b"}).Condition(pfpFT(bMsg)).Obj(),
				Release: []string{"a", "b"},
				Actions: map[batchv1.PodFailurePolicyAction]int{failJob: 1},
				Final:   status().StartTime(hourAgo).CompletedIndexes("0").Succeeded(1).Failed(1).Condition(pfpFT(bMsg)).Condition(pfpFailed(bMsg)).Obj(),
				Events:  []string{"Warning PodFailurePolicy: " + bMsg}, Finished: "Failed PodFailurePolicy",
			},
		},
		"an ignored failure of an index passes on as an ignored count": {
			job: job("j").Indexed(2).BackoffLimitPerIndex(1).PodFailurePolicy(onCond(ignore, corev1.DisruptionTarget, corev1.ConditionTrue)).
				StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Failed(t0).Disrupted().EndedAt(at(-20 * time.Second)), pod("b").Index(1).Running()},
			want: syncResult{Action: created, Create: []string{"j-0- failures=0 ignored=1"}, Reason: newPods,
				Failures: FailureRecord{1, ago(20 * time.Second)},
				Interim:  status().StartTime(hourAgo).Active(2).FailedIndexes("").Obj(),
			},
		},
		"of two failed Pods of an index, the one with more failures is held": {
			job: job("j").Indexed(1).BackoffLimitPerIndex(3).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).IndexFailureCount(1).Failed(t0).EndedAt(at(-2 * time.Minute)),
				pod("b").Index(0).Failed(t0).EndedAt(at(-time.Minute))},
			want: syncResult{Action: created, Create: []string{"j-0- failures=2"}, Reason: replacement,
				Failures: FailureRecord{2, ago(time.Minute)},
				Interim:  status().StartTime(hourAgo).Active(1).FailedIndexes("").Uncounted(nil, []types.UID{"b"}).Obj(),
				Release:  []string{"b"},
				Final:    status().StartTime(hourAgo).Active(1).FailedIndexes("").Failed(1).Obj(),
			},
		},
		"maxFailedIndexes wins over the successPolicy": {
			job: job("j").Indexed(3).BackoffLimitPerIndex(0).MaxFailedIndexes(0).SuccessPolicy(succeededCount(1)).StartTime(hourAgo),
			pods: []*podFx{pod("a").Index(0).Succeeded(t0), pod("b").Index(1).Failed(t0).EndedAt(at(-time.Minute)),
				pod("c").Index(2).Running()},
			want: syncResult{Action: reconciling, Delete: []string{"c Finishing"},
				Interim: status().StartTime(hourAgo).Terminating(1).CompletedIndexes("0").Succeeded(1).FailedIndexes("1").Uncounted(nil, []types.UID{"b", "c"}).
					Condition(cond(batchv1.JobFailureTarget, "MaxFailedIndexesExceeded", maxFailedIdxMsg)).Obj(),
				Release: []string{"a", "b", "c"},
				Final: status().StartTime(hourAgo).Terminating(1).CompletedIndexes("0").Succeeded(1).FailedIndexes("1").Failed(2).
					Condition(cond(batchv1.JobFailureTarget, "MaxFailedIndexesExceeded", maxFailedIdxMsg)).Obj(),
			},
		},
		"a FailureTarget whose Failed write fails a removal: counted, not finished": {
			job:         job("j").Parallelism(2).Status(status().StartTime(hourAgo).Condition(backoffFT())),
			pods:        []*podFx{pod("a").Failed(t0), pod("b").Failed(t0)},
			failRemoval: []string{"b"},
			want: syncResult{Action: reconciling, Failures: FailureRecord{2, t0p},
				Interim: status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a", "b"}).Condition(backoffFT()).Obj(),
				Release: []string{"a", "b"},
				Final:   status().StartTime(hourAgo).Failed(1).Uncounted(nil, []types.UID{"b"}).Condition(backoffFT()).Obj(),
			},
		},
	})
}
