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
	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/core"
	corev1conversion "k8s.io/kubernetes/pkg/apis/core/v1"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
)

// The pod template is validated by kube-apiserver's own core validation
// (k8s.io/kubernetes/pkg/apis/core/validation), on kube's internal core type,
// exactly as upstream validates spec.template of a batch/v1 Job. Our types
// keep the template as the external core/v1 type in every version, so it is
// converted first.

// InternalPodTemplate converts a Job's pod template to kube's internal core
// type, which upstream's core validation, warnings, dropped-field and
// validation-option functions take.
//
// The result may share memory with template (the generated conversions alias
// fields whose layout is the same in both types): it is for reading. Convert
// a deep copy to get an object that may be changed.
func InternalPodTemplate(template *corev1.PodTemplateSpec) (*core.PodTemplateSpec, error) {
	out := &core.PodTemplateSpec{}
	if err := corev1conversion.Convert_v1_PodTemplateSpec_To_core_PodTemplateSpec(template, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}

// internalPodTemplate is InternalPodTemplate for validation: a template that
// does not convert is reported as an internal error at fldPath.
func internalPodTemplate(template *corev1.PodTemplateSpec, fldPath *field.Path) (*core.PodTemplateSpec, field.ErrorList) {
	out, err := InternalPodTemplate(template)
	if err != nil {
		return nil, field.ErrorList{field.InternalError(fldPath, err)}
	}
	return out, nil
}

// validatePodTemplateSpec validates the pod template of a Job with core's
// ValidatePodTemplateSpec. fldPath is the template's path (spec.template).
func validatePodTemplateSpec(template *core.PodTemplateSpec, fldPath *field.Path, opts corevalidation.PodValidationOptions) field.ErrorList {
	return corevalidation.ValidatePodTemplateSpec(template, fldPath, opts)
}

// validatePodResourceUpdatesOnly allows a suspended Job's template to change
// only the resources of its containers and init containers (matched by
// position and name).
func validatePodResourceUpdatesOnly(spec, oldSpec *core.PodSpec, fldPath *field.Path) field.ErrorList {
	merged := oldSpec.DeepCopy()
	if len(spec.Containers) == len(merged.Containers) {
		for i := range spec.Containers {
			if merged.Containers[i].Name == spec.Containers[i].Name {
				merged.Containers[i].Resources = spec.Containers[i].Resources
			}
		}
	}
	if len(spec.InitContainers) == len(merged.InitContainers) {
		for i := range spec.InitContainers {
			if merged.InitContainers[i].Name == spec.InitContainers[i].Name {
				merged.InitContainers[i].Resources = spec.InitContainers[i].Resources
			}
		}
	}
	return apimachineryvalidation.ValidateImmutableField(*spec, *merged, fldPath)
}

// ExternalPodTemplate converts a template back from kube's internal core type
// to the core/v1 type our Jobs hold. Like InternalPodTemplate, the result may
// share memory with template.
func ExternalPodTemplate(template *core.PodTemplateSpec) (*corev1.PodTemplateSpec, error) {
	out := &corev1.PodTemplateSpec{}
	if err := corev1conversion.Convert_core_PodTemplateSpec_To_v1_PodTemplateSpec(template, out, nil); err != nil {
		return nil, err
	}
	return out, nil
}
