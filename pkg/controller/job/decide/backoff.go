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
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// Failed Pods are replaced after a delay that doubles with each failure in
// a row: Options.PodBackoff after the first, capped at MaxPodBackoff. A Job
// counts its failures since its last success (FailureRecord); a Job with
// backoffLimitPerIndex counts them per index instead, in the failure count
// annotations of the index's Pods.

// finishTime tells when a finished Pod finished, from the best evidence it
// carries: the last FinishedAt of its containers and sidecars once all have
// one; else when Ready turned False (the kubelet does that when the Pod
// ends); else when it was deleted (a Pod the garbage collector removed
// never ran to an end); else, for want of anything better, its creation.
func finishTime(p *corev1.Pod) time.Time {
	if t, ok := containersFinished(p); ok {
		return t
	}
	if c := readyCondition(p); c != nil && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
		return c.LastTransitionTime.Time
	}
	if p.DeletionTimestamp != nil {
		grace := time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second
		return p.DeletionTimestamp.Add(-grace)
	}
	return p.CreationTimestamp.Time
}

// containersFinished returns the last FinishedAt of the Pod's containers
// and sidecars (init containers that restart Always: they stop after the
// others), and false while one of them has none or there is no container
// status at all. Plain init containers ended before the others started.
func containersFinished(p *corev1.Pod) (time.Time, bool) {
	sidecars := sets.New[string]()
	for _, c := range p.Spec.InitContainers {
		if ptr.Deref(c.RestartPolicy, "") == corev1.ContainerRestartPolicyAlways {
			sidecars.Insert(c.Name)
		}
	}
	var last time.Time
	seen := false
	consider := func(cs corev1.ContainerStatus) bool {
		term := cs.State.Terminated
		if term == nil || term.FinishedAt.IsZero() {
			return false
		}
		if !seen || term.FinishedAt.After(last) {
			last = term.FinishedAt.Time
		}
		seen = true
		return true
	}
	for _, cs := range p.Status.ContainerStatuses {
		if !consider(cs) {
			return time.Time{}, false
		}
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if sidecars.Has(cs.Name) && !consider(cs) {
			return time.Time{}, false
		}
	}
	return last, seen
}

// lastFinished returns the latest finish time of pods, which must not be
// empty.
func lastFinished(pods []*corev1.Pod) time.Time {
	last := finishTime(pods[0])
	for _, p := range pods[1:] {
		if t := finishTime(p); t.After(last) {
			last = t
		}
	}
	return last
}

// nextFailureRecord is the record after the Pods newly found succeeded and
// failed in this sync. A success starts the count over: only the failures
// that finished after the last success stay.
func nextFailureRecord(prev FailureRecord, succeeded, failed []*corev1.Pod) FailureRecord {
	if len(succeeded) == 0 {
		if len(failed) == 0 {
			return prev
		}
		last := lastFinished(failed)
		return FailureRecord{FailuresSinceSuccess: prev.FailuresSinceSuccess + int32(len(failed)), LastFailure: &last}
	}
	success := lastFinished(succeeded)
	var next FailureRecord
	for _, p := range failed {
		t := finishTime(p)
		if !t.After(success) {
			continue
		}
		next.FailuresSinceSuccess++
		if next.LastFailure == nil || t.After(*next.LastFailure) {
			next.LastFailure = &t
		}
	}
	return next
}

// backoffLeft is what remains at now of the delay after failures failures
// in a row, the last one at last.
func backoffLeft(opts Options, failures int32, last *time.Time, now time.Time) time.Duration {
	if failures == 0 || last == nil {
		return 0
	}
	delay := opts.PodBackoff
	for n := int32(1); n < failures; n++ {
		if delay *= 2; delay >= opts.MaxPodBackoff {
			delay = opts.MaxPodBackoff
			break
		}
	}
	return max(delay-now.Sub(*last), 0)
}

// indexBackoffLeft is what remains at now of the delay before the index
// whose last failed Pod is last (nil: the index never failed) gets a new
// Pod. Every failure of the index counts, ignored ones too: they are
// failures in a row all the same.
func indexBackoffLeft(opts Options, last *corev1.Pod, now time.Time) time.Duration {
	if last == nil {
		return 0
	}
	counted, ignored := failureCounts(last)
	at := finishTime(last)
	return backoffLeft(opts, counted+ignored+1, &at, now)
}

// restartsExhausted tells whether a Job with restartPolicy OnFailure, whose
// failures are container restarts rather than failed Pods, has used up its
// backoffLimit: the restarts of the containers of its Pending and Running
// Pods reach it (a limit of 0 allows none).
func restartsExhausted(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var n int32
	for _, p := range pods {
		if p.Status.Phase != corev1.PodPending && p.Status.Phase != corev1.PodRunning {
			continue
		}
		n += restartSum(p)
	}
	limit := ptr.Deref(job.Spec.BackoffLimit, 6)
	return n > 0 && n >= limit
}
