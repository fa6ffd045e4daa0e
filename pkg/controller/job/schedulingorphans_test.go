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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// The scheduling orphan tests: in standalone mode the Workloads and
// PodGroups this server made for a Job that is gone are deleted, with a
// UID precondition; nothing else is touched.

// ourWorkload is a Workload as the controller of server "us" makes it for
// job, stored under UID "<name>-uid".
func ourWorkload(name string, job *batchv1.Job) *schedulingv1beta1.Workload {
	return &schedulingv1beta1.Workload{ObjectMeta: schedulingMeta(name, job)}
}

// ourPodGroup is the same for a PodGroup.
func ourPodGroup(name string, job *batchv1.Job) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{ObjectMeta: schedulingMeta(name, job)}
}

func schedulingMeta(name string, job *batchv1.Job) metav1.ObjectMeta {
	return metav1.ObjectMeta{
		Name: name, Namespace: "ns", UID: types.UID(name + "-uid"),
		Labels:          map[string]string{batch.ServerIdentityLabel: "us"},
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, jobKind)},
	}
}

// schedulingDelete is the deletion the controller sends for obj.
func schedulingDelete(resource string, obj metav1.Object) clienttesting.Action {
	return clienttesting.NewDeleteActionWithOptions(schedulingv1beta1.SchemeGroupVersion.WithResource(resource), obj.GetNamespace(), obj.GetName(),
		metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(obj.GetUID())}})
}

func TestDeleteSchedulingOrphan(t *testing.T) {
	job := makeJob("j").Obj()
	replaced := makeJob("j").UID("old-uid").Generated().Obj()
	gone := ourWorkload("wl", job)
	goneGroup := ourPodGroup("pg", job)
	// modify returns a copy of the Workload of a gone Job changed by f.
	modify := func(f func(*schedulingv1beta1.Workload)) *schedulingv1beta1.Workload {
		wl := gone.DeepCopy()
		f(wl)
		return wl
	}
	cases := map[string]struct {
		job        *batchv1.Job
		workload   *schedulingv1beta1.Workload
		podGroup   *schedulingv1beta1.PodGroup
		aggregated bool
		want       []clienttesting.Action
	}{
		"the Workload of a deleted Job is deleted": {
			workload: gone,
			want:     []clienttesting.Action{schedulingDelete(resourceWorkloads, gone)},
		},
		"the PodGroup of a deleted Job is deleted": {
			podGroup: goneGroup,
			want:     []clienttesting.Action{schedulingDelete(resourcePodGroups, goneGroup)},
		},
		"the Workload of a Job replaced by one of the same name is deleted": {
			job: job, workload: ourWorkload("wl", replaced),
			want: []clienttesting.Action{schedulingDelete(resourceWorkloads, gone)},
		},
		"the Job is there: its Workload and PodGroup are kept": {
			job: job, workload: gone, podGroup: goneGroup,
		},
		"a finished Job is there: kept": {
			job:      makeJob("j").Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "done")).Obj(),
			workload: gone, podGroup: goneGroup,
		},
		"aggregated: the host's garbage collector deletes them": {
			workload: gone, podGroup: goneGroup, aggregated: true,
		},
		"controlled by another kind (a JobSet's Workload): kept": {
			workload: modify(func(wl *schedulingv1beta1.Workload) {
				wl.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js", UID: "js-uid", Controller: ptr.To(true)}}
			}),
		},
		"controlled by a host batch/v1 Job: kept": {
			workload: modify(func(wl *schedulingv1beta1.Workload) { wl.OwnerReferences[0].APIVersion = "batch/v1" }),
		},
		"our Job an owner but not the controller: kept": {
			workload: modify(func(wl *schedulingv1beta1.Workload) { wl.OwnerReferences[0].Controller = nil }),
		},
		"another server's: kept": {
			workload: modify(func(wl *schedulingv1beta1.Workload) { wl.Labels[batch.ServerIdentityLabel] = "them" }),
		},
		"without a server identity: kept": {
			workload: modify(func(wl *schedulingv1beta1.Workload) { wl.Labels = nil }),
		},
		"already being deleted: not deleted again": {
			workload: modify(func(wl *schedulingv1beta1.Workload) { wl.DeletionTimestamp = timeAt(testNow) }),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{scheduling: true, cfg: Config{Identity: "us", DeletePodsOfDeletedJobs: !tc.aggregated}})
			if tc.job != nil {
				f.addJobs(t, tc.job)
			}
			var keys []orphanKey
			if tc.workload != nil {
				f.addScheduling(t, f.workloadStore, tc.workload)
				keys = append(keys, orphanKey{resource: resourceWorkloads, namespace: "ns", name: tc.workload.Name})
			}
			if tc.podGroup != nil {
				f.addScheduling(t, f.podGroupStore, tc.podGroup)
				keys = append(keys, orphanKey{resource: resourcePodGroups, namespace: "ns", name: tc.podGroup.Name})
			}
			for _, key := range keys {
				if err := f.syncOrphans(f.ctx, key); err != nil {
					t.Fatalf("syncOrphans(%v): %v", key, err)
				}
			}
			if diff := cmp.Diff(tc.want, f.kube.Actions(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("host requests (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDeleteSchedulingOrphanGone: a Workload no longer in the cache, or
// already gone from the host, is no error.
func TestDeleteSchedulingOrphanGone(t *testing.T) {
	f := newFixture(t, fixtureOptions{scheduling: true, cfg: Config{Identity: "us", DeletePodsOfDeletedJobs: true}})
	if err := f.syncOrphans(f.ctx, orphanKey{resource: resourceWorkloads, namespace: "ns", name: "absent"}); err != nil {
		t.Errorf("syncOrphans of a Workload not in the cache: %v", err)
	}
	wl := ourWorkload("wl", makeJob("j").Obj())
	if err := f.workloadStore.Add(wl); err != nil {
		t.Fatal(err)
	}
	if err := f.syncOrphans(f.ctx, orphanKey{resource: resourceWorkloads, namespace: "ns", name: "wl"}); err != nil {
		t.Errorf("syncOrphans of a Workload the host no longer has: %v", err)
	}
}

// TestOnJobDeleteQueuesSchedulingOrphans: a deleted Job sends the Workloads
// and PodGroups it controls to the orphan worker in standalone mode, and
// only its Pods' selector in aggregated mode.
func TestOnJobDeleteQueuesSchedulingOrphans(t *testing.T) {
	job := makeJob("j").Obj()
	other := makeJob("other").Obj()
	selector := orphanKey{namespace: "ns", selector: batch.ControllerUIDLabel + "=j-uid"}
	cases := map[string]struct {
		standalone bool
		want       []orphanKey
	}{
		"aggregated": {want: []orphanKey{selector}},
		"standalone": {standalone: true, want: []orphanKey{
			selector,
			{resource: resourcePodGroups, namespace: "ns", name: "pg"},
			{resource: resourceWorkloads, namespace: "ns", name: "wl"},
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{scheduling: true, cfg: Config{Identity: "us", DeletePodsOfDeletedJobs: tc.standalone}})
			f.shutDownQueues()
			o := newRecordingQueue[orphanKey]()
			f.orphans = o
			f.addJobs(t, other)
			for _, wl := range []*schedulingv1beta1.Workload{ourWorkload("wl", job), ourWorkload("other-wl", other)} {
				f.addScheduling(t, f.workloadStore, wl)
			}
			for _, pg := range []*schedulingv1beta1.PodGroup{ourPodGroup("pg", job), ourPodGroup("other-pg", other)} {
				f.addScheduling(t, f.podGroupStore, pg)
			}
			f.onJobDelete(f.logger(), job)
			var got []orphanKey
			for _, q := range o.items() {
				got = append(got, q.Key)
			}
			sortKeys := cmpopts.SortSlices(func(a, b orphanKey) bool { return a.resource+"/"+a.name < b.resource+"/"+b.name })
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(orphanKey{}), sortKeys); diff != "" {
				t.Errorf("orphans queued (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunDeletesSchedulingObjectsOfJobsDeletedWhileNobodyLed runs a whole
// term on started informers: in standalone mode the Workload and PodGroup
// of a Job deleted while no replica led are deleted from their informers'
// first list; those of a live Job, of another server and of another owner
// stay, and in aggregated mode all stay.
func TestRunDeletesSchedulingObjectsOfJobsDeletedWhileNobodyLed(t *testing.T) {
	live := makeJob("live").Obj()
	gone := makeJob("gone").Obj()
	goneWorkload, gonePodGroup := ourWorkload("gone-wl", gone), ourPodGroup("gone-pg", gone)
	elsewhere := ourWorkload("elsewhere-wl", gone)
	elsewhere.Labels[batch.ServerIdentityLabel] = "them"
	notOurs := ourPodGroup("js-pg", gone)
	notOurs.OwnerReferences = []metav1.OwnerReference{{APIVersion: "jobset.x-k8s.io/v1alpha2", Kind: "JobSet", Name: "js", UID: "js-uid", Controller: ptr.To(true)}}
	cases := map[string]struct {
		standalone bool
		want       []clienttesting.Action
	}{
		"aggregated": {},
		"standalone": {standalone: true, want: []clienttesting.Action{
			schedulingDelete(resourcePodGroups, gonePodGroup),
			schedulingDelete(resourceWorkloads, goneWorkload),
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := newFakeHost()
			// The Pod of the gone Job is the barrier: once the orphan
			// worker has released it, the informers have synced.
			for _, obj := range []runtime.Object{
				ourWorkload("live-wl", live), ourPodGroup("live-pg", live), goneWorkload, gonePodGroup, elsewhere, notOurs,
				makePod("of-gone", gone).Identity("us").Obj(),
			} {
				if err := kube.Tracker().Add(obj); err != nil {
					t.Fatal(err)
				}
			}
			f := newFixture(t, fixtureOptions{kube: kube})
			jobs := f.jobs
			if err := jobs.Tracker().Add(live); err != nil {
				t.Fatal(err)
			}
			ctx := f.runTerm(t, Config{Identity: "us", DeletePodsOfDeletedJobs: tc.standalone}, func(c *Controller, host informers.SharedInformerFactory) error {
				return c.ManageWorkloads(host.Scheduling().V1beta1().Workloads(), host.Scheduling().V1beta1().PodGroups())
			})
			var got []clienttesting.Action
			err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
				got = schedulingDeletes(kube.Actions())
				return len(podWrites(kube)) > 0 && len(got) >= len(tc.want), nil
			})
			if err != nil {
				t.Fatalf("waiting for the deletions: %v", err)
			}
			sortActions := cmpopts.SortSlices(func(a, b clienttesting.Action) bool { return a.GetResource().Resource < b.GetResource().Resource })
			if diff := cmp.Diff(tc.want, got, sortActions, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("scheduling deletions (-want +got):\n%s", diff)
			}
		})
	}
}

// schedulingDeletes are the deletions of Workloads and PodGroups (the
// live Job's sync creates its own).
func schedulingDeletes(actions []clienttesting.Action) []clienttesting.Action {
	var out []clienttesting.Action
	for _, a := range actions {
		r := a.GetResource().Resource
		if (r == resourceWorkloads || r == resourcePodGroups) && a.GetVerb() == "delete" {
			out = append(out, a)
		}
	}
	return out
}

// TestCreatedSchedulingObjectsCarryIdentity: the Workload and PodGroup a
// sync creates carry the server's identity, which tells them from another
// server's when their Job is gone.
func TestCreatedSchedulingObjectsCarryIdentity(t *testing.T) {
	f := newFixture(t, fixtureOptions{scheduling: true, cfg: Config{Identity: "us"}})
	job := makeJob("j").Obj()
	f.addJobs(t, job)
	if err := f.syncJob(t, job); err != nil {
		t.Fatalf("syncJob: %v", err)
	}
	want := map[string]map[string]string{
		resourceWorkloads: {batch.ServerIdentityLabel: "us"},
		resourcePodGroups: {batch.ServerIdentityLabel: "us"},
	}
	got := map[string]map[string]string{}
	for _, a := range f.kube.Actions() {
		if c, ok := a.(clienttesting.CreateAction); ok && c.GetResource().Resource != "pods" {
			got[c.GetResource().Resource] = c.GetObject().(metav1.Object).GetLabels()
		}
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("labels of the scheduling objects created (-want +got):\n%s", diff)
	}
}
