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

package job

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
)

// The watch side: informer handlers turn events into queue keys and keep
// the expectations current. They decide nothing about a Job; they only
// tell which Job (or orphan Pod) to look at, and when.

// podOwnerIndex indexes our Pods by the UID of their controlling Job, and
// the ones without a controller under orphanIndexKey of their namespace.
const podOwnerIndex = "batch.jobs.dev/owner"

// orphanIndexKey is the podOwnerIndex key of the Pods of namespace that
// have no controller: the candidates for adoption by the Jobs there.
func orphanIndexKey(namespace string) string { return "orphan/" + namespace }

// podOwnerKeys is the podOwnerIndex function. Pods of other servers and
// Pods controlled by anything but our Jobs are not indexed at all.
func (jm *Controller) podOwnerKeys(obj any) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !jm.ownsPod(pod) {
		return nil, nil
	}
	ref := metav1.GetControllerOf(pod)
	switch {
	case ref == nil:
		return []string{orphanIndexKey(pod.Namespace)}, nil
	case refersToOurJob(ref):
		return []string{string(ref.UID)}, nil
	default:
		return nil, nil
	}
}

// ownsPod tells whether a Pod belongs to this server: it carries the
// server's identity (or, for a server without one, no identity at all).
// The Pod informer may already be filtered on it; the check stays so that
// no write ever reaches another server's Pod.
func (jm *Controller) ownsPod(pod *corev1.Pod) bool {
	return pod.Labels[batch.ServerIdentityLabel] == jm.cfg.Identity
}

// ownerJob returns the Job a controller reference names, when it is one of
// ours and the lister has it with that UID.
func (jm *Controller) ownerJob(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	if !refersToOurJob(ref) {
		return nil
	}
	job, err := jm.jobs.get(namespace, ref.Name)
	if err != nil || job.UID != ref.UID {
		return nil
	}
	return job
}

// selectingJobs returns our Jobs of the Pod's namespace whose selector
// matches the Pod's labels: the Jobs that may adopt it.
func (jm *Controller) selectingJobs(pod *corev1.Pod) []*batchv1.Job {
	if len(pod.Labels) == 0 {
		return nil
	}
	jobs, err := jm.jobs.list(pod.Namespace, func(managedBy *string, selector *metav1.LabelSelector) bool {
		if _, external := decide.OtherManager(managedBy); external {
			return false
		}
		sel, err := metav1.LabelSelectorAsSelector(selector)
		return err == nil && !sel.Empty() && sel.Matches(labels.Set(pod.Labels))
	})
	if err != nil {
		return nil
	}
	return jobs
}

// countFinishedWithFinalizer keeps the
// terminated_pods_tracking_finalizer_total metric: a finished Pod holding
// the tracking finalizer appears ("add") or stops being one ("delete").
// before or after is nil for a Pod that is new or gone.
func countFinishedWithFinalizer(before, after *corev1.Pod) {
	was, is := decide.FinishedWithFinalizer(before), decide.FinishedWithFinalizer(after)
	switch {
	case is && !was:
		metrics.TerminatedPodsTrackingFinalizerTotal.WithLabelValues(metrics.Add).Inc()
	case was && !is:
		metrics.TerminatedPodsTrackingFinalizerTotal.WithLabelValues(metrics.Delete).Inc()
	}
}

func (jm *Controller) onPodAdd(logger klog.Logger, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || !jm.ownsPod(pod) {
		return
	}
	countFinishedWithFinalizer(nil, pod)
	if pod.DeletionTimestamp != nil {
		// Seen for the first time while going (after a restart): for the
		// Job this is a deletion, not a creation.
		jm.onPodDelete(logger, pod, false)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if !refersToOurJob(ref) {
			return
		}
		job := jm.ownerJob(pod.Namespace, ref)
		if job == nil {
			jm.queueOrphanPod(pod)
			return
		}
		if isExternal(job) {
			return
		}
		awaited, wake := jm.podExpect.observeCreation(keyOf(job))
		if awaited && !wake && decide.PodAsCreated(pod) {
			// A Pod the last sync created, as it created it: that sync
			// counted it active already, and waits for nothing.
			return
		}
		jm.enqueueBatched(logger, job, "pod added")
		return
	}
	if decide.HasTrackingFinalizer(pod) {
		jm.queueOrphanPod(pod)
	}
	for _, job := range jm.selectingJobs(pod) {
		jm.enqueueBatched(logger, job, "pod added unowned")
	}
}

func (jm *Controller) onPodUpdate(logger klog.Logger, oldObj, newObj any) {
	before, ok1 := oldObj.(*corev1.Pod)
	pod, ok2 := newObj.(*corev1.Pod)
	if !ok1 || !ok2 {
		return
	}
	if !jm.ownsPod(pod) {
		if jm.ownsPod(before) {
			// The Pod was relabelled away from this server: its Job,
			// if any, no longer sees it.
			if job := jm.ownerJob(before.Namespace, metav1.GetControllerOf(before)); job != nil && !isExternal(job) {
				jm.enqueueBatched(logger, job, "pod relabelled away")
			}
		}
		return
	}
	countFinishedWithFinalizer(before, pod)
	if pod.ResourceVersion == before.ResourceVersion {
		// A resync: nothing changed.
		return
	}
	if pod.DeletionTimestamp != nil {
		// A graceful deletion began: the Job may replace the Pod now
		// instead of when the kubelet is done with it.
		jm.onPodDelete(logger, pod, false)
		return
	}
	finalizerGone := !decide.HasTrackingFinalizer(pod)
	ref, oldRef := metav1.GetControllerOf(pod), metav1.GetControllerOf(before)
	refChanged := !equality.Semantic.DeepEqual(ref, oldRef)
	if refChanged && oldRef != nil {
		if job := jm.ownerJob(before.Namespace, oldRef); job != nil && !isExternal(job) {
			if finalizerGone {
				jm.finalizerExpect.observe(keyOf(job), pod.UID)
			}
			jm.enqueueBatched(logger, job, "pod changed owner")
		}
	}
	if ref != nil {
		if !refersToOurJob(ref) {
			return
		}
		job := jm.ownerJob(pod.Namespace, ref)
		if job == nil {
			jm.queueOrphanPod(pod)
			return
		}
		if isExternal(job) {
			return
		}
		if finalizerGone {
			if jm.finalizerExpect.observe(keyOf(job), pod.UID) && onlyFinalizersChanged(before, pod) {
				// Our own removal: the sync that made it counted the Pod.
				return
			}
		} else if !refChanged {
			switch decide.ClassifyPodChange(before, pod) {
			case decide.PodChangeNone:
				// Bound to a Node, started, and the like: a sync would
				// read the same from this Pod as the last one did.
				return
			case decide.PodChangeReadiness:
				// Only status.ready changes: counted by the Job's next
				// sync, at the latest after the longer period.
				jm.enqueueAfter(logger, job, SyncJobReadyBatchPeriod, "pod readiness changed")
				return
			}
		}
		jm.enqueueBatched(logger, job, "pod updated")
		return
	}
	if decide.HasTrackingFinalizer(pod) {
		jm.queueOrphanPod(pod)
	}
	if refChanged || !equality.Semantic.DeepEqual(pod.Labels, before.Labels) {
		for _, job := range jm.selectingJobs(pod) {
			jm.enqueueBatched(logger, job, "pod labels changed")
		}
	}
}

// onlyFinalizersChanged tells whether after differs from before in its
// finalizers alone (and the bookkeeping of any write: resourceVersion,
// managedFields).
func onlyFinalizersChanged(before, after *corev1.Pod) bool {
	b, a := *before, *after
	b.Finalizers, a.Finalizers = nil, nil
	b.ResourceVersion, a.ResourceVersion = "", ""
	b.ManagedFields, a.ManagedFields = nil, nil
	return equality.Semantic.DeepEqual(&b, &a)
}

// onPodDelete handles a Pod that is gone (final) or whose deletion began.
// obj may be a tombstone.
func (jm *Controller) onPodDelete(logger klog.Logger, obj any, final bool) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		tombstone, isTombstone := obj.(cache.DeletedFinalStateUnknown)
		if isTombstone {
			pod, ok = tombstone.Obj.(*corev1.Pod)
		}
		if !ok {
			utilruntime.HandleError(fmt.Errorf("pod deletion event carries a %T", obj))
			return
		}
	}
	if !jm.ownsPod(pod) {
		return
	}
	if final {
		countFinishedWithFinalizer(pod, nil)
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		if decide.HasTrackingFinalizer(pod) {
			jm.queueOrphanPod(pod)
		}
		return
	}
	if !refersToOurJob(ref) {
		return
	}
	job := jm.ownerJob(pod.Namespace, ref)
	if job != nil && isExternal(job) {
		return
	}
	if job == nil || decide.IsFinished(job) {
		// No sync of the Job will take the finalizer off this Pod.
		if decide.HasTrackingFinalizer(pod) {
			jm.queueOrphanPod(pod)
		}
		return
	}
	key := keyOf(job)
	jm.podExpect.observe(key, 0, 1)
	if final || !decide.HasTrackingFinalizer(pod) {
		jm.finalizerExpect.observe(key, pod.UID)
	}
	jm.enqueueBatched(logger, job, "pod deleted")
}

func (jm *Controller) onJobAdd(logger klog.Logger, obj any) {
	job, ok := jobFrom(obj)
	if !ok || jm.leftToOthers(logger, job) {
		return
	}
	jm.enqueueNow(logger, job, "job added")
	jm.enqueueTTL(logger, job)
}

func (jm *Controller) onJobUpdate(logger klog.Logger, oldObj, newObj any) {
	before, ok1 := jobFrom(oldObj)
	job, ok2 := jobFrom(newObj)
	if !ok1 || !ok2 || jm.leftToOthers(logger, job) {
		return
	}
	if decide.IsFinished(job) {
		// The informer shows our finished write: syncs may resume (and
		// stop at once). The selector sweep is a backstop for finalizers
		// that should already be gone.
		jm.finishing.remove(job.UID)
		jm.ownWrites.forget(keyOf(job), job.UID)
		jm.queueSelectorOrphans(job)
		jm.enqueueTTL(logger, job)
		return
	}
	// The informer has caught up with our last status write once it
	// shows that version: the copy kept of it is dropped then.
	ours := jm.ownWrites.shown(keyOf(job), job)
	switch {
	case jm.refused.shownNewer(keyOf(job), job):
		jm.enqueueNow(logger, job, "job changed under a refused status write")
	case job.Generation != before.Generation:
		jm.enqueueNow(logger, job, "job spec changed")
	case ours:
		// Our own status write (or a version the sync that wrote it had
		// read): that sync acted on everything it shows. A sync queued
		// for it would find nothing to do.
		logger.V(4).Info("Not syncing a job for the controller's own status write", "job", klog.KObj(job), "resourceVersion", job.ResourceVersion)
	default:
		// Status written by someone else: batched like Pod events.
		jm.enqueueBatched(logger, job, "job status changed")
	}
	if left, due := decide.DeadlineResync(before, job, jm.clock.Now()); due {
		jm.queue.AddAfter(keyOf(job), left)
	}
}

// onJobDelete forgets what the controller kept about a Job and sends its
// remaining Pods, and in standalone mode its Workloads and PodGroups, to
// the orphan worker. obj may be a tombstone.
func (jm *Controller) onJobDelete(logger klog.Logger, obj any) {
	job, ok := jobFrom(obj)
	if !ok {
		utilruntime.HandleError(fmt.Errorf("job deletion event carries a %T", obj))
		return
	}
	if isExternal(job) {
		forgetExternal(job.UID)
		return
	}
	key := keyOf(job)
	jm.podExpect.forget(key)
	jm.failures.forget(key)
	jm.starts.forget(key)
	jm.finishing.remove(job.UID)
	jm.ownWrites.forget(key, job.UID)
	jm.refused.forget(key)
	jm.nsTerminating.remove(job.UID)
	jm.enqueueNow(logger, job, "job deleted")
	jm.queueSelectorOrphans(job)
	jm.queueSchedulingOrphans(job)
}

// why, in the log at level 4, tells which event queued the sync.
func (jm *Controller) enqueueNow(logger klog.Logger, job *batchv1.Job, why string) {
	logger.V(4).Info("Enqueueing job", "job", klog.KObj(job), "why", why)
	jm.queue.Add(keyOf(job))
}

// enqueueBatched syncs the Job after SyncJobBatchPeriod, so that a burst of
// Pod events costs one sync, and no sooner than SyncJobPodSpacing after its
// last sync began.
func (jm *Controller) enqueueBatched(logger klog.Logger, job *batchv1.Job, why string) {
	jm.enqueueAfter(logger, job, jm.starts.delay(keyOf(job), jm.clock.Now(), SyncJobBatchPeriod, SyncJobPodSpacing), why)
}

// enqueueAfter syncs the Job after delay.
func (jm *Controller) enqueueAfter(logger klog.Logger, job *batchv1.Job, delay time.Duration, why string) {
	logger.V(4).Info("Enqueueing job", "job", klog.KObj(job), "delay", delay, "why", why)
	jm.queue.AddAfter(keyOf(job), delay)
}
