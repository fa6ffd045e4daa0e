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
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestPlanPodGroup(t *testing.T) {
	j := job("j").Obj()
	mine := ownWorkload(j, gangOf(3))
	mine.Spec.PodGroupTemplates[0].PriorityClassName = "high"
	// The PodGroup the controller makes of mine: the template's policy and
	// priority class, the Job as controller, the Workload as a plain owner.
	made := podGroupOf(mine, "j-pgt-0", gangOf(3), jobOwner(j), workloadOwner(mine))
	made.UID, made.Spec.PriorityClassName = "", "high"
	stored := podGroupOf(mine, "j-pgt-0", gangOf(3), jobOwner(j))
	edited := func(pg *schedulingv1beta1.PodGroup, edit func(*schedulingv1beta1.PodGroup)) *schedulingv1beta1.PodGroup {
		pg = pg.DeepCopy()
		edit(pg)
		return pg
	}
	twin := edited(stored, func(pg *schedulingv1beta1.PodGroup) { pg.Name = "twin" })
	users := edited(stored, func(pg *schedulingv1beta1.PodGroup) { pg.Name, pg.OwnerReferences = "users", nil })
	ofOther := edited(stored, func(pg *schedulingv1beta1.PodGroup) { pg.Spec.WorkloadRef.WorkloadName = "other" })

	delegated := job("j").Do(ownedBy("jobset.x-k8s.io/v1alpha2", "JobSet", ptr.To("a"))).Obj()
	parent := parentWorkload("jobset.x-k8s.io", "JobSet")
	// Of an owner's Workload: the Job as the only owner.
	madeForParent := podGroupOf(parent, "a", gangOf(2), jobOwner(delegated))
	madeForParent.UID, madeForParent.Spec.PriorityClassName = "", "high"
	storedForParent := podGroupOf(parent, "a", gangOf(2), jobOwner(delegated))

	cases := map[string]struct {
		job       *batchv1.Job
		started   bool
		workload  *schedulingv1beta1.Workload
		template  string
		podGroups []*schedulingv1beta1.PodGroup
		want      PodGroupPlan
	}{
		"a new Job: make it of the template": {
			job: j, workload: mine, template: "j-pgt-0", want: PodGroupPlan{Create: made},
		},
		"its PodGroup exists: use it": {
			job: j, workload: mine, template: "j-pgt-0", podGroups: []*schedulingv1beta1.PodGroup{users, stored, ofOther},
			want: PodGroupPlan{PodGroup: stored},
		},
		"its PodGroup exists, the Job started: use it": {
			job: j, started: true, workload: mine, template: "j-pgt-0", podGroups: []*schedulingv1beta1.PodGroup{stored},
			want: PodGroupPlan{PodGroup: stored},
		},
		"a started Job without PodGroup: Pod by Pod": {
			job: j, started: true, workload: mine, template: "j-pgt-0",
			want: PodGroupPlan{PodByPod: "the job has started without a PodGroup"},
		},
		"a user's PodGroup of the Workload is not the Job's: make one": {
			job: j, workload: mine, template: "j-pgt-0", podGroups: []*schedulingv1beta1.PodGroup{users}, want: PodGroupPlan{Create: made},
		},
		"two of its own: Pod by Pod, and an error in the log": {
			job: j, workload: mine, template: "j-pgt-0", podGroups: []*schedulingv1beta1.PodGroup{stored, twin},
			want: PodGroupPlan{PodByPod: "2 PodGroups of Workload " + mine.Name + " belong to the job, falling back to default scheduling", Ambiguous: true},
		},
		"delegated: made of the owner's template, the Job its only owner": {
			job: delegated, workload: parent, template: "a", want: PodGroupPlan{Create: madeForParent},
		},
		"delegated, exists: use it": {
			job: delegated, workload: parent, template: "a", podGroups: []*schedulingv1beta1.PodGroup{storedForParent},
			want: PodGroupPlan{PodGroup: storedForParent},
		},
		"delegated, two of its own: the first": {
			job: delegated, workload: parent, template: "a",
			podGroups: []*schedulingv1beta1.PodGroup{storedForParent, edited(storedForParent, func(pg *schedulingv1beta1.PodGroup) { pg.Name = "twin" })},
			want:      PodGroupPlan{PodGroup: storedForParent},
		},
		"delegated, started without one: Pod by Pod": {
			job: delegated, started: true, workload: parent, template: "a",
			want: PodGroupPlan{PodByPod: "the job has started without a PodGroup"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ps []*corev1.Pod
			if tc.started {
				ps = pods(pod("p"))
			}
			before := tc.workload.DeepCopy()
			got := NewScheduling(tc.job, ps, true).PlanPodGroup(tc.workload, tc.template, tc.podGroups)
			if got.Err != nil {
				t.Fatalf("PlanPodGroup: %v", got.Err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.workload); diff != "" {
				t.Errorf("the Workload changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestSchedulingGroup(t *testing.T) {
	pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Name: "pg"}}
	if diff := cmp.Diff(&corev1.PodSchedulingGroup{PodGroupName: ptr.To("pg")}, SchedulingGroup(pg)); diff != "" {
		t.Errorf("SchedulingGroup (-want +got):\n%s", diff)
	}
	if got := SchedulingGroup(nil); got != nil {
		t.Errorf("SchedulingGroup(nil) = %v, want nil", got)
	}
}
