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

package e2e

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	ourbatchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// workloadGates turn on the Job scheduling of Kubernetes 1.37 (KEP-5547)
// in every process: kube-apiserver, kube-controller-manager and
// batch-apiserver.
const workloadGates = "--feature-gates=GenericWorkload=true,WorkloadWithJob=true"

// TestSchedulingObjectsSideBySide runs the same gang Job as batch/v1 under
// kube-controller-manager and as ours under batch-apiserver, on a host of
// its own with WorkloadWithJob on and scheduling.k8s.io/v1beta1 served:
// each gets a Workload and a PodGroup of the same names (by the same rule
// of its own UID), owners and spec, its Pods join the PodGroup; raising
// the parallelism moves minCount on both alike; deleting the Job removes
// them (the host's garbage collector).
func TestSchedulingObjectsSideBySide(t *testing.T) {
	skipWithoutOurController(t)
	bins.SkipIfHostLacks(t, framework.HostGap{Since: 37, Missing: "scheduling.k8s.io/v1beta1 Workloads and PodGroups"})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	host, client, dyn := startWorkloadHost(ctx, t)
	sides := make([]*schedulingSide, len(controllers))
	for i, ctl := range controllers {
		s := newSchedulingSide(ctx, t, host, ctl, client, dyn, "gang-"+ctl.nsSuffix)
		s.job = s.create(gangJob("gang", 2))
		sides[i] = s
	}

	// Both made, named by the same rule, the Pods in the PodGroup.
	for _, s := range sides {
		wl, pg := s.waitObjects(2)
		ours := &ourbatchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: s.job.Name, UID: s.job.UID}}
		if want := decide.WorkloadName(ours); wl.Name != want {
			t.Errorf("%s: Workload %s, want %s", s.ctl.name, wl.Name, want)
		}
		if want := decide.PodGroupName(wl.Name, decide.PodGroupTemplateName(ours)); pg.Name != want {
			t.Errorf("%s: PodGroup %s, want %s", s.ctl.name, pg.Name, want)
		}
		pods, err := framework.WaitForActivePods(ctx, client, s.jobs.Namespace, s.job.Name, 2, podsTimeout)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods {
			got := podScheduling{Group: ptr.Deref(p.Spec.SchedulingGroup, corev1.PodSchedulingGroup{}).PodGroupName, Owners: len(p.OwnerReferences)}
			if diff := cmp.Diff(podScheduling{Group: &pg.Name, Owners: 1}, got); diff != "" {
				t.Errorf("%s: Pod %s (-want +got):\n%s", s.ctl.name, p.Name, diff)
			}
		}
	}
	compareSides(t, sides, 2)

	// The parallelism raised: minCount follows, on both objects.
	for _, s := range sides {
		if _, err := s.jobs.MergePatch(ctx, s.job.Name, map[string]any{"spec": map[string]any{"parallelism": 3}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range sides {
		s.waitObjects(3)
	}
	compareSides(t, sides, 3)

	// Deleted: the host's garbage collector takes both.
	for _, s := range sides {
		if err := s.jobs.Delete(ctx, s.job.Name); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range sides {
		eventually(t, 2*time.Minute, s.ctl.name+": Workload and PodGroup gone", func() (bool, string) {
			wls, err := client.SchedulingV1beta1().Workloads(s.jobs.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			pgs, err := client.SchedulingV1beta1().PodGroups(s.jobs.Namespace).List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err.Error()
			}
			return len(wls.Items)+len(pgs.Items) == 0, fmt.Sprintf("%d Workloads, %d PodGroups", len(wls.Items), len(pgs.Items))
		})
	}
}

// startWorkloadHost starts a host of its own with the Job scheduling of
// Kubernetes 1.37 on in kube-apiserver (scheduling.k8s.io/v1beta1
// served), kube-controller-manager (with the controller that takes the
// finalizer off a PodGroup once its Pods are gone) and batch-apiserver. It
// returns it with unthrottled admin clients.
func startWorkloadHost(ctx context.Context, t *testing.T) (*framework.Cluster, kubernetes.Interface, dynamic.Interface) {
	t.Helper()
	host, err := framework.StartClusterWith(ctx, bins, filepath.Join(t.TempDir(), "host"), framework.ClusterOptions{
		KubeAPIServerArgs:         []string{workloadGates, "--runtime-config=scheduling.k8s.io/v1beta1=true"},
		KubeControllerManagerArgs: []string{workloadGates},
		KubeControllers: []string{"garbage-collector-controller", "namespace-controller", "serviceaccount-controller",
			"serviceaccount-token-controller", "clusterrole-aggregation-controller", "job-controller",
			"ttl-after-finished-controller", "pod-garbage-collector-controller", "podgroup-protection-controller"},
		BatchAPIServerArgs: []string{workloadGates},
	})
	if err != nil {
		if host != nil {
			host.DumpLogs(os.Stderr, 40)
		}
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			host.DumpLogs(os.Stderr, 40)
		}
		host.Stop()
	})
	cfg := rest.CopyConfig(host.Admin)
	cfg.QPS, cfg.Burst = -1, 0
	return host, kubernetes.NewForConfigOrDie(cfg), dynamic.NewForConfigOrDie(cfg)
}

// newSchedulingSide makes the namespace of one controller's Jobs.
func newSchedulingSide(ctx context.Context, t *testing.T, host *framework.Cluster, ctl controllerUnderTest, client kubernetes.Interface, dyn dynamic.Interface, ns string) *schedulingSide {
	t.Helper()
	host.Kubectl().MustRun(t, "create", "namespace", ns)
	eventually(t, time.Minute, "default ServiceAccount in "+ns, func() (bool, string) {
		_, err := client.CoreV1().ServiceAccounts(ns).Get(ctx, "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	return &schedulingSide{t: t, ctx: ctx, ctl: ctl, client: client, jobs: framework.Jobs{API: ctl.api, Client: dyn, Namespace: ns}}
}

// schedulingSide is the gang Job of one controller.
type schedulingSide struct {
	t      *testing.T
	ctx    context.Context
	ctl    controllerUnderTest
	client kubernetes.Interface
	jobs   framework.Jobs
	job    *batchv1.Job
	// wl and pg are the objects as last seen.
	wl *schedulingv1beta1.Workload
	pg *schedulingv1beta1.PodGroup
}

// podScheduling is what a Pod carries of its Job's scheduling objects.
type podScheduling struct {
	Group  *string
	Owners int
}

func (s *schedulingSide) create(job *batchv1.Job) *batchv1.Job {
	s.t.Helper()
	created, err := s.jobs.Create(s.ctx, job)
	if err != nil {
		s.t.Fatal(err)
	}
	return created
}

// waitObjects waits for one Workload and one PodGroup in the side's
// namespace, both with a gang of minCount, and keeps them.
func (s *schedulingSide) waitObjects(minCount int32) (*schedulingv1beta1.Workload, *schedulingv1beta1.PodGroup) {
	s.t.Helper()
	eventually(s.t, podsTimeout, fmt.Sprintf("%s: a Workload and a PodGroup of minCount %d", s.ctl.name, minCount), func() (bool, string) {
		wls, err := s.client.SchedulingV1beta1().Workloads(s.jobs.Namespace).List(s.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		pgs, err := s.client.SchedulingV1beta1().PodGroups(s.jobs.Namespace).List(s.ctx, metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		seen := fmt.Sprintf("Workloads %v\nPodGroups %v", wls.Items, pgs.Items)
		if len(wls.Items) != 1 || len(pgs.Items) != 1 {
			return false, seen
		}
		s.wl, s.pg = &wls.Items[0], &pgs.Items[0]
		return gangSize(s.wl.Spec.PodGroupTemplates[0].SchedulingPolicy) == minCount && gangSize(s.pg.Spec.SchedulingPolicy) == minCount, seen
	})
	return s.wl, s.pg
}

func gangSize(p schedulingv1beta1.PodGroupSchedulingPolicy) int32 {
	if p.Gang == nil {
		return 0
	}
	return p.Gang.MinCount
}

// compareSides compares the two sides' objects with what must differ set
// aside: names (each of its own Job's UID, checked above), UIDs, times,
// versions, and the Job's API group in the references.
func compareSides(t *testing.T, sides []*schedulingSide, minCount int32) {
	t.Helper()
	type objects struct {
		Workload *schedulingv1beta1.Workload
		PodGroup *schedulingv1beta1.PodGroup
	}
	var got []objects
	for _, s := range sides {
		wl, pg := s.wl.DeepCopy(), s.pg.DeepCopy()
		// Ours carry the server's identity, as its Pods do (a standalone
		// server deletes only its own); kube-controller-manager's do not.
		if s.ctl.api == framework.OurJobs {
			for _, m := range []metav1.ObjectMeta{wl.ObjectMeta, pg.ObjectMeta} {
				if m.Labels[batch.ServerIdentityLabel] == "" {
					t.Errorf("%s: %s has no %s label", s.ctl.name, m.Name, batch.ServerIdentityLabel)
				}
			}
		}
		wl.ObjectMeta = comparableMeta(wl.ObjectMeta)
		wl.Spec.ControllerRef.APIGroup = "<job group>"
		pg.ObjectMeta = comparableMeta(pg.ObjectMeta)
		pg.Spec.WorkloadRef.WorkloadName = "<workload>"
		got = append(got, objects{wl, pg})
	}
	if diff := cmp.Diff(got[0], got[1]); diff != "" {
		t.Errorf("minCount %d: %s's Workload and PodGroup (-) and %s's (+):\n%s", minCount, sides[0].ctl.name, sides[1].ctl.name, diff)
	}
}

// comparableMeta keeps of an object's metadata its owners, labels,
// annotations and finalizers, without what names a side: UIDs, names, the
// Job's apiVersion, the server identity label.
func comparableMeta(m metav1.ObjectMeta) metav1.ObjectMeta {
	labels := maps.Clone(m.Labels)
	delete(labels, batch.ServerIdentityLabel)
	if len(labels) == 0 {
		labels = nil
	}
	owners := make([]metav1.OwnerReference, len(m.OwnerReferences))
	for i, o := range m.OwnerReferences {
		o.UID, o.Name = "", "<"+o.Kind+">"
		if o.Kind == "Job" {
			o.APIVersion = "<job apiVersion>"
		}
		owners[i] = o
	}
	return metav1.ObjectMeta{OwnerReferences: owners, Labels: labels, Annotations: m.Annotations, Finalizers: m.Finalizers}
}

// gangJob is a Job of parallelism Pods that are placed together or not at
// all: a gang whose size follows the parallelism.
func gangJob(name string, parallelism int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To(parallelism),
			Completions: ptr.To[int32](4),
			Scheduling: &batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
				Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{}}},
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
			}},
		},
	}
}

// TestGangPlacementSideBySide adds kube-scheduler with its gang
// scheduling (GenericWorkload on) to such a host, and Nodes with room for
// one Pod each, a pool per Job (a nodeSelector). For batch/v1's Jobs and
// ours alike: a basic Job of two Pods on a pool of one Node has one bound
// and the other waiting, Pod by Pod; a gang of two on a pool of one Node
// has none bound, and once a second Node joins its pool, both.
func TestGangPlacementSideBySide(t *testing.T) {
	skipWithoutOurController(t)
	bins.SkipIfHostLacks(t, framework.HostGap{Since: 37, Missing: "scheduling.k8s.io/v1beta1 Workloads and PodGroups"})
	scaleBins, err := framework.FindScaleBinaries(bins)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	host, client, dyn := startWorkloadHost(ctx, t)
	if _, err := host.StartKubeScheduler(ctx, scaleBins.KubeScheduler, 50, 100, workloadGates); err != nil {
		t.Fatal(err)
	}
	var sides []*schedulingSide
	for _, ctl := range controllers {
		s := newSchedulingSide(ctx, t, host, ctl, client, dyn, "place-"+ctl.nsSuffix)
		addNode(ctx, t, client, "gang-"+ctl.nsSuffix+"-0", "gang-"+ctl.nsSuffix)
		addNode(ctx, t, client, "basic-"+ctl.nsSuffix+"-0", "basic-"+ctl.nsSuffix)
		s.job = s.create(inPool(gangJob("gang", 2), "gang-"+ctl.nsSuffix))
		basic := inPool(gangJob("basic", 2), "basic-"+ctl.nsSuffix)
		basic.Spec.Scheduling = nil
		s.create(basic)
		sides = append(sides, s)
	}
	for _, s := range sides {
		// The scheduler at work: the basic Job's first Pod is bound.
		eventually(t, podsTimeout, s.ctl.name+": one of the basic Job's two Pods bound", func() (bool, string) {
			bound, all := s.bound("basic")
			return bound == 1 && all == 2, fmt.Sprintf("%d of %d bound", bound, all)
		})
		// The barrier: the scheduler has tried the gang and refused it,
		// each of its Pods says so (PodScheduled False). Only then does
		// "none bound" mean something.
		eventually(t, podsTimeout, s.ctl.name+": the scheduler's verdict on both of the gang's Pods", func() (bool, string) {
			refused, all := s.unscheduled("gang")
			return refused == 2 && all == 2, fmt.Sprintf("%d of %d with PodScheduled False", refused, all)
		})
		if bound, all := s.bound("gang"); bound != 0 || all != 2 {
			t.Errorf("%s: a gang of 2 with room for 1: %d of %d bound, want 0 of 2", s.ctl.name, bound, all)
		}
	}
	for _, s := range sides {
		addNode(ctx, t, client, "gang-"+s.ctl.nsSuffix+"-1", "gang-"+s.ctl.nsSuffix)
	}
	for _, s := range sides {
		eventually(t, podsTimeout, s.ctl.name+": both of the gang's Pods bound", func() (bool, string) {
			bound, all := s.bound("gang")
			return bound == 2 && all == 2, fmt.Sprintf("%d of %d bound", bound, all)
		})
	}
}

// bound counts the Pods of the side's Job name that are bound to a Node,
// and all of them.
func (s *schedulingSide) bound(job string) (bound, all int) {
	pods, err := framework.JobPods(s.ctx, s.client, s.jobs.Namespace, job)
	if err != nil {
		return -1, -1
	}
	for _, p := range pods {
		if p.Spec.NodeName != "" {
			bound++
		}
	}
	return bound, len(pods)
}

// unscheduled counts the Pods of the side's Job name the scheduler has
// refused to place (PodScheduled False), and all of them.
func (s *schedulingSide) unscheduled(job string) (refused, all int) {
	pods, err := framework.JobPods(s.ctx, s.client, s.jobs.Namespace, job)
	if err != nil {
		return -1, -1
	}
	for _, p := range pods {
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
				refused++
			}
		}
	}
	return refused, len(pods)
}

// poolLabel puts a Node in a pool; a Job's Pods choose theirs.
const poolLabel = "e2e.batch.jobs.dev/pool"

// inPool makes every Pod of the Job ask for a whole CPU on a Node of the
// pool.
func inPool(job *batchv1.Job, pool string) *batchv1.Job {
	spec := &job.Spec.Template.Spec
	spec.NodeSelector = map[string]string{poolLabel: pool}
	spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}
	return job
}

// addNode adds a Node of the pool with room for one Pod of inPool. No
// kubelet (nor kwok) runs it: the scheduler binds, nothing starts. The
// not-ready taint kube-apiserver puts on a new Node is lifted, as nothing
// else here would.
func addNode(ctx context.Context, t *testing.T, client kubernetes.Interface, name, pool string) {
	t.Helper()
	room := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi"), corev1.ResourcePods: resource.MustParse("10")}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{poolLabel: pool, corev1.LabelHostname: name}},
		Status:     corev1.NodeStatus{Capacity: room, Allocatable: room},
	}
	if _, err := client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.CoreV1().Nodes().Patch(ctx, name, types.MergePatchType, []byte(`{"spec":{"taints":null}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
}
