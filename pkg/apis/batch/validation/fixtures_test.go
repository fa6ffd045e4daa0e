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
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// errorsByTypeAndField compares field.ErrorLists by Type and Field only, in
// any order (resource maps make the order of some errors random).
var errorsByTypeAndField = errorsComparedBy()

// errorsComparedBy compares field.ErrorLists in any order by Type, Field
// and the fields of field.Error named in also.
func errorsComparedBy(also ...string) []cmp.Option {
	ignored := []string{"BadValue", "Detail", "Origin", "CoveredByDeclarative",
		"FromImperative", "ShortCircuit", "ShortCircuitedInDeclarative", "ValidationStabilityLevel"}
	ignored = slices.DeleteFunc(ignored, func(f string) bool { return slices.Contains(also, f) })
	return []cmp.Option{
		cmpopts.IgnoreFields(field.Error{}, ignored...),
		cmpopts.SortSlices(func(a, b *field.Error) bool {
			if a.Field != b.Field {
				return a.Field < b.Field
			}
			return a.Type < b.Type
		}),
		cmpopts.EquateEmpty(),
	}
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

// makeJob starts a Job as it reaches validation: defaulted, with the
// selector and template labels the strategy generates, in namespace
// "default", resourceVersion 1, generation 1, with one defaulted container.
func makeJob(name string) *batchtesting.JobBuilder {
	return batchtesting.MakeJob(name).UID("0f6d6b1e-5c4a-4f1e-9d3b-2a7c8e9f0a1b").Generated().
		ResourceVersion("1").Generation(1).Containers(container("main")).
		Do(func(j *batchv1.Job) {
			j.Spec.Template.Spec.DNSPolicy = corev1.DNSClusterFirst
			j.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](30)
		})
}

func container(name string) corev1.Container {
	return corev1.Container{
		Name:                     name,
		Image:                    "registry.example/app:1.0",
		ImagePullPolicy:          corev1.PullIfNotPresent,
		TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
}

// manualSelector switches the Job to a user-chosen selector app=<name>.
func manualSelector(j *batchv1.Job) {
	j.Spec.ManualSelector = ptr.To(true)
	j.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": j.Name}}
	j.Spec.Template.Labels = map[string]string{"app": j.Name}
}

func onExitCodes(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, values ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: values}}
}

func onConditions(action batchv1.PodFailurePolicyAction, patterns ...batchv1.PodFailurePolicyOnPodConditionsPattern) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{Action: action, OnPodConditions: patterns}
}

func pattern(t corev1.PodConditionType, s corev1.ConditionStatus) batchv1.PodFailurePolicyOnPodConditionsPattern {
	return batchv1.PodFailurePolicyOnPodConditionsPattern{Type: t, Status: s}
}

func repeatRule(r batchv1.PodFailurePolicyRule, n int) []batchv1.PodFailurePolicyRule {
	rules := make([]batchv1.PodFailurePolicyRule, n)
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

func patterns(n int) []batchv1.PodFailurePolicyOnPodConditionsPattern {
	p := make([]batchv1.PodFailurePolicyOnPodConditionsPattern, n)
	for i := range p {
		p[i] = pattern(corev1.DisruptionTarget, corev1.ConditionTrue)
	}
	return p
}

func successRules(n int) []batchv1.SuccessPolicyRule {
	r := make([]batchv1.SuccessPolicyRule, n)
	for i := range r {
		r[i] = batchv1.SuccessPolicyRule{SucceededCount: ptr.To[int32](1)}
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
