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
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// Which scheduling.k8s.io objects the controller keeps for a Job when
// WorkloadWithJob is on (KEP-5547), and for which Jobs it makes them at
// all. workload.go decides about the Workload, podgroup.go about the
// PodGroup, mincount.go about the gang size they carry.

// GroupTemplateNameAnnotation, on a Job that another controller owns,
// names the PodGroupTemplate of that owner's Workload the Job's PodGroup is
// to be made from: the owner keeps the Workload and leaves the PodGroup to
// the Job controller. The key is kube-controller-manager's.
const GroupTemplateNameAnnotation = "scheduling.k8s.io/group-template-name"

// SchedulingMode tells which scheduling objects the controller keeps for
// a Job.
type SchedulingMode int

const (
	// PodByPod: none. The Job's Pods are scheduled as any Pod (the gate
	// is off, the host does not serve the objects, the Pod template names
	// a PodGroup of its own, or an owner keeps both objects).
	PodByPod SchedulingMode = iota
	// OwnWorkload: the Job has no controller of its own; the controller
	// keeps its Workload and its PodGroup.
	OwnWorkload
	// DelegatedPodGroup: the Job's owner keeps the Workload and delegated
	// the PodGroup with GroupTemplateNameAnnotation.
	DelegatedPodGroup
)

// SchedulingModeOf returns the mode of the Job. enabled is false when the
// WorkloadWithJob gate is off or the host serves no Workloads and
// PodGroups.
func SchedulingModeOf(job *batchv1.Job, enabled bool) SchedulingMode {
	switch {
	case !enabled, job.Spec.Template.Spec.SchedulingGroup != nil:
		return PodByPod
	case metav1.GetControllerOf(job) == nil:
		return OwnWorkload
	}
	if _, ok := job.Annotations[GroupTemplateNameAnnotation]; ok {
		return DelegatedPodGroup
	}
	return PodByPod
}

// NeverStarted tells whether the Job has shown no sign of having run: no
// Pod, no start time, nothing counted, never suspended. Only such a Job
// gets new scheduling objects, so that a Job created before the gate was
// turned on keeps running as it started. Each sign alone has a gap (Pods
// are collected, a suspension clears the start time, a Job suspended at
// creation has neither), so all of them are read, as upstream does.
func NeverStarted(job *batchv1.Job, pods []*corev1.Pod) bool {
	st := job.Status
	if len(pods) > 0 || st.StartTime != nil || st.Succeeded != 0 || st.Failed != 0 {
		return false
	}
	for _, c := range st.Conditions {
		if c.Type == batchv1.JobSuspended {
			return false
		}
	}
	return true
}
