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
	"maps"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// PodBuilder builds a Pod of a Job. Every method changes the Pod in place
// and returns the builder; Obj returns a copy.
type PodBuilder struct{ pod *corev1.Pod }

// MakePod starts a Pending Pod in namespace "default" whose UID is its name,
// with the tracking finalizer, one container "main" and no labels, owner or
// creation time; Of makes it a Pod of a Job.
func MakePod(name string) *PodBuilder {
	return &PodBuilder{pod: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: metav1.NamespaceDefault, UID: types.UID(name),
			Finalizers: []string{batch.JobTrackingFinalizer},
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

// Obj returns a copy of the Pod built so far.
func (b *PodBuilder) Obj() *corev1.Pod { return b.pod.DeepCopy() }

// Do applies a change the other methods do not cover.
func (b *PodBuilder) Do(f func(*corev1.Pod)) *PodBuilder { f(b.pod); return b }

// Of makes the Pod one the controller created for job: its namespace, a
// copy of its template's labels and spec, and job as controller owner.
func (b *PodBuilder) Of(job *batchv1.Job) *PodBuilder {
	b.pod.Namespace = job.Namespace
	b.pod.Labels = maps.Clone(job.Spec.Template.Labels)
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))}
	b.pod.Spec = *job.Spec.Template.Spec.DeepCopy()
	return b
}

// Namespace sets metadata.namespace.
func (b *PodBuilder) Namespace(ns string) *PodBuilder { b.pod.Namespace = ns; return b }

// UID sets metadata.uid.
func (b *PodBuilder) UID(uid types.UID) *PodBuilder { b.pod.UID = uid; return b }

// ResourceVersion sets metadata.resourceVersion.
func (b *PodBuilder) ResourceVersion(rv string) *PodBuilder { b.pod.ResourceVersion = rv; return b }

// CreationTimestamp sets metadata.creationTimestamp.
func (b *PodBuilder) CreationTimestamp(t time.Time) *PodBuilder {
	b.pod.CreationTimestamp = metav1.NewTime(t)
	return b
}

// Deleted sets metadata.deletionTimestamp.
func (b *PodBuilder) Deleted(t time.Time) *PodBuilder {
	b.pod.DeletionTimestamp = ptr.To(metav1.NewTime(t))
	return b
}

// NoFinalizer removes the tracking finalizer (and any other).
func (b *PodBuilder) NoFinalizer() *PodBuilder { b.pod.Finalizers = nil; return b }

// Orphan drops the Pod's owner references.
func (b *PodBuilder) Orphan() *PodBuilder { b.pod.OwnerReferences = nil; return b }

// Label sets one label.
func (b *PodBuilder) Label(k, v string) *PodBuilder {
	if b.pod.Labels == nil {
		b.pod.Labels = map[string]string{}
	}
	b.pod.Labels[k] = v
	return b
}

// Annotation sets one annotation.
func (b *PodBuilder) Annotation(k, v string) *PodBuilder {
	if b.pod.Annotations == nil {
		b.pod.Annotations = map[string]string{}
	}
	b.pod.Annotations[k] = v
	return b
}

// Identity labels the Pod as one of the server named id.
func (b *PodBuilder) Identity(id string) *PodBuilder { return b.Label(batch.ServerIdentityLabel, id) }

// Index sets the completion index annotation and label.
func (b *PodBuilder) Index(ix int) *PodBuilder {
	return b.Label(batch.JobCompletionIndexAnnotation, strconv.Itoa(ix)).
		Annotation(batch.JobCompletionIndexAnnotation, strconv.Itoa(ix))
}

// IndexFailureCount sets the per-index failure count annotation.
func (b *PodBuilder) IndexFailureCount(n int) *PodBuilder {
	return b.Annotation(batch.JobIndexFailureCountAnnotation, strconv.Itoa(n))
}

// IgnoredFailureCount sets the per-index ignored failure count annotation.
func (b *PodBuilder) IgnoredFailureCount(n int) *PodBuilder {
	return b.Annotation(batch.JobIndexIgnoredFailureCountAnnotation, strconv.Itoa(n))
}

// NodeName schedules the Pod on node.
func (b *PodBuilder) NodeName(node string) *PodBuilder { b.pod.Spec.NodeName = node; return b }

// Phase sets status.phase.
func (b *PodBuilder) Phase(p corev1.PodPhase) *PodBuilder { b.pod.Status.Phase = p; return b }

// Running sets phase Running.
func (b *PodBuilder) Running() *PodBuilder { return b.Phase(corev1.PodRunning) }

// Succeeded ends the Pod in phase Succeeded at t (see EndedAt).
func (b *PodBuilder) Succeeded(t time.Time) *PodBuilder {
	return b.Phase(corev1.PodSucceeded).EndedAt(t)
}

// Failed ends the Pod in phase Failed at t (see EndedAt).
func (b *PodBuilder) Failed(t time.Time) *PodBuilder { return b.Phase(corev1.PodFailed).EndedAt(t) }

// EndedAt dates the end of the Pod: its Ready condition turns False at t,
// added if the Pod has none.
func (b *PodBuilder) EndedAt(t time.Time) *PodBuilder {
	for i := range b.pod.Status.Conditions {
		if c := &b.pod.Status.Conditions[i]; c.Type == corev1.PodReady {
			c.Status, c.LastTransitionTime = corev1.ConditionFalse, metav1.NewTime(t)
			return b
		}
	}
	return b.Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t)})
}

// ReadySince makes the Pod Running and Ready since t.
func (b *PodBuilder) ReadySince(t time.Time) *PodBuilder {
	return b.Running().Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t)})
}

// Condition appends a status condition.
func (b *PodBuilder) Condition(c corev1.PodCondition) *PodBuilder {
	b.pod.Status.Conditions = append(b.pod.Status.Conditions, c)
	return b
}

// Disrupted appends a DisruptionTarget=True condition.
func (b *PodBuilder) Disrupted() *PodBuilder {
	return b.Condition(corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue})
}

// ExitCode records a container terminated with code at t.
func (b *PodBuilder) ExitCode(container string, code int32, t time.Time) *PodBuilder {
	b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses, TerminatedContainer(container, code, t))
	return b
}

// InitExitCode records an init container terminated with code at t.
func (b *PodBuilder) InitExitCode(container string, code int32, t time.Time) *PodBuilder {
	b.pod.Status.InitContainerStatuses = append(b.pod.Status.InitContainerStatuses, TerminatedContainer(container, code, t))
	return b
}

// Restarts records container restarts, one container status "c<i>" per count.
func (b *PodBuilder) Restarts(counts ...int32) *PodBuilder {
	for i, n := range counts {
		b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses,
			corev1.ContainerStatus{Name: fmt.Sprintf("c%d", i), RestartCount: n})
	}
	return b
}

// TerminatedContainer is the status of a container that terminated with code at t.
func TerminatedContainer(name string, code int32, t time.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(t)}}}
}
