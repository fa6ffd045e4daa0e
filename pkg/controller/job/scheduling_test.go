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
	"errors"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// The scheduling tests check that a sync carries out decide's three
// scheduling steps against the host (creations, their Events, the gang
// size patches) before the Pods, and that the Pods join the PodGroup;
// decide's tables cover the decisions themselves.

func TestSyncJobScheduling(t *testing.T) {
	gang := func(j *batchv1.Job) {
		j.Spec.Scheduling = &batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
			Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{}}}
	}
	newGang := makeJob("j").Parallelism(3).Completions(3).Do(gang).Obj()
	// workloadOf is the Workload the controller makes for j, as the host
	// stores it (the fake host gives it UID "<name>-uid").
	workloadOf := func(j *batchv1.Job) *schedulingv1beta1.Workload {
		wl, err := decide.DesiredWorkload(j)
		if err != nil {
			t.Fatal(err)
		}
		wl.UID = types.UID(wl.Name + "-uid")
		return wl
	}
	resized := func(wl *schedulingv1beta1.Workload, n int32) *schedulingv1beta1.Workload {
		wl = wl.DeepCopy()
		wl.Spec.PodGroupTemplates[0].SchedulingPolicy.Gang.MinCount = n
		return wl
	}
	// podGroupOf is the PodGroup made of wl's only template for j.
	podGroupOf := func(j *batchv1.Job, wl *schedulingv1beta1.Workload, owners ...metav1.OwnerReference) *schedulingv1beta1.PodGroup {
		tmpl := wl.Spec.PodGroupTemplates[0]
		name := decide.PodGroupName(wl.Name, tmpl.Name)
		return &schedulingv1beta1.PodGroup{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: wl.Namespace, UID: types.UID(name + "-uid"),
				OwnerReferences: append([]metav1.OwnerReference{*metav1.NewControllerRef(j, jobKind)}, owners...)},
			Spec: schedulingv1beta1.PodGroupSpec{
				WorkloadRef:      &schedulingv1beta1.WorkloadReference{WorkloadName: wl.Name, TemplateName: tmpl.Name},
				SchedulingPolicy: *tmpl.SchedulingPolicy.DeepCopy(),
			},
		}
	}
	ownerOf := func(wl *schedulingv1beta1.Workload) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "Workload", Name: wl.Name, UID: wl.UID}
	}
	resizedPG := func(pg *schedulingv1beta1.PodGroup, n int32) *schedulingv1beta1.PodGroup {
		pg = pg.DeepCopy()
		pg.Spec.SchedulingPolicy.Gang.MinCount = n
		return pg
	}
	wl := workloadOf(newGang)
	pg := podGroupOf(newGang, wl, ownerOf(wl))
	running := func(j *batchv1.Job) []*corev1.Pod {
		return []*corev1.Pod{makePod("a", j).Phase(corev1.PodRunning).Obj()}
	}
	grown := started(makeJob("j").Parallelism(5).Completions(5).Do(gang)).Obj()

	// A JobSet that keeps its Workload and delegated the PodGroup of its
	// template "workers".
	child := makeJob("j").Parallelism(2).Completions(2).Do(func(j *batchv1.Job) {
		j.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js", UID: "js-uid", Controller: ptr.To(true)}}
		j.Annotations = map[string]string{decide.GroupTemplateNameAnnotation: "workers"}
	}).Obj()
	parent := &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "js", Namespace: "ns", UID: "js-wl-uid"},
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{APIGroup: "jobset.x-k8s.io", Kind: "JobSet", Name: "js"},
			PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{Name: "workers",
				SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: 2}}}},
		},
	}
	childPG := podGroupOf(child, parent)

	cases := map[string]struct {
		job        *batchv1.Job
		pods       func(*batchv1.Job) []*corev1.Pod
		workloads  []*schedulingv1beta1.Workload
		podGroups  []*schedulingv1beta1.PodGroup
		disabled   bool
		failCreate string
		// want*: the host's scheduling objects after the sync, the
		// schedulingGroup of each Pod created, the scheduling requests.
		wantWorkloads []*schedulingv1beta1.Workload
		wantPodGroups []*schedulingv1beta1.PodGroup
		wantGroups    []*corev1.PodSchedulingGroup
		wantRequests  []string
		wantEvents    []string
		wantErr       bool
	}{
		"a new gang Job: its Workload, its PodGroup, then its Pods in it": {
			job:           newGang,
			wantWorkloads: []*schedulingv1beta1.Workload{wl},
			wantPodGroups: []*schedulingv1beta1.PodGroup{pg},
			wantGroups:    groups(pg.Name, 3),
			wantRequests:  []string{"create podgroups", "create workloads"},
			wantEvents: []string{
				"Normal PodGroupCreated Created PodGroup " + pg.Name + " for Job j",
				"Normal SuccessfulCreate Created pod: j-1", "Normal SuccessfulCreate Created pod: j-2", "Normal SuccessfulCreate Created pod: j-3",
				"Normal WorkloadCreated Created Workload " + wl.Name + " for Job j",
			},
		},
		"both exist: the Pods join the PodGroup, nothing written": {
			job: newGang, workloads: []*schedulingv1beta1.Workload{wl}, podGroups: []*schedulingv1beta1.PodGroup{pg},
			wantWorkloads: []*schedulingv1beta1.Workload{wl},
			wantPodGroups: []*schedulingv1beta1.PodGroup{pg},
			wantGroups:    groups(pg.Name, 3),
			wantEvents: []string{
				"Normal SuccessfulCreate Created pod: j-1", "Normal SuccessfulCreate Created pod: j-2", "Normal SuccessfulCreate Created pod: j-3",
			},
		},
		"parallelism raised on a running gang: minCount follows on both": {
			job: grown, pods: running,
			workloads: []*schedulingv1beta1.Workload{resized(wl, 3)}, podGroups: []*schedulingv1beta1.PodGroup{resizedPG(pg, 3)},
			wantWorkloads: []*schedulingv1beta1.Workload{resized(wl, 5)},
			wantPodGroups: []*schedulingv1beta1.PodGroup{resizedPG(pg, 5)},
			wantGroups:    groups(pg.Name, 4),
			wantRequests:  []string{"patch podgroups " + pg.Name, "patch workloads " + wl.Name},
			wantEvents: []string{
				"Normal SuccessfulCreate Created pod: j-1", "Normal SuccessfulCreate Created pod: j-2",
				"Normal SuccessfulCreate Created pod: j-3", "Normal SuccessfulCreate Created pod: j-4",
			},
		},
		"a Job that started without them gets none": {
			job: started(makeJob("j").Parallelism(2).Completions(2).Do(gang)).Obj(), pods: running,
			wantGroups: groups("", 1),
			wantEvents: []string{"Normal SuccessfulCreate Created pod: j-1"},
		},
		"disabled: no request, Pods as ever": {
			job: newGang, disabled: true,
			wantGroups: groups("", 3),
			wantEvents: []string{
				"Normal SuccessfulCreate Created pod: j-1", "Normal SuccessfulCreate Created pod: j-2", "Normal SuccessfulCreate Created pod: j-3",
			},
		},
		"the Workload refused: an Event, an error, no Pod": {
			job: newGang, failCreate: "workloads",
			wantRequests: []string{"create workloads"},
			wantEvents:   []string{"Warning FailedWorkloadCreate Failed to create Workload for Job j: refused"},
			wantErr:      true,
		},
		"the PodGroup refused: the Workload stays, an error, no Pod": {
			job: newGang, failCreate: "podgroups",
			wantWorkloads: []*schedulingv1beta1.Workload{wl},
			wantRequests:  []string{"create podgroups", "create workloads"},
			wantEvents:    []string{"Normal WorkloadCreated Created Workload " + wl.Name + " for Job j"},
			wantErr:       true,
		},
		"delegated: a PodGroup of the owner's template, owned by the Job alone": {
			job: child, workloads: []*schedulingv1beta1.Workload{parent},
			wantWorkloads: []*schedulingv1beta1.Workload{parent},
			wantPodGroups: []*schedulingv1beta1.PodGroup{childPG},
			wantGroups:    groups(childPG.Name, 2),
			wantRequests:  []string{"create podgroups"},
			wantEvents: []string{
				"Normal PodGroupCreated Created PodGroup " + childPG.Name + " for Job j",
				"Normal SuccessfulCreate Created pod: j-1", "Normal SuccessfulCreate Created pod: j-2",
			},
		},
		"delegated, the owner's Workload not there: Pods as ever": {
			job:        child,
			wantGroups: groups("", 2),
			wantEvents: []string{"Normal SuccessfulCreate Created pod: j-1", "Normal SuccessfulCreate Created pod: j-2"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{scheduling: !tc.disabled})
			stored := func(action clienttesting.Action) (bool, runtime.Object, error) {
				if action.GetResource().Resource == tc.failCreate {
					return true, nil, errors.New("refused")
				}
				// As the real host: a UID for what is created.
				obj := action.(clienttesting.CreateAction).GetObject().(metav1.Object)
				obj.SetUID(types.UID(obj.GetName() + "-uid"))
				return false, nil, nil
			}
			f.kube.PrependReactor("create", "workloads", stored)
			f.kube.PrependReactor("create", "podgroups", stored)
			f.addJobs(t, tc.job)
			if tc.pods != nil {
				f.addPods(t, tc.pods(tc.job)...)
			}
			for _, wl := range tc.workloads {
				f.addScheduling(t, f.workloadStore, wl)
			}
			for _, pg := range tc.podGroups {
				f.addScheduling(t, f.podGroupStore, pg)
			}
			before := len(f.kube.Actions())

			err := f.syncJob(t, tc.job)
			if (err != nil) != tc.wantErr {
				t.Fatalf("syncJob: %v, want error: %v", err, tc.wantErr)
			}
			var requests []string
			var created []*corev1.PodSchedulingGroup
			for _, a := range f.kube.Actions()[before:] {
				switch r := a.GetResource().Resource; {
				case r == "pods" && a.GetVerb() == "create":
					created = append(created, a.(clienttesting.CreateAction).GetObject().(*corev1.Pod).Spec.SchedulingGroup)
				case r == "workloads" || r == "podgroups":
					if a.GetVerb() == "patch" {
						requests = append(requests, "patch "+r+" "+a.(clienttesting.PatchAction).GetName())
					} else if a.GetVerb() != "list" && a.GetVerb() != "watch" {
						requests = append(requests, a.GetVerb()+" "+r)
					}
				}
			}
			sort.Strings(requests)
			if diff := cmp.Diff(tc.wantRequests, requests); diff != "" {
				t.Errorf("scheduling requests (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantGroups, created); diff != "" {
				t.Errorf("spec.schedulingGroup of the Pods created (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantEvents, f.events()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			workloads, err := f.kube.SchedulingV1beta1().Workloads("ns").List(f.ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			// The fake host fills in what a real one would.
			hostFields := cmp.Options{cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ManagedFields"), cmpopts.IgnoreTypes(metav1.TypeMeta{})}
			if diff := cmp.Diff(tc.wantWorkloads, ptrs(workloads.Items), hostFields); diff != "" {
				t.Errorf("the host's Workloads (-want +got):\n%s", diff)
			}
			podGroups, err := f.kube.SchedulingV1beta1().PodGroups("ns").List(f.ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantPodGroups, ptrs(podGroups.Items), hostFields); diff != "" {
				t.Errorf("the host's PodGroups (-want +got):\n%s", diff)
			}
		})
	}
}

// groups is the spec.schedulingGroup of n Pods: in the PodGroup of that
// name, or none for "".
func groups(podGroup string, n int) []*corev1.PodSchedulingGroup {
	out := make([]*corev1.PodSchedulingGroup, n)
	if podGroup != "" {
		for i := range out {
			out[i] = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(podGroup)}
		}
	}
	return out
}

// ptrs points at the items of a list, nil for none.
func ptrs[T any](items []T) []*T {
	var out []*T
	for i := range items {
		out = append(out, &items[i])
	}
	return out
}

// addScheduling puts a Workload or PodGroup in the informer's cache and
// the fake host.
func (f *fixture) addScheduling(t *testing.T, store interface{ Add(any) error }, obj runtime.Object) {
	t.Helper()
	if err := store.Add(obj); err != nil {
		t.Fatal(err)
	}
	if err := f.kube.Tracker().Add(obj); err != nil {
		t.Fatal(err)
	}
}
