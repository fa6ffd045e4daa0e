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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// benchmarkJob is a realistic Indexed Job: per-index backoff, a pod failure
// policy, a success policy, an init container and resources.
func benchmarkJob() *batchtesting.JobBuilder {
	return makeJob("training").Indexed(64).Parallelism(8).BackoffLimitPerIndex(2).MaxFailedIndexes(8).
		ManagedBy("kueue.x-k8s.io/multikueue").
		InitContainers(withResources(container("fetch"), resources(map[corev1.ResourceName]string{"cpu": "100m", "memory": "64Mi"}, nil))).
		Containers(withPorts(withResources(container("trainer"), resources(
			map[corev1.ResourceName]string{"cpu": "4", "memory": "16Gi", "example.com/gpu": "1"},
			map[corev1.ResourceName]string{"cpu": "8", "memory": "16Gi", "example.com/gpu": "1"})), tcp(8080))).
		PodFailurePolicy(
			batchv1.PodFailurePolicyRule{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To("trainer"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42, 43, 44}}},
			onExitCodes(batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyOnExitCodesOpIn, 1, 2, 3),
			onConditions(batchv1.PodFailurePolicyActionIgnore, pattern(corev1.DisruptionTarget, corev1.ConditionTrue)),
		).PodReplacementPolicy(batchv1.Failed).
		SuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0-31"), SucceededCount: ptr.To[int32](30)})
}

func BenchmarkValidateJob(b *testing.B) {
	b.Run("create", func(b *testing.B) {
		job := benchmarkJob().Internal()
		opts := JobValidationOptions{RequirePrefixedLabels: true}
		if errs := ValidateJob(job, opts); len(errs) != 0 {
			b.Fatalf("benchmark Job is invalid: %v", errs)
		}
		b.ReportAllocs()
		for b.Loop() {
			ValidateJob(job, opts)
		}
	})
	b.Run("status update", func(b *testing.B) {
		old := benchmarkJob().StartTime(t0.Time).Active(8).Ready(6).Succeeded(20).Failed(3).
			CompletedIndexes("0-19").FailedIndexes("21,23").Uncounted([]types.UID{"p1"}, nil).Internal()
		job := benchmarkJob().StartTime(t0.Time).Active(8).Ready(7).Succeeded(21).Failed(4).
			CompletedIndexes("0-20").FailedIndexes("21,23,25").Uncounted([]types.UID{"p2"}, []types.UID{"p3"}).Internal()
		opts := AllStatusRules()
		if errs := ValidateJobUpdateStatus(job, old, opts); len(errs) != 0 {
			b.Fatalf("benchmark status update is invalid: %v", errs)
		}
		b.ReportAllocs()
		for b.Loop() {
			ValidateJobUpdateStatus(job, old, opts)
		}
	})
}
