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
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

func validatePodFailurePolicy(spec *batch.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.PodFailurePolicy.Rules
	if len(rules) > maxPodFailurePolicyRules {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxPodFailurePolicyRules))
	}
	containerNames := sets.New[string]()
	for i := range spec.Template.Spec.Containers {
		containerNames.Insert(spec.Template.Spec.Containers[i].Name)
	}
	for i := range spec.Template.Spec.InitContainers {
		containerNames.Insert(spec.Template.Spec.InitContainers[i].Name)
	}
	for i := range rules {
		errs = append(errs, validatePodFailurePolicyRule(spec, &rules[i], rulesPath.Index(i), containerNames)...)
	}
	return errs
}

func validatePodFailurePolicyRule(spec *batch.JobSpec, rule *batch.PodFailurePolicyRule, rulePath *field.Path, containerNames sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	actionPath := rulePath.Child("action")
	switch {
	case rule.Action == "":
		errs = append(errs, field.Required(actionPath, fmt.Sprintf("valid values: %q", supportedPodFailurePolicyActions)))
	case rule.Action == batch.PodFailurePolicyActionFailIndex:
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Invalid(actionPath, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case !slices.Contains(supportedPodFailurePolicyActions, rule.Action):
		errs = append(errs, field.NotSupported(actionPath, rule.Action, supportedPodFailurePolicyActions))
	}
	if rule.OnExitCodes != nil {
		errs = append(errs, validateOnExitCodes(rule.OnExitCodes, rulePath.Child("onExitCodes"), containerNames)...)
	}
	if len(rule.OnPodConditions) > 0 {
		errs = append(errs, validateOnPodConditions(rule.OnPodConditions, rulePath.Child("onPodConditions"))...)
	}
	if rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0 {
		errs = append(errs, field.Invalid(rulePath, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	}
	if rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0 {
		errs = append(errs, field.Invalid(rulePath, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return errs
}

func validateOnPodConditions(patterns []batch.PodFailurePolicyOnPodConditionsPattern, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if len(patterns) > maxPodFailurePolicyOnPodConditionsPatterns {
		errs = append(errs, field.TooMany(fldPath, len(patterns), maxPodFailurePolicyOnPodConditionsPatterns))
	}
	for j, pattern := range patterns {
		patternPath := fldPath.Index(j)
		for _, msg := range utilvalidation.IsQualifiedName(string(pattern.Type)) {
			errs = append(errs, field.Invalid(patternPath.Child("type"), string(pattern.Type), msg))
		}
		statusPath := patternPath.Child("status")
		switch pattern.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		case "":
			errs = append(errs, field.Required(statusPath, fmt.Sprintf("valid values: %q", supportedPodFailurePolicyOnPodConditionsStatuses)))
		default:
			errs = append(errs, field.NotSupported(statusPath, pattern.Status, supportedPodFailurePolicyOnPodConditionsStatuses))
		}
	}
	return errs
}

func validateOnExitCodes(req *batch.PodFailurePolicyOnExitCodesRequirement, fldPath *field.Path, containerNames sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	operatorPath := fldPath.Child("operator")
	switch {
	case req.Operator == "":
		errs = append(errs, field.Required(operatorPath, fmt.Sprintf("valid values: %q", supportedPodFailurePolicyOnExitCodesOperators)))
	case !slices.Contains(supportedPodFailurePolicyOnExitCodesOperators, req.Operator):
		errs = append(errs, field.NotSupported(operatorPath, req.Operator, supportedPodFailurePolicyOnExitCodesOperators))
	}
	if req.ContainerName != nil && !containerNames.Has(*req.ContainerName) {
		errs = append(errs, field.Invalid(fldPath.Child("containerName"), *req.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	valuesPath := fldPath.Child("values")
	if len(req.Values) == 0 {
		errs = append(errs, field.Invalid(valuesPath, req.Values, "at least one value is required"))
	} else if len(req.Values) > maxPodFailurePolicyOnExitCodesValues {
		errs = append(errs, field.TooMany(valuesPath, len(req.Values), maxPodFailurePolicyOnExitCodesValues))
	}
	ordered := true
	seen := make(map[int32]struct{}, len(req.Values))
	for j, value := range req.Values {
		valuePath := valuesPath.Index(j)
		if req.Operator == batch.PodFailurePolicyOnExitCodesOpIn && value == 0 {
			errs = append(errs, field.Invalid(valuePath, value, "must not be 0 for the In operator"))
		}
		if _, dup := seen[value]; dup {
			errs = append(errs, field.Duplicate(valuePath, value))
		} else {
			seen[value] = struct{}{}
		}
		if j > 0 && req.Values[j-1] > value {
			ordered = false
		}
	}
	if !ordered {
		errs = append(errs, field.Invalid(valuesPath, req.Values, "must be ordered"))
	}
	return errs
}

// validateSuccessPolicy runs only for Indexed Jobs, so completions is set
// unless the spec already failed the Indexed rules.
func validateSuccessPolicy(spec *batch.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.SuccessPolicy.Rules
	if len(rules) == 0 {
		errs = append(errs, field.Required(rulesPath, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRule {
		errs = append(errs, field.TooMany(rulesPath, len(rules), maxSuccessPolicyRule))
	}
	// Upstream dereferences completions here; without it (already reported as
	// Required) every index is out of range, as with completions 0.
	var completions int32
	if spec.Completions != nil {
		completions = *spec.Completions
	}
	for i := range rules {
		errs = append(errs, validateSuccessPolicyRule(&rules[i], completions, rulesPath.Index(i))...)
	}
	return errs
}

func validateSuccessPolicyRule(rule *batch.SuccessPolicyRule, completions int32, rulePath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
		errs = append(errs, field.Required(rulePath, "at least one of succeededCount or succeededIndexes must be specified"))
	}
	var totalIndexes int32
	if rule.SucceededIndexes != nil {
		indexesPath := rulePath.Child("succeededIndexes")
		if len(*rule.SucceededIndexes) > maxJobSuccessPolicySucceededIndexesLimit {
			errs = append(errs, field.TooLong(indexesPath, "", maxJobSuccessPolicySucceededIndexesLimit))
		}
		var err error
		if totalIndexes, err = validateIndexesFormat(*rule.SucceededIndexes, completions); err != nil {
			errs = append(errs, field.Invalid(indexesPath, *rule.SucceededIndexes, fmt.Sprintf("error parsing succeededIndexes: %s", err.Error())))
		}
	}
	if rule.SucceededCount != nil {
		countPath := rulePath.Child("succeededCount")
		errs = append(errs, validateNonnegative(int64(*rule.SucceededCount), countPath)...)
		if *rule.SucceededCount > completions {
			errs = append(errs, field.Invalid(countPath, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
		}
		if rule.SucceededIndexes != nil && *rule.SucceededCount > totalIndexes {
			errs = append(errs, field.Invalid(countPath, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", totalIndexes)))
		}
	}
	return errs
}
