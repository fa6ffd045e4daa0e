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
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// backoffLimitPerIndex gives each index of an Indexed Job its own budget of
// failures. The count travels from a failed Pod to its replacement in two
// annotations (failures that count, failures the podFailurePolicy
// ignored), so the controller keeps the finalizer of an index's last failed
// Pod until the replacement is created from it. An index out of budget, or
// whose Pod matched a FailIndex rule, is failed for good and listed in
// status.failedIndexes; maxFailedIndexes bounds how many may be.

// failureCounts reads the failure counts a Pod carries. A missing, negative
// or oversized value reads as 0: users can edit Pod annotations, and a bad
// one must not wedge the Job.
func failureCounts(p *corev1.Pod) (counted, ignored int32) {
	return annotationCount(p, batch.JobIndexFailureCountAnnotation), annotationCount(p, batch.JobIndexIgnoredFailureCountAnnotation)
}

func annotationCount(p *corev1.Pod, key string) int32 {
	n, err := strconv.Atoi(p.Annotations[key])
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0
	}
	return int32(n)
}

// replacementCounts returns the failure counts of the Pod that replaces
// failed (nil for the first Pod of an index): the failed Pod's counts with
// its own failure added to one of them.
func replacementCounts(job *batchv1.Job, failed *corev1.Pod) (counted, ignored int32) {
	if failed == nil {
		return 0, 0
	}
	counted, ignored = failureCounts(failed)
	if judge(job.Spec.PodFailurePolicy, failed).ignored {
		return counted, ignored + 1
	}
	return counted + 1, ignored
}

// failsIndex tells whether the failure of p ends its index: a FailIndex
// rule matched, or the failure counts and the index had no budget left.
func failsIndex(job *batchv1.Job, limit int32, p *corev1.Pod) bool {
	if !podFailed(job, p) {
		return false
	}
	v := judge(job.Spec.PodFailurePolicy, p)
	if v.is(batchv1.PodFailurePolicyActionFailIndex) {
		return true
	}
	counted, _ := failureCounts(p)
	return !v.ignored && counted >= limit
}

// tracked tells whether p still carries the tracking finalizer, so its end
// is not in the status yet.
func tracked(p *corev1.Pod) bool { return HasTrackingFinalizer(p) }

// finishedIndexes returns the indexes the status already lists as
// succeeded (before) and those together with the indexes of the tracked
// Pods that succeeded since (now). Indexes at or above completions are left
// out: an elastic Job may have had more.
func finishedIndexes(status *batchv1.JobStatus, pods []*corev1.Pod, completions int) (before, now indexSet) {
	before = parseIndexSet(status.CompletedIndexes, completions)
	var fresh []int
	for _, p := range pods {
		if ix := podIndex(p); p.Status.Phase == corev1.PodSucceeded && ix != noIndex && ix < completions && tracked(p) {
			fresh = append(fresh, ix)
		}
	}
	return before, before.with(fresh...)
}

// failedIndexes returns status.failedIndexes together with the indexes
// that tracked Pods failed for good since.
func failedIndexes(job *batchv1.Job, status *batchv1.JobStatus, pods []*corev1.Pod, limit int32, completions int) indexSet {
	var before indexSet
	if status.FailedIndexes != nil {
		before = parseIndexSet(*status.FailedIndexes, completions)
	}
	var fresh []int
	for _, p := range pods {
		if ix := podIndex(p); ix != noIndex && ix < completions && tracked(p) && failsIndex(job, limit, p) {
			fresh = append(fresh, ix)
		}
	}
	return before.with(fresh...)
}

// heldForReplacement returns, per index, the failed Pod whose finalizer
// stays until the index's replacement is created from it. An index that
// succeeded, failed for good or has an active Pod (which already carries
// the counts) holds none. Of several failed Pods of an index the one with
// the most failures is held, and of those the one that finished last.
func heldForReplacement(job *batchv1.Job, pods []*corev1.Pod, inFlight sets.Set[types.UID], active []*corev1.Pod,
	succeeded, failed indexSet, completions int) map[int]*corev1.Pod {
	busy := sets.New(indexesOf(active)...)
	held := map[int]*corev1.Pod{}
	for _, p := range pods {
		if !tracked(p) || inFlight.Has(p.UID) || !podFailed(job, p) {
			continue
		}
		ix := podIndex(p)
		if ix == noIndex || ix >= completions || busy.Has(ix) || succeeded.contains(ix) || failed.contains(ix) {
			continue
		}
		if cur, ok := held[ix]; !ok || laterFailure(p, cur) {
			held[ix] = p
		}
	}
	return held
}

// laterFailure tells whether p, rather than cur, is the last failure of
// their index: it has at least as many failures behind it and did not
// finish before cur.
func laterFailure(p, cur *corev1.Pod) bool {
	pc, pi := failureCounts(p)
	cc, ci := failureCounts(cur)
	return pc+pi >= cc+ci && !finishTime(p).Before(finishTime(cur))
}
