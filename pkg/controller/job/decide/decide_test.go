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
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
)

// Shorthands of the Decide tables.
const (
	reconciling = metrics.JobSyncActionReconciling
	tracking    = metrics.JobSyncActionTracking
	created     = metrics.JobSyncActionPodsCreated
	deleted     = metrics.JobSyncActionPodsDeleted

	newPods      = metrics.PodCreateNew
	replacement  = metrics.PodRecreateTerminatingOrFailed
	failedAgain  = metrics.PodRecreateFailed
	backoffMsg   = "Job has reached the specified backoff limit"
	deadlineMsg  = "Job was active longer than specified deadline"
	completedMsg = "Reached expected number of succeeded pods"
)

var (
	hourAgo = at(-time.Hour)
	t0p     = &t0
)

func ago(d time.Duration) *time.Time { t := t0.Add(-d); return &t }

func backoffFT() batchv1.JobCondition {
	return cond(batchv1.JobFailureTarget, "BackoffLimitExceeded", backoffMsg)
}

func backoffFailed() batchv1.JobCondition {
	return cond(batchv1.JobFailed, "BackoffLimitExceeded", backoffMsg)
}

func reachedSCM() batchv1.JobCondition {
	return cond(batchv1.JobSuccessCriteriaMet, "CompletionsReached", completedMsg)
}

func reachedComplete() batchv1.JobCondition {
	return cond(batchv1.JobComplete, "CompletionsReached", completedMsg)
}

func suspendedCond(when time.Time) batchv1.JobCondition {
	return condAt(batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", when)
}

const (
	completedEvent     = "Normal Completed: Job completed"
	backoffEvent       = "Warning BackoffLimitExceeded: " + backoffMsg
	exit42FailJobMsg   = "Container main for pod ns/a failed with exit code 42 matching FailJob rule at index 0"
	unknownModeEvent   = "Warning UnknownCompletionMode: Skipped Job sync because completion mode is unknown"
	tooManyEvent       = "Warning TooManySucceededPods: Too many succeeded pods running after completion count reached"
	suspendedEvent     = "Normal Suspended: Job suspended"
	resumedEvent       = "Normal Resumed: Job resumed"
	failedIndexesMsg   = "Job has failed indexes"
	maxFailedIdxMsg    = "Job has exceeded the specified maximal number of failed indexes"
	successPolicyMsg0  = "Matched rules at index 0"
	failedIndexesEvent = "Warning FailedIndexes: " + failedIndexesMsg
)

func TestDecideNonIndexed(t *testing.T) {
	runRows(t, map[string]syncRow{
		"a new Job creates its Pod and starts": {
			job: job("j"),
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods,
				Interim: status().StartTime(t0).Active(1).Obj()},
		},
		"a running ready Pod is counted, nothing else": {
			job:  job("j").StartTime(hourAgo),
			pods: []*podFx{pod("a").ReadySince(at(-time.Minute))},
			want: syncResult{Action: tracking, Interim: status().StartTime(hourAgo).Active(1).Ready(1).Obj()},
		},
		"nothing changed: nothing written": {
			job:  job("j").Status(status().StartTime(hourAgo).Active(1)),
			pods: []*podFx{pod("a").Running()},
			want: syncResult{Action: tracking},
		},
		"a succeeded Pod completes the Job in two writes": {
			job:  job("j").StartTime(hourAgo),
			pods: []*podFx{pod("a").Succeeded(t0)},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Uncounted([]types.UID{"a"}, nil).Condition(reachedSCM()).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Succeeded(1).Condition(reachedSCM()).Condition(reachedComplete()).CompletionTime(t0).Obj(),
				Events:  []string{completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"more successes than completions: TooManySucceededPods": {
			job:  job("j").Parallelism(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Succeeded(t0), pod("b").Succeeded(t0)},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Uncounted([]types.UID{"a", "b"}, nil).Condition(reachedSCM()).Obj(),
				Release: []string{"a", "b"},
				Final:   status().StartTime(hourAgo).Succeeded(2).Condition(reachedSCM()).Condition(reachedComplete()).CompletionTime(t0).Obj(),
				Events:  []string{tooManyEvent, completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"a failure within backoffLimit is counted; the replacement waits for the backoff": {
			job:  job("j").StartTime(hourAgo),
			pods: []*podFx{pod("a").Failed(t0)},
			want: syncResult{Action: created, Requeue: 10 * time.Second, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Failed(1).Obj(),
			},
		},
		"a failure older than the backoff is replaced at once": {
			job:  job("j").StartTime(hourAgo),
			pods: []*podFx{pod("a").Failed(t0).EndedAt(at(-20 * time.Second))},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: replacement,
				Failures: FailureRecord{1, ago(20 * time.Second)},
				Interim:  status().StartTime(hourAgo).Active(1).Uncounted(nil, []types.UID{"a"}).Obj(),
				Release:  []string{"a"},
				Final:    status().StartTime(hourAgo).Active(1).Failed(1).Obj(),
			},
		},
		"earlier failures in the record delay the first Pod": {
			job:      job("j").StartTime(hourAgo),
			failures: FailureRecord{2, ago(5 * time.Second)},
			want: syncResult{Action: created, Requeue: 15 * time.Second, Failures: FailureRecord{2, ago(5 * time.Second)},
				Interim: status().StartTime(hourAgo).Obj()},
		},
		"a backoff shorter than the batch period waits the batch period": {
			job:      job("j").StartTime(hourAgo),
			failures: FailureRecord{1, ago(9*time.Second + 500*time.Millisecond)},
			want: syncResult{Action: created, Requeue: time.Second, Failures: FailureRecord{1, ago(9*time.Second + 500*time.Millisecond)},
				Interim: status().StartTime(hourAgo).Obj()},
		},
		"a success resets the failure record": {
			job:      job("j").Completions(3).Parallelism(1).StartTime(hourAgo),
			failures: FailureRecord{4, ago(time.Second)},
			pods:     []*podFx{pod("a").Succeeded(t0)},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods,
				Interim: status().StartTime(hourAgo).Active(1).Uncounted([]types.UID{"a"}, nil).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Active(1).Succeeded(1).Obj(),
			},
		},
		"a failure past backoffLimit fails the Job": {
			job:  job("j").BackoffLimit(0).StartTime(hourAgo),
			pods: []*podFx{pod("a").Failed(t0)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"}).Condition(backoffFT()).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Failed(1).Condition(backoffFT()).Condition(backoffFailed()).Obj(),
				Events:  []string{backoffEvent}, Finished: "Failed BackoffLimitExceeded",
			},
		},
		"failures equal to backoffLimit do not fail the Job": {
			job:  job("j").BackoffLimit(1).Status(status().StartTime(hourAgo).Active(1).Failed(0)),
			pods: []*podFx{pod("a").Failed(t0).EndedAt(at(-time.Minute)), pod("b").Running()},
			want: syncResult{Action: tracking, Failures: FailureRecord{1, ago(time.Minute)},
				Interim: status().StartTime(hourAgo).Active(1).Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Active(1).Failed(1).Obj(),
			},
		},
		"a failing Job deletes its running Pods and counts them failed; it ends once they are gone": {
			job:  job("j").BackoffLimit(0).Parallelism(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Failed(t0), pod("b").Running()},
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing"}, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Terminating(1).Uncounted(nil, []types.UID{"a", "b"}).Condition(backoffFT()).Obj(),
				Release: []string{"a", "b"},
				Final:   status().StartTime(hourAgo).Terminating(1).Failed(2).Condition(backoffFT()).Obj(),
			},
		},
		"a failed deletion withdraws the Job's end": {
			job:        job("j").BackoffLimit(0).Parallelism(2).StartTime(hourAgo),
			pods:       []*podFx{pod("a").Failed(t0), pod("b").Running()},
			failDelete: []string{"b"},
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing"}, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Active(1).Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Active(1).Failed(1).Obj(),
			},
		},
		"unmet expectations withdraw the Job's end": {
			job:               job("j").BackoffLimit(0).StartTime(hourAgo),
			pods:              []*podFx{pod("a").Failed(t0)},
			expectationsUnmet: true,
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Failed(1).Obj(),
			},
		},
		"unmet expectations: no Pod is managed": {
			job:               job("j").StartTime(hourAgo),
			expectationsUnmet: true,
			want:              syncResult{Action: reconciling, Interim: status().StartTime(hourAgo).Obj()},
		},
		"a FailJob rule fails the Job with the rule's message": {
			job:  job("j").PodFailurePolicy(onExit(failJob, in, 42)).StartTime(hourAgo),
			pods: []*podFx{pod("a").Failed(t0).ExitCode("main", 42, t0)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"}).
					Condition(cond(batchv1.JobFailureTarget, "PodFailurePolicy", exit42FailJobMsg)).Obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{failJob: 1},
				Final: status().StartTime(hourAgo).Failed(1).Condition(cond(batchv1.JobFailureTarget, "PodFailurePolicy", exit42FailJobMsg)).
					Condition(cond(batchv1.JobFailed, "PodFailurePolicy", exit42FailJobMsg)).Obj(),
				Events:   []string{"Warning PodFailurePolicy: " + exit42FailJobMsg},
				Finished: "Failed PodFailurePolicy",
			},
		},
		"an ignored failure is not counted, yet backs off the replacement": {
			job:  job("j").PodFailurePolicy(onCond(ignore, corev1.DisruptionTarget, corev1.ConditionTrue)).StartTime(hourAgo),
			pods: []*podFx{pod("a").Failed(t0).Disrupted()},
			want: syncResult{Action: created, Requeue: 10 * time.Second, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{ignore: 1},
			},
		},
		"a Count rule counts the failure": {
			job:  job("j").PodFailurePolicy(onExit(count, in, 1)).BackoffLimit(0).StartTime(hourAgo),
			pods: []*podFx{pod("a").Failed(t0).ExitCode("main", 1, t0)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"}).Condition(backoffFT()).Obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{count: 1},
				Final:   status().StartTime(hourAgo).Failed(1).Condition(backoffFT()).Condition(backoffFailed()).Obj(),
				Events:  []string{backoffEvent}, Finished: "Failed BackoffLimitExceeded",
			},
		},
		"the active deadline passed: the Job fails and its Pods are deleted": {
			job:  job("j").ActiveDeadlineSeconds(60).StartTime(at(-2 * time.Minute)),
			pods: []*podFx{pod("a").Running()},
			want: syncResult{Action: reconciling, Delete: []string{"a Finishing"},
				Interim: status().StartTime(at(-2*time.Minute)).Terminating(1).Uncounted(nil, []types.UID{"a"}).
					Condition(cond(batchv1.JobFailureTarget, "DeadlineExceeded", deadlineMsg)).Obj(),
				Release: []string{"a"},
				Final: status().StartTime(at(-2 * time.Minute)).Terminating(1).Failed(1).
					Condition(cond(batchv1.JobFailureTarget, "DeadlineExceeded", deadlineMsg)).Obj(),
			},
		},
		"the active deadline ahead: a sync is asked for then": {
			job:  job("j").ActiveDeadlineSeconds(60).StartTime(at(-20 * time.Second)),
			pods: []*podFx{pod("a").Running()},
			want: syncResult{Action: tracking, Requeue: 40 * time.Second,
				Interim: status().StartTime(at(-20 * time.Second)).Active(1).Obj()},
		},
		"suspending deletes the Pods, least advanced first, and clears startTime": {
			job:  job("j").Parallelism(2).Completions(2).Suspend(true).StartTime(hourAgo),
			pods: []*podFx{pod("b").ReadySince(at(-time.Minute)), pod("a").Running()},
			want: syncResult{Action: deleted, Delete: []string{"a Suspended -finalizer", "b Suspended -finalizer"},
				Events:  []string{suspendedEvent},
				Interim: status().Terminating(2).Condition(suspendedCond(t0)).Obj(),
			},
		},
		"resuming sets Suspended False, a new startTime and creates Pods": {
			job: job("j").Status(bare().Condition(suspendedCond(hourAgo))),
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods,
				Events: []string{resumedEvent},
				Interim: status().StartTime(t0).Active(1).
					Condition(condAt(batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", t0)).Obj(),
			},
		},
		"a suspended Job without Pods has nothing to do": {
			job:  job("j").Suspend(true).Status(status().Condition(suspendedCond(hourAgo))),
			want: syncResult{Action: deleted},
		},
		"a Job created suspended gets no startTime": {
			job: job("j").Suspend(true),
			want: syncResult{Action: deleted, Events: []string{suspendedEvent},
				Interim: status().Condition(suspendedCond(t0)).Obj()},
		},
		"a Job never suspended gets no Suspended condition": {
			job:  job("j").Status(status().StartTime(hourAgo).Active(1)),
			pods: []*podFx{pod("a").Running()},
			want: syncResult{Action: tracking},
		},
		"too many Pods: the least advanced is deleted": {
			job:  job("j").StartTime(hourAgo),
			pods: []*podFx{pod("a").ReadySince(at(-time.Minute)), pod("b")},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer"},
				Interim: status().StartTime(hourAgo).Active(1).Ready(1).Terminating(1).Obj()},
		},
		"parallelism lowered: the surplus goes, capped by MaxPodChangesPerSync": {
			job:  job("j").Completions(5).Parallelism(1).StartTime(hourAgo),
			pods: []*podFx{pod("a").Running(), pod("b"), pod("c"), pod("d").ReadySince(at(-time.Minute))},
			opts: Options{MaxPodChangesPerSync: 2},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer", "c Excess -finalizer"}, Requeue: time.Second,
				Interim: status().StartTime(hourAgo).Active(2).Ready(1).Terminating(2).Obj()},
		},
		"a failed scale-down deletion leaves the Pod active": {
			job:        job("j").StartTime(hourAgo),
			pods:       []*podFx{pod("a").ReadySince(at(-time.Minute)), pod("b")},
			failDelete: []string{"b"},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer"},
				Interim: status().StartTime(hourAgo).Active(2).Ready(1).Obj()},
		},
		"a work-queue Job starts parallelism Pods": {
			job:  job("j").NoCompletions().Parallelism(3),
			want: syncResult{Action: created, Create: []string{"j-", "j-", "j-"}, Reason: newPods, Interim: status().StartTime(t0).Active(3).Obj()},
		},
		"a work-queue Job with a success creates no more Pods and waits for the others": {
			job:  job("j").NoCompletions().Parallelism(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Succeeded(t0), pod("b").Running()},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Active(1).Uncounted([]types.UID{"a"}, nil).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Active(1).Succeeded(1).Obj(),
			},
		},
		"a work-queue Job with a success and nothing running is complete": {
			job:  job("j").NoCompletions().Parallelism(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Succeeded(t0)},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Uncounted([]types.UID{"a"}, nil).Condition(reachedSCM()).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Succeeded(1).Condition(reachedSCM()).Condition(reachedComplete()).CompletionTime(t0).Obj(),
				Events:  []string{completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"the completions left cap the Pods created": {
			job:  job("j").Completions(3).Parallelism(5).Status(status().StartTime(hourAgo).Succeeded(2)),
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods, Interim: status().StartTime(hourAgo).Succeeded(2).Active(1).Obj()},
		},
		"MaxPodChangesPerSync caps the creations; the next sync is asked for": {
			job:  job("j").Completions(5).Parallelism(5),
			opts: Options{MaxPodChangesPerSync: 2},
			want: syncResult{Action: created, Create: []string{"j-", "j-"}, Reason: newPods, Requeue: time.Second, Interim: status().StartTime(t0).Active(2).Obj()},
		},
		"failed creations are not active": {
			job:     job("j").Completions(3).Parallelism(3),
			created: intp(1),
			want:    syncResult{Action: created, Create: []string{"j-", "j-", "j-"}, Reason: newPods, Interim: status().StartTime(t0).Active(1).Obj()},
		},
		"a Job being deleted manages no Pod but lets their finalizers go": {
			job:  job("j").Deleting(t0).StartTime(hourAgo),
			pods: []*podFx{pod("a").Running()},
			want: syncResult{Action: reconciling, Interim: status().StartTime(hourAgo).Active(1).Obj(), Release: []string{"a"}},
		},
		"a failed finalizer removal keeps the progress and does not end the Job": {
			job:         job("j").Completions(2).Parallelism(2).StartTime(hourAgo),
			pods:        []*podFx{pod("a").Succeeded(t0), pod("b").Succeeded(t0)},
			failRemoval: []string{"b"},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Uncounted([]types.UID{"a", "b"}, nil).Condition(reachedSCM()).Obj(),
				Release: []string{"a", "b"},
				Final:   status().StartTime(hourAgo).Succeeded(1).Uncounted([]types.UID{"b"}, nil).Condition(reachedSCM()).Obj(),
			},
		},
		"a failed finalizer removal with nothing counted writes nothing more": {
			job:         job("j").StartTime(hourAgo),
			pods:        []*podFx{pod("a").Succeeded(t0)},
			failRemoval: []string{"a"},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Uncounted([]types.UID{"a"}, nil).Condition(reachedSCM()).Obj(),
				Release: []string{"a"},
			},
		},
		"a Pod whose finalizer removal is in flight is counted, not counted again": {
			job:      job("j").Status(status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"})),
			pods:     []*podFx{pod("a").Failed(t0)},
			inFlight: []string{"a"},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: replacement,
				Interim: status().StartTime(hourAgo).Active(1).Failed(1).Obj()},
		},
		"an uncounted Pod that is gone is counted": {
			job: job("j").Status(status().StartTime(hourAgo).Uncounted([]types.UID{"x"}, nil)),
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Succeeded(1).Condition(reachedSCM()).Obj(),
				Final:   status().StartTime(hourAgo).Succeeded(1).Condition(reachedSCM()).Condition(reachedComplete()).CompletionTime(t0).Obj(),
				Events:  []string{completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"an uncounted Pod still tracked is not listed twice": {
			job:  job("j").Completions(2).Parallelism(2).Status(status().StartTime(hourAgo).Uncounted([]types.UID{"a"}, nil)),
			pods: []*podFx{pod("a").Succeeded(t0)},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods,
				Interim: status().StartTime(hourAgo).Active(1).Uncounted([]types.UID{"a"}, nil).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Active(1).Succeeded(1).Obj(),
			},
		},
		"a Pod without the finalizer was counted before": {
			job:  job("j").Completions(2).Parallelism(2).Status(status().StartTime(hourAgo).Succeeded(1).Active(1)),
			pods: []*podFx{pod("a").Succeeded(t0).NoFinalizer(), pod("b").Running()},
			want: syncResult{Action: tracking},
		},
		"an unknown completion mode only warns": {
			job:  job("j").CompletionMode("Sparse"),
			pods: []*podFx{pod("a").Failed(t0)},
			want: syncResult{Events: []string{unknownModeEvent}},
		},
		"a finished Job is left alone": {
			job:  job("j").Status(status().Condition(reachedComplete())),
			pods: []*podFx{pod("a").Succeeded(t0)},
		},
		"a FailureTarget of an earlier sync: Failed once the Pods are counted": {
			job:  job("j").Status(status().StartTime(hourAgo).Condition(backoffFT())),
			pods: []*podFx{pod("a").Failed(t0)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Uncounted(nil, []types.UID{"a"}).Condition(backoffFT()).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Failed(1).Condition(backoffFT()).Condition(backoffFailed()).Obj(),
				Events:  []string{backoffEvent}, Finished: "Failed BackoffLimitExceeded",
			},
		},
		"a SuccessCriteriaMet of an earlier sync: running Pods deleted, not counted": {
			job:  job("j").Status(status().StartTime(hourAgo).Condition(reachedSCM())),
			pods: []*podFx{pod("a").Running()},
			want: syncResult{Action: reconciling, Delete: []string{"a Finishing"},
				Interim: status().StartTime(hourAgo).Terminating(1).Condition(reachedSCM()).Obj(),
				Release: []string{"a"},
			},
		},
		"a SuccessCriteriaMet of an earlier sync and nothing left: Complete": {
			job: job("j").Status(status().StartTime(hourAgo).Succeeded(1).Condition(reachedSCM())),
			want: syncResult{Action: reconciling,
				Final:  status().StartTime(hourAgo).Succeeded(1).Condition(reachedSCM()).Condition(reachedComplete()).CompletionTime(t0).Obj(),
				Events: []string{completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"a SuccessCriteriaMet of an earlier sync wins over a FailJob": {
			job:  job("j").PodFailurePolicy(onExit(failJob, in, 42)).Status(status().StartTime(hourAgo).Succeeded(1).Condition(reachedSCM())),
			pods: []*podFx{pod("a").Failed(t0).ExitCode("main", 42, t0)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Succeeded(1).Failed(1).Condition(reachedSCM()).Condition(reachedComplete()).CompletionTime(t0).Obj(),
				Events:  []string{completedEvent}, Finished: "Complete CompletionsReached",
				Interim: status().StartTime(hourAgo).Succeeded(1).Uncounted(nil, []types.UID{"a"}).Condition(reachedSCM()).Obj(),
				Actions: map[batchv1.PodFailurePolicyAction]int{failJob: 1},
			},
		},
		"restartPolicy OnFailure: restarts reaching backoffLimit fail the Job": {
			job:  job("j").RestartPolicy(corev1.RestartPolicyOnFailure).BackoffLimit(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Running().Restarts(1, 1)},
			want: syncResult{Action: reconciling, Delete: []string{"a Finishing"},
				Interim: status().StartTime(hourAgo).Terminating(1).Uncounted(nil, []types.UID{"a"}).Condition(backoffFT()).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Terminating(1).Failed(1).Condition(backoffFT()).Obj(),
			},
		},
		"restartPolicy OnFailure with backoffLimit 0: one restart fails the Job": {
			job:  job("j").RestartPolicy(corev1.RestartPolicyOnFailure).BackoffLimit(0).StartTime(hourAgo),
			pods: []*podFx{pod("a").Restarts(1)},
			want: syncResult{Action: reconciling, Delete: []string{"a Finishing"},
				Interim: status().StartTime(hourAgo).Terminating(1).Uncounted(nil, []types.UID{"a"}).Condition(backoffFT()).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Terminating(1).Failed(1).Condition(backoffFT()).Obj(),
			},
		},
		"restartPolicy OnFailure: restarts below backoffLimit": {
			job:  job("j").RestartPolicy(corev1.RestartPolicyOnFailure).BackoffLimit(3).Status(status().StartTime(hourAgo).Active(1)),
			pods: []*podFx{pod("a").Running().Restarts(1, 1)},
			want: syncResult{Action: tracking},
		},
		"restartPolicy Never: restarts do not count": {
			job:  job("j").BackoffLimit(0).Status(status().StartTime(hourAgo).Active(1)),
			pods: []*podFx{pod("a").Running().Restarts(3)},
			want: syncResult{Action: tracking},
		},
		"podReplacementPolicy Failed: a terminating Pod holds its slot and is not failed": {
			job:  job("j").PodReplacementPolicy(batchv1.Failed).StartTime(hourAgo),
			pods: []*podFx{pod("a").Running().Deleted(t0)},
			want: syncResult{Action: tracking, Interim: status().StartTime(hourAgo).Terminating(1).Obj()},
		},
		"podReplacementPolicy Failed: a failed Pod is replaced": {
			job:  job("j").PodReplacementPolicy(batchv1.Failed).StartTime(hourAgo),
			pods: []*podFx{pod("a").Failed(t0).EndedAt(at(-time.Minute))},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: failedAgain, Failures: FailureRecord{1, ago(time.Minute)},
				Interim: status().StartTime(hourAgo).Active(1).Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Active(1).Failed(1).Obj(),
			},
		},
		"TerminatingOrFailed: a terminating Pod is failed and replaced after the backoff": {
			job:  job("j").StartTime(hourAgo),
			pods: []*podFx{pod("a").Running().Deleted(t0)},
			want: syncResult{Action: created, Requeue: 10 * time.Second, Failures: FailureRecord{1, t0p},
				Interim: status().StartTime(hourAgo).Terminating(1).Uncounted(nil, []types.UID{"a"}).Obj(),
				Release: []string{"a"},
				Final:   status().StartTime(hourAgo).Terminating(1).Failed(1).Obj(),
			},
		},
		"a terminating Pod makes creations replacements": {
			job:  job("j").Completions(2).Parallelism(2).StartTime(hourAgo),
			pods: []*podFx{pod("a").Running(), pod("b").Running().Deleted(t0).NoFinalizer()},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: replacement,
				Interim: status().StartTime(hourAgo).Active(2).Terminating(1).Obj()},
		},
		"MaxUncountedPods reached: the Job ends in a later sync": {
			job:  job("j").Completions(3).Parallelism(3).StartTime(hourAgo),
			pods: []*podFx{pod("a").Succeeded(t0), pod("b").Succeeded(t0), pod("c").Succeeded(t0)},
			opts: Options{MaxUncountedPods: 2},
			want: syncResult{Action: tracking,
				Interim: status().StartTime(hourAgo).Uncounted([]types.UID{"a", "b"}, nil).Condition(reachedSCM()).Obj(),
				Release: []string{"a", "b"},
				Final:   status().StartTime(hourAgo).Succeeded(2).Condition(reachedSCM()).Obj(),
			},
		},
	})
}
