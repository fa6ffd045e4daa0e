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
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

// The states of a Pod that the decisions tell apart. A Pod is finished when
// its phase is Succeeded or Failed; until then it is terminating once it
// has a deletionTimestamp, and active before that.

func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// podActive tells whether p occupies a slot of the Job's parallelism.
func podActive(p *corev1.Pod) bool {
	return !podFinished(p) && p.DeletionTimestamp == nil
}

// podTerminating tells whether p is going away without a final phase yet:
// its slot is neither free nor taken.
func podTerminating(p *corev1.Pod) bool {
	return !podFinished(p) && p.DeletionTimestamp != nil
}

// readyCondition returns the first Ready condition of p, as the kubelet
// writes only one.
func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// podCensus is the head count of a Job's Pods before the sync acts.
type podCensus struct {
	active      []*corev1.Pod
	ready       int32 // among active
	terminating int32 // among all
}

func countPods(pods []*corev1.Pod) podCensus {
	var c podCensus
	for _, p := range pods {
		switch {
		case podActive(p):
			c.active = append(c.active, p)
			if podReady(p) {
				c.ready++
			}
		case podTerminating(p):
			c.terminating++
		}
	}
	return c
}

// PodChange is what an update of a Pod changes for a sync of its Job.
type PodChange int

const (
	// PodChangeNone: a sync reads the same from the Pod as before.
	PodChangeNone PodChange = iota
	// PodChangeReadiness: only the Pod's readiness, which a sync counts
	// in status.ready and decides nothing on.
	PodChangeReadiness
	// PodChangeOther: anything else a sync reads.
	PodChangeOther
)

// ClassifyPodChange tells what an update of a Pod changes for a sync of
// its Job. A Pod that is or was finished or being deleted always changes
// something. For an active Pod, a sync reads its readiness, restart
// counts, labels, annotations, finalizers, owners, the conditions other
// than the kubelet's lifecycle ones and its phase (Pending to Running
// aside). Binding to a Node, a start, container states and the like change
// none of them. A sync that runs for another reason still reads the Pod
// as it is then (a scale-down ranks Pods by Node and phase at that
// moment).
func ClassifyPodChange(before, after *corev1.Pod) PodChange {
	if !podActive(before) || !podActive(after) {
		return PodChangeOther
	}
	if before.Status.Phase != after.Status.Phase &&
		(before.Status.Phase != corev1.PodPending || after.Status.Phase != corev1.PodRunning) {
		return PodChangeOther
	}
	if restartSum(before) != restartSum(after) ||
		!maps.Equal(before.Labels, after.Labels) ||
		!maps.Equal(before.Annotations, after.Annotations) ||
		!slices.Equal(before.Finalizers, after.Finalizers) ||
		!slices.EqualFunc(before.OwnerReferences, after.OwnerReferences, sameOwner) ||
		!maps.Equal(notableConditions(before), notableConditions(after)) {
		return PodChangeOther
	}
	if podReady(before) != podReady(after) {
		return PodChangeReadiness
	}
	return PodChangeNone
}

// PodAsCreated tells whether p is still as the Job's controller created
// it, as far as a sync reads it: active, not ready, never restarted, with
// the tracking finalizer and none of the notable conditions.
func PodAsCreated(p *corev1.Pod) bool {
	return podActive(p) && !podReady(p) && restartSum(p) == 0 && HasTrackingFinalizer(p) && len(notableConditions(p)) == 0
}

// restartSum sums the restart counts of p's containers, init ones included.
func restartSum(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.InitContainerStatuses {
		n += cs.RestartCount
	}
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}

func sameOwner(a, b metav1.OwnerReference) bool {
	return a.UID == b.UID && a.Kind == b.Kind && a.APIVersion == b.APIVersion && a.Name == b.Name &&
		ptr.Equal(a.Controller, b.Controller) && ptr.Equal(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
}

// lifecycleConditions are the conditions the kubelet sets on every Pod as it
// starts; the Ready one is read through podReady.
var lifecycleConditions = sets.New(corev1.PodScheduled, corev1.PodInitialized, corev1.ContainersReady,
	corev1.PodReady, corev1.PodReadyToStartContainers)

// notableConditions maps the status of each of p's other conditions (a
// DisruptionTarget, for instance) by type.
func notableConditions(p *corev1.Pod) map[corev1.PodConditionType]corev1.ConditionStatus {
	var m map[corev1.PodConditionType]corev1.ConditionStatus
	for _, c := range p.Status.Conditions {
		if lifecycleConditions.Has(c.Type) {
			continue
		}
		if m == nil {
			m = map[corev1.PodConditionType]corev1.ConditionStatus{}
		}
		m[c.Type] = c.Status
	}
	return m
}
