package job

import (
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/storage/names"
	"k8s.io/klog/v2"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

const (
	// completionIndexEnvName is the environment variable through which a
	// container of an Indexed Job learns its completion index.
	completionIndexEnvName = "JOB_COMPLETION_INDEX"
	// unknownCompletionIndex stands for a Pod whose completion index is
	// missing or not a valid non-negative integer.
	unknownCompletionIndex = -1
)

// isIndexedJob reports whether the Job's completionMode is Indexed.
func isIndexedJob(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

// hasBackoffLimitPerIndex reports whether the Job limits retries per index.
func hasBackoffLimitPerIndex(job *batchv1.Job) bool {
	return job.Spec.BackoffLimitPerIndex != nil
}

// calculateSucceededIndexes returns the succeeded indexes of
// status.completedIndexes (prev) and those together with the indexes whose
// Pods succeeded since the last sync (succeeded). Only Pods that still have
// the tracking finalizer count as new: the others are already in the status.
func calculateSucceededIndexes(logger klog.Logger, job *batchv1.Job, pods []*corev1.Pod) (orderedIntervals, orderedIntervals) {
	completions := int(*job.Spec.Completions)
	prev := parseIndexesFromString(logger, job.Status.CompletedIndexes, completions)
	newSucceeded := sets.New[int]()
	for _, p := range pods {
		ix := getCompletionIndex(p.Annotations)
		if p.Status.Phase == corev1.PodSucceeded && ix != unknownCompletionIndex && ix < completions && hasJobTrackingFinalizer(p) {
			newSucceeded.Insert(ix)
		}
	}
	// sets.List returns the indexes sorted, as withOrderedIndexes needs.
	return prev, prev.withOrderedIndexes(sets.List(newSucceeded))
}

// calculateFailedIndexes returns the indexes of status.failedIndexes together
// with the indexes that failed since the last sync (see isIndexFailed), for
// Jobs with backoffLimitPerIndex.
func calculateFailedIndexes(logger klog.Logger, job *batchv1.Job, pods []*corev1.Pod) *orderedIntervals {
	completions := int(*job.Spec.Completions)
	var prev orderedIntervals
	if job.Status.FailedIndexes != nil {
		prev = parseIndexesFromString(logger, *job.Status.FailedIndexes, completions)
	}
	newFailed := sets.New[int]()
	for _, p := range pods {
		ix := getCompletionIndex(p.Annotations)
		// Pods without the finalizer are already counted in the status.
		if ix != unknownCompletionIndex && ix < completions && hasJobTrackingFinalizer(p) && isIndexFailed(logger, job, p) {
			newFailed.Insert(ix)
		}
	}
	result := prev.withOrderedIndexes(sets.List(newFailed))
	return &result
}

// isIndexFailed reports whether the failure of pod fails its whole index:
// a FailIndex rule of the pod failure policy matched, or the failure counts
// and the index has used up backoffLimitPerIndex.
func isIndexFailed(logger klog.Logger, job *batchv1.Job, pod *corev1.Pod) bool {
	if !isPodFailed(pod, job) {
		return false
	}
	countFailed := true
	if job.Spec.PodFailurePolicy != nil {
		var action *batchv1.PodFailurePolicyAction
		_, countFailed, action = matchPodFailurePolicy(job.Spec.PodFailurePolicy, pod)
		if action != nil && *action == batchv1.PodFailurePolicyActionFailIndex {
			return true
		}
	}
	return countFailed && getIndexFailureCount(logger, pod) >= *job.Spec.BackoffLimitPerIndex
}

// withOrderedIndexes returns a new list of intervals holding oi and
// newIndexes, which must be sorted in increasing order.
func (oi orderedIntervals) withOrderedIndexes(newIndexes []int) orderedIntervals {
	newIndexIntervals := make(orderedIntervals, len(newIndexes))
	for i, ix := range newIndexes {
		newIndexIntervals[i] = interval{ix, ix}
	}
	return oi.merge(newIndexIntervals)
}

// merge returns a new list of intervals holding the indexes of both oi and
// newOi. Overlapping and adjacent intervals are joined, so the result keeps
// the invariant of orderedIntervals.
func (oi orderedIntervals) merge(newOi orderedIntervals) orderedIntervals {
	var result orderedIntervals
	var last *interval
	appendOrExtend := func(iv interval) {
		if last == nil || iv.First > last.Last+1 {
			result = append(result, iv)
			last = &result[len(result)-1]
		} else if last.Last < iv.Last {
			last.Last = iv.Last
		}
	}
	i, j := 0, 0
	for i < len(oi) && j < len(newOi) {
		if oi[i].First < newOi[j].First {
			appendOrExtend(oi[i])
			i++
		} else {
			appendOrExtend(newOi[j])
			j++
		}
	}
	for ; i < len(oi); i++ {
		appendOrExtend(oi[i])
	}
	for ; j < len(newOi); j++ {
		appendOrExtend(newOi[j])
	}
	return result
}

// total returns the number of indexes in the intervals.
func (oi orderedIntervals) total() int {
	var count int
	for _, iv := range oi {
		count += iv.Last - iv.First + 1
	}
	return count
}

// String returns the intervals in the format of status.completedIndexes:
// "1,3-5,7,8" (an interval of two indexes is written as two single indexes).
func (oi orderedIntervals) String() string {
	var b strings.Builder
	for _, iv := range oi {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(iv.First))
		if iv.Last > iv.First {
			if iv.Last == iv.First+1 {
				b.WriteByte(',')
			} else {
				b.WriteByte('-')
			}
			b.WriteString(strconv.Itoa(iv.Last))
		}
	}
	return b.String()
}

// has reports whether ix is in one of the intervals, by binary search.
func (oi orderedIntervals) has(ix int) bool {
	// Find the first interval whose end is not before ix.
	lo, hi := 0, len(oi)
	for lo < hi {
		mid := lo + (hi-lo)/2
		if oi[mid].Last >= ix {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return hi < len(oi) && oi[hi].First <= ix
}

// parseIndexesFromString parses status.completedIndexes or
// status.failedIndexes, dropping indexes not below completions (the Job may
// have been scaled down). A corrupted interval is logged and skipped rather
// than failing the sync: the status is rebuilt from the Pods anyway.
func parseIndexesFromString(logger klog.Logger, indexesStr string, completions int) orderedIntervals {
	if indexesStr == "" {
		return nil
	}
	var result orderedIntervals
	var last *interval
	for _, intervalStr := range strings.Split(indexesStr, ",") {
		limits := strings.Split(intervalStr, "-")
		var iv interval
		var err error
		iv.First, err = strconv.Atoi(limits[0])
		if err != nil {
			logger.Info("Corrupted indexes interval, ignoring", "interval", intervalStr, "err", err)
			continue
		}
		// The string is sorted, so nothing after this is in range either.
		if iv.First >= completions {
			break
		}
		if len(limits) > 1 {
			iv.Last, err = strconv.Atoi(limits[1])
			if err != nil {
				logger.Info("Corrupted indexes interval, ignoring", "interval", intervalStr, "err", err)
				continue
			}
			if iv.Last >= completions {
				iv.Last = completions - 1
			}
		} else {
			iv.Last = iv.First
		}
		if last != nil && last.Last == iv.First-1 {
			last.Last = iv.Last
		} else {
			result = append(result, iv)
			last = &result[len(result)-1]
		}
	}
	return result
}

// firstPendingIndexes returns the first count indexes below completions
// that have no active Pod and have neither succeeded nor failed. With
// podReplacementPolicy Failed, indexes of terminating Pods are not pending
// either: their replacement waits until they are gone.
func firstPendingIndexes(jobCtx *syncJobCtx, count, completions int) []int {
	if count == 0 {
		return nil
	}
	nonPending := jobCtx.succeededIndexes.withOrderedIndexes(sets.List(getIndexes(jobCtx.activePods)))
	if onlyReplaceFailedPods(jobCtx.job) {
		nonPending = nonPending.withOrderedIndexes(sets.List(getIndexes(filterTerminatingPods(jobCtx.pods))))
	}
	if jobCtx.failedIndexes != nil {
		nonPending = nonPending.merge(*jobCtx.failedIndexes)
	}
	// Walk the gaps between non-pending intervals; bounded by
	// len(nonPending) and count, not by completions.
	result := make([]int, 0, count)
	candidate := 0
	for _, iv := range nonPending {
		for ; candidate < completions && len(result) < count && candidate < iv.First; candidate++ {
			result = append(result, candidate)
		}
		if candidate <= iv.Last {
			candidate = iv.Last + 1
		}
	}
	for ; candidate < completions && len(result) < count; candidate++ {
		result = append(result, candidate)
	}
	return result
}

// getIndexes returns the valid completion indexes of pods.
func getIndexes(pods []*corev1.Pod) sets.Set[int] {
	result := sets.New[int]()
	for _, p := range pods {
		if ix := getCompletionIndex(p.Annotations); ix != unknownCompletionIndex {
			result.Insert(ix)
		}
	}
	return result
}

// appendDuplicatedIndexPodsForRemoval sorts the active pods by completion
// index and, for an index held by n Pods, appends n-1 of them to rm and the
// one to keep to left. Pods without a valid index or with an index not below
// completions are all appended to rm.
func appendDuplicatedIndexPodsForRemoval(rm, left, pods []*corev1.Pod, completions int) ([]*corev1.Pod, []*corev1.Pod) {
	sort.Sort(byCompletionIndex(pods))
	lastIndex := unknownCompletionIndex
	firstRepeatPos := 0
	end := len(pods)
	for i, p := range pods {
		ix := getCompletionIndex(p.Annotations)
		if ix >= completions {
			// Sorted, so the rest is out of range too.
			rm = append(rm, pods[i:]...)
			end = i
			break
		}
		if ix != lastIndex {
			rm, left = appendPodsWithSameIndexForRemovalAndRemaining(rm, left, pods[firstRepeatPos:i], lastIndex)
			firstRepeatPos = i
			lastIndex = ix
		}
	}
	return appendPodsWithSameIndexForRemovalAndRemaining(rm, left, pods[firstRepeatPos:end], lastIndex)
}

// appendPodsWithSameIndexForRemovalAndRemaining keeps the Pod of index ix
// that is furthest along (the last in activePods order) and removes the
// others; all Pods without an index are removed.
func appendPodsWithSameIndexForRemovalAndRemaining(rm, left, pods []*corev1.Pod, ix int) ([]*corev1.Pod, []*corev1.Pod) {
	if ix == unknownCompletionIndex {
		return append(rm, pods...), left
	}
	if len(pods) == 1 {
		return rm, append(left, pods[0])
	}
	sort.Sort(activePods(pods))
	rm = append(rm, pods[:len(pods)-1]...)
	left = append(left, pods[len(pods)-1])
	return rm, left
}

// getPodsWithDelayedDeletionPerIndex returns, per index, the failed Pod
// whose finalizer removal (and so deletion) waits until its replacement is
// created, because the replacement's job-index-failure-count annotation is
// computed from it. Indexes that succeeded, failed or have an active Pod
// (which already carries the count) need no such Pod. Of several failed
// Pods of an index, the one with the most failures, and then the one that
// finished last, is kept.
func getPodsWithDelayedDeletionPerIndex(logger klog.Logger, jobCtx *syncJobCtx) map[int]*corev1.Pod {
	activeIndexes := getIndexes(jobCtx.activePods)
	completions := int(*jobCtx.job.Spec.Completions)
	result := make(map[int]*corev1.Pod)
	// getValidPodsWithFilter skips Pods already counted or being counted;
	// the filter collects into result and keeps nothing in the returned list.
	getValidPodsWithFilter(jobCtx, nil, func(p *corev1.Pod) bool {
		if !isPodFailed(p, jobCtx.job) {
			return false
		}
		ix := getCompletionIndex(p.Annotations)
		if ix == unknownCompletionIndex || ix >= completions {
			return false
		}
		if jobCtx.succeededIndexes.has(ix) || activeIndexes.Has(ix) ||
			(jobCtx.failedIndexes != nil && jobCtx.failedIndexes.has(ix)) {
			return false
		}
		last, ok := result[ix]
		if !ok || (getIndexAbsoluteFailureCount(logger, last) <= getIndexAbsoluteFailureCount(logger, p) &&
			!getFinishedTime(p).Before(getFinishedTime(last))) {
			result[ix] = p
		}
		return false
	})
	return result
}

// addIndexFailureCountAnnotation sets the per-index failure counters on the
// template of the Pod that replaces podBeingReplaced (nil for the first Pod
// of an index). template.Annotations must not be nil.
func addIndexFailureCountAnnotation(logger klog.Logger, template *corev1.PodTemplateSpec, job *batchv1.Job, podBeingReplaced *corev1.Pod) {
	failures, ignoredFailures := getNewIndexFailureCounts(logger, job, podBeingReplaced)
	template.Annotations[batch.JobIndexFailureCountAnnotation] = strconv.Itoa(int(failures))
	if ignoredFailures > 0 {
		template.Annotations[batch.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignoredFailures))
	}
}

// getNewIndexFailureCounts returns the failure and ignored-failure counts of
// the Pod that replaces podBeingReplaced: its counts plus its own failure,
// which counts as ignored when the pod failure policy says it does not count.
func getNewIndexFailureCounts(logger klog.Logger, job *batchv1.Job, podBeingReplaced *corev1.Pod) (int32, int32) {
	if podBeingReplaced == nil {
		return 0, 0
	}
	failures := parseIndexFailureCountAnnotation(logger, podBeingReplaced)
	ignoredFailures := parseIndexIgnoredFailureCountAnnotation(logger, podBeingReplaced)
	countFailed := true
	if job.Spec.PodFailurePolicy != nil {
		_, countFailed, _ = matchPodFailurePolicy(job.Spec.PodFailurePolicy, podBeingReplaced)
	}
	if countFailed {
		failures++
	} else {
		ignoredFailures++
	}
	return failures, ignoredFailures
}

// getCompletionIndex returns the completion index in annotations, or
// unknownCompletionIndex when it is missing, not a number or negative.
func getCompletionIndex(annotations map[string]string) int {
	v, ok := annotations[batch.JobCompletionIndexAnnotation]
	if !ok {
		return unknownCompletionIndex
	}
	i, err := strconv.Atoi(v)
	if err != nil || i < 0 {
		return unknownCompletionIndex
	}
	return i
}

// getIndexFailureCount returns the Pod's job-index-failure-count annotation.
// It falls back to 0 when the annotation is missing (for example removed by
// a user), not a number, negative or beyond int32, because users can write
// Pod annotations and a bad value must not break the Job.
func getIndexFailureCount(logger klog.Logger, pod *corev1.Pod) int32 {
	return parseIndexFailureCountAnnotation(logger, pod)
}

// getIndexAbsoluteFailureCount returns the failures of the Pod's index
// counted and ignored alike.
func getIndexAbsoluteFailureCount(logger klog.Logger, pod *corev1.Pod) int32 {
	return parseIndexFailureCountAnnotation(logger, pod) + parseIndexIgnoredFailureCountAnnotation(logger, pod)
}

func parseIndexFailureCountAnnotation(logger klog.Logger, pod *corev1.Pod) int32 {
	if v, ok := pod.Annotations[batch.JobIndexFailureCountAnnotation]; ok {
		return parseInt32(logger, v)
	}
	logger.V(3).Info("There is no expected annotation", "annotationKey", batch.JobIndexFailureCountAnnotation, "pod", klog.KObj(pod), "podUID", pod.UID)
	return 0
}

func parseIndexIgnoredFailureCountAnnotation(logger klog.Logger, pod *corev1.Pod) int32 {
	if v, ok := pod.Annotations[batch.JobIndexIgnoredFailureCountAnnotation]; ok {
		return parseInt32(logger, v)
	}
	return 0
}

func parseInt32(logger klog.Logger, s string) int32 {
	v, err := strconv.Atoi(s)
	if err != nil {
		logger.Error(err, "Failed to parse the value", "value", s)
		return 0
	}
	if v < 0 || v > math.MaxInt32 {
		logger.Info("The value is invalid", "value", v)
		return 0
	}
	return int32(v)
}

// addCompletionIndexEnvVariables gives every container and init container
// of the template the JOB_COMPLETION_INDEX variable, read from the Pod's
// completion index label, unless the container already defines it.
func addCompletionIndexEnvVariables(template *corev1.PodTemplateSpec) {
	for i := range template.Spec.InitContainers {
		addCompletionIndexEnvVariable(&template.Spec.InitContainers[i])
	}
	for i := range template.Spec.Containers {
		addCompletionIndexEnvVariable(&template.Spec.Containers[i])
	}
}

func addCompletionIndexEnvVariable(container *corev1.Container) {
	for _, v := range container.Env {
		if v.Name == completionIndexEnvName {
			return
		}
	}
	container.Env = append(container.Env, corev1.EnvVar{
		Name: completionIndexEnvName,
		ValueFrom: &corev1.EnvVarSource{
			FieldRef: &corev1.ObjectFieldSelector{
				FieldPath: fmt.Sprintf("metadata.labels['%s']", batch.JobCompletionIndexAnnotation),
			},
		},
	})
}

func addCompletionIndexAnnotation(template *corev1.PodTemplateSpec, index int) {
	if template.Annotations == nil {
		template.Annotations = make(map[string]string, 1)
	}
	template.Annotations[batch.JobCompletionIndexAnnotation] = strconv.Itoa(index)
}

func addCompletionIndexLabel(template *corev1.PodTemplateSpec, index int) {
	if template.Labels == nil {
		template.Labels = make(map[string]string, 1)
	}
	// As upstream, the label has the same key as the annotation.
	template.Labels[batch.JobCompletionIndexAnnotation] = strconv.Itoa(index)
}

// podGenerateNameWithIndex returns "<job>-<index>-", cutting the Job name so
// that the prefix fits names.MaxGeneratedNameLength and the index survives.
func podGenerateNameWithIndex(jobName string, index int) string {
	suffix := "-" + strconv.Itoa(index) + "-"
	prefix := jobName + suffix
	if len(prefix) > names.MaxGeneratedNameLength {
		prefix = prefix[:names.MaxGeneratedNameLength-len(suffix)] + suffix
	}
	return prefix
}

// byCompletionIndex sorts Pods by completion index; Pods without a valid
// index come first.
type byCompletionIndex []*corev1.Pod

func (bci byCompletionIndex) Len() int      { return len(bci) }
func (bci byCompletionIndex) Swap(i, j int) { bci[i], bci[j] = bci[j], bci[i] }
func (bci byCompletionIndex) Less(i, j int) bool {
	return getCompletionIndex(bci[i].Annotations) < getCompletionIndex(bci[j].Annotations)
}

// completionModeStr returns the Job's completion mode, NonIndexed when unset.
func completionModeStr(job *batchv1.Job) string {
	if job.Spec.CompletionMode != nil {
		return string(*job.Spec.CompletionMode)
	}
	return string(batchv1.NonIndexedCompletion)
}
