package job

import (
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
)

// backoffStore keeps the backoffRecord of each Job across syncs, keyed by the
// Job's queue key. It lives in memory only: after a restart the controller
// starts the delays over, as upstream does.
type backoffStore struct {
	store cache.Store
}

// newBackoffStore returns an empty, thread-safe backoffStore.
func newBackoffStore() *backoffStore {
	return &backoffStore{store: cache.NewStore(backoffRecordKeyFunc)}
}

func backoffRecordKeyFunc(obj interface{}) (string, error) {
	if r, ok := obj.(*backoffRecord); ok {
		return r.key, nil
	}
	return "", fmt.Errorf("could not find key for obj %#v", obj)
}

// updateBackoffRecord stores record under record.key, replacing the one
// there.
func (s *backoffStore) updateBackoffRecord(record backoffRecord) error {
	_, exists, err := s.store.GetByKey(record.key)
	if err != nil {
		return fmt.Errorf("getting backoff record %q: %w", record.key, err)
	}
	// Store a copy so the caller's value and the stored one never alias.
	stored := record
	if exists {
		err = s.store.Update(&stored)
	} else {
		err = s.store.Add(&stored)
	}
	if err != nil {
		return fmt.Errorf("storing backoff record %q: %w", record.key, err)
	}
	return nil
}

// removeBackoffRecord forgets the record of jobID, if there is one.
func (s *backoffStore) removeBackoffRecord(jobID string) error {
	obj, exists, err := s.store.GetByKey(jobID)
	if err != nil {
		return fmt.Errorf("getting backoff record %q: %w", jobID, err)
	}
	if !exists {
		return nil
	}
	if err := s.store.Delete(obj); err != nil {
		return fmt.Errorf("removing backoff record %q: %w", jobID, err)
	}
	return nil
}

// newBackoffRecord returns the record of the Job key after the Pods that
// finished since the last sync, without storing it: the caller stores it
// once the status that counts those Pods is written. A success resets the
// count; only the failures after the last success count toward the delay.
// It sorts newSucceededPods and newFailedPods by finish time, in place.
func (s *backoffStore) newBackoffRecord(key string, newSucceededPods []*corev1.Pod, newFailedPods []*corev1.Pod) backoffRecord {
	record := backoffRecord{key: key}
	if obj, exists, _ := s.store.GetByKey(key); exists {
		old := obj.(*backoffRecord)
		record.failuresAfterLastSuccess = old.failuresAfterLastSuccess
		record.lastFailureTime = old.lastFailureTime
	}

	sortByFinishedTime(newSucceededPods)
	sortByFinishedTime(newFailedPods)

	if len(newSucceededPods) == 0 {
		if len(newFailedPods) == 0 {
			return record
		}
		record.failuresAfterLastSuccess += int32(len(newFailedPods))
		lastFailureTime := getFinishedTime(newFailedPods[len(newFailedPods)-1])
		record.lastFailureTime = &lastFailureTime
		return record
	}

	record.failuresAfterLastSuccess = 0
	record.lastFailureTime = nil
	lastSuccessTime := getFinishedTime(newSucceededPods[len(newSucceededPods)-1])
	// Count the failures that finished after the last success, newest first.
	for i := len(newFailedPods) - 1; i >= 0; i-- {
		failedTime := getFinishedTime(newFailedPods[i])
		if !failedTime.After(lastSuccessTime) {
			break
		}
		if record.lastFailureTime == nil {
			record.lastFailureTime = &failedTime
		}
		record.failuresAfterLastSuccess++
	}
	return record
}

// sortByFinishedTime sorts pods by getFinishedTime, earliest first.
func sortByFinishedTime(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		return getFinishedTime(pods[i]).Before(getFinishedTime(pods[j]))
	})
}

// getFinishedTime returns when the Pod finished, taking the first of:
//  1. the latest FinishedAt of its containers (and sidecars), when all of
//     them terminated;
//  2. the last transition time of a Ready=False condition;
//  3. its deletionTimestamp minus the grace period, the moment of deletion;
//  4. its creation time.
//
// The kubelet sets Ready=False when a Pod turns terminal, so its Pods stop at
// 1 or 2; orphaned Pods removed by the Pod garbage collector stop at 3. The
// creation time is a last resort a cluster with a kubelet should not reach.
func getFinishedTime(p *corev1.Pod) time.Time {
	if t := finishTimeFromContainers(p); t != nil {
		return *t
	}
	if t := finishTimeFromPodReadyFalseCondition(p); t != nil {
		return *t
	}
	if t := finishTimeFromDeletionTimestamp(p); t != nil {
		return *t
	}
	return p.CreationTimestamp.Time
}

// finishTimeFromContainers returns the latest FinishedAt of the regular
// containers and the sidecars (restartable init containers), nil if one of
// them has not terminated or has no FinishedAt. Sidecars count because they
// stop after the regular containers; plain init containers do not, as they
// finished before the regular containers started.
func finishTimeFromContainers(p *corev1.Pod) *time.Time {
	finishTime, ok := latestFinishTime(nil, p.Status.ContainerStatuses, nil)
	if !ok {
		return nil
	}
	sidecars := sets.New[string]()
	for _, c := range p.Spec.InitContainers {
		if ptr.Deref(c.RestartPolicy, "") == corev1.ContainerRestartPolicyAlways {
			sidecars.Insert(c.Name)
		}
	}
	finishTime, ok = latestFinishTime(finishTime, p.Status.InitContainerStatuses, func(cs *corev1.ContainerStatus) bool {
		return sidecars.Has(cs.Name)
	})
	if !ok {
		return nil
	}
	return finishTime
}

// latestFinishTime returns the latest of prev and the FinishedAt of the
// statuses include accepts (all when include is nil); ok is false when one
// of them has not terminated or has no FinishedAt.
func latestFinishTime(prev *time.Time, statuses []corev1.ContainerStatus, include func(*corev1.ContainerStatus) bool) (*time.Time, bool) {
	latest := prev
	for i := range statuses {
		cs := &statuses[i]
		if include != nil && !include(cs) {
			continue
		}
		if cs.State.Terminated == nil || cs.State.Terminated.FinishedAt.IsZero() {
			return nil, false
		}
		if t := cs.State.Terminated.FinishedAt.Time; latest == nil || latest.Before(t) {
			latest = &t
		}
	}
	return latest, true
}

func finishTimeFromPodReadyFalseCondition(p *corev1.Pod) *time.Time {
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		if c.Type != corev1.PodReady {
			continue
		}
		if c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return &c.LastTransitionTime.Time
		}
		// Only the first Ready condition counts, as in upstream's lookup.
		return nil
	}
	return nil
}

func finishTimeFromDeletionTimestamp(p *corev1.Pod) *time.Time {
	if p.DeletionTimestamp == nil {
		return nil
	}
	t := p.DeletionTimestamp.Add(-time.Duration(ptr.Deref(p.DeletionGracePeriodSeconds, 0)) * time.Second)
	return &t
}

// getRemainingTime returns how long the controller still has to wait before
// creating Pods of the Job, after the failures of the record.
func (backoff backoffRecord) getRemainingTime(clk clock.PassiveClock, defaultBackoff, maxBackoff time.Duration) time.Duration {
	return getRemainingTimeForFailuresCount(clk, defaultBackoff, maxBackoff, backoff.failuresAfterLastSuccess, backoff.lastFailureTime)
}

// getRemainingTimePerIndex returns how long the controller still has to wait
// before replacing the Pod of an index whose last failed Pod is
// lastFailedPod (nil when the index never failed). The consecutive failures
// of the index come from that Pod's failure count annotations, counted and
// ignored alike, plus the Pod's own failure.
func getRemainingTimePerIndex(logger klog.Logger, clk clock.PassiveClock, defaultBackoff, maxBackoff time.Duration, lastFailedPod *corev1.Pod) time.Duration {
	if lastFailedPod == nil {
		return 0
	}
	failuresCount := getIndexAbsoluteFailureCount(logger, lastFailedPod) + 1
	lastFailureTime := getFinishedTime(lastFailedPod)
	return getRemainingTimeForFailuresCount(clk, defaultBackoff, maxBackoff, failuresCount, &lastFailureTime)
}

// getRemainingTimeForFailuresCount returns what is left, at clk's now, of the
// delay after failuresCount consecutive failures, the last one at
// lastFailureTime: defaultBackoff after the first failure, doubling with
// each further one up to maxBackoff.
func getRemainingTimeForFailuresCount(clk clock.PassiveClock, defaultBackoff, maxBackoff time.Duration, failuresCount int32, lastFailureTime *time.Time) time.Duration {
	// A record with failures always has a time; the nil check only guards
	// against a caller passing a zero record with a count.
	if failuresCount == 0 || lastFailureTime == nil {
		return 0
	}
	delay := defaultBackoff
	for i := int32(1); i < failuresCount; i++ {
		delay *= 2
		if delay >= maxBackoff {
			delay = maxBackoff
			break
		}
	}
	elapsed := clk.Since(*lastFailureTime)
	if delay < elapsed {
		return 0
	}
	return delay - elapsed
}
