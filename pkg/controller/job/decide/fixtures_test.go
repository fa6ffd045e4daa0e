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
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// The fixtures every test of the package builds its Jobs, Pods and
// expected statuses with, from the module's builders in
// pkg/apis/batch/testing: add methods there, never a second builder.

// t0 is "now" in every test.
var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func mt(t time.Time) metav1.Time { return metav1.NewTime(t) }

// Short names for the builders, for the rows' literals.
type (
	jobFx    = batchtesting.JobBuilder
	podFx    = batchtesting.PodBuilder
	statusFx = batchtesting.StatusBuilder
)

// job starts a Job as the API server stores it: defaulted, NonIndexed, one
// completion, parallelism 1, backoffLimit 6, restartPolicy Never, in
// namespace "ns", with two template labels (the prefixed controller-uid and
// job-name ones) and manualSelector unset.
func job(name string) *jobFx {
	b := batchtesting.MakeJob(name).Namespace("ns")
	uid := string(b.Obj().UID)
	return b.TemplateLabels(map[string]string{batch.ControllerUIDLabel: uid, batch.JobNameLabel: name}).
		Do(func(j *batchv1.Job) { j.Spec.ManualSelector = nil })
}

// status starts a status of the shape a sync writes: ready and terminating
// 0, empty uncounted lists.
func status() *statusFx {
	return batchtesting.MakeStatus().Ready(0).Terminating(0).Uncounted(nil, nil)
}

// bare is a status with nothing set, as a new Job has.
func bare() *statusFx { return batchtesting.MakeStatus() }

// cond is a True Job condition that changed at t0.
func cond(t batchv1.JobConditionType, reason, message string) batchv1.JobCondition {
	return condition(t, corev1.ConditionTrue, reason, message, t0)
}

// condAt is a condition of any status that changed at t.
func condAt(t batchv1.JobConditionType, s corev1.ConditionStatus, reason, message string, when time.Time) batchv1.JobCondition {
	return condition(t, s, reason, message, when)
}

// pod starts a Pod of a Job: Pending, in namespace "ns", with the tracking
// finalizer, created an hour before t0, its UID its name.
func pod(name string) *podFx {
	return batchtesting.MakePod(name).Namespace("ns").CreationTimestamp(at(-time.Hour))
}

// pods turns builders into Pods.
func pods(bs ...*podFx) []*corev1.Pod {
	out := make([]*corev1.Pod, len(bs))
	for i, b := range bs {
		out[i] = b.Obj()
	}
	return out
}

// podNames lists the names of the Pods.
func podNames(ps []*corev1.Pod) []string {
	var out []string
	for _, p := range ps {
		out = append(out, p.Name)
	}
	return out
}

// Pod failure policy rules.

func onExit(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, codes ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: codes}}
}

func onExitOf(container string, action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, codes ...int32) batchv1.PodFailurePolicyRule {
	r := onExit(action, op, codes...)
	r.OnExitCodes.ContainerName = ptr.To(container)
	return r
}

func onCond(action batchv1.PodFailurePolicyAction, t corev1.PodConditionType, s corev1.ConditionStatus) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: t, Status: s}}}
}

const (
	failJob   = batchv1.PodFailurePolicyActionFailJob
	failIndex = batchv1.PodFailurePolicyActionFailIndex
	ignore    = batchv1.PodFailurePolicyActionIgnore
	count     = batchv1.PodFailurePolicyActionCount
	in        = batchv1.PodFailurePolicyOnExitCodesOpIn
	notIn     = batchv1.PodFailurePolicyOnExitCodesOpNotIn
)

// Success policy rules.

func succeededIndexes(ix string) batchv1.SuccessPolicyRule {
	return batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To(ix)}
}

func succeededCount(n int32) batchv1.SuccessPolicyRule {
	return batchv1.SuccessPolicyRule{SucceededCount: ptr.To(n)}
}

func succeededOf(ix string, n int32) batchv1.SuccessPolicyRule {
	return batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To(ix), SucceededCount: ptr.To(n)}
}

// Scheduling objects, as the host stores them.

// gangPolicy and basicPolicy are spec.scheduling with a policy alone; a
// nil minCount leaves the gang's size to the parallelism.
func gangPolicy(minCount *int32) *batchv1.JobSchedulingConfiguration {
	return &batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{MinCount: minCount}}}
}

func basicPolicy() *batchv1.JobSchedulingConfiguration {
	return &batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{}}}
}

// scheduled sets the Job's spec.scheduling.
func scheduled(sc *batchv1.JobSchedulingConfiguration) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.Scheduling = sc }
}

// ownedBy makes the Job a child of a controller of apiVersion and kind,
// named "parent", delegating the PodGroup of template when it is not nil.
func ownedBy(apiVersion, kind string, template *string) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.OwnerReferences = []metav1.OwnerReference{{APIVersion: apiVersion, Kind: kind, Name: "parent", UID: "parent-uid", Controller: ptr.To(true)}}
		if template != nil {
			j.Annotations = map[string]string{GroupTemplateNameAnnotation: *template}
		}
	}
}

// gangOf and basic are the PodGroup policies of a stored template.
func gangOf(n int32) schedulingv1beta1.PodGroupSchedulingPolicy {
	return schedulingv1beta1.PodGroupSchedulingPolicy{Gang: &schedulingv1beta1.GangSchedulingPolicy{MinCount: n}}
}

func basic() schedulingv1beta1.PodGroupSchedulingPolicy {
	return schedulingv1beta1.PodGroupSchedulingPolicy{Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}
}

// jobOwner is the controller reference our Job puts on what it owns.
func jobOwner(j *batchv1.Job) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "batch.jobs.dev/v1", Kind: "Job", Name: j.Name, UID: j.UID,
		Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}
}

// ownWorkload is the Workload of the Job as the controller makes it, with
// one template of the policy, stored with UID "wl-uid".
func ownWorkload(j *batchv1.Job, policy schedulingv1beta1.PodGroupSchedulingPolicy) *schedulingv1beta1.Workload {
	return &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: WorkloadName(j), Namespace: j.Namespace, UID: "wl-uid",
			OwnerReferences: []metav1.OwnerReference{jobOwner(j)}},
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef:     &schedulingv1beta1.TypedLocalObjectReference{APIGroup: "batch.jobs.dev", Kind: "Job", Name: j.Name},
			PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{{Name: PodGroupTemplateName(j), SchedulingPolicy: policy}},
		},
	}
}

// parentWorkload is the Workload of a parent of group and kind named
// "parent", with templates "a" (gang of 2) and "b" (basic).
func parentWorkload(group, kind string) *schedulingv1beta1.Workload {
	return &schedulingv1beta1.Workload{
		ObjectMeta: metav1.ObjectMeta{Name: "parent-wl", Namespace: "ns", UID: "parent-wl-uid"},
		Spec: schedulingv1beta1.WorkloadSpec{
			ControllerRef: &schedulingv1beta1.TypedLocalObjectReference{APIGroup: group, Kind: kind, Name: "parent"},
			PodGroupTemplates: []schedulingv1beta1.PodGroupTemplate{
				{Name: "a", SchedulingPolicy: gangOf(2), PriorityClassName: "high"},
				{Name: "b", SchedulingPolicy: basic()},
			},
		},
	}
}

// podGroupOf is a PodGroup of the template of wl, with the given owners
// and policy, stored with UID "pg-uid".
func podGroupOf(wl *schedulingv1beta1.Workload, template string, policy schedulingv1beta1.PodGroupSchedulingPolicy, owners ...metav1.OwnerReference) *schedulingv1beta1.PodGroup {
	return &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Name: PodGroupName(wl.Name, template), Namespace: wl.Namespace, UID: "pg-uid", OwnerReferences: owners},
		Spec: schedulingv1beta1.PodGroupSpec{
			WorkloadRef:      &schedulingv1beta1.WorkloadReference{WorkloadName: wl.Name, TemplateName: template},
			SchedulingPolicy: policy,
		},
	}
}

// workloadOwner is the second owner of a PodGroup of the Job's own
// Workload.
func workloadOwner(wl *schedulingv1beta1.Workload) metav1.OwnerReference {
	return metav1.OwnerReference{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "Workload", Name: wl.Name, UID: wl.UID}
}
