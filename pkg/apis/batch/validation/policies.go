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
	var allErrs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.PodFailurePolicy.Rules
	if len(rules) > maxPodFailurePolicyRules {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(rules), maxPodFailurePolicyRules))
	}
	containerNames := sets.New[string]()
	for i := range spec.Template.Spec.Containers {
		containerNames.Insert(spec.Template.Spec.Containers[i].Name)
	}
	for i := range spec.Template.Spec.InitContainers {
		containerNames.Insert(spec.Template.Spec.InitContainers[i].Name)
	}
	for i := range rules {
		allErrs = append(allErrs, validatePodFailurePolicyRule(spec, &rules[i], rulesPath.Index(i), containerNames)...)
	}
	return allErrs
}

func validatePodFailurePolicyRule(spec *batch.JobSpec, rule *batch.PodFailurePolicyRule, rulePath *field.Path, containerNames sets.Set[string]) field.ErrorList {
	var allErrs field.ErrorList
	actionPath := rulePath.Child("action")
	switch {
	case rule.Action == "":
		allErrs = append(allErrs, field.Required(actionPath, fmt.Sprintf("valid values: %q", supportedPodFailurePolicyActions)))
	case rule.Action == batch.PodFailurePolicyActionFailIndex:
		if spec.BackoffLimitPerIndex == nil {
			allErrs = append(allErrs, field.Invalid(actionPath, rule.Action, "requires the backoffLimitPerIndex to be set"))
		}
	case !slices.Contains(supportedPodFailurePolicyActions, rule.Action):
		allErrs = append(allErrs, field.NotSupported(actionPath, rule.Action, supportedPodFailurePolicyActions))
	}
	if rule.OnExitCodes != nil {
		allErrs = append(allErrs, validateOnExitCodes(rule.OnExitCodes, rulePath.Child("onExitCodes"), containerNames)...)
	}
	if len(rule.OnPodConditions) > 0 {
		allErrs = append(allErrs, validateOnPodConditions(rule.OnPodConditions, rulePath.Child("onPodConditions"))...)
	}
	if rule.OnExitCodes != nil && len(rule.OnPodConditions) > 0 {
		allErrs = append(allErrs, field.Invalid(rulePath, field.OmitValueType{}, "specifying both OnExitCodes and OnPodConditions is not supported"))
	}
	if rule.OnExitCodes == nil && len(rule.OnPodConditions) == 0 {
		allErrs = append(allErrs, field.Invalid(rulePath, field.OmitValueType{}, "specifying one of OnExitCodes and OnPodConditions is required"))
	}
	return allErrs
}

func validateOnPodConditions(patterns []batch.PodFailurePolicyOnPodConditionsPattern, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if len(patterns) > maxPodFailurePolicyOnPodConditionsPatterns {
		allErrs = append(allErrs, field.TooMany(fldPath, len(patterns), maxPodFailurePolicyOnPodConditionsPatterns))
	}
	for j, pattern := range patterns {
		patternPath := fldPath.Index(j)
		for _, msg := range utilvalidation.IsQualifiedName(string(pattern.Type)) {
			allErrs = append(allErrs, field.Invalid(patternPath.Child("type"), string(pattern.Type), msg))
		}
		statusPath := patternPath.Child("status")
		switch pattern.Status {
		case corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown:
		case "":
			allErrs = append(allErrs, field.Required(statusPath, fmt.Sprintf("valid values: %q", supportedPodFailurePolicyOnPodConditionsStatuses)))
		default:
			allErrs = append(allErrs, field.NotSupported(statusPath, pattern.Status, supportedPodFailurePolicyOnPodConditionsStatuses))
		}
	}
	return allErrs
}

func validateOnExitCodes(req *batch.PodFailurePolicyOnExitCodesRequirement, fldPath *field.Path, containerNames sets.Set[string]) field.ErrorList {
	var allErrs field.ErrorList
	operatorPath := fldPath.Child("operator")
	switch {
	case req.Operator == "":
		allErrs = append(allErrs, field.Required(operatorPath, fmt.Sprintf("valid values: %q", supportedPodFailurePolicyOnExitCodesOperators)))
	case !slices.Contains(supportedPodFailurePolicyOnExitCodesOperators, req.Operator):
		allErrs = append(allErrs, field.NotSupported(operatorPath, req.Operator, supportedPodFailurePolicyOnExitCodesOperators))
	}
	if req.ContainerName != nil && !containerNames.Has(*req.ContainerName) {
		allErrs = append(allErrs, field.Invalid(fldPath.Child("containerName"), *req.ContainerName, "must be one of the container or initContainer names in the pod template"))
	}
	valuesPath := fldPath.Child("values")
	if len(req.Values) == 0 {
		allErrs = append(allErrs, field.Invalid(valuesPath, req.Values, "at least one value is required"))
	} else if len(req.Values) > maxPodFailurePolicyOnExitCodesValues {
		allErrs = append(allErrs, field.TooMany(valuesPath, len(req.Values), maxPodFailurePolicyOnExitCodesValues))
	}
	ordered := true
	seen := make(map[int32]struct{}, len(req.Values))
	for j, value := range req.Values {
		valuePath := valuesPath.Index(j)
		if req.Operator == batch.PodFailurePolicyOnExitCodesOpIn && value == 0 {
			allErrs = append(allErrs, field.Invalid(valuePath, value, "must not be 0 for the In operator"))
		}
		if _, dup := seen[value]; dup {
			allErrs = append(allErrs, field.Duplicate(valuePath, value))
		} else {
			seen[value] = struct{}{}
		}
		if j > 0 && req.Values[j-1] > value {
			ordered = false
		}
	}
	if !ordered {
		allErrs = append(allErrs, field.Invalid(valuesPath, req.Values, "must be ordered"))
	}
	return allErrs
}

// validateSuccessPolicy runs only for Indexed Jobs, so completions is set
// unless the spec already failed the Indexed rules.
func validateSuccessPolicy(spec *batch.JobSpec, fldPath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	rulesPath := fldPath.Child("rules")
	rules := spec.SuccessPolicy.Rules
	if len(rules) == 0 {
		allErrs = append(allErrs, field.Required(rulesPath, "at least one rules must be specified when the successPolicy is specified"))
	}
	if len(rules) > maxSuccessPolicyRule {
		allErrs = append(allErrs, field.TooMany(rulesPath, len(rules), maxSuccessPolicyRule))
	}
	// Upstream dereferences completions here; without it (already reported as
	// Required) every index is out of range, as with completions 0.
	var completions int32
	if spec.Completions != nil {
		completions = *spec.Completions
	}
	for i := range rules {
		allErrs = append(allErrs, validateSuccessPolicyRule(&rules[i], completions, rulesPath.Index(i))...)
	}
	return allErrs
}

func validateSuccessPolicyRule(rule *batch.SuccessPolicyRule, completions int32, rulePath *field.Path) field.ErrorList {
	var allErrs field.ErrorList
	if rule.SucceededCount == nil && rule.SucceededIndexes == nil {
		allErrs = append(allErrs, field.Required(rulePath, "at least one of succeededCount or succeededIndexes must be specified"))
	}
	var totalIndexes int32
	if rule.SucceededIndexes != nil {
		indexesPath := rulePath.Child("succeededIndexes")
		if len(*rule.SucceededIndexes) > maxJobSuccessPolicySucceededIndexesLimit {
			allErrs = append(allErrs, field.TooLong(indexesPath, "", maxJobSuccessPolicySucceededIndexesLimit))
		}
		var err error
		if totalIndexes, err = validateIndexesFormat(*rule.SucceededIndexes, completions); err != nil {
			allErrs = append(allErrs, field.Invalid(indexesPath, *rule.SucceededIndexes, fmt.Sprintf("error parsing succeededIndexes: %s", err.Error())))
		}
	}
	if rule.SucceededCount != nil {
		countPath := rulePath.Child("succeededCount")
		allErrs = append(allErrs, validateNonnegative(int64(*rule.SucceededCount), countPath)...)
		if *rule.SucceededCount > completions {
			allErrs = append(allErrs, field.Invalid(countPath, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of specified completions)", completions)))
		}
		if rule.SucceededIndexes != nil && *rule.SucceededCount > totalIndexes {
			allErrs = append(allErrs, field.Invalid(countPath, *rule.SucceededCount, fmt.Sprintf("must be less than or equal to %d (the number of indexes in the specified succeededIndexes field)", totalIndexes)))
		}
	}
	return allErrs
}
