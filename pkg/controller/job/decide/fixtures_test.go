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
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// The fixtures every test of the package builds its Jobs, Pods and
// expected statuses with. Add methods here, never a second builder.

// t0 is "now" in every test.
var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func at(d time.Duration) time.Time { return t0.Add(d) }

func mt(t time.Time) metav1.Time { return metav1.NewTime(t) }

// jobFx builds a Job as the API server stores it: defaulted, NonIndexed,
// one completion, parallelism 1, backoffLimit 6, restartPolicy Never.
type jobFx struct{ j *batchv1.Job }

func job(name string) *jobFx {
	uid := types.UID(name + "-uid")
	return &jobFx{j: &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: uid},
		Spec: batchv1.JobSpec{
			Parallelism:          ptr.To[int32](1),
			Completions:          ptr.To[int32](1),
			BackoffLimit:         ptr.To[int32](6),
			CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
			Suspend:              ptr.To(false),
			PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUIDLabel: string(uid)}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{batch.ControllerUIDLabel: string(uid), batch.JobNameLabel: name}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
				},
			},
		},
	}}
}

func (b *jobFx) obj() *batchv1.Job { return b.j }

// indexed makes an Indexed Job of n completions and parallelism n.
func (b *jobFx) indexed(n int32) *jobFx {
	b.j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	b.j.Spec.Completions = ptr.To(n)
	b.j.Spec.Parallelism = ptr.To(n)
	return b
}

func (b *jobFx) mode(m string) *jobFx {
	b.j.Spec.CompletionMode = ptr.To(batchv1.CompletionMode(m))
	return b
}

func (b *jobFx) completions(n int32) *jobFx { b.j.Spec.Completions = ptr.To(n); return b }

// workQueue unsets completions.
func (b *jobFx) workQueue() *jobFx { b.j.Spec.Completions = nil; return b }

func (b *jobFx) parallelism(n int32) *jobFx  { b.j.Spec.Parallelism = ptr.To(n); return b }
func (b *jobFx) backoffLimit(n int32) *jobFx { b.j.Spec.BackoffLimit = ptr.To(n); return b }

// backoffLimitPerIndex also sets backoffLimit to MaxInt32, as the API's
// defaulting does.
func (b *jobFx) backoffLimitPerIndex(n int32) *jobFx {
	b.j.Spec.BackoffLimitPerIndex = ptr.To(n)
	b.j.Spec.BackoffLimit = ptr.To[int32](2147483647)
	return b
}

func (b *jobFx) maxFailedIndexes(n int32) *jobFx { b.j.Spec.MaxFailedIndexes = ptr.To(n); return b }

func (b *jobFx) failurePolicy(rules ...batchv1.PodFailurePolicyRule) *jobFx {
	b.j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: rules}
	return b
}

func (b *jobFx) successPolicy(rules ...batchv1.SuccessPolicyRule) *jobFx {
	b.j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: rules}
	return b
}

// replaceFailedOnly sets podReplacementPolicy Failed.
func (b *jobFx) replaceFailedOnly() *jobFx {
	b.j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	return b
}

func (b *jobFx) suspend() *jobFx { b.j.Spec.Suspend = ptr.To(true); return b }
func (b *jobFx) deadline(seconds int64) *jobFx {
	b.j.Spec.ActiveDeadlineSeconds = ptr.To(seconds)
	return b
}
func (b *jobFx) ttl(seconds int32) *jobFx {
	b.j.Spec.TTLSecondsAfterFinished = ptr.To(seconds)
	return b
}
func (b *jobFx) managedBy(name string) *jobFx { b.j.Spec.ManagedBy = ptr.To(name); return b }
func (b *jobFx) deleting() *jobFx             { b.j.DeletionTimestamp = ptr.To(mt(t0)); return b }
func (b *jobFx) restartOnFailure() *jobFx {
	b.j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
	return b
}

// status sets the status the Job had before the sync.
func (b *jobFx) status(s *statusFx) *jobFx { b.j.Status = *s.s; return b }

// started sets status.startTime.
func (b *jobFx) started(t time.Time) *jobFx { b.j.Status.StartTime = ptr.To(mt(t)); return b }

// statusFx builds a Job status. status() starts from the shape a sync
// writes: ready and terminating 0, empty uncounted lists.
type statusFx struct{ s *batchv1.JobStatus }

func status() *statusFx {
	return &statusFx{s: &batchv1.JobStatus{
		Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
	}}
}

// bare is a status with nothing set, as a new Job has.
func bare() *statusFx { return &statusFx{s: &batchv1.JobStatus{}} }

func (b *statusFx) obj() *batchv1.JobStatus       { return b.s }
func (b *statusFx) start(t time.Time) *statusFx   { b.s.StartTime = ptr.To(mt(t)); return b }
func (b *statusFx) active(n int32) *statusFx      { b.s.Active = n; return b }
func (b *statusFx) ready(n int32) *statusFx       { b.s.Ready = ptr.To(n); return b }
func (b *statusFx) terminating(n int32) *statusFx { b.s.Terminating = ptr.To(n); return b }
func (b *statusFx) succeeded(n int32) *statusFx   { b.s.Succeeded = n; return b }
func (b *statusFx) failed(n int32) *statusFx      { b.s.Failed = n; return b }
func (b *statusFx) completed(ix string) *statusFx { b.s.CompletedIndexes = ix; return b }
func (b *statusFx) failedIdx(ix string) *statusFx { b.s.FailedIndexes = ptr.To(ix); return b }
func (b *statusFx) done(t time.Time) *statusFx    { b.s.CompletionTime = ptr.To(mt(t)); return b }

func (b *statusFx) uncounted(succeeded, failed []string) *statusFx {
	u := &batchv1.UncountedTerminatedPods{}
	for _, n := range succeeded {
		u.Succeeded = append(u.Succeeded, types.UID(n))
	}
	for _, n := range failed {
		u.Failed = append(u.Failed, types.UID(n))
	}
	b.s.UncountedTerminatedPods = u
	return b
}

func (b *statusFx) cond(c batchv1.JobCondition) *statusFx {
	b.s.Conditions = append(b.s.Conditions, c)
	return b
}

// cond is a True Job condition that changed at t0.
func cond(t batchv1.JobConditionType, reason, message string) batchv1.JobCondition {
	return condition(t, corev1.ConditionTrue, reason, message, t0)
}

// condAt is a condition of any status that changed at t.
func condAt(t batchv1.JobConditionType, s corev1.ConditionStatus, reason, message string, when time.Time) batchv1.JobCondition {
	return condition(t, s, reason, message, when)
}

// podFx builds a Pod of a Job: Pending, with the tracking finalizer,
// created an hour before t0, its UID its name.
type podFx struct{ p *corev1.Pod }

func pod(name string) *podFx {
	return &podFx{p: &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: "ns", UID: types.UID(name),
			Finalizers:        []string{batch.JobTrackingFinalizer},
			CreationTimestamp: mt(at(-time.Hour)),
		},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
		Status: corev1.PodStatus{Phase: corev1.PodPending},
	}}
}

func (b *podFx) obj() *corev1.Pod { return b.p }

func (b *podFx) annotate(k, v string) *podFx {
	if b.p.Annotations == nil {
		b.p.Annotations = map[string]string{}
	}
	b.p.Annotations[k] = v
	return b
}

// index sets the completion index annotation and label.
func (b *podFx) index(ix int) *podFx {
	if b.p.Labels == nil {
		b.p.Labels = map[string]string{}
	}
	b.p.Labels[batch.JobCompletionIndexAnnotation] = strconv.Itoa(ix)
	return b.annotate(batch.JobCompletionIndexAnnotation, strconv.Itoa(ix))
}

func (b *podFx) failures(n int) *podFx {
	return b.annotate(batch.JobIndexFailureCountAnnotation, strconv.Itoa(n))
}

func (b *podFx) ignoredFailures(n int) *podFx {
	return b.annotate(batch.JobIndexIgnoredFailureCountAnnotation, strconv.Itoa(n))
}

func (b *podFx) phase(p corev1.PodPhase) *podFx { b.p.Status.Phase = p; return b }
func (b *podFx) running() *podFx                { return b.phase(corev1.PodRunning) }
func (b *podFx) scheduled(node string) *podFx   { b.p.Spec.NodeName = node; return b }

// succeeded and failed end the Pod; it finished when its Ready condition
// turned False, at t0 unless endedAt says otherwise.
func (b *podFx) succeeded() *podFx { return b.phase(corev1.PodSucceeded).endedAt(t0) }
func (b *podFx) failed() *podFx    { return b.phase(corev1.PodFailed).endedAt(t0) }

// endedAt sets (or moves) the Ready=False condition that dates the end.
func (b *podFx) endedAt(t time.Time) *podFx {
	if c := readyCondition(b.p); c != nil {
		c.Status, c.LastTransitionTime = corev1.ConditionFalse, mt(t)
		return b
	}
	return b.podCond(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: mt(t)})
}

// ready makes the Pod Running and Ready since t.
func (b *podFx) readySince(t time.Time) *podFx {
	b.running()
	return b.podCond(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt(t)})
}

func (b *podFx) ready() *podFx { return b.readySince(at(-time.Minute)) }

func (b *podFx) podCond(c corev1.PodCondition) *podFx {
	b.p.Status.Conditions = append(b.p.Status.Conditions, c)
	return b
}

// disrupted adds a DisruptionTarget=True condition.
func (b *podFx) disrupted() *podFx {
	return b.podCond(corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue})
}

// exit adds a terminated container with the exit code, finished at t0.
func (b *podFx) exit(container string, code int32) *podFx {
	b.p.Status.ContainerStatuses = append(b.p.Status.ContainerStatuses, terminated(container, code, t0))
	return b
}

func (b *podFx) initExit(container string, code int32) *podFx {
	b.p.Status.InitContainerStatuses = append(b.p.Status.InitContainerStatuses, terminated(container, code, t0))
	return b
}

func terminated(name string, code int32, t time.Time) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: mt(t)}}}
}

// restarts records container restarts (one status per count).
func (b *podFx) restarts(counts ...int32) *podFx {
	for i, n := range counts {
		b.p.Status.ContainerStatuses = append(b.p.Status.ContainerStatuses, corev1.ContainerStatus{Name: fmt.Sprintf("c%d", i), RestartCount: n})
	}
	return b
}

func (b *podFx) deleted() *podFx            { b.p.DeletionTimestamp = ptr.To(mt(t0)); return b }
func (b *podFx) untracked() *podFx          { b.p.Finalizers = nil; return b }
func (b *podFx) created(t time.Time) *podFx { b.p.CreationTimestamp = mt(t); return b }

// pods turns builders into Pods.
func pods(bs ...*podFx) []*corev1.Pod {
	out := make([]*corev1.Pod, len(bs))
	for i, b := range bs {
		out[i] = b.obj()
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
