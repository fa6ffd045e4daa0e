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
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
)

// PodGroupPlan is the second step: the PodGroup the Job's new Pods join.
type PodGroupPlan struct {
	// PodGroup exists and is the Job's.
	PodGroup *schedulingv1beta1.PodGroup
	// Create is the PodGroup to create.
	Create *schedulingv1beta1.PodGroup
	// PodByPod and Ambiguous: as in WorkloadPlan.
	PodByPod  string
	Ambiguous bool
	// Err sends the Job back to the queue with backoff.
	Err error
}

// PlanPodGroup picks or makes the Job's PodGroup of the template of
// workload, which exists (found or just created). podGroups are those
// whose spec.workloadRef names workload (more do no harm); the Job's are
// those it controls. A PodGroup is made from the template as it is
// stored, with the Job as its controller; one of the Job's own Workload
// has that Workload as a second owner, one of an owner's Workload has not
// (the owner keeps its Workload alone). Neither reference blocks a
// deletion.
func (s Scheduling) PlanPodGroup(workload *schedulingv1beta1.Workload, template string, podGroups []*schedulingv1beta1.PodGroup) PodGroupPlan {
	var own []*schedulingv1beta1.PodGroup
	for _, pg := range podGroups {
		if ref := pg.Spec.WorkloadRef; ref != nil && ref.WorkloadName == workload.Name && metav1.IsControlledBy(pg, s.Job) {
			own = append(own, pg)
		}
	}
	switch {
	// Upstream takes the first of a delegated Job's and gives up on
	// several of its own Workload's.
	case len(own) > 1 && s.Mode == OwnWorkload:
		return PodGroupPlan{PodByPod: fmt.Sprintf("%d PodGroups of Workload %s belong to the job, falling back to default scheduling", len(own), workload.Name), Ambiguous: true}
	case len(own) > 0:
		return PodGroupPlan{PodGroup: own[0]}
	case !s.NeverStarted:
		return PodGroupPlan{PodByPod: "the job has started without a PodGroup"}
	}
	pg, err := workloadbuilder.NewBuilderFromExistingWorkload(workload, workloadbuilder.BuildOptions{
		Owner: metav1.NewControllerRef(s.Job, jobKind),
	}).NewPodGroup(PodGroupName(workload.Name, template), template)
	if err != nil {
		return PodGroupPlan{Err: fmt.Errorf("making the PodGroup of job %s: %w", s.Job.Name, err)}
	}
	if s.Mode == OwnWorkload {
		pg.OwnerReferences = append(pg.OwnerReferences, metav1.OwnerReference{
			APIVersion: schedulingv1beta1.SchemeGroupVersion.String(),
			Kind:       "Workload",
			Name:       workload.Name,
			UID:        workload.UID,
		})
	}
	return PodGroupPlan{Create: pg}
}

// SchedulingGroup is what the Pods of a Job with a PodGroup carry in
// spec.schedulingGroup: the PodGroup's name. kube-controller-manager 1.37
// also meant them to have the PodGroup as an owner, but its Pod creation
// drops the template's owner references, so its Pods have only the Job's,
// and so do ours.
func SchedulingGroup(pg *schedulingv1beta1.PodGroup) *corev1.PodSchedulingGroup {
	if pg == nil {
		return nil
	}
	name := pg.Name
	return &corev1.PodSchedulingGroup{PodGroupName: &name}
}
