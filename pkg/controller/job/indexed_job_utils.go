package job

import (
	"fmt"
	"math"
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

func isIndexedJob(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

func hasBackoffLimitPerIndex(job *batchv1.Job) bool {
	return job.Spec.BackoffLimitPerIndex != nil
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
