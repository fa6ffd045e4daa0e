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

package batchtesting

import (
	"fmt"
	"math"
	"time"

	corev1 "k8s.io/api/core/v1"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// JobBuilder builds a v1 Job. Every method changes the Job in place and
// returns the builder; Obj and Internal return copies.
type JobBuilder struct{ job *batchv1.Job }

// MakeJob starts a Job as the API server stores it after defaulting and
// selector generation: namespace "default", UID "<name>-uid", NonIndexed,
// one completion, parallelism 1, backoffLimit 6, not suspended, the
// generated selector and the four template labels (see Generated), and a
// template of one container "main" (image busybox) with restartPolicy Never.
func MakeJob(name string) *JobBuilder {
	b := &JobBuilder{job: &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, UID: types.UID(name + "-uid")},
		Spec: batchv1.JobSpec{
			Parallelism:          ptr.To[int32](1),
			Completions:          ptr.To[int32](1),
			BackoffLimit:         ptr.To[int32](6),
			CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
			Suspend:              ptr.To(false),
			ManualSelector:       ptr.To(false),
			PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
				},
			},
		},
	}}
	return b.Generated()
}

// JobFrom continues building from a copy of job.
func JobFrom(job *batchv1.Job) *JobBuilder { return &JobBuilder{job: job.DeepCopy()} }

// JobFromInternal continues building from a copy of an internal Job, such as
// one a store returned.
func JobFromInternal(job *batch.Job) *JobBuilder {
	out := &batchv1.Job{}
	// The generated conversion cannot fail: the two types share one layout.
	if err := batchv1.Convert_batch_Job_To_v1_Job(job.DeepCopy(), out, nil); err != nil {
		panic(fmt.Sprintf("converting Job %s to v1: %v", job.Name, err))
	}
	return &JobBuilder{job: out}
}

// Obj returns a copy of the Job built so far.
func (b *JobBuilder) Obj() *batchv1.Job { return b.job.DeepCopy() }

// Internal returns a copy of the Job built so far, converted to the
// internal type with the generated conversion (no defaulting).
func (b *JobBuilder) Internal() *batch.Job {
	out := &batch.Job{}
	if err := batchv1.Convert_v1_Job_To_batch_Job(b.job.DeepCopy(), out, nil); err != nil {
		panic(fmt.Sprintf("converting Job %s to internal: %v", b.job.Name, err))
	}
	return out
}

// Do applies a change the other methods do not cover.
func (b *JobBuilder) Do(f func(*batchv1.Job)) *JobBuilder { f(b.job); return b }

// Namespace sets metadata.namespace.
func (b *JobBuilder) Namespace(ns string) *JobBuilder { b.job.Namespace = ns; return b }

// UID sets metadata.uid only; Generated derives the selector and labels from it.
func (b *JobBuilder) UID(uid types.UID) *JobBuilder { b.job.UID = uid; return b }

// ResourceVersion sets metadata.resourceVersion.
func (b *JobBuilder) ResourceVersion(rv string) *JobBuilder { b.job.ResourceVersion = rv; return b }

// Generation sets metadata.generation.
func (b *JobBuilder) Generation(g int64) *JobBuilder { b.job.Generation = g; return b }

// CreationTimestamp sets metadata.creationTimestamp; the zero time unsets it.
func (b *JobBuilder) CreationTimestamp(t time.Time) *JobBuilder {
	b.job.CreationTimestamp = metav1.NewTime(t)
	return b
}

// Deleting sets metadata.deletionTimestamp.
func (b *JobBuilder) Deleting(t time.Time) *JobBuilder {
	b.job.DeletionTimestamp = ptr.To(metav1.NewTime(t))
	return b
}

// Label sets one label of the Job.
func (b *JobBuilder) Label(k, v string) *JobBuilder {
	if b.job.Labels == nil {
		b.job.Labels = map[string]string{}
	}
	b.job.Labels[k] = v
	return b
}

// TemplateLabel sets one label of the pod template.
func (b *JobBuilder) TemplateLabel(k, v string) *JobBuilder {
	if b.job.Spec.Template.Labels == nil {
		b.job.Spec.Template.Labels = map[string]string{}
	}
	b.job.Spec.Template.Labels[k] = v
	return b
}

// TemplateLabels replaces the pod template's labels; nil removes them.
func (b *JobBuilder) TemplateLabels(labels map[string]string) *JobBuilder {
	b.job.Spec.Template.Labels = labels
	return b
}

// Selector replaces spec.selector; nil removes it.
func (b *JobBuilder) Selector(s *metav1.LabelSelector) *JobBuilder {
	b.job.Spec.Selector = s
	return b
}

// ManualSelector sets spec.manualSelector, and nothing else.
func (b *JobBuilder) ManualSelector(m bool) *JobBuilder {
	b.job.Spec.ManualSelector = ptr.To(m)
	return b
}

// Generated sets what the strategy generates from the Job's current name
// and UID: the prefixed and legacy controller-uid and job-name template
// labels, and a selector of the prefixed controller-uid label alone.
func (b *JobBuilder) Generated() *JobBuilder {
	uid, name := string(b.job.UID), b.job.Name
	b.TemplateLabel(batch.ControllerUIDLabel, uid).
		TemplateLabel(batch.LegacyControllerUIDLabel, uid).
		TemplateLabel(batch.JobNameLabel, name).
		TemplateLabel(batch.LegacyJobNameLabel, name)
	return b.Selector(&metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUIDLabel: uid}})
}

// Completions sets spec.completions.
func (b *JobBuilder) Completions(n int32) *JobBuilder {
	b.job.Spec.Completions = ptr.To(n)
	return b
}

// NoCompletions unsets spec.completions: a work-queue Job.
func (b *JobBuilder) NoCompletions() *JobBuilder {
	b.job.Spec.Completions = nil
	return b
}

// Parallelism sets spec.parallelism.
func (b *JobBuilder) Parallelism(n int32) *JobBuilder {
	b.job.Spec.Parallelism = ptr.To(n)
	return b
}

// CompletionMode sets spec.completionMode, to any value.
func (b *JobBuilder) CompletionMode(m batchv1.CompletionMode) *JobBuilder {
	b.job.Spec.CompletionMode = ptr.To(m)
	return b
}

// Indexed makes an Indexed Job of n completions and parallelism n.
func (b *JobBuilder) Indexed(n int32) *JobBuilder {
	return b.CompletionMode(batchv1.IndexedCompletion).Completions(n).Parallelism(n)
}

// BackoffLimit sets spec.backoffLimit.
func (b *JobBuilder) BackoffLimit(n int32) *JobBuilder {
	b.job.Spec.BackoffLimit = ptr.To(n)
	return b
}

// BackoffLimitPerIndex sets spec.backoffLimitPerIndex and, as defaulting
// does for such a Job, spec.backoffLimit to MaxInt32.
func (b *JobBuilder) BackoffLimitPerIndex(n int32) *JobBuilder {
	b.job.Spec.BackoffLimitPerIndex = ptr.To(n)
	return b.BackoffLimit(math.MaxInt32)
}

// MaxFailedIndexes sets spec.maxFailedIndexes.
func (b *JobBuilder) MaxFailedIndexes(n int32) *JobBuilder {
	b.job.Spec.MaxFailedIndexes = ptr.To(n)
	return b
}

// PodFailurePolicy sets spec.podFailurePolicy to the rules, and nothing
// else (validation also wants podReplacementPolicy Failed).
func (b *JobBuilder) PodFailurePolicy(rules ...batchv1.PodFailurePolicyRule) *JobBuilder {
	b.job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
	return b
}

// SuccessPolicy sets spec.successPolicy to the rules.
func (b *JobBuilder) SuccessPolicy(rules ...batchv1.SuccessPolicyRule) *JobBuilder {
	b.job.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: rules}
	return b
}

// PodReplacementPolicy sets spec.podReplacementPolicy.
func (b *JobBuilder) PodReplacementPolicy(p batchv1.PodReplacementPolicy) *JobBuilder {
	b.job.Spec.PodReplacementPolicy = ptr.To(p)
	return b
}

// Suspend sets spec.suspend.
func (b *JobBuilder) Suspend(s bool) *JobBuilder {
	b.job.Spec.Suspend = ptr.To(s)
	return b
}

// ActiveDeadlineSeconds sets spec.activeDeadlineSeconds.
func (b *JobBuilder) ActiveDeadlineSeconds(s int64) *JobBuilder {
	b.job.Spec.ActiveDeadlineSeconds = ptr.To(s)
	return b
}

// TTLSecondsAfterFinished sets spec.ttlSecondsAfterFinished.
func (b *JobBuilder) TTLSecondsAfterFinished(s int32) *JobBuilder {
	b.job.Spec.TTLSecondsAfterFinished = ptr.To(s)
	return b
}

// ManagedBy sets spec.managedBy.
func (b *JobBuilder) ManagedBy(m string) *JobBuilder {
	b.job.Spec.ManagedBy = ptr.To(m)
	return b
}

// Scheduling sets spec.scheduling.
func (b *JobBuilder) Scheduling(s *batchv1.JobSchedulingConfiguration) *JobBuilder {
	b.job.Spec.Scheduling = s
	return b
}

// Gang sets spec.scheduling.schedulingPolicy to the gang policy, with
// minCount when it is not nil.
func (b *JobBuilder) Gang(minCount *int32) *JobBuilder {
	return b.schedulingPolicy(schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{MinCount: minCount},
	})
}

// BasicScheduling sets spec.scheduling.schedulingPolicy to the basic policy.
func (b *JobBuilder) BasicScheduling() *JobBuilder {
	return b.schedulingPolicy(schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{},
	})
}

// schedulingPolicy sets spec.scheduling.schedulingPolicy, keeping the rest of
// spec.scheduling.
func (b *JobBuilder) schedulingPolicy(p schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy) *JobBuilder {
	if b.job.Spec.Scheduling == nil {
		b.job.Spec.Scheduling = &batchv1.JobSchedulingConfiguration{}
	}
	b.job.Spec.Scheduling.SchedulingPolicy = &p
	return b
}

// RestartPolicy sets the template's restartPolicy.
func (b *JobBuilder) RestartPolicy(p corev1.RestartPolicy) *JobBuilder {
	b.job.Spec.Template.Spec.RestartPolicy = p
	return b
}

// Containers replaces the template's containers.
func (b *JobBuilder) Containers(cs ...corev1.Container) *JobBuilder {
	b.job.Spec.Template.Spec.Containers = cs
	return b
}

// InitContainers replaces the template's init containers.
func (b *JobBuilder) InitContainers(cs ...corev1.Container) *JobBuilder {
	b.job.Spec.Template.Spec.InitContainers = cs
	return b
}

// NodeSelector sets the template's node selector.
func (b *JobBuilder) NodeSelector(sel map[string]string) *JobBuilder {
	b.job.Spec.Template.Spec.NodeSelector = sel
	return b
}

// Status replaces the Job's status with a copy of what s built.
func (b *JobBuilder) Status(s *StatusBuilder) *JobBuilder {
	b.job.Status = *s.Obj()
	return b
}

// The status methods below are shorthands for the StatusBuilder methods of
// the same name applied to the Job's status; they add no setter of their own.

func (b *JobBuilder) status() *StatusBuilder { return &StatusBuilder{status: &b.job.Status} }

// StartTime sets status.startTime.
func (b *JobBuilder) StartTime(t time.Time) *JobBuilder { b.status().StartTime(t); return b }

// CompletionTime sets status.completionTime.
func (b *JobBuilder) CompletionTime(t time.Time) *JobBuilder { b.status().CompletionTime(t); return b }

// Active sets status.active.
func (b *JobBuilder) Active(n int32) *JobBuilder { b.status().Active(n); return b }

// Ready sets status.ready.
func (b *JobBuilder) Ready(n int32) *JobBuilder { b.status().Ready(n); return b }

// Terminating sets status.terminating.
func (b *JobBuilder) Terminating(n int32) *JobBuilder { b.status().Terminating(n); return b }

// Succeeded sets status.succeeded.
func (b *JobBuilder) Succeeded(n int32) *JobBuilder { b.status().Succeeded(n); return b }

// Failed sets status.failed.
func (b *JobBuilder) Failed(n int32) *JobBuilder { b.status().Failed(n); return b }

// CompletedIndexes sets status.completedIndexes.
func (b *JobBuilder) CompletedIndexes(ix string) *JobBuilder {
	b.status().CompletedIndexes(ix)
	return b
}

// FailedIndexes sets status.failedIndexes.
func (b *JobBuilder) FailedIndexes(ix string) *JobBuilder { b.status().FailedIndexes(ix); return b }

// Uncounted sets status.uncountedTerminatedPods.
func (b *JobBuilder) Uncounted(succeeded, failed []types.UID) *JobBuilder {
	b.status().Uncounted(succeeded, failed)
	return b
}

// Condition appends a status condition.
func (b *JobBuilder) Condition(c batchv1.JobCondition) *JobBuilder { b.status().Condition(c); return b }

// Conditions appends a True condition, with nothing else set, of each type.
func (b *JobBuilder) Conditions(types ...batchv1.JobConditionType) *JobBuilder {
	b.status().Conditions(types...)
	return b
}
