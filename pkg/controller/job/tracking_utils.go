package job

import (
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
)

// uidTrackingExpectations records, per Job key, the UIDs of Pods whose
// tracking finalizer the controller removed and has not yet seen removed in
// the Pod informer. Until it has, such a Pod still looks uncounted in the
// cache, and counting it again would count it twice.
type uidTrackingExpectations struct {
	mu   sync.Mutex
	uids map[string]sets.Set[types.UID]
}

// newUIDTrackingExpectations returns empty expectations.
func newUIDTrackingExpectations() *uidTrackingExpectations {
	return &uidTrackingExpectations{uids: map[string]sets.Set[types.UID]{}}
}

// getExpectedUIDs returns a copy of the UIDs key still expects, nil when it
// expects none.
func (u *uidTrackingExpectations) getExpectedUIDs(key string) sets.Set[types.UID] {
	u.mu.Lock()
	defer u.mu.Unlock()
	set, ok := u.uids[key]
	if !ok {
		return nil
	}
	return set.Clone()
}

// expectFinalizersRemoved adds uids to what key expects to see lose their
// tracking finalizer.
func (u *uidTrackingExpectations) expectFinalizersRemoved(logger klog.Logger, key string, uids []types.UID) {
	logger.V(4).Info("Expecting tracking finalizers removed", "key", key, "podUIDs", uids)
	u.mu.Lock()
	defer u.mu.Unlock()
	set, ok := u.uids[key]
	if !ok {
		set = sets.New[types.UID]()
		u.uids[key] = set
	}
	set.Insert(uids...)
}

// finalizerRemovalObserved records that the Pod uid of key was seen without
// its tracking finalizer (or gone), or that the removal failed and will not
// be seen.
func (u *uidTrackingExpectations) finalizerRemovalObserved(logger klog.Logger, key string, uid types.UID) {
	u.mu.Lock()
	defer u.mu.Unlock()
	set, ok := u.uids[key]
	if ok && set.Has(uid) {
		logger.V(4).Info("Observed tracking finalizer removed", "key", key, "podUID", uid)
		set.Delete(uid)
	}
}

// deleteExpectations forgets key, for a Job that is gone.
func (u *uidTrackingExpectations) deleteExpectations(logger klog.Logger, key string) {
	u.mu.Lock()
	defer u.mu.Unlock()
	if _, ok := u.uids[key]; ok {
		delete(u.uids, key)
		logger.V(4).Info("Deleted tracking finalizer expectations", "key", key)
	}
}

// hasJobTrackingFinalizer reports whether pod carries the Job tracking
// finalizer.
func hasJobTrackingFinalizer(pod *corev1.Pod) bool {
	return slices.Contains(pod.Finalizers, batch.JobTrackingFinalizer)
}

// isFinishedPodWithTrackingFinalizer reports whether pod (which may be nil)
// has terminated but still has the tracking finalizer, that is, is waiting for
// the controller to count it.
func isFinishedPodWithTrackingFinalizer(pod *corev1.Pod) bool {
	if pod == nil {
		return false
	}
	return (pod.Status.Phase == corev1.PodFailed || pod.Status.Phase == corev1.PodSucceeded) && hasJobTrackingFinalizer(pod)
}

// recordFinishedPodWithTrackingFinalizer counts, in
// TerminatedPodsTrackingFinalizerTotal, a Pod entering or leaving the
// finished-with-tracking-finalizer state between oldPod and newPod (either
// may be nil for a Pod added or deleted).
func recordFinishedPodWithTrackingFinalizer(oldPod, newPod *corev1.Pod) {
	was := isFinishedPodWithTrackingFinalizer(oldPod)
	is := isFinishedPodWithTrackingFinalizer(newPod)
	if was == is {
		return
	}
	event := metrics.Delete
	if is {
		event = metrics.Add
	}
	metrics.TerminatedPodsTrackingFinalizerTotal.WithLabelValues(event).Inc()
}
