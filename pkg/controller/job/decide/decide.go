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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
)

// DefaultOptions are upstream's tunables.
func DefaultOptions() Options {
	return Options{
		MaxUncountedPods:     500,
		MaxPodChangesPerSync: 500,
		PodBackoff:           10 * time.Second,
		MaxPodBackoff:        10 * time.Minute,
		BatchPeriod:          time.Second,
	}
}

// withDefaults fills the fields left zero with DefaultOptions.
func (o Options) withDefaults() Options {
	d := DefaultOptions()
	if o.MaxUncountedPods <= 0 {
		o.MaxUncountedPods = d.MaxUncountedPods
	}
	if o.MaxPodChangesPerSync <= 0 {
		o.MaxPodChangesPerSync = d.MaxPodChangesPerSync
	}
	if o.PodBackoff <= 0 {
		o.PodBackoff = d.PodBackoff
	}
	if o.MaxPodBackoff <= 0 {
		o.MaxPodBackoff = d.MaxPodBackoff
	}
	if o.BatchPeriod <= 0 {
		o.BatchPeriod = d.BatchPeriod
	}
	return o
}

// Decide is the first step of a sync: it judges whether the Job has come
// to an end and plans the Pods to delete or create.
//
// The end is judged in this order, the first that holds deciding: a
// SuccessCriteriaMet or FailureTarget condition of an earlier sync; a
// failed Pod matching a FailJob rule; the backoffLimit (failed Pods, or
// container restarts under restartPolicy OnFailure); the active deadline;
// for an Indexed Job with backoffLimitPerIndex, maxFailedIndexes and then
// failed indexes accounting for every remaining index; the successPolicy.
// An ending Job has its active Pods deleted. Otherwise, once the
// expectations are met and the Job is not being deleted, its Pods are
// managed: all deleted while it is suspended, the surplus deleted, or the
// missing created once the replacement backoff is over.
//
// A Job of an unknown completion mode gets a Plan holding only a warning
// Event; a finished Job an empty Plan (it is not to be synced).
// Snapshot.Options fields left zero take DefaultOptions.
func Decide(s Snapshot) Plan {
	job := s.Job
	if !knownMode(job) {
		return Plan{Events: []Event{{Type: corev1.EventTypeWarning, Reason: "UnknownCompletionMode",
			Message: "Skipped Job sync because completion mode is unknown"}}}
	}
	if IsFinished(job) {
		return Plan{}
	}
	st := newSyncState(s)
	plan := Plan{SyncAction: metrics.JobSyncActionReconciling, Failures: st.record, state: st}
	st.judgeEnd(&plan)
	switch {
	case st.ending != nil:
		st.finishing = true
		for _, p := range st.activePods {
			plan.Deletions = append(plan.Deletions, PodDeletion{Pod: p, Reason: DeleteFinishing})
		}
	case s.ExpectationsMet && job.DeletionTimestamp == nil:
		st.managed = true
		st.manage(&plan)
	}
	return plan
}

func newSyncState(s Snapshot) *syncState {
	job := s.Job
	st := &syncState{
		job:             job,
		opts:            s.Options.withDefaults(),
		now:             s.Now,
		expectationsMet: s.ExpectationsMet,
		nsTerminating:   s.NamespaceTerminating,
		schedulingGroup: s.SchedulingGroup,
		indexed:         isIndexed(job),
		completions:     int(ptr.Deref(job.Spec.Completions, 0)),
		perIndex:        job.Spec.BackoffLimitPerIndex,
		status:          job.Status.DeepCopy(),
		pods:            s.Pods,
		inFlight:        s.FinalizersInFlight,
	}
	if st.status.UncountedTerminatedPods == nil {
		st.status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}
	st.uncountedSucceeded = sets.New(st.status.UncountedTerminatedPods.Succeeded...)
	st.uncountedFailed = sets.New(st.status.UncountedTerminatedPods.Failed...)

	census := countPods(s.Pods)
	st.activePods, st.ready, st.terminating = census.active, census.ready, census.terminating

	newSucceeded, newFailed := st.newlyFinished()
	counted := 0
	for _, p := range newFailed {
		if !judge(job.Spec.PodFailurePolicy, p).ignored {
			counted++
		}
	}
	st.succeeded = st.status.Succeeded + int32(len(newSucceeded)+st.uncountedSucceeded.Len())
	st.failed = st.status.Failed + int32(counted+st.uncountedFailed.Len())
	st.record = nextFailureRecord(s.Failures, newSucceeded, newFailed)

	if st.status.StartTime == nil && !suspended(job) {
		st.status.StartTime = ptr.To(metav1.NewTime(s.Now))
	}
	return st
}

// newlyFinished returns the tracked Pods that finished and are not in the
// status yet, not even as uncounted. Pods of an Indexed Job without a valid
// index below completions are not the Job's work and do not count.
func (st *syncState) newlyFinished() (succeeded, failed []*corev1.Pod) {
	for _, p := range st.pods {
		if !tracked(p) || st.inFlight.Has(p.UID) {
			continue
		}
		if st.indexed {
			if ix := podIndex(p); ix == noIndex || ix >= st.completions {
				continue
			}
		}
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !st.uncountedSucceeded.Has(p.UID):
			succeeded = append(succeeded, p)
		case podFailed(st.job, p) && !st.uncountedFailed.Has(p.UID):
			failed = append(failed, p)
		}
	}
	return succeeded, failed
}

// judgeEnd finds the condition the Job is heading to, if any (see Decide).
func (st *syncState) judgeEnd(plan *Plan) {
	job, status := st.job, st.status
	if c := successCriteriaMet(status); c != nil {
		st.ending = c.DeepCopy()
	} else if ft := trueCondition(status, batchv1.JobFailureTarget); ft != nil {
		st.ending = st.newCondition(batchv1.JobFailed, ft.Reason, ft.Message)
	} else if msg, ok := failJobMessage(job, st.pods); ok {
		st.ending = st.newCondition(batchv1.JobFailureTarget, batch.JobReasonPodFailurePolicy, msg)
	}
	if st.ending == nil {
		left, running := deadlineLeft(job, timeOf(status.StartTime), st.now)
		switch {
		case st.failed > ptr.Deref(job.Spec.BackoffLimit, 6) || restartsExhausted(job, st.pods):
			st.ending = st.newCondition(batchv1.JobFailureTarget, batch.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit")
		case running && left <= 0:
			st.ending = st.newCondition(batchv1.JobFailureTarget, batch.JobReasonDeadlineExceeded, "Job was active longer than specified deadline")
		case running:
			plan.requeue(left)
		}
	}
	if !st.indexed {
		return
	}
	st.succeededBefore, st.succeededIndexes = finishedIndexes(status, st.pods, st.completions)
	st.succeeded = int32(st.succeededIndexes.count())
	if st.perIndex != nil {
		st.failedIndexes = failedIndexes(job, status, st.pods, *st.perIndex, st.completions)
		failed := st.failedIndexes.count()
		if st.ending == nil {
			if job.Spec.MaxFailedIndexes != nil && failed > int(*job.Spec.MaxFailedIndexes) {
				st.ending = st.newCondition(batchv1.JobFailureTarget, batch.JobReasonMaxFailedIndexesExceeded,
					"Job has exceeded the specified maximal number of failed indexes")
			} else if failed > 0 && failed+st.succeededIndexes.count() >= st.completions {
				st.ending = st.newCondition(batchv1.JobFailureTarget, batch.JobReasonFailedIndexes, "Job has failed indexes")
			}
		}
		// A namespace being deleted takes no new Pod: a failed Pod kept
		// for a replacement would block its deletion for good.
		if !st.nsTerminating {
			st.held = heldForReplacement(job, st.pods, st.inFlight, st.activePods, st.succeededIndexes, st.failedIndexes, st.completions)
		}
	}
	if st.ending == nil {
		if msg, met := successPolicyMet(job.Spec.SuccessPolicy, int32(st.completions), st.succeededIndexes); met {
			st.ending = st.newCondition(batchv1.JobSuccessCriteriaMet, batch.JobReasonSuccessPolicy, msg)
		}
	}
}

func (st *syncState) newCondition(t batchv1.JobConditionType, reason, message string) *batchv1.JobCondition {
	c := condition(t, corev1.ConditionTrue, reason, message, st.now)
	return &c
}

func timeOf(t *metav1.Time) *time.Time {
	if t == nil {
		return nil
	}
	return &t.Time
}

// manage plans the Pod deletions or creations of a running Job.
func (st *syncState) manage(plan *Plan) {
	job := st.job
	active := int32(len(st.activePods))
	if suspended(job) {
		plan.SyncAction = metrics.JobSyncActionPodsDeleted
		for _, p := range podsToDelete(st.activePods, st.indexed, st.completions, int(active)) {
			plan.Deletions = append(plan.Deletions, PodDeletion{Pod: p, Reason: DeleteSuspended, RemoveFinalizer: true})
		}
		return
	}
	want := st.wanted(active)
	surplus := podsToDelete(st.activePods, st.indexed, st.completions, int(max(active-want, 0)))
	if len(surplus) > 0 {
		plan.SyncAction = metrics.JobSyncActionPodsDeleted
		if len(surplus) > st.opts.MaxPodChangesPerSync {
			st.moreNextSync(plan)
		}
		for _, p := range surplus[:min(len(surplus), st.opts.MaxPodChangesPerSync)] {
			plan.Deletions = append(plan.Deletions, PodDeletion{Pod: p, Reason: DeleteExcess, RemoveFinalizer: true})
		}
		return
	}
	missing := want - slotsHeldByTerminating(job, st.terminating) - active
	if missing <= 0 {
		plan.SyncAction = metrics.JobSyncActionTracking
		return
	}
	plan.SyncAction = metrics.JobSyncActionPodsCreated
	if st.perIndex == nil {
		if wait := backoffLeft(st.opts, st.record.FailuresSinceSuccess, st.record.LastFailure, st.now); wait > 0 {
			plan.requeue(max(wait, st.opts.BatchPeriod))
			return
		}
	}
	n := min(int(missing), st.opts.MaxPodChangesPerSync)
	if int(missing) > n {
		st.moreNextSync(plan)
	}
	var indexes []int
	if st.indexed {
		indexes = st.pendingIndexes(n)
		if st.perIndex != nil {
			var wait time.Duration
			if indexes, wait = st.indexesDue(indexes); wait > 0 {
				plan.requeue(max(wait, st.opts.BatchPeriod))
				return
			}
		}
		n = len(indexes)
	}
	if n == 0 {
		return
	}
	plan.Creations = creations(job, n, indexes, st.held, st.schedulingGroup)
	plan.CreationReason = creationReason(job, st.failed, st.terminating)
}

// wanted is how many Pods the Job wants active: for a work-queue Job
// (completions unset) parallelism until a Pod succeeds, then only those
// still running; for the others parallelism, but never more than the
// completions still missing.
func (st *syncState) wanted(active int32) int32 {
	parallelism := ptr.Deref(st.job.Spec.Parallelism, 1)
	completions := st.job.Spec.Completions
	switch {
	case completions != nil:
		return max(min(*completions-st.succeeded, parallelism), 0)
	case st.succeeded > 0:
		return active
	default:
		return parallelism
	}
}

// pendingIndexes returns the first n indexes that no Pod works on: not
// succeeded, not failed for good, without an active Pod and, when the Job
// waits for Pods to fail before replacing them, without a terminating one.
func (st *syncState) pendingIndexes(n int) []int {
	taken := st.succeededIndexes.with(indexesOf(st.activePods)...).union(st.failedIndexes)
	if waitsForFailure(st.job) {
		var terminating []*corev1.Pod
		for _, p := range st.pods {
			if podTerminating(p) {
				terminating = append(terminating, p)
			}
		}
		taken = taken.with(indexesOf(terminating)...)
	}
	return taken.firstMissing(n, st.completions)
}

// indexesDue keeps the indexes whose own backoff is over. When none is, it
// returns the shortest wait instead.
func (st *syncState) indexesDue(indexes []int) ([]int, time.Duration) {
	var due []int
	var wait time.Duration
	for _, ix := range indexes {
		left := indexBackoffLeft(st.opts, st.held[ix], st.now)
		switch {
		case left == 0:
			due = append(due, ix)
		case wait == 0 || left < wait:
			wait = left
		}
	}
	if len(due) > 0 {
		return due, 0
	}
	return nil, wait
}

// moreNextSync asks for the sync that goes on with the Pod changes this one
// leaves past Options.MaxPodChangesPerSync, a batch period from now, when
// the informer's events of this sync's changes would queue it upstream
// (here they do not: see the controller's event handlers).
func (st *syncState) moreNextSync(plan *Plan) {
	plan.requeue(st.opts.BatchPeriod)
}

// requeue asks for a sync after d at the latest.
func (p *Plan) requeue(d time.Duration) {
	if d > 0 && (p.RequeueAfter == 0 || d < p.RequeueAfter) {
		p.RequeueAfter = d
	}
}
