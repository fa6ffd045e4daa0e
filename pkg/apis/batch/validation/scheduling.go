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

	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/api/validate"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

// kube-apiserver 1.37 checks spec.scheduling in two layers, and so do we:
//
//   - rules its Job validation states in code, on every create and update
//     whatever the WorkloadWithJob gate says: gang.minCount within
//     parallelism, no `all` disruption with the basic policy, and, on update,
//     no switch between basic and gang;
//   - rules declared as tags on the k8s.io/api types, which its declarative
//     validation runs after the first layer and only for what an update
//     changed: the field is forbidden while the gate is off, it can be
//     neither added nor removed after creation, nothing in it but
//     gang.minCount changes, resourceClaims has at most 4 entries with
//     distinct names, and the building blocks' own rules. The building
//     blocks' rules are generated into k8s.io/api/scheduling/v1alpha3
//     itself, so we call them; the Job-level tags are written out below with
//     apimachinery's validate helpers, which give the same errors.

// maxSchedulingResourceClaims is the most resourceClaims a Job may share,
// the limit of the PodGroup they are copied into.
const maxSchedulingResourceClaims = 4

// validateGangMinCount refuses a gang minCount above the Job's parallelism
// (1 when unset).
func validateGangMinCount(spec *batch.JobSpec, fldPath *field.Path) field.ErrorList {
	s := spec.Scheduling
	if s == nil || s.SchedulingPolicy == nil || s.SchedulingPolicy.Gang == nil || s.SchedulingPolicy.Gang.MinCount == nil {
		return nil
	}
	minCount := *s.SchedulingPolicy.Gang.MinCount
	parallelism := ptr.Deref(spec.Parallelism, 1)
	if minCount <= parallelism {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath.Child("schedulingPolicy", "gang", "minCount"), minCount,
		fmt.Sprintf("must not be greater than parallelism (%d)", parallelism))}
}

// validateDisruptionModeForPolicy refuses the `all` disruption mode when
// the Job is scheduled with the basic policy: Pods placed one by one have
// nothing to be disrupted together with. The policy in force is basic
// unless gang alone is chosen (no policy, or an empty one, means basic);
// the mode in force is `all` only when `single` is not chosen too.
func validateDisruptionModeForPolicy(s *batch.JobSchedulingConfiguration, fldPath *field.Path) field.ErrorList {
	if s == nil || s.DisruptionMode == nil || s.DisruptionMode.Single != nil || s.DisruptionMode.All == nil {
		return nil
	}
	if p := s.SchedulingPolicy; p != nil && p.Basic == nil && p.Gang != nil {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath.Child("disruptionMode"), "",
		"the disruptionMode `all` is not supported with the Basic scheduling policy")}
}

// validateSchedulingPolicyVariantUpdate refuses an update that turns a basic
// policy into gang or back; adding or removing the policy is the tag
// layer's to refuse.
func validateSchedulingPolicyVariantUpdate(s, old *batch.JobSchedulingConfiguration, fldPath *field.Path) field.ErrorList {
	if s == nil || old == nil || s.SchedulingPolicy == nil || old.SchedulingPolicy == nil {
		return nil
	}
	if (s.SchedulingPolicy.Basic != nil) == (old.SchedulingPolicy.Basic != nil) {
		return nil
	}
	return field.ErrorList{field.Invalid(fldPath.Child("schedulingPolicy"), nil,
		"the basic/gang policy variant is immutable after creation; only schedulingPolicy.gang.minCount may be updated")}
}

// validateSchedulingTags runs the tag layer on spec.scheduling: on create
// when old is nil and isUpdate false, on update against the stored value.
// allowed is whether the WorkloadWithJob gate is on.
func validateSchedulingTags(s, old *batch.JobSchedulingConfiguration, isUpdate, allowed bool, fldPath *field.Path) field.ErrorList {
	op := operation.Operation{Type: operation.Create}
	if isUpdate {
		op.Type = operation.Update
		// Declarative validation looks only at what an update changes.
		if equality.Semantic.DeepEqual(s, old) {
			return nil
		}
	}
	ctx := context.Background()
	var errs field.ErrorList
	// Every check below runs; any of them failing (or the field being
	// unset) keeps the nested rules from running.
	stop := s == nil
	if !allowed {
		forbidden := validate.ForbiddenPointer(ctx, op, fldPath, s, old)
		errs = append(errs, forbidden...)
		stop = stop || len(forbidden) > 0
	}
	setOrCleared := validate.UpdatePointer(ctx, op, fldPath, s, old, validate.NoSet, validate.NoUnset)
	errs = append(errs, setOrCleared...)
	if stop || len(setOrCleared) > 0 {
		return errs
	}
	if old == nil {
		old = &batch.JobSchedulingConfiguration{}
	}
	errs = append(errs, validateSchedulingPolicyTags(ctx, op, fldPath.Child("schedulingPolicy"), s.SchedulingPolicy, old.SchedulingPolicy)...)
	errs = append(errs, validateImmutableBlock(ctx, op, fldPath.Child("schedulingConstraints"), s.SchedulingConstraints, old.SchedulingConstraints,
		schedulingv1alpha3.Validate_WorkloadPodGroupSchedulingConstraints)...)
	errs = append(errs, validateImmutableBlock(ctx, op, fldPath.Child("disruptionMode"), s.DisruptionMode, old.DisruptionMode,
		schedulingv1alpha3.Validate_WorkloadPodGroupDisruptionMode)...)
	errs = append(errs, validateResourceClaimsTags(ctx, op, fldPath.Child("resourceClaims"), s.ResourceClaims, old.ResourceClaims)...)
	return errs
}

// validateSchedulingPolicyTags: the policy can be neither added nor removed
// on update; the building block's own rules check what is set.
func validateSchedulingPolicyTags(ctx context.Context, op operation.Operation, fldPath *field.Path, p, old *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy) field.ErrorList {
	if op.Type == operation.Update && equality.Semantic.DeepEqual(p, old) {
		return nil
	}
	errs := validate.UpdatePointer(ctx, op, fldPath, p, old, validate.NoSet, validate.NoUnset)
	if p == nil || len(errs) > 0 {
		return errs
	}
	return schedulingv1alpha3.Validate_WorkloadPodGroupSchedulingPolicy(ctx, op, fldPath, p, old)
}

// validateImmutableBlock: an optional building block that no update may
// change in any way; the block's own rules check what is set on create.
func validateImmutableBlock[T any](ctx context.Context, op operation.Operation, fldPath *field.Path, block, old *T,
	rules func(context.Context, operation.Operation, *field.Path, *T, *T) field.ErrorList) field.ErrorList {
	if op.Type == operation.Update && equality.Semantic.DeepEqual(block, old) {
		return nil
	}
	errs := validate.Immutable(ctx, op, fldPath, block, old)
	if block == nil || len(errs) > 0 {
		return errs
	}
	return rules(ctx, op, fldPath, block, old)
}

// validateResourceClaimsTags: a list keyed by name, immutable, at most
// maxSchedulingResourceClaims entries, each checked by the building block's
// own rules.
func validateResourceClaimsTags(ctx context.Context, op operation.Operation, fldPath *field.Path, claims, old []schedulingv1alpha3.WorkloadPodGroupResourceClaim) field.ErrorList {
	if op.Type == operation.Update && equality.Semantic.DeepEqual(claims, old) {
		return nil
	}
	errs := validate.Immutable(ctx, op, fldPath, claims, old)
	errs = append(errs, validate.MaxItems(ctx, op, fldPath, claims, old, maxSchedulingResourceClaims)...)
	if len(claims) == 0 || len(errs) > 0 {
		return errs
	}
	sameName := func(a, b *schedulingv1alpha3.WorkloadPodGroupResourceClaim) bool { return a.Name == b.Name }
	errs = append(errs, validate.ValSliceUnique(ctx, op, fldPath, claims, old, sameName)...)
	errs = append(errs, validate.EachValSliceVal(ctx, op, fldPath, claims, old, sameName,
		validate.SemanticDeepEqual, schedulingv1alpha3.Validate_WorkloadPodGroupResourceClaim)...)
	return errs
}
