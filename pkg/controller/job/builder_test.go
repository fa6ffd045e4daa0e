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
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// The fixture builders shared by every test of the package. Tests may add
// methods on these types, never another builder for the same type.

// jobBuilder builds a defaulted Job the way the API server would store it.
type jobBuilder struct{ job *batchv1.Job }

// makeJob returns a NonIndexed Job with one completion, parallelism 1,
// backoffLimit 6, a generated selector and one container.
func makeJob(name string) *jobBuilder {
	uid := types.UID(name + "-uid")
	labels := map[string]string{
		batch.ControllerUIDLabel:       string(uid),
		batch.LegacyControllerUIDLabel: string(uid),
		batch.JobNameLabel:             name,
		batch.LegacyJobNameLabel:       name,
	}
	return &jobBuilder{job: &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid, ResourceVersion: "1"},
		Spec: batchv1.JobSpec{
			Parallelism:          ptr.To[int32](1),
			Completions:          ptr.To[int32](1),
			BackoffLimit:         ptr.To[int32](6),
			CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
			Suspend:              ptr.To(false),
			ManualSelector:       ptr.To(false),
			PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUIDLabel: string(uid)}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
				},
			},
		},
	}}
}

func (b *jobBuilder) Obj() *batchv1.Job { return b.job }

func (b *jobBuilder) Completions(n int32) *jobBuilder {
	b.job.Spec.Completions = ptr.To(n)
	return b
}

// NoCompletions makes a work-queue Job (completions unset).
func (b *jobBuilder) NoCompletions() *jobBuilder {
	b.job.Spec.Completions = nil
	return b
}

func (b *jobBuilder) Parallelism(n int32) *jobBuilder {
	b.job.Spec.Parallelism = ptr.To(n)
	return b
}

// Indexed makes an Indexed Job with n completions and parallelism n.
func (b *jobBuilder) Indexed(n int32) *jobBuilder {
	b.job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	b.job.Spec.Completions = ptr.To(n)
	b.job.Spec.Parallelism = ptr.To(n)
	return b
}

func (b *jobBuilder) BackoffLimit(n int32) *jobBuilder {
	b.job.Spec.BackoffLimit = ptr.To(n)
	return b
}

// BackoffLimitPerIndex sets backoffLimitPerIndex; like the API's defaulting,
// it also sets backoffLimit to MaxInt32.
func (b *jobBuilder) BackoffLimitPerIndex(n int32) *jobBuilder {
	b.job.Spec.BackoffLimitPerIndex = ptr.To(n)
	b.job.Spec.BackoffLimit = ptr.To[int32](2147483647)
	return b
}

func (b *jobBuilder) MaxFailedIndexes(n int32) *jobBuilder {
	b.job.Spec.MaxFailedIndexes = ptr.To(n)
	return b
}

func (b *jobBuilder) PodFailurePolicy(rules ...batchv1.PodFailurePolicyRule) *jobBuilder {
	b.job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
	return b
}

func (b *jobBuilder) SuccessPolicy(rules ...batchv1.SuccessPolicyRule) *jobBuilder {
	b.job.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: rules}
	return b
}

func (b *jobBuilder) PodReplacementPolicy(p batchv1.PodReplacementPolicy) *jobBuilder {
	b.job.Spec.PodReplacementPolicy = ptr.To(p)
	return b
}

func (b *jobBuilder) Suspend(s bool) *jobBuilder {
	b.job.Spec.Suspend = ptr.To(s)
	return b
}

func (b *jobBuilder) ActiveDeadlineSeconds(s int64) *jobBuilder {
	b.job.Spec.ActiveDeadlineSeconds = ptr.To(s)
	return b
}

func (b *jobBuilder) TTLSecondsAfterFinished(s int32) *jobBuilder {
	b.job.Spec.TTLSecondsAfterFinished = ptr.To(s)
	return b
}

func (b *jobBuilder) ManagedBy(m string) *jobBuilder {
	b.job.Spec.ManagedBy = ptr.To(m)
	return b
}

func (b *jobBuilder) StartTime(t time.Time) *jobBuilder {
	b.job.Status.StartTime = ptr.To(metav1.NewTime(t))
	return b
}

func (b *jobBuilder) Status(s batchv1.JobStatus) *jobBuilder {
	b.job.Status = s
	return b
}

func (b *jobBuilder) Condition(c batchv1.JobCondition) *jobBuilder {
	b.job.Status.Conditions = append(b.job.Status.Conditions, c)
	return b
}

// podBuilder builds a Pod of a Job.
type podBuilder struct{ pod *corev1.Pod }

// makePod returns a pending Pod owned by job, with the job's template labels
// and the tracking finalizer.
func makePod(name string, job *batchv1.Job) *podBuilder {
	labels := map[string]string{}
	for k, v := range job.Spec.Template.Labels {
		labels[k] = v
	}
	return &podBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:       name,
			Namespace:  job.Namespace,
			UID:        types.UID(name + "-uid"),
			Labels:     labels,
			Finalizers: []string{batch.JobTrackingFinalizer},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job,
				batchv1.SchemeGroupVersion.WithKind("Job"))},
			CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
		},
		Spec:   *job.Spec.Template.Spec.DeepCopy(),
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

func (b *podBuilder) Obj() *corev1.Pod { return b.pod }

func (b *podBuilder) UID(uid string) *podBuilder {
	b.pod.UID = types.UID(uid)
	return b
}

func (b *podBuilder) Phase(p corev1.PodPhase) *podBuilder {
	b.pod.Status.Phase = p
	return b
}

// Index sets the completion index annotation and label.
func (b *podBuilder) Index(ix int) *podBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[batch.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
	b.pod.Labels[batch.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
	return b
}

// IndexFailureCount sets the per-index failure count annotation.
func (b *podBuilder) IndexFailureCount(n int) *podBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[batch.JobIndexFailureCountAnnotation] = strconv.Itoa(n)
	return b
}

func (b *podBuilder) Annotation(k, v string) *podBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[k] = v
	return b
}

func (b *podBuilder) NoFinalizer() *podBuilder {
	b.pod.Finalizers = nil
	return b
}

func (b *podBuilder) Deleted(t time.Time) *podBuilder {
	b.pod.DeletionTimestamp = ptr.To(metav1.NewTime(t))
	return b
}

func (b *podBuilder) CreationTimestamp(t time.Time) *podBuilder {
	b.pod.CreationTimestamp = metav1.NewTime(t)
	return b
}

func (b *podBuilder) Ready() *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue})
	return b
}

func (b *podBuilder) Condition(c corev1.PodCondition) *podBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, c)
	return b
}

// ExitCode records a terminated container with the given exit code, finished at t.
func (b *podBuilder) ExitCode(container string, code int32, t time.Time) *podBuilder {
	b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses, corev1.ContainerStatus{
		Name: container,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, FinishedAt: metav1.NewTime(t),
		}},
	})
	return b
}

// InitExitCode records a terminated init container with the given exit code.
func (b *podBuilder) InitExitCode(container string, code int32, t time.Time) *podBuilder {
	b.pod.Status.InitContainerStatuses = append(b.pod.Status.InitContainerStatuses, corev1.ContainerStatus{
		Name: container,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: code, FinishedAt: metav1.NewTime(t),
		}},
	})
	return b
}

// Identity labels the Pod as one of the server named id.
func (b *podBuilder) Identity(id string) *podBuilder {
	b.pod.Labels[batch.ServerIdentityLabel] = id
	return b
}

// Orphan drops the Pod's owner references.
func (b *podBuilder) Orphan() *podBuilder {
	b.pod.OwnerReferences = nil
	return b
}

// Label sets one label.
func (b *podBuilder) Label(k, v string) *podBuilder {
	b.pod.Labels[k] = v
	return b
}

func (b *podBuilder) ResourceVersion(rv string) *podBuilder {
	b.pod.ResourceVersion = rv
	return b
}

// UID sets the Job's UID, and its selector and template labels with it.
func (b *jobBuilder) UID(uid string) *jobBuilder {
	b.job.UID = types.UID(uid)
	b.job.Spec.Selector.MatchLabels[batch.ControllerUIDLabel] = uid
	b.job.Spec.Template.Labels[batch.ControllerUIDLabel] = uid
	b.job.Spec.Template.Labels[batch.LegacyControllerUIDLabel] = uid
	return b
}

func (b *jobBuilder) Generation(g int64) *jobBuilder {
	b.job.Generation = g
	return b
}
