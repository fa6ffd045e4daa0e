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

// Package validation holds the validation of batch.jobs.dev Jobs: the spec on
// create and update, the status subresource, and the warnings. It reproduces
// the rules, field paths, error types and messages of kube-apiserver 1.37 for
// batch/v1 Jobs. The functions are pure: the registry strategy decides the
// options from the old and new object and calls them.
package validation

import (
	"fmt"
	"math"

	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/labels"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

const (
	// maxParallelismForIndexedJob caps parallelism of Indexed Jobs, which
	// bounds the length of status.completedIndexes.
	maxParallelismForIndexedJob = 100_000
	// maxFailedIndexesForIndexedJob caps maxFailedIndexes, which bounds the
	// length of status.failedIndexes.
	maxFailedIndexesForIndexedJob = 100_000

	completionsSoftLimit                    = 100_000
	parallelismLimitForHighCompletions      = 10_000
	maxFailedIndexesLimitForHighCompletions = 10_000

	maxPodFailurePolicyRules                   = 20
	maxPodFailurePolicyOnExitCodesValues       = 255
	maxPodFailurePolicyOnPodConditionsPatterns = 20

	maxManagedByLength = 63

	maxJobSuccessPolicySucceededIndexesLimit = 64 * 1024
	maxSuccessPolicyRule                     = 20
)

var (
	// The sorted lists below are what upstream prints in Required details and
	// NotSupported errors (sets.List order).
	supportedPodFailurePolicyActions = []batch.PodFailurePolicyAction{
		batch.PodFailurePolicyActionCount,
		batch.PodFailurePolicyActionFailIndex,
		batch.PodFailurePolicyActionFailJob,
		batch.PodFailurePolicyActionIgnore,
	}
	supportedPodFailurePolicyOnExitCodesOperators = []batch.PodFailurePolicyOnExitCodesOperator{
		batch.PodFailurePolicyOnExitCodesOpIn,
		batch.PodFailurePolicyOnExitCodesOpNotIn,
	}
	supportedPodFailurePolicyOnPodConditionsStatuses = []string{"False", "True", "Unknown"}
	supportedPodReplacementPolicies                  = []batch.PodReplacementPolicy{batch.Failed, batch.TerminatingOrFailed}
	supportedRestartPolicies                         = []string{"OnFailure", "Never"}
)

// ValidateGeneratedSelector checks, unless manualSelector is true, that the
// template carries the labels the generated selector relies on, prefixed and
// legacy, and that the selector is the generated one. ValidateJob runs it.
func ValidateGeneratedSelector(job *batch.Job) field.ErrorList {
	return validateGeneratedSelector(job, true)
}

// validateGeneratedSelector is ValidateGeneratedSelector; requirePrefixed
// adds the batch.jobs.dev/ labels to the legacy unprefixed ones.
func validateGeneratedSelector(job *batch.Job, requirePrefixed bool) field.ErrorList {
	var errs field.ErrorList
	if ptr.Deref(job.Spec.ManualSelector, false) || job.Spec.Selector == nil {
		// A missing selector is reported by the spec validation.
		return errs
	}
	if job.UID == "" {
		// Otherwise the generated selector would be "controller-uid=".
		errs = append(errs, field.Required(field.NewPath("metadata", "uid"), ""))
	}
	metaPath := field.NewPath("spec", "template", "metadata")
	errs = append(errs, validateHasLabel(job.Spec.Template.Labels, metaPath, batch.LegacyControllerUIDLabel, string(job.UID))...)
	errs = append(errs, validateHasLabel(job.Spec.Template.Labels, metaPath, batch.LegacyJobNameLabel, job.Name)...)
	expected := labels.Set{
		batch.LegacyControllerUIDLabel: string(job.UID),
		batch.LegacyJobNameLabel:       job.Name,
	}
	if requirePrefixed {
		errs = append(errs, validateHasLabel(job.Spec.Template.Labels, metaPath, batch.ControllerUIDLabel, string(job.UID))...)
		errs = append(errs, validateHasLabel(job.Spec.Template.Labels, metaPath, batch.JobNameLabel, job.Name)...)
		expected[batch.ControllerUIDLabel] = string(job.UID)
		expected[batch.JobNameLabel] = job.Name
	}
	if selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector); err == nil && !selector.Matches(expected) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "selector"), job.Spec.Selector, "`selector` not auto-generated"))
	}
	return errs
}

func validateHasLabel(lbls map[string]string, metaPath *field.Path, key, expected string) field.ErrorList {
	path := metaPath.Child("labels").Key(key)
	actual, found := lbls[key]
	if !found {
		return field.ErrorList{field.Required(path, fmt.Sprintf("must be '%s'", expected))}
	}
	if actual != expected {
		return field.ErrorList{field.Invalid(path, lbls, fmt.Sprintf("must be '%s'", expected))}
	}
	return nil
}

// ValidateJob validates a Job on create. The selector must already have been
// generated (unless manualSelector is true).
func ValidateJob(job *batch.Job, opts JobValidationOptions) field.ErrorList {
	template, convErrs := internalPodTemplate(&job.Spec.Template, field.NewPath("spec", "template"))
	if convErrs != nil {
		return convErrs
	}
	errs := corevalidation.ValidateObjectMeta(&job.ObjectMeta, true, apimachineryvalidation.NameIsDNSSubdomain, field.NewPath("metadata"))
	errs = append(errs, validateGeneratedSelector(job, opts.RequirePrefixedLabels)...)
	errs = append(errs, validateJobSpec(&job.Spec, template, field.NewPath("spec"), opts.PodValidationOptions)...)
	errs = append(errs, validateNameAllowsCompletions(job)...)
	errs = append(errs, validateSchedulingTags(job.Spec.Scheduling, nil, false, opts.AllowScheduling, field.NewPath("spec", "scheduling"))...)
	return errs
}

// validateObjectMetaUpdate is core's, which adds the finalizer name check to
// apimachinery's.
func validateObjectMetaUpdate(meta, oldMeta *metav1.ObjectMeta, fldPath *field.Path) field.ErrorList {
	return corevalidation.ValidateObjectMetaUpdate(meta, oldMeta, fldPath)
}

// validateNameAllowsCompletions checks that the hostname of the pod with the
// highest index, "<name>-<completions-1>", is a DNS label; otherwise the
// controller could never create that pod.
func validateNameAllowsCompletions(job *batch.Job) field.ErrorList {
	if !isIndexed(&job.Spec) || job.Spec.Completions == nil || *job.Spec.Completions <= 0 {
		return nil
	}
	hostname := fmt.Sprintf("%s-%d", job.Name, *job.Spec.Completions-1)
	if msgs := utilvalidation.IsDNS1123Label(hostname); len(msgs) > 0 {
		return field.ErrorList{field.Invalid(field.NewPath("metadata", "name"), job.Name, fmt.Sprintf("will not able to create pod with invalid DNS label: %s", hostname))}
	}
	return nil
}

func isIndexed(spec *batch.JobSpec) bool {
	return ptr.Deref(spec.CompletionMode, batch.NonIndexedCompletion) == batch.IndexedCompletion
}

// validateJobSpec validates the spec of a Job, including its selector.
// template is spec.template converted to kube's internal core type.
func validateJobSpec(spec *batch.JobSpec, template *core.PodTemplateSpec, fldPath *field.Path, opts corevalidation.PodValidationOptions) field.ErrorList {
	errs := validateJobSpecFields(spec, template, fldPath, opts)
	if spec.Selector == nil {
		errs = append(errs, field.Required(fldPath.Child("selector"), ""))
	} else {
		selectorOpts := metav1validation.LabelSelectorValidationOptions{AllowInvalidLabelValueInSelector: opts.AllowInvalidLabelValueInSelector}
		errs = append(errs, metav1validation.ValidateLabelSelector(spec.Selector, selectorOpts, fldPath.Child("selector"))...)
	}
	// Whether generated or manual, the selector must match the pods the Job creates.
	if selector, err := metav1.LabelSelectorAsSelector(spec.Selector); err == nil && !selector.Matches(labels.Set(spec.Template.Labels)) {
		errs = append(errs, field.Invalid(fldPath.Child("template", "metadata", "labels"), spec.Template.Labels, "`selector` does not match template `labels`"))
	}
	return errs
}

func validateNonnegative(value int64, fldPath *field.Path) field.ErrorList {
	return apimachineryvalidation.ValidateNonnegativeField(value, fldPath)
}

func validateJobSpecFields(spec *batch.JobSpec, template *core.PodTemplateSpec, fldPath *field.Path, opts corevalidation.PodValidationOptions) field.ErrorList {
	var errs field.ErrorList
	if spec.Parallelism != nil {
		errs = append(errs, validateNonnegative(int64(*spec.Parallelism), fldPath.Child("parallelism"))...)
	}
	if spec.Completions != nil {
		errs = append(errs, validateNonnegative(int64(*spec.Completions), fldPath.Child("completions"))...)
	}
	if spec.ActiveDeadlineSeconds != nil {
		errs = append(errs, validateNonnegative(*spec.ActiveDeadlineSeconds, fldPath.Child("activeDeadlineSeconds"))...)
	}
	if spec.BackoffLimit != nil {
		errs = append(errs, validateNonnegative(int64(*spec.BackoffLimit), fldPath.Child("backoffLimit"))...)
	}
	if spec.TTLSecondsAfterFinished != nil {
		errs = append(errs, validateNonnegative(int64(*spec.TTLSecondsAfterFinished), fldPath.Child("ttlSecondsAfterFinished"))...)
	}
	if spec.BackoffLimitPerIndex != nil {
		errs = append(errs, validateNonnegative(int64(*spec.BackoffLimitPerIndex), fldPath.Child("backoffLimitPerIndex"))...)
	}
	if spec.MaxFailedIndexes != nil {
		errs = append(errs, validateNonnegative(int64(*spec.MaxFailedIndexes), fldPath.Child("maxFailedIndexes"))...)
		if spec.BackoffLimitPerIndex == nil {
			errs = append(errs, field.Required(fldPath.Child("backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
		}
	}
	if spec.ManagedBy != nil {
		errs = append(errs, utilvalidation.IsDomainPrefixedPath(fldPath.Child("managedBy"), *spec.ManagedBy)...)
		if len(*spec.ManagedBy) > maxManagedByLength {
			errs = append(errs, field.TooLong(fldPath.Child("managedBy"), "", maxManagedByLength))
		}
	}
	errs = append(errs, validateCompletionMode(spec, fldPath)...)
	if spec.PodFailurePolicy != nil {
		errs = append(errs, validatePodFailurePolicy(spec, fldPath.Child("podFailurePolicy"))...)
	}
	if spec.SuccessPolicy != nil {
		if !isIndexed(spec) {
			errs = append(errs, field.Invalid(fldPath.Child("successPolicy"), *spec.SuccessPolicy, "requires indexed completion mode"))
		} else {
			errs = append(errs, validateSuccessPolicy(spec, fldPath.Child("successPolicy"))...)
		}
	}
	errs = append(errs, validatePodReplacementPolicy(spec, fldPath.Child("podReplacementPolicy"))...)
	errs = append(errs, validateGangMinCount(spec, fldPath.Child("scheduling"))...)
	errs = append(errs, validateDisruptionModeForPolicy(spec.Scheduling, fldPath.Child("scheduling"))...)
	errs = append(errs, validatePodTemplateSpec(template, fldPath.Child("template"), opts)...)
	errs = append(errs, validateJobRestartPolicy(spec, fldPath.Child("template", "spec", "restartPolicy"))...)
	return errs
}

func validateCompletionMode(spec *batch.JobSpec, fldPath *field.Path) field.ErrorList {
	var errs field.ErrorList
	if spec.CompletionMode != nil {
		mode := *spec.CompletionMode
		if mode != batch.NonIndexedCompletion && mode != batch.IndexedCompletion {
			errs = append(errs, field.NotSupported(fldPath.Child("completionMode"), mode, []batch.CompletionMode{batch.NonIndexedCompletion, batch.IndexedCompletion}))
		}
		if mode == batch.IndexedCompletion {
			errs = append(errs, validateIndexedLimits(spec, fldPath)...)
		}
	}
	if !isIndexed(spec) {
		if spec.BackoffLimitPerIndex != nil {
			errs = append(errs, field.Invalid(fldPath.Child("backoffLimitPerIndex"), *spec.BackoffLimitPerIndex, "requires indexed completion mode"))
		}
		if spec.MaxFailedIndexes != nil {
			errs = append(errs, field.Invalid(fldPath.Child("maxFailedIndexes"), *spec.MaxFailedIndexes, "requires indexed completion mode"))
		}
	}
	return errs
}

// indexedBound is one limit on a count of an Indexed Job's spec. It applies
// only when the condition holds; an unset count then breaks it only if
// unsetDetail is given, and a set count breaks it by exceeding max.
type indexedBound struct {
	field       string
	count       *int32
	condition   bool
	unsetDetail string
	max         int32
	overDetail  string
}

// validateIndexedLimits enforces the bounds that keep the status index lists
// of an Indexed Job small. The bounds are listed in the order kube-apiserver
// reports their errors.
func validateIndexedLimits(spec *batch.JobSpec, fldPath *field.Path) field.ErrorList {
	mode := batch.IndexedCompletion
	// With many completions and a per-index backoff limit, the failed index
	// list could grow without bound, so maxFailedIndexes and parallelism are
	// held lower.
	manyPerIndex := spec.BackoffLimitPerIndex != nil && ptr.Deref(spec.Completions, 0) > completionsSoftLimit
	withManyPerIndex := fmt.Sprintf("when completions are above %d and used with backoff limit per index", completionsSoftLimit)
	bounds := []indexedBound{
		{field: "completions", count: spec.Completions, condition: true,
			unsetDetail: fmt.Sprintf("when completion mode is %s", mode), max: math.MaxInt32},
		{field: "parallelism", count: spec.Parallelism, condition: true,
			max: maxParallelismForIndexedJob, overDetail: fmt.Sprintf("must be less than or equal to %d when completion mode is %s", maxParallelismForIndexedJob, mode)},
		{field: "maxFailedIndexes", count: spec.MaxFailedIndexes, condition: spec.Completions != nil,
			max: ptr.Deref(spec.Completions, 0), overDetail: "must be less than or equal to completions"},
		{field: "maxFailedIndexes", count: spec.MaxFailedIndexes, condition: true,
			max: maxFailedIndexesForIndexedJob, overDetail: fmt.Sprintf("must be less than or equal to %d", maxFailedIndexesForIndexedJob)},
		{field: "maxFailedIndexes", count: spec.MaxFailedIndexes, condition: manyPerIndex,
			unsetDetail: fmt.Sprintf("must be specified when completions is above %d", completionsSoftLimit), max: math.MaxInt32},
		{field: "parallelism", count: spec.Parallelism, condition: manyPerIndex,
			max: parallelismLimitForHighCompletions, overDetail: fmt.Sprintf("must be less than or equal to %d %s", parallelismLimitForHighCompletions, withManyPerIndex)},
		{field: "maxFailedIndexes", count: spec.MaxFailedIndexes, condition: manyPerIndex,
			max: maxFailedIndexesLimitForHighCompletions, overDetail: fmt.Sprintf("must be less than or equal to %d %s", maxFailedIndexesLimitForHighCompletions, withManyPerIndex)},
	}
	var errs field.ErrorList
	for _, b := range bounds {
		switch {
		case !b.condition:
		case b.count == nil && b.unsetDetail != "":
			errs = append(errs, field.Required(fldPath.Child(b.field), b.unsetDetail))
		case b.count != nil && *b.count > b.max:
			errs = append(errs, field.Invalid(fldPath.Child(b.field), *b.count, b.overDetail))
		}
	}
	return errs
}

// validateJobRestartPolicy applies the Job-specific restart policy rule on top
// of the pod template's own. Defaulting turns an unset policy into Always, so
// both count as "not chosen" and are reported as Required.
func validateJobRestartPolicy(spec *batch.JobSpec, fldPath *field.Path) field.ErrorList {
	policy := string(spec.Template.Spec.RestartPolicy)
	switch {
	case policy == "Always" || policy == "":
		return field.ErrorList{field.Required(fldPath, fmt.Sprintf("valid values: %q, %q", "OnFailure", "Never"))}
	case policy != "OnFailure" && policy != "Never":
		return field.ErrorList{field.NotSupported(fldPath, policy, supportedRestartPolicies)}
	case spec.PodFailurePolicy != nil && policy != "Never":
		return field.ErrorList{field.Invalid(fldPath, policy, fmt.Sprintf("only %q is supported when podFailurePolicy is specified", "Never"))}
	}
	return nil
}

func validatePodReplacementPolicy(spec *batch.JobSpec, fldPath *field.Path) field.ErrorList {
	if spec.PodReplacementPolicy == nil {
		return nil
	}
	policy := *spec.PodReplacementPolicy
	if spec.PodFailurePolicy != nil {
		if policy != batch.Failed {
			return field.ErrorList{field.NotSupported(fldPath, policy, []batch.PodReplacementPolicy{batch.Failed})}
		}
		return nil
	}
	if policy != batch.Failed && policy != batch.TerminatingOrFailed {
		return field.ErrorList{field.NotSupported(fldPath, policy, supportedPodReplacementPolicies)}
	}
	return nil
}

// ValidateJobUpdate validates an update of a Job's metadata and spec.
func ValidateJobUpdate(job, oldJob *batch.Job, opts JobValidationOptions) field.ErrorList {
	templatePath := field.NewPath("spec", "template")
	template, convErrs := internalPodTemplate(&job.Spec.Template, templatePath)
	if convErrs != nil {
		return convErrs
	}
	oldTemplate, convErrs := internalPodTemplate(&oldJob.Spec.Template, templatePath)
	if convErrs != nil {
		return convErrs
	}
	errs := validateObjectMetaUpdate(&job.ObjectMeta, &oldJob.ObjectMeta, field.NewPath("metadata"))
	errs = append(errs, validateJobSpecUpdate(&job.Spec, &oldJob.Spec, template, oldTemplate, field.NewPath("spec"), opts)...)
	errs = append(errs, validateNameAllowsCompletions(job)...)
	errs = append(errs, validateSchedulingTags(job.Spec.Scheduling, oldJob.Spec.Scheduling, true, opts.AllowScheduling, field.NewPath("spec", "scheduling"))...)
	return errs
}

// validateJobSpecUpdate validates an update of a Job spec; template and
// oldTemplate are the specs' templates converted to kube's internal core type.
func validateJobSpecUpdate(spec, oldSpec *batch.JobSpec, template, oldTemplate *core.PodTemplateSpec, fldPath *field.Path, opts JobValidationOptions) field.ErrorList {
	errs := validateJobSpec(spec, template, fldPath, opts.PodValidationOptions)
	errs = append(errs, validateCompletionsUpdate(spec, oldSpec, fldPath.Child("completions"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.Selector, oldSpec.Selector, fldPath.Child("selector"))...)
	errs = append(errs, validatePodTemplateUpdate(template, oldTemplate, oldSpec, fldPath, opts)...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.CompletionMode, oldSpec.CompletionMode, fldPath.Child("completionMode"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.PodFailurePolicy, oldSpec.PodFailurePolicy, fldPath.Child("podFailurePolicy"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.BackoffLimitPerIndex, oldSpec.BackoffLimitPerIndex, fldPath.Child("backoffLimitPerIndex"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.ManagedBy, oldSpec.ManagedBy, fldPath.Child("managedBy"))...)
	errs = append(errs, apimachineryvalidation.ValidateImmutableField(spec.SuccessPolicy, oldSpec.SuccessPolicy, fldPath.Child("successPolicy"))...)
	errs = append(errs, validateSchedulingPolicyVariantUpdate(spec.Scheduling, oldSpec.Scheduling, fldPath.Child("scheduling"))...)
	return errs
}

// validateCompletionsUpdate keeps completions immutable, except that an
// Indexed Job may be scaled when completions and parallelism move together.
func validateCompletionsUpdate(spec, oldSpec *batch.JobSpec, fldPath *field.Path) field.ErrorList {
	if !isIndexed(spec) {
		return apimachineryvalidation.ValidateImmutableField(spec.Completions, oldSpec.Completions, fldPath)
	}
	// A nil completions on an Indexed Job is reported by the spec validation.
	if ptr.Equal(spec.Completions, oldSpec.Completions) || spec.Completions == nil {
		return nil
	}
	if !ptr.Equal(spec.Completions, spec.Parallelism) {
		return field.ErrorList{field.Invalid(fldPath, spec.Completions, fmt.Sprintf("can only be modified in tandem with %s", fldPath.Root().Child("parallelism").String()))}
	}
	return nil
}

// validatePodTemplateUpdate keeps the template immutable, with the upstream
// exceptions for suspended Jobs: scheduling directives (with labels and
// annotations) and container resources. It compares the internal forms, as
// upstream does, so that fields the external form carries twice (such as
// serviceAccount and serviceAccountName) compare as kube-apiserver sees them.
func validatePodTemplateUpdate(template, oldTemplate *core.PodTemplateSpec, oldSpec *batch.JobSpec, fldPath *field.Path, opts JobValidationOptions) field.ErrorList {
	if opts.AllowMutableSchedulingDirectives {
		// Copy the mutable fields onto a copy of the old template so that the
		// comparison below ignores them.
		oldTemplate = oldTemplate.DeepCopy()
		switch {
		case template.Spec.Affinity == nil && oldTemplate.Spec.Affinity != nil:
			// Clearing affinity is allowed when it held only node affinity.
			oldTemplate.Spec.Affinity.NodeAffinity = nil
			if a := oldTemplate.Spec.Affinity; a.PodAffinity == nil && a.PodAntiAffinity == nil {
				oldTemplate.Spec.Affinity = nil
			}
		case template.Spec.Affinity != nil && oldTemplate.Spec.Affinity == nil:
			oldTemplate.Spec.Affinity = &core.Affinity{NodeAffinity: template.Spec.Affinity.NodeAffinity}
		case template.Spec.Affinity != nil && oldTemplate.Spec.Affinity != nil:
			oldTemplate.Spec.Affinity.NodeAffinity = template.Spec.Affinity.NodeAffinity
		}
		oldTemplate.Spec.NodeSelector = template.Spec.NodeSelector
		oldTemplate.Spec.Tolerations = template.Spec.Tolerations
		oldTemplate.Annotations = template.Annotations
		oldTemplate.Labels = template.Labels
		oldTemplate.Spec.SchedulingGates = template.Spec.SchedulingGates
	}
	if ptr.Deref(oldSpec.Suspend, false) && opts.AllowMutablePodResources {
		return validatePodResourceUpdatesOnly(&template.Spec, &oldTemplate.Spec, fldPath.Child("template", "spec"))
	}
	return apimachineryvalidation.ValidateImmutableField(template, oldTemplate, fldPath.Child("template"))
}
