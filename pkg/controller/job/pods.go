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
	"encoding/json"
	"errors"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// Pod writes in the host cluster, and the Events on the Job that report
// them (reasons and messages as kube-controller-manager's).
const (
	reasonSuccessfulCreate = "SuccessfulCreate"
	reasonFailedCreate     = "FailedCreate"
	reasonSuccessfulDelete = "SuccessfulDelete"
	reasonFailedDelete     = "FailedDelete"
)

// errNoPodLabels refuses a Pod without labels: no selector could ever
// match it back to its Job, so it would leak.
var errNoPodLabels = errors.New("unable to create pods, no labels")

// newPod builds the Pod of one creation: the template's metadata and spec,
// copied; the Job as controller; this server's identity.
func (jm *Controller) newPod(job *batchv1.Job, c decide.PodCreation) (*corev1.Pod, error) {
	if len(c.Template.Labels) == 0 {
		return nil, errNoPodLabels
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       job.Namespace,
			GenerateName:    c.GenerateName,
			Labels:          maps.Clone(c.Template.Labels),
			Annotations:     maps.Clone(c.Template.Annotations),
			Finalizers:      append([]string(nil), c.Template.Finalizers...),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)},
		},
		Spec: *c.Template.Spec.DeepCopy(),
	}
	if jm.cfg.Identity != "" {
		pod.Labels[batch.ServerIdentityLabel] = jm.cfg.Identity
	}
	return pod, nil
}

// createPod creates one Pod of the Job and records the Event. The error is
// the client's, unwrapped, so that callers can read its causes.
func (jm *Controller) createPod(ctx context.Context, job *batchv1.Job, c decide.PodCreation) error {
	pod, err := jm.newPod(job, c)
	if err != nil {
		return err
	}
	created, err := jm.kubeClient.CoreV1().Pods(job.Namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		// In a namespace being deleted every create fails alike: one
		// Event each would only be noise.
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			jm.recorder.Eventf(job, corev1.EventTypeWarning, reasonFailedCreate, "Error creating: %v", err)
		}
		return err
	}
	klog.FromContext(ctx).V(4).Info("Created pod", "job", klog.KObj(job), "pod", klog.KObj(created))
	jm.recorder.Eventf(job, corev1.EventTypeNormal, reasonSuccessfulCreate, "Created pod: %v", created.Name)
	return nil
}

// deletePod deletes one Pod of the Job and records the Event. A Pod
// already gone is returned as NotFound, without an Event.
func (jm *Controller) deletePod(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) error {
	err := jm.kubeClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return err
	case err != nil:
		jm.recorder.Eventf(job, corev1.EventTypeWarning, reasonFailedDelete, "Error deleting: %v", err)
		return fmt.Errorf("deleting pod %s: %w", klog.KObj(pod), err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted pod", "job", klog.KObj(job), "pod", klog.KObj(pod))
	jm.recorder.Eventf(job, corev1.EventTypeNormal, reasonSuccessfulDelete, "Deleted pod: %v", pod.Name)
	return nil
}

// removeFinalizer takes the tracking finalizer off a Pod that has it. A
// NotFound is returned as is.
func (jm *Controller) removeFinalizer(ctx context.Context, pod *corev1.Pod) error {
	patch := decide.RemoveFinalizerPatch(pod)
	if patch == nil {
		return nil
	}
	_, err := jm.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing the tracking finalizer of pod %s: %w", klog.KObj(pod), err)
	}
	return err
}

// claimPods returns the Pods the Job controls. On the way it releases the
// Pods it controls that its selector no longer matches, and adopts the
// orphans of this server that it matches (unless the Job is being
// deleted). Returned Pods are the cache's except adopted ones: read only.
func (jm *Controller) claimPods(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("parsing the selector of job %s: %w", klog.KObj(job), err)
	}
	owned, err := jm.podIndexer.ByIndex(podOwnerIndex, string(job.UID))
	if err != nil {
		return nil, fmt.Errorf("listing the pods of job %s: %w", klog.KObj(job), err)
	}
	var pods []*corev1.Pod
	for _, obj := range owned {
		pod := obj.(*corev1.Pod)
		if pod.Namespace != job.Namespace || !jm.ownsPod(pod) {
			continue
		}
		if job.DeletionTimestamp != nil || sel.Matches(labels.Set(pod.Labels)) {
			pods = append(pods, pod)
			continue
		}
		if err := jm.release(ctx, job, pod); err != nil {
			return nil, err
		}
	}
	if job.DeletionTimestamp != nil || sel.Empty() {
		return pods, nil
	}
	orphans, err := jm.podIndexer.ByIndex(podOwnerIndex, orphanIndexKey(job.Namespace))
	if err != nil {
		return nil, fmt.Errorf("listing the orphan pods of namespace %s: %w", job.Namespace, err)
	}
	// The cache may not show yet that the Job is being deleted; adopting
	// then would hold its Pods back. One live read per sync settles it
	// for every orphan.
	checked, mayAdopt := false, false
	for _, obj := range orphans {
		pod := obj.(*corev1.Pod)
		if pod.Namespace != job.Namespace || pod.DeletionTimestamp != nil || !jm.ownsPod(pod) || !sel.Matches(labels.Set(pod.Labels)) {
			continue
		}
		if !checked {
			checked = true
			live, err := jm.jobClient.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
			if err != nil {
				return nil, fmt.Errorf("checking job %s before adopting pods: %w", klog.KObj(job), err)
			}
			mayAdopt = live.UID == job.UID && live.DeletionTimestamp == nil
		}
		if !mayAdopt {
			break
		}
		adopted, err := jm.adopt(ctx, job, pod)
		if err != nil {
			return nil, err
		}
		if adopted != nil {
			pods = append(pods, adopted)
		}
	}
	return pods, nil
}

// adopt makes the Job the controller of an orphan Pod and puts the
// tracking finalizer on it. It returns the Pod as adopted, or nil when the
// Pod is gone.
func (jm *Controller) adopt(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) (*corev1.Pod, error) {
	ref := metav1.NewControllerRef(job, jobKind)
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"uid":             pod.UID,
			"ownerReferences": []metav1.OwnerReference{*ref},
			"finalizers":      []string{batch.JobTrackingFinalizer},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("building the adoption patch of pod %s: %w", klog.KObj(pod), err)
	}
	_, err = jm.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("adopting pod %s: %w", klog.KObj(pod), err)
	}
	adopted := pod.DeepCopy()
	adopted.OwnerReferences = append(adopted.OwnerReferences, *ref)
	if !decide.HasTrackingFinalizer(adopted) {
		adopted.Finalizers = append(adopted.Finalizers, batch.JobTrackingFinalizer)
	}
	return adopted, nil
}

// release drops the Job's controller reference from a Pod its selector no
// longer matches.
func (jm *Controller) release(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) error {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{
			"uid":             pod.UID,
			"ownerReferences": []map[string]any{{"$patch": "delete", "uid": job.UID}},
		},
	})
	if err != nil {
		return fmt.Errorf("building the release patch of pod %s: %w", klog.KObj(pod), err)
	}
	_, err = jm.kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	// Gone, or already changed so that the patch no longer applies:
	// either way the Pod is not the Job's.
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
		return fmt.Errorf("releasing pod %s: %w", klog.KObj(pod), err)
	}
	return nil
}
