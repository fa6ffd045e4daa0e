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

// Package job holds the registry of the Job resource: the create/update
// strategy, the status strategy, the etcd-backed storage and the table output.
package job

import (
	"context"
	"fmt"
	"strconv"

	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/names"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/validation"
)

// Strategy implements the create, update and delete behaviour of Jobs (the
// main resource; status writes are ignored there).
type Strategy struct {
	runtime.ObjectTyper
	names.NameGenerator
}

// NewStrategy returns the Job strategy for a scheme that has the batch.jobs.dev types.
func NewStrategy(typer runtime.ObjectTyper) Strategy {
	return Strategy{ObjectTyper: typer, NameGenerator: names.SimpleNameGenerator}
}

var _ rest.RESTCreateStrategy = Strategy{}
var _ rest.RESTUpdateStrategy = Strategy{}
var _ rest.RESTDeleteStrategy = Strategy{}
var _ rest.GarbageCollectionDeleteStrategy = Strategy{}
var _ rest.ResetFieldsStrategy = Strategy{}

// resetFields lists a path per served version of our own group.
func resetFields(path string) map[fieldpath.APIVersion]*fieldpath.Set {
	return map[fieldpath.APIVersion]*fieldpath.Set{
		fieldpath.APIVersion(batch.GroupName + "/v1"):      fieldpath.NewSet(fieldpath.MakePathOrDie(path)),
		fieldpath.APIVersion(batch.GroupName + "/v1beta1"): fieldpath.NewSet(fieldpath.MakePathOrDie(path)),
	}
}

// NamespaceScoped returns true: Jobs live in namespaces.
func (Strategy) NamespaceScoped() bool { return true }

// GetResetFields returns the fields the main resource never writes: status.
func (Strategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields("status")
}

// DefaultGarbageCollectionPolicy deletes a Job's pods with it. Upstream keeps
// OrphanDependents for batch/v1 only for backwards compatibility; a new group
// has no such clients (see docs/deviations.md).
func (Strategy) DefaultGarbageCollectionPolicy(ctx context.Context) rest.GarbageCollectionPolicy {
	return rest.DeleteDependents
}

// PrepareForCreate clears the status, sets the first generation and drops
// spec.scheduling and the template fields whose feature gates are off, as
// kube-apiserver does;
// a MultiKueue copy of another cluster's Job loses that Job's generated
// selector (forgetCopiedSelector).
func (Strategy) PrepareForCreate(ctx context.Context, obj runtime.Object) {
	job := obj.(*batch.Job)
	job.Status = batch.JobStatus{}
	job.Generation = 1
	dropDisabledScheduling(&job.Spec, nil)
	dropDisabledTemplateFields(&job.Spec.Template, nil)
	forgetCopiedSelector(job)
}

// PrepareForUpdate keeps the stored status, drops spec.scheduling and the
// template fields whose feature gates are off (unless the stored Job uses
// them) and bumps the generation when the spec changes.
func (Strategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	newJob := obj.(*batch.Job)
	oldJob := old.(*batch.Job)
	newJob.Status = oldJob.Status
	dropDisabledScheduling(&newJob.Spec, &oldJob.Spec)
	dropDisabledTemplateFields(&newJob.Spec.Template, &oldJob.Spec.Template)
	if !apiequality.Semantic.DeepEqual(newJob.Spec, oldJob.Spec) {
		newJob.Generation = oldJob.Generation + 1
	}
}

// Validate generates the selector (the UID is known only now) and validates a new Job.
func (Strategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	job := obj.(*batch.Job)
	if job.Spec.ManualSelector == nil || !*job.Spec.ManualSelector {
		generateSelector(job)
	}
	return validation.ValidateJob(job, jobValidationOptions(job, nil))
}

// WarningsOnCreate returns the warnings kube-apiserver gives for a new Job.
func (Strategy) WarningsOnCreate(ctx context.Context, obj runtime.Object) []string {
	return validation.WarningsForJob(ctx, obj.(*batch.Job), nil)
}

// Canonicalize does nothing: a Job has no canonical form beyond its defaults.
func (Strategy) Canonicalize(obj runtime.Object) {}

// AllowCreateOnUpdate is false: PUT never creates a Job.
func (Strategy) AllowCreateOnUpdate(ctx context.Context) bool { return false }

// AllowUnconditionalUpdate allows updates without a resourceVersion, as upstream.
func (Strategy) AllowUnconditionalUpdate(ctx context.Context) bool { return true }

// ValidateUpdate validates a spec update.
func (Strategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	job, oldJob := obj.(*batch.Job), old.(*batch.Job)
	return validation.ValidateJobUpdate(job, oldJob, jobValidationOptions(job, oldJob))
}

// WarningsOnUpdate returns warnings only when the spec changes, as upstream.
func (Strategy) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	job, oldJob := obj.(*batch.Job), old.(*batch.Job)
	if job.Generation == oldJob.Generation {
		return nil
	}
	return validation.WarningsForJob(ctx, job, oldJob)
}

// generateSelector adds the job-name and controller-uid labels to the
// template (prefixed and legacy, leaving values the user set so that
// validation can reject a conflict) and selects the prefixed controller-uid.
func generateSelector(job *batch.Job) {
	if job.Spec.Template.Labels == nil {
		job.Spec.Template.Labels = map[string]string{}
	}
	generated := map[string]string{
		batch.LegacyJobNameLabel:       job.Name,
		batch.JobNameLabel:             job.Name,
		batch.LegacyControllerUIDLabel: string(job.UID),
		batch.ControllerUIDLabel:       string(job.UID),
	}
	for k, v := range generated {
		if _, found := job.Spec.Template.Labels[k]; !found {
			job.Spec.Template.Labels[k] = v
		}
	}
	if job.Spec.Selector == nil {
		job.Spec.Selector = &metav1.LabelSelector{}
	}
	if job.Spec.Selector.MatchLabels == nil {
		job.Spec.Selector.MatchLabels = map[string]string{}
	}
	if _, found := job.Spec.Selector.MatchLabels[batch.ControllerUIDLabel]; !found {
		job.Spec.Selector.MatchLabels[batch.ControllerUIDLabel] = string(job.UID)
	}
}

// StatusStrategy implements the status subresource: it keeps the stored spec
// and holds status writes to the status rules.
type StatusStrategy struct {
	Strategy
}

// NewStatusStrategy returns the strategy of the status subresource.
func NewStatusStrategy(s Strategy) StatusStrategy {
	return StatusStrategy{Strategy: s}
}

// GetResetFields returns the fields a status write never changes: spec.
func (StatusStrategy) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return resetFields("spec")
}

// PrepareForUpdate keeps the stored spec.
func (StatusStrategy) PrepareForUpdate(ctx context.Context, obj, old runtime.Object) {
	obj.(*batch.Job).Spec = old.(*batch.Job).Spec
}

// ValidateUpdate validates a status write against the status rules, ratcheted
// on what the write changes.
func (StatusStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	job, oldJob := obj.(*batch.Job), old.(*batch.Job)
	return validation.ValidateJobUpdateStatus(job, oldJob, jobStatusValidationOptions(job, oldJob))
}

// WarningsOnUpdate returns no warnings for status writes.
func (StatusStrategy) WarningsOnUpdate(ctx context.Context, obj, old runtime.Object) []string {
	return nil
}

// GetAttrs returns the labels and fields of a Job for list and watch filtering.
func GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	job, ok := obj.(*batch.Job)
	if !ok {
		return nil, nil, fmt.Errorf("given object is not a Job: %T", obj)
	}
	return labels.Set(job.Labels), JobToSelectableFields(job), nil
}

// MatchJob returns the filter for a label and field selector.
func MatchJob(label labels.Selector, field fields.Selector) storage.SelectionPredicate {
	return storage.SelectionPredicate{
		Label:    label,
		Field:    field,
		GetAttrs: GetAttrs,
	}
}

// JobToSelectableFields returns the fields a field selector can match:
// metadata.name, metadata.namespace and status.successful.
func JobToSelectableFields(job *batch.Job) fields.Set {
	objectMetaFieldsSet := generic.ObjectMetaFieldsSet(&job.ObjectMeta, true)
	specificFieldsSet := fields.Set{
		"status.successful": strconv.Itoa(int(job.Status.Succeeded)),
	}
	return generic.MergeFieldsSets(objectMetaFieldsSet, specificFieldsSet)
}
