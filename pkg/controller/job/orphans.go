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
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/klog/v2"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// Orphans are our Pods that no Job sync will ever look at again: their Job
// is gone or finished, or they have no controller. The tracking finalizer
// would keep them forever, so the orphan worker takes it off and, in
// standalone mode where no garbage collector knows our Jobs, deletes the
// Pods of Jobs that are gone.

// orphanKey names one Pod (name set) or the Pods a finished or deleted
// Job's selector matches (selector set); with resource set, the Workload
// or PodGroup (resourceWorkloads, resourcePodGroups) of that name.
type orphanKey struct {
	resource  string
	namespace string
	name      string
	selector  string
}

// queueOrphanPod sends a Pod to the orphan worker when the worker has
// something to do with it, and tells whether it did.
func (jm *Controller) queueOrphanPod(pod *corev1.Pod) bool {
	if !decide.HasTrackingFinalizer(pod) && (!jm.cfg.DeletePodsOfDeletedJobs || pod.DeletionTimestamp != nil) {
		return false
	}
	jm.orphans.Add(orphanKey{namespace: pod.Namespace, name: pod.Name})
	return true
}

// queueSelectorOrphans sends the Pods the Job's selector matches to the
// orphan worker, which handles those no live Job keeps.
func (jm *Controller) queueSelectorOrphans(job *batchv1.Job) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("job %s has an invalid selector: %w", klog.KObj(job), err))
		return
	}
	jm.orphans.Add(orphanKey{namespace: job.Namespace, selector: sel.String()})
}

// sweepOrphans queues every Pod of ours whose controlling Job is gone. A Job
// deleted while no replica led has had no deletion event here, so without
// the sweep its Pods would keep their finalizer forever. It runs once the
// informers have synced, at the start of each term.
func (jm *Controller) sweepOrphans(logger klog.Logger) {
	pods, err := jm.podLister.List(labels.Everything())
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("listing pods for the orphan sweep: %w", err))
		return
	}
	queued := 0
	for _, pod := range pods {
		ref := metav1.GetControllerOf(pod)
		if !jm.ownsPod(pod) || !refersToOurJob(ref) || jm.ownerJob(pod.Namespace, ref) != nil {
			continue
		}
		if jm.queueOrphanPod(pod) {
			queued++
		}
	}
	logger.V(2).Info("Swept pods of deleted jobs", "queued", queued)
}

// syncOrphans releases the Pods of key, or deletes its Workload or
// PodGroup.
func (jm *Controller) syncOrphans(ctx context.Context, key orphanKey) error {
	if key.resource != "" {
		return jm.deleteSchedulingOrphan(ctx, key)
	}
	if key.selector == "" {
		pod, err := jm.podLister.Pods(key.namespace).Get(key.name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading pod %s/%s: %w", key.namespace, key.name, err)
		}
		return jm.releaseOrphan(ctx, pod)
	}
	sel, err := labels.Parse(key.selector)
	if err != nil {
		return fmt.Errorf("parsing selector %q: %w", key.selector, err)
	}
	pods, err := jm.podLister.Pods(key.namespace).List(sel)
	if err != nil {
		return fmt.Errorf("listing pods of selector %q: %w", key.selector, err)
	}
	for _, pod := range pods {
		if err := jm.releaseOrphan(ctx, pod); err != nil {
			// Retry that Pod alone rather than the whole selector.
			utilruntime.HandleErrorWithContext(ctx, err, "Releasing orphan pod", "pod", klog.KObj(pod))
			jm.orphans.AddRateLimited(orphanKey{namespace: pod.Namespace, name: pod.Name})
		}
	}
	return nil
}

// releaseOrphan takes the tracking finalizer off a Pod that no live Job
// tracks, and deletes it when its Job is gone and nothing else will.
func (jm *Controller) releaseOrphan(ctx context.Context, pod *corev1.Pod) error {
	if !jm.ownsPod(pod) {
		return nil
	}
	jobGone := false
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if !refersToOurJob(ref) {
			return nil
		}
		job := jm.ownerJob(pod.Namespace, ref)
		if job != nil && (isExternal(job) || !decide.IsFinished(job)) {
			// A running Job's syncs own the finalizer.
			return nil
		}
		if job != nil && jm.finalizerExpect.removed(keyOf(job), pod.UID) {
			// The Job's last sync took the finalizer off; the Job's
			// finished status, read from this server, overtook the Pod
			// update coming from the host. Patching again would cost a
			// request per Pod of every Job that finishes.
			return nil
		}
		jobGone = job == nil
	}
	if decide.HasTrackingFinalizer(pod) {
		if err := jm.removeFinalizer(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if !jobGone || !jm.cfg.DeletePodsOfDeletedJobs || pod.DeletionTimestamp != nil {
		return nil
	}
	err := jm.kubeClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &pod.UID},
	})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting pod %s of a deleted job: %w", klog.KObj(pod), err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted pod of a deleted job", "pod", klog.KObj(pod))
	return nil
}
