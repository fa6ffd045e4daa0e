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
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/features"
)

// statusFuzzSeed is a seed of FuzzStatusStrategy: the stored status, the
// written status and the spec shape (see statusFuzzJob).
type statusFuzzSeed struct {
	old, new string
	shape    byte
}

// statusFuzzSeeds are status writes the job controller and external
// controllers make, and broken ones. Plain `go test` runs each once.
var statusFuzzSeeds = []statusFuzzSeed{
	{`{}`, `{}`, 0},
	{`null`, `{"conditions":null,"uncountedTerminatedPods":null}`, 0x08},
	// The controller starts the Job and counts pods.
	{`{}`, `{"startTime":"2026-01-02T03:04:05Z","active":2,"ready":1,"terminating":0,"uncountedTerminatedPods":{}}`, 0x18},
	{`{"startTime":"2026-01-02T03:04:05Z","active":2,"ready":1,"terminating":0,"uncountedTerminatedPods":{}}`,
		`{"startTime":"2026-01-02T03:04:05Z","active":1,"ready":1,"terminating":1,"succeeded":1,"uncountedTerminatedPods":{"succeeded":["u1"]}}`, 0x18},
	// It completes: SuccessCriteriaMet, then Complete with completionTime.
	{`{"startTime":"2026-01-02T03:04:05Z","active":1,"succeeded":4,"uncountedTerminatedPods":{}}`,
		`{"startTime":"2026-01-02T03:04:05Z","active":0,"succeeded":5,"uncountedTerminatedPods":{},
		"conditions":[{"type":"SuccessCriteriaMet","status":"True","reason":"CompletionsReached"}]}`, 0x18},
	{`{"startTime":"2026-01-02T03:04:05Z","succeeded":5,"conditions":[{"type":"SuccessCriteriaMet","status":"True"}]}`,
		`{"startTime":"2026-01-02T03:04:05Z","completionTime":"2026-01-02T03:14:05Z","succeeded":5,"ready":0,"terminating":0,
		"conditions":[{"type":"SuccessCriteriaMet","status":"True"},{"type":"Complete","status":"True","lastTransitionTime":"2026-01-02T03:14:05Z"}]}`, 0x18},
	// It fails: FailureTarget, then Failed.
	{`{"startTime":"2026-01-02T03:04:05Z","active":2,"failed":6}`,
		`{"startTime":"2026-01-02T03:04:05Z","active":0,"failed":7,"terminating":0,
		"conditions":[{"type":"FailureTarget","status":"True","reason":"BackoffLimitExceeded"},{"type":"Failed","status":"True","reason":"BackoffLimitExceeded"}]}`, 0x10},
	// Indexed with backoffLimitPerIndex: completed and failed indexes.
	{`{"startTime":"2026-01-02T03:04:05Z","active":3,"completedIndexes":"0-1","failedIndexes":""}`,
		`{"startTime":"2026-01-02T03:04:05Z","active":1,"succeeded":3,"failed":1,"completedIndexes":"0-2,4","failedIndexes":"3"}`, 0x1f},
	{`{"completedIndexes":"0,2"}`, `{"completedIndexes":"0,2-4","failedIndexes":"1"}`, 0x3b},
	// Elastic Indexed Job scaled down: succeeded may drop.
	{`{"startTime":"2026-01-02T03:04:05Z","succeeded":4,"completedIndexes":"0-3"}`,
		`{"startTime":"2026-01-02T03:04:05Z","succeeded":2,"completedIndexes":"0-1"}`, 0x39},
	// Suspend and resume.
	{`{"startTime":"2026-01-02T03:04:05Z","conditions":[{"type":"Suspended","status":"True"}]}`,
		`{"startTime":"2026-01-02T04:04:05Z","conditions":[{"type":"Suspended","status":"False"}]}`, 0x48},
	{`{}`, `{"conditions":[{"type":"Complete","status":"True"},{"type":"SuccessCriteriaMet","status":"True"}]}`, 0x40},
	// Writes the rules refuse.
	{`{"succeeded":3,"failed":2,"completionTime":"2026-01-02T03:04:05Z",
		"conditions":[{"type":"Complete","status":"True"},{"type":"FailureTarget","status":"True"}]}`,
		`{"succeeded":1,"failed":1,"active":-1,"ready":5,"terminating":-2,"startTime":"2026-01-02T03:04:06Z",
		"completionTime":"2026-01-02T03:04:00Z","completedIndexes":"5-3,a,-1","failedIndexes":"0-99999999999",
		"uncountedTerminatedPods":{"succeeded":["a","","a"],"failed":["a"]},
		"conditions":[{"type":"Failed","status":"True"},{"type":"SuccessCriteriaMet","status":"True"}]}`, 0x1b},
	{`{"completedIndexes":"1-2-3,,7"}`, `{"completedIndexes":"+1,02,3-3","failedIndexes":"2147483647,1-0"}`, 0xff},
	{`{"startTime":"2026-01-02T03:04:05.999999999Z"}`, `{"startTime":"2026-01-02T03:04:05Z"}`, 0x08},
}

// statusFuzzJob builds a stored Job (v1, as decoded and defaulted) whose
// spec is chosen by the bits of shape:
//
//	bit 0:    Indexed (else NonIndexed)
//	bit 1:    backoffLimitPerIndex (Indexed only)
//	bit 2:    maxFailedIndexes (Indexed with backoffLimitPerIndex only)
//	bits 3-4: completions unset (parallelism 2), 0, 1 or 5
//	bit 5:    parallelism equal to completions (elastic when Indexed)
//	bit 6:    suspended
//	bit 7:    a success policy (Indexed) or a pod failure policy (NonIndexed)
func statusFuzzJob(shape byte) *batchv1.Job {
	bit := func(i uint) bool { return shape&(1<<i) != 0 }
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name: "fuzz", Namespace: metav1.NamespaceDefault, UID: testJobUID,
			ResourceVersion: "7", Generation: 1,
			Labels: map[string]string{batch.JobNameLabel: "fuzz"},
		},
		Spec: batchv1.JobSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUIDLabel: string(testJobUID)}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
					batch.ControllerUIDLabel: string(testJobUID), batch.LegacyControllerUIDLabel: string(testJobUID),
					batch.JobNameLabel: "fuzz", batch.LegacyJobNameLabel: "fuzz",
				}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "registry.example/app:1.0"}},
				},
			},
		},
	}
	spec := &job.Spec
	indexed := bit(0)
	if indexed {
		spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
		if bit(1) {
			spec.BackoffLimitPerIndex = ptr.To[int32](1)
			if bit(2) {
				spec.MaxFailedIndexes = ptr.To[int32](2)
			}
		}
	}
	switch (shape >> 3) & 3 {
	case 0:
		spec.Parallelism = ptr.To[int32](2)
	case 1:
		spec.Completions = ptr.To[int32](0)
	case 2:
		spec.Completions = ptr.To[int32](1)
	case 3:
		spec.Completions = ptr.To[int32](5)
	}
	if bit(5) && spec.Completions != nil {
		spec.Parallelism = ptr.To(*spec.Completions)
	}
	spec.Suspend = ptr.To(bit(6))
	if bit(7) {
		if indexed {
			spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}}}
		} else {
			spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action:          batchv1.PodFailurePolicyActionIgnore,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}},
			}}}
		}
	}
	return job
}

// statusFuzzScheme has the batch.jobs.dev types.
var statusFuzzScheme = testScheme()

// statusFuzzInternal defaults a v1 Job and converts it to the internal Job,
// as the decoder does for a request body and for what etcd holds.
func statusFuzzInternal(t *testing.T, job *batchv1.Job) *batch.Job {
	t.Helper()
	statusFuzzScheme.Default(job)
	out := &batch.Job{}
	if err := statusFuzzScheme.Convert(job, out, nil); err != nil {
		t.Fatalf("converting to internal: %v", err)
	}
	return out
}

// statusFuzzErrorTypes are the types a field.Error may carry.
var statusFuzzErrorTypes = map[field.ErrorType]bool{
	field.ErrorTypeNotFound: true, field.ErrorTypeRequired: true, field.ErrorTypeDuplicate: true,
	field.ErrorTypeInvalid: true, field.ErrorTypeNotSupported: true, field.ErrorTypeForbidden: true,
	field.ErrorTypeTooLong: true, field.ErrorTypeTooMany: true, field.ErrorTypeInternal: true,
	field.ErrorTypeTypeInvalid: true,
}

// FuzzStatusStrategy writes a fuzzed status over a fuzzed stored status, on
// a Job of a spec shape chosen by a byte, through the status strategy as the
// registry does (PrepareForUpdate, ValidateUpdate, WarningsOnUpdate), with
// JobStrictStatusValidation off and on. The new object also carries a
// changed spec, which the status strategy must drop.
//
// It asserts that nothing panics, that PrepareForUpdate leaves the stored
// spec, that every error names a field under status or metadata and has a
// known type, and that the strict mode refuses at least what the ratcheted
// mode refuses.
func FuzzStatusStrategy(f *testing.F) {
	for _, seed := range statusFuzzSeeds {
		f.Add([]byte(seed.old), []byte(seed.new), seed.shape)
	}
	f.Fuzz(func(t *testing.T, oldStatus, newStatus []byte, shape byte) {
		// The API decodes the whole object with sigs.k8s.io/json (case
		// sensitive, integers kept); input that does not decode never
		// reaches the strategy.
		var oldV1, newV1 batchv1.JobStatus
		if err := utiljson.Unmarshal(oldStatus, &oldV1); err != nil {
			return
		}
		if err := utiljson.Unmarshal(newStatus, &newV1); err != nil {
			return
		}
		stored := statusFuzzJob(shape)
		stored.Status = oldV1
		written := statusFuzzJob(shape)
		written.Status = newV1
		written.Spec.Parallelism = ptr.To[int32](99)
		written.Spec.Completions = ptr.To[int32](98)
		written.Spec.Suspend = ptr.To(!ptr.Deref(written.Spec.Suspend, false))
		oldJob := statusFuzzInternal(t, stored)
		newJob := statusFuzzInternal(t, written)

		errsByMode := map[bool][]string{}
		for _, strict := range []bool{false, true} {
			t.Run(fmt.Sprintf("JobStrictStatusValidation=%v", strict), func(t *testing.T) {
				featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.JobStrictStatusValidation, strict)
				ctx := genericapirequest.WithNamespace(context.Background(), metav1.NamespaceDefault)
				strategy := NewStatusStrategy(NewStrategy(statusFuzzScheme))
				obj, old := newJob.DeepCopy(), oldJob.DeepCopy()

				strategy.PrepareForUpdate(ctx, obj, old)
				if !apiequality.Semantic.DeepEqual(obj.Spec, oldJob.Spec) {
					t.Fatalf("PrepareForUpdate kept a spec change (-stored,+after):\n%s", cmp.Diff(oldJob.Spec, obj.Spec))
				}
				errs := strategy.ValidateUpdate(ctx, obj, old)
				_ = strategy.WarningsOnUpdate(ctx, obj, old)
				for _, e := range errs {
					switch {
					case e == nil:
						t.Errorf("nil error in %v", errs)
					case !statusFuzzFieldUnder(e.Field, "status", "metadata"):
						t.Errorf("error with a path outside status and metadata: %q (%v)", e.Field, e)
					case !statusFuzzErrorTypes[e.Type]:
						t.Errorf("error of unknown type %q (%v)", e.Type, e)
					default:
						errsByMode[strict] = append(errsByMode[strict], string(e.Type)+" "+e.Field)
					}
				}
			})
		}
		// Strict mode switches every ratcheted rule on; it may refuse more,
		// never less.
		strictErrs := map[string]bool{}
		for _, e := range errsByMode[true] {
			strictErrs[e] = true
		}
		for _, e := range errsByMode[false] {
			if !strictErrs[e] {
				t.Errorf("JobStrictStatusValidation=true does not report %q, which the ratcheted rules do (strict: %q)", e, errsByMode[true])
			}
		}
	})
}

// statusFuzzFieldUnder reports whether path is one of roots or lies below one.
func statusFuzzFieldUnder(path string, roots ...string) bool {
	for _, root := range roots {
		if path == root || strings.HasPrefix(path, root+".") || strings.HasPrefix(path, root+"[") {
			return true
		}
	}
	return false
}
