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

package validation

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

// errorsByTypeAndField compares field.ErrorLists by Type and Field only, in
// any order (resource maps make the order of some errors random).
var errorsByTypeAndField = []cmp.Option{
	cmpopts.IgnoreFields(field.Error{}, "BadValue", "Detail", "Origin", "CoveredByDeclarative",
		"FromImperative", "ShortCircuit", "ShortCircuitedInDeclarative", "ValidationStabilityLevel"),
	cmpopts.SortSlices(func(a, b *field.Error) bool {
		if a.Field != b.Field {
			return a.Field < b.Field
		}
		return a.Type < b.Type
	}),
	cmpopts.EquateEmpty(),
}

func assertErrors(t *testing.T, want, got field.ErrorList) {
	t.Helper()
	if diff := cmp.Diff(want, got, errorsByTypeAndField...); diff != "" {
		t.Errorf("unexpected errors (-want,+got):\n%s\ngot: %v", diff, got)
	}
}

// errs builds an expected ErrorList from (type, field) pairs.
func errs(pairs ...any) field.ErrorList {
	var list field.ErrorList
	for i := 0; i < len(pairs); i += 2 {
		list = append(list, &field.Error{Type: pairs[i].(field.ErrorType), Field: pairs[i+1].(string)})
	}
	return list
}

const (
	required     = field.ErrorTypeRequired
	invalid      = field.ErrorTypeInvalid
	notSupported = field.ErrorTypeNotSupported
	duplicate    = field.ErrorTypeDuplicate
	tooMany      = field.ErrorTypeTooMany
	tooLong      = field.ErrorTypeTooLong
	forbidden    = field.ErrorTypeForbidden
)

var (
	t0 = metav1.NewTime(time.Date(2026, 1, 1, 10, 0, 0, 0, time.UTC))
	t1 = metav1.NewTime(t0.Add(time.Minute))
	t2 = metav1.NewTime(t0.Add(2 * time.Minute))
)

// jobBuilder builds Jobs as they reach validation: defaulted, with the
// selector and template labels the strategy generates.
type jobBuilder struct{ job *batch.Job }

func makeJob(name string) *jobBuilder {
	const uid = types.UID("0f6d6b1e-5c4a-4f1e-9d3b-2a7c8e9f0a1b")
	return &jobBuilder{job: &batch.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: uid, ResourceVersion: "1", Generation: 1},
		Spec: batch.JobSpec{
			Parallelism:          ptr.To[int32](1),
			Completions:          ptr.To[int32](1),
			BackoffLimit:         ptr.To[int32](6),
			CompletionMode:       ptr.To(batch.NonIndexedCompletion),
			Suspend:              ptr.To(false),
			PodReplacementPolicy: ptr.To(batch.TerminatingOrFailed),
			ManualSelector:       ptr.To(false),
			Selector:             &metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUIDLabel: string(uid)}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
					batch.ControllerUIDLabel:       string(uid),
					batch.LegacyControllerUIDLabel: string(uid),
					batch.JobNameLabel:             name,
					batch.LegacyJobNameLabel:       name,
				}},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{container("main")},
					RestartPolicy:                 corev1.RestartPolicyNever,
					DNSPolicy:                     corev1.DNSClusterFirst,
					TerminationGracePeriodSeconds: ptr.To[int64](30),
				},
			},
		},
	}}
}

func container(name string) corev1.Container {
	return corev1.Container{
		Name:                     name,
		Image:                    "registry.example/app:1.0",
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
}

func (b *jobBuilder) Obj() *batch.Job { return b.job.DeepCopy() }

func (b *jobBuilder) Do(f func(j *batch.Job)) *jobBuilder { f(b.job); return b }

func (b *jobBuilder) Indexed(completions int32) *jobBuilder {
	b.job.Spec.CompletionMode = ptr.To(batch.IndexedCompletion)
	b.job.Spec.Completions = ptr.To(completions)
	b.job.Spec.Parallelism = ptr.To(completions)
	return b
}

func (b *jobBuilder) Completions(n int32) *jobBuilder { b.job.Spec.Completions = ptr.To(n); return b }
func (b *jobBuilder) Parallelism(n int32) *jobBuilder { b.job.Spec.Parallelism = ptr.To(n); return b }
func (b *jobBuilder) Suspend(s bool) *jobBuilder      { b.job.Spec.Suspend = ptr.To(s); return b }
func (b *jobBuilder) BackoffLimitPerIndex(n int32) *jobBuilder {
	b.job.Spec.BackoffLimitPerIndex = ptr.To(n)
	return b
}
func (b *jobBuilder) MaxFailedIndexes(n int32) *jobBuilder {
	b.job.Spec.MaxFailedIndexes = ptr.To(n)
	return b
}
func (b *jobBuilder) ManagedBy(s string) *jobBuilder { b.job.Spec.ManagedBy = ptr.To(s); return b }
func (b *jobBuilder) RestartPolicy(p corev1.RestartPolicy) *jobBuilder {
	b.job.Spec.Template.Spec.RestartPolicy = p
	return b
}
func (b *jobBuilder) PodReplacementPolicy(p batch.PodReplacementPolicy) *jobBuilder {
	b.job.Spec.PodReplacementPolicy = ptr.To(p)
	return b
}

// PodFailurePolicy sets the policy and the replacement policy it requires.
func (b *jobBuilder) PodFailurePolicy(rules ...batch.PodFailurePolicyRule) *jobBuilder {
	b.job.Spec.PodFailurePolicy = &batch.PodFailurePolicy{Rules: rules}
	b.job.Spec.PodReplacementPolicy = ptr.To(batch.Failed)
	return b
}

func (b *jobBuilder) SuccessPolicy(rules ...batch.SuccessPolicyRule) *jobBuilder {
	b.job.Spec.SuccessPolicy = &batch.SuccessPolicy{Rules: rules}
	return b
}

// ManualSelector switches to a user-chosen selector app=<name>.
func (b *jobBuilder) ManualSelector() *jobBuilder {
	b.job.Spec.ManualSelector = ptr.To(true)
	b.job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": b.job.Name}}
	b.job.Spec.Template.Labels = map[string]string{"app": b.job.Name}
	return b
}

func (b *jobBuilder) Containers(cs ...corev1.Container) *jobBuilder {
	b.job.Spec.Template.Spec.Containers = cs
	return b
}

func (b *jobBuilder) InitContainers(cs ...corev1.Container) *jobBuilder {
	b.job.Spec.Template.Spec.InitContainers = cs
	return b
}

func (b *jobBuilder) Condition(t batch.JobConditionType, s corev1.ConditionStatus) *jobBuilder {
	b.job.Status.Conditions = append(b.job.Status.Conditions, batch.JobCondition{Type: t, Status: s})
	return b
}

// Conditions adds True conditions of the given types.
func (b *jobBuilder) Conditions(ts ...batch.JobConditionType) *jobBuilder {
	for _, t := range ts {
		b.Condition(t, corev1.ConditionTrue)
	}
	return b
}

func (b *jobBuilder) StartTime(t metav1.Time) *jobBuilder { b.job.Status.StartTime = &t; return b }
func (b *jobBuilder) CompletionTime(t metav1.Time) *jobBuilder {
	b.job.Status.CompletionTime = &t
	return b
}
func (b *jobBuilder) Active(n int32) *jobBuilder      { b.job.Status.Active = n; return b }
func (b *jobBuilder) Succeeded(n int32) *jobBuilder   { b.job.Status.Succeeded = n; return b }
func (b *jobBuilder) Failed(n int32) *jobBuilder      { b.job.Status.Failed = n; return b }
func (b *jobBuilder) Ready(n int32) *jobBuilder       { b.job.Status.Ready = ptr.To(n); return b }
func (b *jobBuilder) Terminating(n int32) *jobBuilder { b.job.Status.Terminating = ptr.To(n); return b }
func (b *jobBuilder) CompletedIndexes(s string) *jobBuilder {
	b.job.Status.CompletedIndexes = s
	return b
}
func (b *jobBuilder) FailedIndexes(s string) *jobBuilder {
	b.job.Status.FailedIndexes = ptr.To(s)
	return b
}
func (b *jobBuilder) Uncounted(succeeded, failed []types.UID) *jobBuilder {
	b.job.Status.UncountedTerminatedPods = &batch.UncountedTerminatedPods{Succeeded: succeeded, Failed: failed}
	return b
}

// Finished gives the Job the status the controller writes when it completes.
func (b *jobBuilder) Complete() *jobBuilder {
	return b.StartTime(t0).CompletionTime(t1).Conditions(batch.JobSuccessCriteriaMet, batch.JobComplete)
}

// FailedJob gives the Job the status the controller writes when it fails.
func (b *jobBuilder) FailedJob() *jobBuilder {
	return b.StartTime(t0).Conditions(batch.JobFailureTarget, batch.JobFailed)
}

func onExitCodes(action batch.PodFailurePolicyAction, op batch.PodFailurePolicyOnExitCodesOperator, values ...int32) batch.PodFailurePolicyRule {
	return batch.PodFailurePolicyRule{Action: action, OnExitCodes: &batch.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: values}}
}

func onConditions(action batch.PodFailurePolicyAction, patterns ...batch.PodFailurePolicyOnPodConditionsPattern) batch.PodFailurePolicyRule {
	return batch.PodFailurePolicyRule{Action: action, OnPodConditions: patterns}
}

func pattern(t corev1.PodConditionType, s corev1.ConditionStatus) batch.PodFailurePolicyOnPodConditionsPattern {
	return batch.PodFailurePolicyOnPodConditionsPattern{Type: t, Status: s}
}

func repeatRule(r batch.PodFailurePolicyRule, n int) []batch.PodFailurePolicyRule {
	rules := make([]batch.PodFailurePolicyRule, n)
	for i := range rules {
		rules[i] = r
	}
	return rules
}

func exitCodes(n int) []int32 {
	v := make([]int32, n)
	for i := range v {
		v[i] = int32(i + 1)
	}
	return v
}

func patterns(n int) []batch.PodFailurePolicyOnPodConditionsPattern {
	p := make([]batch.PodFailurePolicyOnPodConditionsPattern, n)
	for i := range p {
		p[i] = pattern(corev1.DisruptionTarget, corev1.ConditionTrue)
	}
	return p
}

func successRules(n int) []batch.SuccessPolicyRule {
	r := make([]batch.SuccessPolicyRule, n)
	for i := range r {
		r[i] = batch.SuccessPolicyRule{SucceededCount: ptr.To[int32](1)}
	}
	return r
}

func resources(req, lim map[corev1.ResourceName]string) corev1.ResourceRequirements {
	toList := func(m map[corev1.ResourceName]string) corev1.ResourceList {
		if m == nil {
			return nil
		}
		l := corev1.ResourceList{}
		for k, v := range m {
			l[k] = resource.MustParse(v)
		}
		return l
	}
	return corev1.ResourceRequirements{Requests: toList(req), Limits: toList(lim)}
}

func withResources(c corev1.Container, r corev1.ResourceRequirements) corev1.Container {
	c.Resources = r
	return c
}

func withPorts(c corev1.Container, ports ...corev1.ContainerPort) corev1.Container {
	c.Ports = ports
	return c
}

func tcp(port int32) corev1.ContainerPort {
	return corev1.ContainerPort{ContainerPort: port, Protocol: corev1.ProtocolTCP}
}

func nameOfLength(n int) string { return strings.Repeat("a", n) }

func cmpDiffJob(want, got *batch.Job) string { return cmp.Diff(want, got) }
