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

// Package fuzzer provides the fuzzer functions for the batch.jobs.dev API
// group's round-trip tests.
package fuzzer

import (
	"math"

	corev1 "k8s.io/api/core/v1"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	corev1defaults "k8s.io/kubernetes/pkg/apis/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

// Funcs returns the fuzzer functions for the batch.jobs.dev API group.
//
// The round-trip test decodes with defaulting, so every fuzzed object must
// already carry the defaults that SetDefaults_Job would set, as in upstream's
// batch fuzzer. Enum fields get valid values so that failures point at real
// conversion problems.
var Funcs = func(codecs runtimeserializer.CodecFactory) []interface{} {
	return []interface{}{
		func(j *batch.Job, c randfill.Continue) {
			c.FillNoCustom(j)
			// Match defaulting: a Job without labels takes its template's.
			if len(j.Labels) == 0 {
				j.Labels = j.Spec.Template.Labels
			}
		},
		func(j *batch.JobSpec, c randfill.Continue) {
			c.FillNoCustom(j)
			// Match defaulting: these are never nil after decoding.
			j.Completions = ptr.To(c.Int31())
			j.Parallelism = ptr.To(c.Int31())
			j.BackoffLimit = ptr.To(c.Int31())
			if c.Bool() {
				j.BackoffLimit = ptr.To[int32](math.MaxInt32)
			}
			j.ManualSelector = ptr.To(c.Bool())
			j.Suspend = ptr.To(c.Bool())
			mode := batch.NonIndexedCompletion
			if c.Bool() {
				mode = batch.IndexedCompletion
				j.BackoffLimitPerIndex = ptr.To(c.Int31())
				j.MaxFailedIndexes = ptr.To(c.Int31())
			}
			j.CompletionMode = &mode
			policy := batch.TerminatingOrFailed
			if c.Bool() {
				policy = batch.Failed
			}
			j.PodReplacementPolicy = &policy
		},
		func(a *batch.PodFailurePolicyAction, c randfill.Continue) {
			actions := []batch.PodFailurePolicyAction{
				batch.PodFailurePolicyActionFailJob,
				batch.PodFailurePolicyActionFailIndex,
				batch.PodFailurePolicyActionIgnore,
				batch.PodFailurePolicyActionCount,
			}
			*a = actions[c.Intn(len(actions))]
		},
		func(o *batch.PodFailurePolicyOnExitCodesOperator, c randfill.Continue) {
			ops := []batch.PodFailurePolicyOnExitCodesOperator{batch.PodFailurePolicyOnExitCodesOpIn, batch.PodFailurePolicyOnExitCodesOpNotIn}
			*o = ops[c.Intn(len(ops))]
		},
		func(p *batch.PodFailurePolicyOnPodConditionsPattern, c randfill.Continue) {
			c.FillNoCustom(p)
			// Match defaulting.
			if p.Status == "" {
				p.Status = corev1.ConditionTrue
			}
		},
		func(t *batch.JobConditionType, c randfill.Continue) {
			types := []batch.JobConditionType{
				batch.JobSuspended, batch.JobComplete, batch.JobFailed, batch.JobFailureTarget, batch.JobSuccessCriteriaMet,
			}
			*t = types[c.Intn(len(types))]
		},
		func(s *corev1.ConditionStatus, c randfill.Continue) {
			statuses := []corev1.ConditionStatus{corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown}
			*s = statuses[c.Intn(len(statuses))]
		},
		// The pod template is the external core/v1 type in every version, so it
		// goes through the round trip unconverted; fill it freely and then apply
		// kube's template defaults (the same generated walk a PodTemplate
		// gets), which decoding applies too. Nothing else needs
		// constraining for JSON or CBOR: quantities come from metafuzzer's
		// Quantity func, and IntOrString and metav1.Time fill themselves
		// (RandFill) with values that serialize losslessly.
		func(t *corev1.PodTemplateSpec, c randfill.Continue) {
			c.FillNoCustom(t)
			pt := corev1.PodTemplate{Template: *t}
			corev1defaults.SetObjectDefaults_PodTemplate(&pt)
			*t = pt.Template
		},
	}
}
