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
	"context"
	"fmt"

	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/api/pod"
	"k8s.io/kubernetes/pkg/apis/core"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

const (
	warnCompletionsSoftLimit                        = 100_000
	warnParallelismSoftLimitForUnlimitedCompletions = 10_000
)

// WarningsForJob returns the warnings kube-apiserver gives for a Job on create
// (oldJob nil) or on an update that changed the spec (the generation moved).
// Updates that leave the generation alone get none, as upstream. The pod
// template's warnings are kube's own (GetWarningsForPodTemplate: deprecated
// node labels and annotations, capabilities, fractional quantities, duplicate
// env vars and ports, volume plugins, ...).
func WarningsForJob(ctx context.Context, job, oldJob *batch.Job) []string {
	var warnings []string
	var oldSpec *batch.JobSpec
	if oldJob == nil {
		if msgs := utilvalidation.IsDNS1123Label(job.Name); len(msgs) != 0 {
			warnings = append(warnings, fmt.Sprintf("metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: %v", msgs))
		}
	} else {
		if job.Generation == oldJob.Generation {
			return nil
		}
		oldSpec = &oldJob.Spec
	}
	return append(warnings, warningsForJobSpec(ctx, field.NewPath("spec"), &job.Spec, oldSpec)...)
}

func warningsForJobSpec(ctx context.Context, path *field.Path, spec, oldSpec *batch.JobSpec) []string {
	var warnings []string
	if isIndexed(spec) {
		completions := ptr.Deref(spec.Completions, 0)
		parallelism := ptr.Deref(spec.Parallelism, 0)
		if completions > warnCompletionsSoftLimit && parallelism > warnParallelismSoftLimitForUnlimitedCompletions {
			warnings = append(warnings, fmt.Sprintf("%s: %s", path, "In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail"))
		}
	}
	template, err := InternalPodTemplate(&spec.Template)
	if err != nil {
		// Validation refuses such a template; there is nothing to warn about.
		return warnings
	}
	var oldTemplate *core.PodTemplateSpec
	if oldSpec != nil {
		if oldTemplate, err = InternalPodTemplate(&oldSpec.Template); err != nil {
			oldTemplate = nil
		}
	}
	return append(warnings, pod.GetWarningsForPodTemplate(ctx, path.Child("template"), template, oldTemplate)...)
}
