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
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
)

// MinCountPlan is the last step: the gang size to write where it is
// stale. Nothing else of a Workload or PodGroup may change once created.
type MinCountPlan struct {
	// Workload and PodGroup, when set, are copies of the stored objects
	// with the gang's minCount changed: write that change.
	Workload *schedulingv1beta1.Workload
	PodGroup *schedulingv1beta1.PodGroup
}

// PlanMinCount keeps the gang size of the Job's scheduling objects in step
// with its source, whatever the Job's state (a running gang may be
// resized). Of the Job's own Workload the source is the Job itself, through
// DesiredWorkload (an unset minCount follows the parallelism); it is
// written to the Workload and the PodGroup. Of an owner's Workload the
// source is that Workload's template, written to the PodGroup alone. A
// basic policy has no size. podGroup may be nil.
func (s Scheduling) PlanMinCount(workload *schedulingv1beta1.Workload, template string, podGroup *schedulingv1beta1.PodGroup) (MinCountPlan, error) {
	var plan MinCountPlan
	var want int32
	switch s.Mode {
	case OwnWorkload:
		desired, err := DesiredWorkload(s.Job)
		if err != nil {
			return plan, err
		}
		gang := desired.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang
		if gang == nil {
			return plan, nil
		}
		want = gang.MinCount
		if ts := workload.Spec.PodGroupTemplates; len(ts) == 1 && ts[0].SchedulingPolicy.Gang != nil && ts[0].SchedulingPolicy.Gang.MinCount != want {
			plan.Workload = workload.DeepCopy()
			plan.Workload.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = want
		}
	case DelegatedPodGroup:
		gang := templateGang(workload, template)
		if gang == nil {
			return plan, nil
		}
		want = gang.MinCount
	default:
		return plan, nil
	}
	if podGroup != nil && podGroup.Spec.SchedulingPolicy.Gang != nil && podGroup.Spec.SchedulingPolicy.Gang.MinCount != want {
		plan.PodGroup = podGroup.DeepCopy()
		plan.PodGroup.Spec.SchedulingPolicy.Gang.MinCount = want
	}
	return plan, nil
}

// templateGang is the gang policy of the named template, or nil.
func templateGang(workload *schedulingv1beta1.Workload, template string) *schedulingv1beta1.GangSchedulingPolicy {
	for _, t := range workload.Spec.PodGroupTemplates {
		if t.Name == template {
			return t.SchedulingPolicy.Gang
		}
	}
	return nil
}
