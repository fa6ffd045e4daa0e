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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// The names are kube-controller-manager 1.37.2's for the same inputs
// (its computeWorkloadName and computePodGroupName, run once to write
// these rows down).
func TestSchedulingNames(t *testing.T) {
	named := func(name string, uid types.UID) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid}}
	}
	a, w, tt := strings.Repeat("a", 300), strings.Repeat("w", 250), strings.Repeat("t", 250)
	cases := map[string]struct {
		got, want string
	}{
		"Workload: the Job's name and the hash of its UID": {
			got: WorkloadName(named("j", "j-uid")), want: "j-84bcdcf696"},
		"Workload: a UUID": {
			got: WorkloadName(named("my-job", "0b5e7e6c-3b8f-4f0e-9a53-6f1d2d7c8e11")), want: "my-job-d5f7df6b"},
		"Workload: a name too long is cut to fit 253": {
			got: WorkloadName(named(a, "uid-long")), want: a[:242] + "-799bb5c8bd"},
		"PodGroup: both names and their hash": {
			got: PodGroupName("j-abc", "j-pgt-0"), want: "j-abc-j-pgt-0-8c569c585"},
		"PodGroup: a short template leaves the rest to the Workload": {
			got: PodGroupName(w, "tpl"), want: w[:239] + "-tpl-5598d65b5"},
		"PodGroup: a short Workload leaves the rest to the template": {
			got: PodGroupName("wl", tt), want: "wl-" + tt[:239] + "-5c9dbd8778"},
		"PodGroup: both long share the room, the Workload gets the odd one": {
			got: PodGroupName(w[:200], tt[:200]), want: w[:121] + "-" + tt[:120] + "-6f9f45db49"},
		"PodGroup: template of 201": {
			got: PodGroupName(w[:200], tt[:201]), want: w[:121] + "-" + tt[:120] + "-75fcf977c5"},
		"the template of a Job's own Workload": {
			got: PodGroupTemplateName(named("j", "")), want: "j-pgt-0"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if tc.got != tc.want {
				t.Errorf("name = %q, want %q", tc.got, tc.want)
			}
			if len(tc.got) > 253 {
				t.Errorf("name of %d characters", len(tc.got))
			}
		})
	}
}

func TestDesiredWorkload(t *testing.T) {
	j := job("j").Obj()
	// want is the Workload of j with one template of the policy.
	want := func(policy schedulingv1beta1.PodGroupSchedulingPolicy, edit ...func(*schedulingv1beta1.PodGroupTemplate)) *schedulingv1beta1.Workload {
		wl := ownWorkload(j, policy)
		wl.UID = ""
		for _, e := range edit {
			e(&wl.Spec.PodGroupTemplates[0])
		}
		return wl
	}
	cases := map[string]struct {
		job  *batchv1.Job
		want *schedulingv1beta1.Workload
	}{
		"no spec.scheduling: basic": {
			job: job("j").Obj(), want: want(basic()),
		},
		"basic asked for": {
			job: job("j").Do(scheduled(basicPolicy())).Obj(), want: want(basic()),
		},
		"an empty policy: basic": {
			job:  job("j").Do(scheduled(&batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{}})).Obj(),
			want: want(basic()),
		},
		"a gang without size: the parallelism": {
			job: job("j").Parallelism(4).Do(scheduled(gangPolicy(nil))).Obj(), want: want(gangOf(4)),
		},
		"a gang without size, parallelism 0: 1": {
			job: job("j").Parallelism(0).Do(scheduled(gangPolicy(nil))).Obj(), want: want(gangOf(1)),
		},
		"a gang without size, parallelism unset: 1": {
			job: job("j").Do(func(j *batchv1.Job) { j.Spec.Parallelism = nil }).Do(scheduled(gangPolicy(nil))).Obj(), want: want(gangOf(1)),
		},
		"a gang of a given size keeps it": {
			job: job("j").Parallelism(4).Do(scheduled(gangPolicy(ptr.To[int32](2)))).Obj(), want: want(gangOf(2)),
		},
		"the template's priority class": {
			job:  job("j").Do(func(j *batchv1.Job) { j.Spec.Template.Spec.PriorityClassName = "high" }).Obj(),
			want: want(basic(), func(t *schedulingv1beta1.PodGroupTemplate) { t.PriorityClassName = "high" }),
		},
		"constraints, disruption mode and claims": {
			job: job("j").Do(scheduled(&batchv1.JobSchedulingConfiguration{
				SchedulingPolicy:      gangPolicy(ptr.To[int32](1)).SchedulingPolicy,
				SchedulingConstraints: &schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints{Topology: []schedulingv1alpha3.TopologyConstraint{{Key: "zone"}}},
				DisruptionMode:        &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}},
				ResourceClaims:        []schedulingv1alpha3.WorkloadPodGroupResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpus")}},
			})).Obj(),
			want: want(gangOf(1), func(t *schedulingv1beta1.PodGroupTemplate) {
				t.SchedulingConstraints = &schedulingv1beta1.PodGroupSchedulingConstraints{Topology: []schedulingv1beta1.TopologyConstraint{{Key: "zone"}}}
				t.DisruptionMode = &schedulingv1beta1.DisruptionMode{All: &schedulingv1beta1.AllDisruptionMode{}}
				t.ResourceClaims = []schedulingv1beta1.PodGroupResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpus")}}
			}),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.job.DeepCopy()
			got, err := DesiredWorkload(tc.job)
			if err != nil {
				t.Fatalf("DesiredWorkload: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Workload (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.job); diff != "" {
				t.Errorf("the Job changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestPlanWorkload(t *testing.T) {
	j := job("j").Obj()
	mine := ownWorkload(j, basic())
	desired := func(j *batchv1.Job) *schedulingv1beta1.Workload {
		wl, err := DesiredWorkload(j)
		if err != nil {
			t.Fatal(err)
		}
		return wl
	}
	edited := func(wl *schedulingv1beta1.Workload, edit func(*schedulingv1beta1.Workload)) *schedulingv1beta1.Workload {
		wl = wl.DeepCopy()
		edit(wl)
		return wl
	}
	// Another Workload that names the Job but that the Job does not
	// control: a user's, which the controller leaves alone.
	users := edited(mine, func(wl *schedulingv1beta1.Workload) { wl.Name, wl.OwnerReferences = "users", nil })
	otherJob := edited(mine, func(wl *schedulingv1beta1.Workload) { wl.Spec.ControllerRef.Name = "other" })
	batchGroup := edited(mine, func(wl *schedulingv1beta1.Workload) { wl.Spec.ControllerRef.APIGroup = "batch" })
	twoTemplates := edited(mine, func(wl *schedulingv1beta1.Workload) {
		wl.Spec.PodGroupTemplates = append(wl.Spec.PodGroupTemplates, schedulingv1beta1.PodGroupTemplate{Name: "more"})
	})
	delegated := job("j").Do(ownedBy("jobset.x-k8s.io/v1alpha2", "JobSet", ptr.To("b"))).Obj()
	parent := parentWorkload("jobset.x-k8s.io", "JobSet")
	cases := map[string]struct {
		job          *batchv1.Job
		started      bool
		disabled     bool
		workloads    []*schedulingv1beta1.Workload
		want         WorkloadPlan
		wantErrMatch error
	}{
		"a new Job without Workload: create it": {
			job: j, want: WorkloadPlan{Create: desired(j), Template: "j-pgt-0"},
		},
		"a new Job's gang Workload": {
			job:  job("j").Parallelism(3).Do(scheduled(gangPolicy(nil))).Obj(),
			want: WorkloadPlan{Create: desired(job("j").Parallelism(3).Do(scheduled(gangPolicy(nil))).Obj()), Template: "j-pgt-0"},
		},
		"its Workload exists: use it": {
			job: j, workloads: []*schedulingv1beta1.Workload{users, mine, otherJob}, want: WorkloadPlan{Workload: mine, Template: "j-pgt-0"},
		},
		"its Workload exists, the Job has started: use it": {
			job: j, started: true, workloads: []*schedulingv1beta1.Workload{mine}, want: WorkloadPlan{Workload: mine, Template: "j-pgt-0"},
		},
		"a started Job without Workload: Pod by Pod": {
			job: j, started: true, want: WorkloadPlan{PodByPod: "the job has started without a Workload"},
		},
		"a user's Workload naming the Job is not the Job's: create": {
			job: j, workloads: []*schedulingv1beta1.Workload{users}, want: WorkloadPlan{Create: desired(j), Template: "j-pgt-0"},
		},
		"a Workload naming batch/v1's Job of that name is not ours": {
			job: j, workloads: []*schedulingv1beta1.Workload{batchGroup}, want: WorkloadPlan{Create: desired(j), Template: "j-pgt-0"},
		},
		"two of its own: Pod by Pod, and an error in the log": {
			job: j, workloads: []*schedulingv1beta1.Workload{mine, edited(mine, func(wl *schedulingv1beta1.Workload) { wl.Name = "twin" })},
			want: WorkloadPlan{PodByPod: "2 Workloads belong to the job, falling back to default scheduling", Ambiguous: true},
		},
		"its Workload with two templates: an error, synced again": {
			job: j, workloads: []*schedulingv1beta1.Workload{twoTemplates}, wantErrMatch: ErrWorkloadShape,
		},
		"disabled: nothing": {
			job: j, disabled: true, want: WorkloadPlan{PodByPod: "no scheduling objects for this job"},
		},
		"delegated: the owner's Workload and the template named": {
			job: delegated, workloads: []*schedulingv1beta1.Workload{mine, parent}, want: WorkloadPlan{Workload: parent, Template: "b"},
		},
		"delegated, started: the owner's Workload all the same": {
			job: delegated, started: true, workloads: []*schedulingv1beta1.Workload{parent}, want: WorkloadPlan{Workload: parent, Template: "b"},
		},
		"delegated with an empty template name: the first template": {
			job:       job("j").Do(ownedBy("jobset.x-k8s.io/v1alpha2", "JobSet", ptr.To(""))).Obj(),
			workloads: []*schedulingv1beta1.Workload{parent}, want: WorkloadPlan{Workload: parent, Template: "a"},
		},
		"delegated, the owner's Workload not there yet: Pod by Pod": {
			job: delegated, workloads: []*schedulingv1beta1.Workload{parentWorkload("jobset.x-k8s.io", "Other")},
			want: WorkloadPlan{PodByPod: "the Workload of the job's owner is not there yet"},
		},
		"delegated, the owner's Workload in another group is not its": {
			job: delegated, workloads: []*schedulingv1beta1.Workload{parentWorkload("other.io", "JobSet")},
			want: WorkloadPlan{PodByPod: "the Workload of the job's owner is not there yet"},
		},
		"delegated, no such template: Pod by Pod": {
			job:       job("j").Do(ownedBy("jobset.x-k8s.io/v1alpha2", "JobSet", ptr.To("c"))).Obj(),
			workloads: []*schedulingv1beta1.Workload{parent},
			want:      WorkloadPlan{PodByPod: `the Workload parent-wl of the job's owner has no PodGroupTemplate "c"`},
		},
		"delegated by an owner of the core group": {
			job:       job("j").Do(ownedBy("v1", "ReplicationController", ptr.To("a"))).Obj(),
			workloads: []*schedulingv1beta1.Workload{parentWorkload("", "ReplicationController")},
			want:      WorkloadPlan{Workload: parentWorkload("", "ReplicationController"), Template: "a"},
		},
		"delegated by an owner with a bad apiVersion: Pod by Pod": {
			job:  job("j").Do(ownedBy("a/b/c", "JobSet", ptr.To("a"))).Obj(),
			want: WorkloadPlan{PodByPod: "the job's owner has no valid apiVersion"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var ps []*corev1.Pod
			if tc.started {
				ps = pods(pod("p"))
			}
			got := NewScheduling(tc.job, ps, !tc.disabled).PlanWorkload(tc.workloads)
			if diff := cmp.Diff(tc.want, got, cmpopts.IgnoreFields(WorkloadPlan{}, "Err")); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErrMatch, got.Err, cmpopts.EquateErrors()); diff != "" {
				t.Errorf("error (-want +got):\n%s", diff)
			}
		})
	}
}
