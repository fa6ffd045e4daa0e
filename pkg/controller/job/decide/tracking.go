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
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// The finalizer protocol. A Pod keeps the tracking finalizer until its end
// is in the Job's status, so that no end is lost or counted twice when the
// controller stops half way:
//
//  1. the finished Pods (and the indexes they finished) are written to
//     status.uncountedTerminatedPods (completedIndexes, failedIndexes),
//     with a FailureTarget or SuccessCriteriaMet condition when the Job
//     ends;
//  2. their finalizers are removed;
//  3. the Pods whose finalizer is gone move from the uncounted lists to
//     status.succeeded and status.failed, and once none is left uncounted
//     or terminating, an ending Job gets its Complete or Failed condition.
//
// A sync takes on at most Options.MaxUncountedPods Pods, so that one large
// Job does not hold up the others, and ends the Job in a later sync.

// clone returns a copy of the state whose status and sets can change
// without touching the original: each step can be called again.
func (st *syncState) clone() *syncState {
	c := *st
	c.status = st.status.DeepCopy()
	if st.ending != nil {
		c.ending = st.ending.DeepCopy()
	}
	c.withFinalizer = st.withFinalizer.Clone()
	c.releasing = slices.Clone(st.releasing)
	return &c
}

// AfterPods is the second step of a sync: from what became of the Pods the
// Plan deleted and created, it builds the status to write before any
// finalizer goes and picks the finalizers to remove. An ending Job whose
// Pods were not all deleted, or whose expectations were not met, is not
// ending yet. A Job that now has all its completions and no active Pod is
// complete. The Suspended condition changes here, in a sync that managed
// the Pods.
func (p Plan) AfterPods(out PodOutcome) Tracking {
	if p.state == nil {
		return Tracking{}
	}
	st := p.state.clone()
	var gone, goneReady int32
	for i, d := range p.Deletions {
		if i >= len(out.Deleted) || !out.Deleted[i] {
			continue
		}
		gone++
		// Upstream takes a Pod off the ready count only when its own
		// request deleted it, except when the Job is finishing.
		vanished := i < len(out.NotFound) && out.NotFound[i] && d.Reason != DeleteFinishing
		if podReady(d.Pod) && !vanished {
			goneReady++
		}
	}
	active := int32(len(st.activePods)) - gone + int32(min(max(out.Created, 0), len(p.Creations)))
	st.terminating += gone
	st.ready -= goneReady

	var events []Event
	conditionChanged := false
	if st.finishing {
		if int(gone) != len(st.activePods) || !st.expectationsMet {
			// Pods may still run, or be missing from the snapshot.
			st.ending = nil
		}
	} else if st.complete(active) {
		st.ending = st.newCondition(batchv1.JobSuccessCriteriaMet, batch.JobReasonCompletionsReached, "Reached expected number of succeeded pods")
	} else if st.managed {
		if ev := followSuspend(st.job, st.status, st.now); ev != nil {
			events = append(events, *ev)
			conditionChanged = true
		}
	}

	write := conditionChanged || active != st.status.Active ||
		!ptr.Equal(&st.ready, st.status.Ready) || !ptr.Equal(&st.terminating, st.status.Terminating)
	st.status.Active = active
	st.status.Ready = ptr.To(st.ready)
	st.status.Terminating = ptr.To(st.terminating)
	return st.track(write, events)
}

// complete tells whether the Job has the successes it needs and nothing
// runs any more: for a work-queue Job (completions unset) any success.
func (st *syncState) complete(active int32) bool {
	if active != 0 {
		return false
	}
	if c := st.job.Spec.Completions; c != nil {
		return st.succeeded >= *c
	}
	return st.succeeded > 0
}

// failing tells whether the Job is heading to Failed: then every Pod that
// did not succeed counts as failed.
func (st *syncState) failing() bool {
	return st.ending != nil && st.ending.Type != batchv1.JobSuccessCriteriaMet
}

// releasable tells whether the finalizer of a tracked Pod can go in this
// sync: the Job is being deleted or is ending, or the Pod succeeded, or it
// failed and is not held for its index's replacement.
func (st *syncState) releasable(p *corev1.Pod, failed bool) bool {
	switch {
	case st.job.DeletionTimestamp != nil || st.ending != nil || p.Status.Phase == corev1.PodSucceeded:
		return true
	case !failed:
		return false
	case st.perIndex == nil:
		return true
	}
	ix := podIndex(p)
	held, ok := st.held[ix]
	return ix == noIndex || !ok || held.UID != p.UID
}

// track does step 1 of the protocol: it records the finished Pods as
// uncounted, the indexes they finished and the interim condition.
func (st *syncState) track(write bool, events []Event) Tracking {
	status := st.status
	uncounted := status.UncountedTerminatedPods
	pods := st.pods
	if st.indexed {
		// Indexes are added in ascending order.
		pods = sortByIndex(pods)
	}
	st.withFinalizer = sets.New[types.UID]()
	for _, p := range pods {
		if tracked(p) && !st.inFlight.Has(p.UID) {
			st.withFinalizer.Insert(p.UID)
		}
	}
	if countReleased(status, st.withFinalizer) {
		write = true
	}

	var actions map[batchv1.PodFailurePolicyAction]int
	var succeededIndexes []int
	for _, p := range pods {
		if !st.withFinalizer.Has(p.UID) {
			continue
		}
		failed := podFailed(st.job, p)
		if !st.releasable(p, failed) {
			continue
		}
		st.releasing = append(st.releasing, p)
		ix := podIndex(p)
		inRange := !st.indexed || (ix != noIndex && ix < st.completions)
		switch {
		case p.Status.Phase == corev1.PodSucceeded && !st.uncountedFailed.Has(p.UID):
			if st.indexed {
				// The index alone says the Pod was counted.
				if inRange && !st.succeededBefore.contains(ix) {
					succeededIndexes = append(succeededIndexes, ix)
					write = true
				}
			} else if !st.uncountedSucceeded.Has(p.UID) {
				uncounted.Succeeded = append(uncounted.Succeeded, p.UID)
				write = true
			}
		case (failed || st.failing()) && !st.uncountedFailed.Has(p.UID) && inRange:
			v := judge(st.job.Spec.PodFailurePolicy, p)
			if v.action != nil {
				if actions == nil {
					actions = map[batchv1.PodFailurePolicyAction]int{}
				}
				actions[*v.action]++
			}
			if !v.ignored {
				uncounted.Failed = append(uncounted.Failed, p.UID)
				write = true
			}
		}
		if len(succeededIndexes)+len(uncounted.Succeeded)+len(uncounted.Failed) >= st.opts.MaxUncountedPods {
			// Enough for one sync; the controller queues the next.
			st.capped = true
			break
		}
	}

	if st.indexed {
		st.succeededIndexes = st.succeededIndexes.with(succeededIndexes...)
		text := st.succeededIndexes.String()
		write = write || text != status.CompletedIndexes
		status.CompletedIndexes = text
		status.Succeeded = int32(st.succeededIndexes.count())
		var failedText *string
		if st.perIndex != nil {
			failedText = ptr.To(st.failedIndexes.String())
		}
		if !ptr.Equal(status.FailedIndexes, failedText) {
			status.FailedIndexes = failedText
			write = true
		}
	}
	if st.ending != nil {
		switch st.ending.Type {
		case batchv1.JobFailureTarget:
			status.Conditions = append(status.Conditions, *st.ending)
			write = true
			st.ending = st.newCondition(batchv1.JobFailed, st.ending.Reason, st.ending.Message)
		case batchv1.JobSuccessCriteriaMet:
			if successCriteriaMet(status) == nil {
				status.Conditions = append(status.Conditions, *st.ending)
				write = true
			}
			st.ending = st.newCondition(batchv1.JobComplete, st.ending.Reason, st.ending.Message)
		}
	}

	t := Tracking{RemoveFinalizers: st.releasing, PolicyActions: actions, Events: events, Capped: st.capped, state: st}
	if write {
		t.Interim = status.DeepCopy()
	}
	return t
}

// countReleased moves the uncounted Pods that no longer carry the
// finalizer (withFinalizer lacks them) to the counters. It returns whether
// the status changed.
func countReleased(status *batchv1.JobStatus, withFinalizer sets.Set[types.UID]) bool {
	u := status.UncountedTerminatedPods
	kept := func(uids []types.UID) []types.UID {
		var out []types.UID
		for _, uid := range uids {
			if withFinalizer.Has(uid) {
				out = append(out, uid)
			}
		}
		return out
	}
	changed := false
	if k := kept(u.Succeeded); len(k) != len(u.Succeeded) {
		status.Succeeded += int32(len(u.Succeeded) - len(k))
		u.Succeeded = k
		changed = true
	}
	if k := kept(u.Failed); len(k) != len(u.Failed) {
		status.Failed += int32(len(u.Failed) - len(k))
		u.Failed = k
		changed = true
	}
	return changed
}

// AfterFinalizers is the last step of a sync: the Pods whose finalizer is
// gone (removed; a Pod that was already gone counts) move to the counters,
// and an ending Job with nothing left uncounted or terminating gets its
// Complete or Failed condition. When some finalizer is still on
// (unfinished: its removal failed or was not tried), the progress made is
// kept and the Job does not finish in this sync.
func (t Tracking) AfterFinalizers(removed sets.Set[types.UID], unfinished bool) Final {
	if t.state == nil {
		return Final{}
	}
	st := t.state.clone()
	for _, p := range st.releasing {
		if removed.Has(p.UID) {
			st.withFinalizer.Delete(p.UID)
		}
	}
	write := countReleased(st.status, st.withFinalizer)
	var out Final
	if !unfinished && !st.capped {
		if end := st.finish(); end != nil {
			write = true
			out.Finished = end
			out.Events = st.endEvents(end)
		}
	}
	if write {
		out.Status = st.status.DeepCopy()
	}
	return out
}

// finish sets the Job's terminal condition when it is ending and no Pod is
// left uncounted or terminating, and returns it.
func (st *syncState) finish() *batchv1.JobCondition {
	u := st.status.UncountedTerminatedPods
	if st.ending == nil || len(u.Succeeded)+len(u.Failed) > 0 || ptr.Deref(st.status.Terminating, 0) > 0 {
		return nil
	}
	end := st.ending
	setCondition(st.status, end.Type, end.Status, end.Reason, end.Message, st.now)
	if end.Type == batchv1.JobComplete {
		st.status.CompletionTime = ptr.To(end.LastTransitionTime)
	}
	return end.DeepCopy()
}

// endEvents are the Events that tell of the Job's end.
func (st *syncState) endEvents(end *batchv1.JobCondition) []Event {
	if end.Type != batchv1.JobComplete {
		return []Event{{Type: corev1.EventTypeWarning, Reason: end.Reason, Message: end.Message}}
	}
	var events []Event
	if c := st.job.Spec.Completions; c != nil && st.status.Succeeded > *c {
		events = append(events, Event{Type: corev1.EventTypeWarning, Reason: "TooManySucceededPods",
			Message: "Too many succeeded pods running after completion count reached"})
	}
	return append(events, Event{Type: corev1.EventTypeNormal, Reason: "Completed", Message: "Job completed"})
}
