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
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/component-helpers/scheduling/schedulingv1/workloadbuilder"
	"k8s.io/utils/dump"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// jobKind is the kind the scheduling objects' references name.
var jobKind = batchv1.SchemeGroupVersion.WithKind("Job")

// ErrWorkloadShape is the error of a sync that found the Job's own
// Workload with other than one PodGroupTemplate: the Job is synced again
// (with backoff) rather than quietly scheduled Pod by Pod.
var ErrWorkloadShape = errors.New("workload does not have exactly one PodGroupTemplate")

// Scheduling is what the decisions about a Job's scheduling objects start
// from; NewScheduling makes it.
type Scheduling struct {
	Job  *batchv1.Job
	Mode SchedulingMode
	// NeverStarted: objects missing may be created (see NeverStarted).
	NeverStarted bool
}

// NewScheduling reads the Job's mode and whether it ever started.
func NewScheduling(job *batchv1.Job, pods []*corev1.Pod, enabled bool) Scheduling {
	return Scheduling{Job: job, Mode: SchedulingModeOf(job, enabled), NeverStarted: NeverStarted(job, pods)}
}

// WorkloadPlan is the first step: the Workload the Job's PodGroup comes
// from.
type WorkloadPlan struct {
	// Workload exists and the PodGroup comes from its Template: the Job's
	// own, or in DelegatedPodGroup mode its owner's.
	Workload *schedulingv1beta1.Workload
	// Create is the Job's own Workload, to create; the PodGroup comes from
	// the Workload created.
	Create *schedulingv1beta1.Workload
	// Template names the PodGroupTemplate.
	Template string
	// PodByPod, when neither Workload nor Create is set, says why the
	// Job's Pods go without a PodGroup, for the log. Ambiguous is set
	// when the reason is a conflict that deserves an error in the log.
	PodByPod  string
	Ambiguous bool
	Events    []Event
	// Err sends the Job back to the queue with backoff.
	Err error
}

// PlanWorkload picks or makes the Workload. workloads are the Workloads
// of the Job's namespace that may matter (more do no harm): the Job's own
// are those whose spec.controllerRef names it and that the Job controls;
// its owner's is the one whose spec.controllerRef names the owner.
func (s Scheduling) PlanWorkload(workloads []*schedulingv1beta1.Workload) WorkloadPlan {
	switch s.Mode {
	case OwnWorkload:
		return s.ownWorkload(workloads)
	case DelegatedPodGroup:
		return s.ownersWorkload(workloads)
	}
	return WorkloadPlan{PodByPod: "no scheduling objects for this job"}
}

func (s Scheduling) ownWorkload(workloads []*schedulingv1beta1.Workload) WorkloadPlan {
	var own []*schedulingv1beta1.Workload
	for _, wl := range workloads {
		if refersTo(wl.Spec.ControllerRef, s.Job.Name, jobKind.Group, jobKind.Kind) && metav1.IsControlledBy(wl, s.Job) {
			own = append(own, wl)
		}
	}
	switch {
	case len(own) > 1:
		return WorkloadPlan{PodByPod: fmt.Sprintf("%d Workloads belong to the job, falling back to default scheduling", len(own)), Ambiguous: true}
	case len(own) == 1 && len(own[0].Spec.PodGroupTemplates) != 1:
		return WorkloadPlan{Err: fmt.Errorf("workload %s/%s of job %s has %d PodGroupTemplates: %w",
			own[0].Namespace, own[0].Name, s.Job.Name, len(own[0].Spec.PodGroupTemplates), ErrWorkloadShape)}
	case len(own) == 1:
		return WorkloadPlan{Workload: own[0], Template: own[0].Spec.PodGroupTemplates[0].Name}
	case !s.NeverStarted:
		// Started before the gate was on, or its Workload was deleted:
		// it runs on as it started.
		return WorkloadPlan{PodByPod: "the job has started without a Workload"}
	}
	wl, err := DesiredWorkload(s.Job)
	if err != nil {
		return WorkloadPlan{Err: err, Events: []Event{{Type: corev1.EventTypeWarning, Reason: "FailedWorkloadCompilation",
			Message: fmt.Sprintf("Failed to compile Workload for Job %s: %v", s.Job.Name, err)}}}
	}
	return WorkloadPlan{Create: wl, Template: wl.Spec.PodGroupTemplates[0].Name}
}

func (s Scheduling) ownersWorkload(workloads []*schedulingv1beta1.Workload) WorkloadPlan {
	owner := metav1.GetControllerOf(s.Job)
	gv, err := schema.ParseGroupVersion(owner.APIVersion)
	if err != nil {
		return WorkloadPlan{PodByPod: "the job's owner has no valid apiVersion"}
	}
	for _, wl := range workloads {
		if !refersTo(wl.Spec.ControllerRef, owner.Name, gv.Group, owner.Kind) {
			continue
		}
		// An empty name picks the only template, as upstream reads it.
		name := s.Job.Annotations[GroupTemplateNameAnnotation]
		for _, t := range wl.Spec.PodGroupTemplates {
			if t.Name == name || name == "" {
				return WorkloadPlan{Workload: wl, Template: t.Name}
			}
		}
		return WorkloadPlan{PodByPod: fmt.Sprintf("the Workload %s of the job's owner has no PodGroupTemplate %q", wl.Name, name)}
	}
	return WorkloadPlan{PodByPod: "the Workload of the job's owner is not there yet"}
}

// refersTo tells whether a Workload's spec.controllerRef names the object.
func refersTo(ref *schedulingv1beta1.TypedLocalObjectReference, name, group, kind string) bool {
	return ref != nil && ref.Name == name && ref.APIGroup == group && ref.Kind == kind
}

// DesiredWorkload compiles the Job's spec.scheduling into its own Workload:
// one PodGroupTemplate, the basic policy unless spec.scheduling says
// otherwise, the template's priority class, a gang's unset minCount taken
// from the parallelism (at least 1). The Job is its controller, in the
// owner references and spec.controllerRef.
func DesiredWorkload(job *batchv1.Job) (*schedulingv1beta1.Workload, error) {
	item := &workloadbuilder.WorkloadItem{
		Name: PodGroupTemplateName(job),
		DefaultConfig: &workloadbuilder.SchedulingConfig{
			Policy:            &workloadbuilder.SchedulingPolicy{Basic: &workloadbuilder.BasicSchedulingPolicy{}},
			PriorityClassName: job.Spec.Template.Spec.PriorityClassName,
		},
		Callbacks: []workloadbuilder.SchedulingConfigFunc{gangOfParallelism(job.Spec.Parallelism)},
	}
	if sc := job.Spec.Scheduling; sc != nil {
		item.Input.Policy.PodGroupData = sc.SchedulingPolicy
		item.Input.Constraints.PodGroupData = sc.SchedulingConstraints
		item.Input.DisruptionMode.PodGroupData = sc.DisruptionMode
		item.Input.ResourceClaims.PodGroupData = sc.ResourceClaims
	}
	return workloadbuilder.NewBuilder(item, workloadbuilder.BuildOptions{
		Name:      WorkloadName(job),
		Namespace: job.Namespace,
		Owner:     metav1.NewControllerRef(job, jobKind),
	}).BuildWorkload()
}

// gangOfParallelism gives a gang without minCount the Job's parallelism,
// at least 1 (a suspended Job may have parallelism 0).
func gangOfParallelism(parallelism *int32) workloadbuilder.SchedulingConfigFunc {
	return func(cfg *workloadbuilder.SchedulingConfig) {
		if cfg.Policy == nil || cfg.Policy.Gang == nil || cfg.Policy.Gang.MinCount != nil {
			return
		}
		cfg.Policy.Gang.MinCount = ptr.To(max(1, ptr.Deref(parallelism, 1)))
	}
}

// PodGroupTemplateName is the name of the one template of a Job's own
// Workload.
func PodGroupTemplateName(job *batchv1.Job) string {
	return job.Name + "-pgt-0"
}

// WorkloadName is the name of the Job's own Workload: the Job's name, cut
// to leave room in a DNS subdomain, and a hash of its UID, so that a Job
// recreated with the same name gets a Workload of its own.
func WorkloadName(job *batchv1.Job) string {
	h := fnv.New32a()
	// Upstream hashes the UID's dump (k8s.io/utils/dump), not its bytes.
	fmt.Fprintf(h, "%v", dump.ForHash(job.UID))
	suffix := hashSuffix(h.Sum32())
	name := job.Name
	if room := validation.DNS1123SubdomainMaxLength - len(suffix) - 1; len(name) > room {
		name = name[:room]
	}
	return name + "-" + suffix
}

// PodGroupName is the name of the PodGroup made from a template of a
// Workload: both names and a hash of them. When they do not fit in a DNS
// subdomain, each keeps at least half the room, and a short one leaves the
// rest to the other.
func PodGroupName(workload, template string) string {
	h := fnv.New32a()
	h.Write([]byte(workload))
	h.Write([]byte(template))
	suffix := hashSuffix(h.Sum32())
	if room := validation.DNS1123SubdomainMaxLength - len(suffix) - 2; len(workload)+len(template) > room {
		template = template[:min(len(template), max(room-len(workload), room/2))]
		workload = workload[:room-len(template)]
	}
	return workload + "-" + template + "-" + suffix
}

// hashSuffix spells a hash as upstream's names do: its decimal digits,
// made safe for names.
func hashSuffix(sum uint32) string {
	return rand.SafeEncodeString(strconv.FormatUint(uint64(sum), 10))
}
