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
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestPlanMinCount(t *testing.T) {
	gang := func(parallelism int32, minCount *int32) *batchv1.Job {
		return job("j").Parallelism(parallelism).Do(scheduled(gangPolicy(minCount))).Obj()
	}
	j := gang(4, nil)
	ownPG := func(n int32) *schedulingv1beta1.PodGroup {
		wl := ownWorkload(j, gangOf(n))
		return podGroupOf(wl, "j-pgt-0", gangOf(n), jobOwner(j), workloadOwner(wl))
	}
	delegated := job("j").Do(ownedBy("jobset.x-k8s.io/v1alpha2", "JobSet", ptr.To("a"))).Obj()
	parent := parentWorkload("jobset.x-k8s.io", "JobSet") // template a: gang of 2; b: basic
	parentPG := func(template string, policy schedulingv1beta1.PodGroupSchedulingPolicy) *schedulingv1beta1.PodGroup {
		return podGroupOf(parent, template, policy, jobOwner(delegated))
	}
	cases := map[string]struct {
		job      *batchv1.Job
		workload *schedulingv1beta1.Workload
		template string
		podGroup *schedulingv1beta1.PodGroup
		want     MinCountPlan
	}{
		"in step: nothing": {
			job: j, workload: ownWorkload(j, gangOf(4)), template: "j-pgt-0", podGroup: ownPG(4),
		},
		"parallelism raised: both follow": {
			job: j, workload: ownWorkload(j, gangOf(2)), template: "j-pgt-0", podGroup: ownPG(2),
			want: MinCountPlan{Workload: ownWorkload(j, gangOf(4)), PodGroup: ownPG(4)},
		},
		"parallelism lowered to 0 (suspended): 1": {
			job: gang(0, nil), workload: ownWorkload(j, gangOf(4)), template: "j-pgt-0", podGroup: ownPG(4),
			want: MinCountPlan{Workload: ownWorkload(j, gangOf(1)), PodGroup: ownPG(1)},
		},
		"a size of its own wins over the parallelism": {
			job: gang(4, ptr.To[int32](3)), workload: ownWorkload(j, gangOf(2)), template: "j-pgt-0", podGroup: ownPG(2),
			want: MinCountPlan{Workload: ownWorkload(j, gangOf(3)), PodGroup: ownPG(3)},
		},
		"the Workload alone is stale": {
			job: j, workload: ownWorkload(j, gangOf(2)), template: "j-pgt-0", podGroup: ownPG(4),
			want: MinCountPlan{Workload: ownWorkload(j, gangOf(4))},
		},
		"no PodGroup: the Workload": {
			job: j, workload: ownWorkload(j, gangOf(2)), template: "j-pgt-0",
			want: MinCountPlan{Workload: ownWorkload(j, gangOf(4))},
		},
		"basic: no size": {
			job: job("j").Parallelism(4).Obj(), workload: ownWorkload(j, gangOf(2)), template: "j-pgt-0", podGroup: ownPG(2),
		},
		"stored basic, the Job a gang: no policy switch": {
			job: j, workload: ownWorkload(j, basic()), template: "j-pgt-0",
		},
		"delegated: the PodGroup follows the owner's template": {
			job: delegated, workload: parent, template: "a", podGroup: parentPG("a", gangOf(5)),
			want: MinCountPlan{PodGroup: parentPG("a", gangOf(2))},
		},
		"delegated, in step: nothing": {
			job: delegated, workload: parent, template: "a", podGroup: parentPG("a", gangOf(2)),
		},
		"delegated, a basic template: nothing": {
			job: delegated, workload: parent, template: "b", podGroup: parentPG("b", basic()),
		},
		"delegated, no PodGroup: nothing": {
			job: delegated, workload: parent, template: "a",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			wl, pg := tc.workload.DeepCopy(), tc.podGroup.DeepCopy()
			got, err := NewScheduling(tc.job, nil, true).PlanMinCount(tc.workload, tc.template, tc.podGroup)
			if err != nil {
				t.Fatalf("PlanMinCount: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wl, tc.workload); diff != "" {
				t.Errorf("the stored Workload changed (-before +after):\n%s", diff)
			}
			if diff := cmp.Diff(pg, tc.podGroup); diff != "" {
				t.Errorf("the stored PodGroup changed (-before +after):\n%s", diff)
			}
		})
	}
}
