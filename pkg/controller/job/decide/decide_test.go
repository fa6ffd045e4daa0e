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
				Interim: status().start(t0).active(1).obj()},
		},
		"a running ready Pod is counted, nothing else": {
			job:  job("j").started(hourAgo),
			pods: []*podFx{pod("a").ready()},
			want: syncResult{Action: tracking, Interim: status().start(hourAgo).active(1).ready(1).obj()},
		},
		"nothing changed: nothing written": {
			job:  job("j").status(status().start(hourAgo).active(1)),
			pods: []*podFx{pod("a").running()},
			want: syncResult{Action: tracking},
		},
		"a succeeded Pod completes the Job in two writes": {
			job:  job("j").started(hourAgo),
			pods: []*podFx{pod("a").succeeded()},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).uncounted([]string{"a"}, nil).cond(reachedSCM()).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).succeeded(1).cond(reachedSCM()).cond(reachedComplete()).done(t0).obj(),
				Events:  []string{completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"more successes than completions: TooManySucceededPods": {
			job:  job("j").parallelism(2).started(hourAgo),
			pods: []*podFx{pod("a").succeeded(), pod("b").succeeded()},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).uncounted([]string{"a", "b"}, nil).cond(reachedSCM()).obj(),
				Release: []string{"a", "b"},
				Final:   status().start(hourAgo).succeeded(2).cond(reachedSCM()).cond(reachedComplete()).done(t0).obj(),
				Events:  []string{tooManyEvent, completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"a failure within backoffLimit is counted; the replacement waits for the backoff": {
			job:  job("j").started(hourAgo),
			pods: []*podFx{pod("a").failed()},
			want: syncResult{Action: created, Requeue: 10 * time.Second, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).failed(1).obj(),
			},
		},
		"a failure older than the backoff is replaced at once": {
			job:  job("j").started(hourAgo),
			pods: []*podFx{pod("a").failed().endedAt(at(-20 * time.Second))},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: replacement,
				Failures: FailureRecord{1, ago(20 * time.Second)},
				Interim:  status().start(hourAgo).active(1).uncounted(nil, []string{"a"}).obj(),
				Release:  []string{"a"},
				Final:    status().start(hourAgo).active(1).failed(1).obj(),
			},
		},
		"earlier failures in the record delay the first Pod": {
			job:      job("j").started(hourAgo),
			failures: FailureRecord{2, ago(5 * time.Second)},
			want: syncResult{Action: created, Requeue: 15 * time.Second, Failures: FailureRecord{2, ago(5 * time.Second)},
				Interim: status().start(hourAgo).obj()},
		},
		"a backoff shorter than the batch period waits the batch period": {
			job:      job("j").started(hourAgo),
			failures: FailureRecord{1, ago(9*time.Second + 500*time.Millisecond)},
			want: syncResult{Action: created, Requeue: time.Second, Failures: FailureRecord{1, ago(9*time.Second + 500*time.Millisecond)},
				Interim: status().start(hourAgo).obj()},
		},
		"a success resets the failure record": {
			job:      job("j").completions(3).parallelism(1).started(hourAgo),
			failures: FailureRecord{4, ago(time.Second)},
			pods:     []*podFx{pod("a").succeeded()},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods,
				Interim: status().start(hourAgo).active(1).uncounted([]string{"a"}, nil).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).active(1).succeeded(1).obj(),
			},
		},
		"a failure past backoffLimit fails the Job": {
			job:  job("j").backoffLimit(0).started(hourAgo),
			pods: []*podFx{pod("a").failed()},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).uncounted(nil, []string{"a"}).cond(backoffFT()).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).failed(1).cond(backoffFT()).cond(backoffFailed()).obj(),
				Events:  []string{backoffEvent}, Finished: "Failed BackoffLimitExceeded",
			},
		},
		"failures equal to backoffLimit do not fail the Job": {
			job:  job("j").backoffLimit(1).status(status().start(hourAgo).active(1).failed(0)),
			pods: []*podFx{pod("a").failed().endedAt(at(-time.Minute)), pod("b").running()},
			want: syncResult{Action: tracking, Failures: FailureRecord{1, ago(time.Minute)},
				Interim: status().start(hourAgo).active(1).uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).active(1).failed(1).obj(),
			},
		},
		"a failing Job deletes its running Pods and counts them failed; it ends once they are gone": {
			job:  job("j").backoffLimit(0).parallelism(2).started(hourAgo),
			pods: []*podFx{pod("a").failed(), pod("b").running()},
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing"}, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).terminating(1).uncounted(nil, []string{"a", "b"}).cond(backoffFT()).obj(),
				Release: []string{"a", "b"},
				Final:   status().start(hourAgo).terminating(1).failed(2).cond(backoffFT()).obj(),
			},
		},
		"a failed deletion withdraws the Job's end": {
			job:        job("j").backoffLimit(0).parallelism(2).started(hourAgo),
			pods:       []*podFx{pod("a").failed(), pod("b").running()},
			failDelete: []string{"b"},
			want: syncResult{Action: reconciling, Delete: []string{"b Finishing"}, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).active(1).uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).active(1).failed(1).obj(),
			},
		},
		"unmet expectations withdraw the Job's end": {
			job:               job("j").backoffLimit(0).started(hourAgo),
			pods:              []*podFx{pod("a").failed()},
			expectationsUnmet: true,
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).failed(1).obj(),
			},
		},
		"unmet expectations: no Pod is managed": {
			job:               job("j").started(hourAgo),
			expectationsUnmet: true,
			want:              syncResult{Action: reconciling, Interim: status().start(hourAgo).obj()},
		},
		"a FailJob rule fails the Job with the rule's message": {
			job:  job("j").failurePolicy(onExit(failJob, in, 42)).started(hourAgo),
			pods: []*podFx{pod("a").failed().exit("main", 42)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).uncounted(nil, []string{"a"}).
					cond(cond(batchv1.JobFailureTarget, "PodFailurePolicy", exit42FailJobMsg)).obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{failJob: 1},
				Final: status().start(hourAgo).failed(1).cond(cond(batchv1.JobFailureTarget, "PodFailurePolicy", exit42FailJobMsg)).
					cond(cond(batchv1.JobFailed, "PodFailurePolicy", exit42FailJobMsg)).obj(),
				Events:   []string{"Warning PodFailurePolicy: " + exit42FailJobMsg},
				Finished: "Failed PodFailurePolicy",
			},
		},
		"an ignored failure is not counted, yet backs off the replacement": {
			job:  job("j").failurePolicy(onCond(ignore, corev1.DisruptionTarget, corev1.ConditionTrue)).started(hourAgo),
			pods: []*podFx{pod("a").failed().disrupted()},
			want: syncResult{Action: created, Requeue: 10 * time.Second, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{ignore: 1},
			},
		},
		"a Count rule counts the failure": {
			job:  job("j").failurePolicy(onExit(count, in, 1)).backoffLimit(0).started(hourAgo),
			pods: []*podFx{pod("a").failed().exit("main", 1)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).uncounted(nil, []string{"a"}).cond(backoffFT()).obj(),
				Release: []string{"a"},
				Actions: map[batchv1.PodFailurePolicyAction]int{count: 1},
				Final:   status().start(hourAgo).failed(1).cond(backoffFT()).cond(backoffFailed()).obj(),
				Events:  []string{backoffEvent}, Finished: "Failed BackoffLimitExceeded",
			},
		},
		"the active deadline passed: the Job fails and its Pods are deleted": {
			job:  job("j").deadline(60).started(at(-2 * time.Minute)),
			pods: []*podFx{pod("a").running()},
			want: syncResult{Action: reconciling, Delete: []string{"a Finishing"},
				Interim: status().start(at(-2*time.Minute)).terminating(1).uncounted(nil, []string{"a"}).
					cond(cond(batchv1.JobFailureTarget, "DeadlineExceeded", deadlineMsg)).obj(),
				Release: []string{"a"},
				Final: status().start(at(-2 * time.Minute)).terminating(1).failed(1).
					cond(cond(batchv1.JobFailureTarget, "DeadlineExceeded", deadlineMsg)).obj(),
			},
		},
		"the active deadline ahead: a sync is asked for then": {
			job:  job("j").deadline(60).started(at(-20 * time.Second)),
			pods: []*podFx{pod("a").running()},
			want: syncResult{Action: tracking, Requeue: 40 * time.Second,
				Interim: status().start(at(-20 * time.Second)).active(1).obj()},
		},
		"suspending deletes the Pods, least advanced first, and clears startTime": {
			job:  job("j").parallelism(2).completions(2).suspend().started(hourAgo),
			pods: []*podFx{pod("b").ready(), pod("a").running()},
			want: syncResult{Action: deleted, Delete: []string{"a Suspended -finalizer", "b Suspended -finalizer"},
				Events:  []string{suspendedEvent},
				Interim: status().terminating(2).cond(suspendedCond(t0)).obj(),
			},
		},
		"resuming sets Suspended False, a new startTime and creates Pods": {
			job: job("j").status(bare().cond(suspendedCond(hourAgo))),
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods,
				Events: []string{resumedEvent},
				Interim: status().start(t0).active(1).
					cond(condAt(batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", t0)).obj(),
			},
		},
		"a suspended Job without Pods has nothing to do": {
			job:  job("j").suspend().status(status().cond(suspendedCond(hourAgo))),
			want: syncResult{Action: deleted},
		},
		"a Job created suspended gets no startTime": {
			job: job("j").suspend(),
			want: syncResult{Action: deleted, Events: []string{suspendedEvent},
				Interim: status().cond(suspendedCond(t0)).obj()},
		},
		"a Job never suspended gets no Suspended condition": {
			job:  job("j").status(status().start(hourAgo).active(1)),
			pods: []*podFx{pod("a").running()},
			want: syncResult{Action: tracking},
		},
		"too many Pods: the least advanced is deleted": {
			job:  job("j").started(hourAgo),
			pods: []*podFx{pod("a").ready(), pod("b")},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer"},
				Interim: status().start(hourAgo).active(1).ready(1).terminating(1).obj()},
		},
		"parallelism lowered: the surplus goes, capped by MaxPodChangesPerSync": {
			job:  job("j").completions(5).parallelism(1).started(hourAgo),
			pods: []*podFx{pod("a").running(), pod("b"), pod("c"), pod("d").ready()},
			opts: Options{MaxPodChangesPerSync: 2},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer", "c Excess -finalizer"},
				Interim: status().start(hourAgo).active(2).ready(1).terminating(2).obj()},
		},
		"a failed scale-down deletion leaves the Pod active": {
			job:        job("j").started(hourAgo),
			pods:       []*podFx{pod("a").ready(), pod("b")},
			failDelete: []string{"b"},
			want: syncResult{Action: deleted, Delete: []string{"b Excess -finalizer"},
				Interim: status().start(hourAgo).active(2).ready(1).obj()},
		},
		"a work-queue Job starts parallelism Pods": {
			job:  job("j").workQueue().parallelism(3),
			want: syncResult{Action: created, Create: []string{"j-", "j-", "j-"}, Reason: newPods, Interim: status().start(t0).active(3).obj()},
		},
		"a work-queue Job with a success creates no more Pods and waits for the others": {
			job:  job("j").workQueue().parallelism(2).started(hourAgo),
			pods: []*podFx{pod("a").succeeded(), pod("b").running()},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).active(1).uncounted([]string{"a"}, nil).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).active(1).succeeded(1).obj(),
			},
		},
		"a work-queue Job with a success and nothing running is complete": {
			job:  job("j").workQueue().parallelism(2).started(hourAgo),
			pods: []*podFx{pod("a").succeeded()},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).uncounted([]string{"a"}, nil).cond(reachedSCM()).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).succeeded(1).cond(reachedSCM()).cond(reachedComplete()).done(t0).obj(),
				Events:  []string{completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"the completions left cap the Pods created": {
			job:  job("j").completions(3).parallelism(5).status(status().start(hourAgo).succeeded(2)),
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods, Interim: status().start(hourAgo).succeeded(2).active(1).obj()},
		},
		"MaxPodChangesPerSync caps the creations": {
			job:  job("j").completions(5).parallelism(5),
			opts: Options{MaxPodChangesPerSync: 2},
			want: syncResult{Action: created, Create: []string{"j-", "j-"}, Reason: newPods, Interim: status().start(t0).active(2).obj()},
		},
		"failed creations are not active": {
			job:     job("j").completions(3).parallelism(3),
			created: intp(1),
			want:    syncResult{Action: created, Create: []string{"j-", "j-", "j-"}, Reason: newPods, Interim: status().start(t0).active(1).obj()},
		},
		"a Job being deleted manages no Pod but lets their finalizers go": {
			job:  job("j").deleting().started(hourAgo),
			pods: []*podFx{pod("a").running()},
			want: syncResult{Action: reconciling, Interim: status().start(hourAgo).active(1).obj(), Release: []string{"a"}},
		},
		"a failed finalizer removal keeps the progress and does not end the Job": {
			job:         job("j").completions(2).parallelism(2).started(hourAgo),
			pods:        []*podFx{pod("a").succeeded(), pod("b").succeeded()},
			failRemoval: []string{"b"},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).uncounted([]string{"a", "b"}, nil).cond(reachedSCM()).obj(),
				Release: []string{"a", "b"},
				Final:   status().start(hourAgo).succeeded(1).uncounted([]string{"b"}, nil).cond(reachedSCM()).obj(),
			},
		},
		"a failed finalizer removal with nothing counted writes nothing more": {
			job:         job("j").started(hourAgo),
			pods:        []*podFx{pod("a").succeeded()},
			failRemoval: []string{"a"},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).uncounted([]string{"a"}, nil).cond(reachedSCM()).obj(),
				Release: []string{"a"},
			},
		},
		"a Pod whose finalizer removal is in flight is counted, not counted again": {
			job:      job("j").status(status().start(hourAgo).uncounted(nil, []string{"a"})),
			pods:     []*podFx{pod("a").failed()},
			inFlight: []string{"a"},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: replacement,
				Interim: status().start(hourAgo).active(1).failed(1).obj()},
		},
		"an uncounted Pod that is gone is counted": {
			job: job("j").status(status().start(hourAgo).uncounted([]string{"x"}, nil)),
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).succeeded(1).cond(reachedSCM()).obj(),
				Final:   status().start(hourAgo).succeeded(1).cond(reachedSCM()).cond(reachedComplete()).done(t0).obj(),
				Events:  []string{completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"an uncounted Pod still tracked is not listed twice": {
			job:  job("j").completions(2).parallelism(2).status(status().start(hourAgo).uncounted([]string{"a"}, nil)),
			pods: []*podFx{pod("a").succeeded()},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: newPods,
				Interim: status().start(hourAgo).active(1).uncounted([]string{"a"}, nil).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).active(1).succeeded(1).obj(),
			},
		},
		"a Pod without the finalizer was counted before": {
			job:  job("j").completions(2).parallelism(2).status(status().start(hourAgo).succeeded(1).active(1)),
			pods: []*podFx{pod("a").succeeded().untracked(), pod("b").running()},
			want: syncResult{Action: tracking},
		},
		"an unknown completion mode only warns": {
			job:  job("j").mode("Sparse"),
			pods: []*podFx{pod("a").failed()},
			want: syncResult{Events: []string{unknownModeEvent}},
		},
		"a finished Job is left alone": {
			job:  job("j").status(status().cond(reachedComplete())),
			pods: []*podFx{pod("a").succeeded()},
		},
		"a FailureTarget of an earlier sync: Failed once the Pods are counted": {
			job:  job("j").status(status().start(hourAgo).cond(backoffFT())),
			pods: []*podFx{pod("a").failed()},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).uncounted(nil, []string{"a"}).cond(backoffFT()).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).failed(1).cond(backoffFT()).cond(backoffFailed()).obj(),
				Events:  []string{backoffEvent}, Finished: "Failed BackoffLimitExceeded",
			},
		},
		"a SuccessCriteriaMet of an earlier sync: running Pods deleted, not counted": {
			job:  job("j").status(status().start(hourAgo).cond(reachedSCM())),
			pods: []*podFx{pod("a").running()},
			want: syncResult{Action: reconciling, Delete: []string{"a Finishing"},
				Interim: status().start(hourAgo).terminating(1).cond(reachedSCM()).obj(),
				Release: []string{"a"},
			},
		},
		"a SuccessCriteriaMet of an earlier sync and nothing left: Complete": {
			job: job("j").status(status().start(hourAgo).succeeded(1).cond(reachedSCM())),
			want: syncResult{Action: reconciling,
				Final:  status().start(hourAgo).succeeded(1).cond(reachedSCM()).cond(reachedComplete()).done(t0).obj(),
				Events: []string{completedEvent}, Finished: "Complete CompletionsReached",
			},
		},
		"a SuccessCriteriaMet of an earlier sync wins over a FailJob": {
			job:  job("j").failurePolicy(onExit(failJob, in, 42)).status(status().start(hourAgo).succeeded(1).cond(reachedSCM())),
			pods: []*podFx{pod("a").failed().exit("main", 42)},
			want: syncResult{Action: reconciling, Failures: FailureRecord{1, t0p},
				Release: []string{"a"},
				Final:   status().start(hourAgo).succeeded(1).failed(1).cond(reachedSCM()).cond(reachedComplete()).done(t0).obj(),
				Events:  []string{completedEvent}, Finished: "Complete CompletionsReached",
				Interim: status().start(hourAgo).succeeded(1).uncounted(nil, []string{"a"}).cond(reachedSCM()).obj(),
				Actions: map[batchv1.PodFailurePolicyAction]int{failJob: 1},
			},
		},
		"restartPolicy OnFailure: restarts reaching backoffLimit fail the Job": {
			job:  job("j").restartOnFailure().backoffLimit(2).started(hourAgo),
			pods: []*podFx{pod("a").running().restarts(1, 1)},
			want: syncResult{Action: reconciling, Delete: []string{"a Finishing"},
				Interim: status().start(hourAgo).terminating(1).uncounted(nil, []string{"a"}).cond(backoffFT()).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).terminating(1).failed(1).cond(backoffFT()).obj(),
			},
		},
		"restartPolicy OnFailure with backoffLimit 0: one restart fails the Job": {
			job:  job("j").restartOnFailure().backoffLimit(0).started(hourAgo),
			pods: []*podFx{pod("a").restarts(1)},
			want: syncResult{Action: reconciling, Delete: []string{"a Finishing"},
				Interim: status().start(hourAgo).terminating(1).uncounted(nil, []string{"a"}).cond(backoffFT()).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).terminating(1).failed(1).cond(backoffFT()).obj(),
			},
		},
		"restartPolicy OnFailure: restarts below backoffLimit": {
			job:  job("j").restartOnFailure().backoffLimit(3).status(status().start(hourAgo).active(1)),
			pods: []*podFx{pod("a").running().restarts(1, 1)},
			want: syncResult{Action: tracking},
		},
		"restartPolicy Never: restarts do not count": {
			job:  job("j").backoffLimit(0).status(status().start(hourAgo).active(1)),
			pods: []*podFx{pod("a").running().restarts(3)},
			want: syncResult{Action: tracking},
		},
		"podReplacementPolicy Failed: a terminating Pod holds its slot and is not failed": {
			job:  job("j").replaceFailedOnly().started(hourAgo),
			pods: []*podFx{pod("a").running().deleted()},
			want: syncResult{Action: tracking, Interim: status().start(hourAgo).terminating(1).obj()},
		},
		"podReplacementPolicy Failed: a failed Pod is replaced": {
			job:  job("j").replaceFailedOnly().started(hourAgo),
			pods: []*podFx{pod("a").failed().endedAt(at(-time.Minute))},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: failedAgain, Failures: FailureRecord{1, ago(time.Minute)},
				Interim: status().start(hourAgo).active(1).uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).active(1).failed(1).obj(),
			},
		},
		"TerminatingOrFailed: a terminating Pod is failed and replaced after the backoff": {
			job:  job("j").started(hourAgo),
			pods: []*podFx{pod("a").running().deleted()},
			want: syncResult{Action: created, Requeue: 10 * time.Second, Failures: FailureRecord{1, t0p},
				Interim: status().start(hourAgo).terminating(1).uncounted(nil, []string{"a"}).obj(),
				Release: []string{"a"},
				Final:   status().start(hourAgo).terminating(1).failed(1).obj(),
			},
		},
		"a terminating Pod makes creations replacements": {
			job:  job("j").completions(2).parallelism(2).started(hourAgo),
			pods: []*podFx{pod("a").running(), pod("b").running().deleted().untracked()},
			want: syncResult{Action: created, Create: []string{"j-"}, Reason: replacement,
				Interim: status().start(hourAgo).active(2).terminating(1).obj()},
		},
		"MaxUncountedPods reached: the Job ends in a later sync": {
			job:  job("j").completions(3).parallelism(3).started(hourAgo),
			pods: []*podFx{pod("a").succeeded(), pod("b").succeeded(), pod("c").succeeded()},
			opts: Options{MaxUncountedPods: 2},
			want: syncResult{Action: tracking,
				Interim: status().start(hourAgo).uncounted([]string{"a", "b"}, nil).cond(reachedSCM()).obj(),
				Release: []string{"a", "b"},
				Final:   status().start(hourAgo).succeeded(2).cond(reachedSCM()).obj(),
			},
		},
	})
}
