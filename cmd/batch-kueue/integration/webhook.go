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

package integration

import (
	"context"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/webhook/admission"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/constants"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/features"

	jobsv1 "github.com/batch-apiserver/batch-apiserver/cmd/batch-kueue/api/v1"
)

// The paths controller-runtime serves the two halves of the webhook at
// (derived from the group, version and kind); the webhook configurations
// of artifacts/kueue name them.
const (
	MutatePath   = "/mutate-batch-jobs-dev-v1-job"
	ValidatePath = "/validate-batch-jobs-dev-v1-job"
)

var (
	annotationsPath       = field.NewPath("metadata", "annotations")
	minParallelismPath    = annotationsPath.Key(minParallelismAnnotation)
	completionsFollowPath = annotationsPath.Key(completionsFollowParallelismAnnot)
	templateMetadataPath  = field.NewPath("spec", "template", "metadata")
)

var (
	_ admission.Defaulter[*jobsv1.Job] = (*Webhook)(nil)
	_ admission.Validator[*jobsv1.Job] = (*Webhook)(nil)
)

// Webhook defaults and validates batch.jobs.dev Jobs as Kueue's webhook
// does batch/v1 Jobs, by jobframework's own rules where Kueue exports them.
// Kueue answers two questions from its in-memory queues (is there a
// LocalQueue named "default" in the namespace; does the Job's queue
// dispatch with MultiKueue); a separate binary has no such state, so the
// webhook reads the LocalQueue, its ClusterQueue and their AdmissionChecks
// through Client (the manager's cache).
type Webhook struct {
	// Client reads LocalQueues, ClusterQueues, AdmissionChecks,
	// Namespaces and the owners of a Job.
	Client client.Client
	// ManageJobsWithoutQueueName suspends Jobs with no queue name too,
	// in the namespaces ManagedJobsNamespaceSelector selects (all when
	// nil), as Kueue's options of the same names.
	ManageJobsWithoutQueueName   bool
	ManagedJobsNamespaceSelector labels.Selector
}

// SetupWebhook registers the webhook's two halves with mgr's webhook
// server, at MutatePath and ValidatePath.
func SetupWebhook(mgr ctrl.Manager, opts Options) error {
	w := &Webhook{
		Client:                       mgr.GetClient(),
		ManageJobsWithoutQueueName:   opts.ManageJobsWithoutQueueName,
		ManagedJobsNamespaceSelector: opts.ManagedJobsNamespaceSelector,
	}
	return ctrl.NewWebhookManagedBy(mgr, &jobsv1.Job{}).
		WithDefaulter(w).
		WithValidator(w).
		Complete()
}

// Default gives a Job being created, in this order, the queue "default"
// when it names none and the namespace has that LocalQueue; spec.suspend
// when Kueue is to admit it; spec.managedBy MultiKueue when its queue
// dispatches with MultiKueue and nobody else was named.
func (w *Webhook) Default(ctx context.Context, obj *jobsv1.Job) error {
	job := (*Job)(obj)
	hasDefault, err := w.localQueueExists(ctx, obj.Namespace, string(constants.DefaultLocalQueueName))
	if err != nil {
		return err
	}
	jobframework.ApplyDefaultLocalQueue(obj, func(string) bool { return hasDefault })
	if err := jobframework.ApplyDefaultForSuspend(ctx, job, w.Client, w.ManageJobsWithoutQueueName, w.ManagedJobsNamespaceSelector); err != nil {
		return err
	}
	if !job.CanDefaultManagedBy() {
		return nil
	}
	multiKueue, err := w.dispatchesWithMultiKueue(ctx, obj)
	if err != nil {
		return err
	}
	if multiKueue {
		ctrl.LoggerFrom(ctx).V(5).Info("Defaulting managedBy", "managedBy", kueue.MultiKueueControllerName)
		job.SetManagedBy(ptr.To(kueue.MultiKueueControllerName))
	}
	return nil
}

// ValidateCreate refuses a Job Kueue's webhook would refuse as a batch/v1
// Job, with the same field paths and messages.
func (w *Webhook) ValidateCreate(ctx context.Context, obj *jobsv1.Job) (admission.Warnings, error) {
	errs, err := validateCreate(ctx, (*Job)(obj))
	if err != nil {
		return nil, err
	}
	return nil, errs.ToAggregate()
}

// ValidateUpdate refuses a change Kueue's webhook would refuse for a
// batch/v1 Job: the create rules on the new Job, and the rules of a change
// (the queue name and priority class of a running Job, the parallelism of
// a running Job under partial admission, ...).
func (w *Webhook) ValidateUpdate(ctx context.Context, oldObj, newObj *jobsv1.Job) (admission.Warnings, error) {
	errs, err := w.validateUpdate(ctx, (*Job)(oldObj), (*Job)(newObj))
	if err != nil {
		return nil, err
	}
	return nil, errs.ToAggregate()
}

// validateCreate is ValidateCreate's decision, as a list.
func validateCreate(ctx context.Context, job *Job) (field.ErrorList, error) {
	errs := validateOnCreate(job)
	errs = append(errs, validateMinParallelism(job)...)
	errs = append(errs, validateCompletionsFollowParallelism(job)...)
	tasErrs, err := validateTopology(ctx, job)
	if err != nil {
		return nil, err
	}
	return append(errs, tasErrs...), nil
}

// validateUpdate is ValidateUpdate's decision, as a list.
func (w *Webhook) validateUpdate(ctx context.Context, oldJob, newJob *Job) (field.ErrorList, error) {
	errs := validateOnCreate(newJob)
	if oldJob.Annotations[minParallelismAnnotation] != newJob.Annotations[minParallelismAnnotation] {
		errs = append(errs, validateMinParallelism(newJob)...)
	}
	errs = append(errs, validateCompletionsFollowParallelism(newJob)...)
	// Kueue asks its queues whether the namespace has a default LocalQueue
	// only when the queue name is being removed; so does this webhook.
	hasDefault := false
	if jobframework.QueueName(newJob) == "" && jobframework.QueueName(oldJob) != "" {
		var err error
		if hasDefault, err = w.localQueueExists(ctx, oldJob.Namespace, string(constants.DefaultLocalQueueName)); err != nil {
			return nil, err
		}
	}
	errs = append(errs, jobframework.ValidateJobOnUpdate(oldJob, newJob, func(string) bool { return hasDefault })...)
	errs = append(errs, validateRunningJobUpdate(oldJob, newJob)...)
	tasErrs, err := validateTopology(ctx, newJob)
	if err != nil {
		return nil, err
	}
	return append(errs, tasErrs...), nil
}

// prebuiltWorkloadPath is the label that names a Workload made in advance
// (MultiKueue puts it on the copy of a Job it creates in a worker).
var prebuiltWorkloadPath = field.NewPath("metadata", "labels").Key(constants.PrebuiltWorkloadLabel)

// validateOnCreate is jobframework's create validation, but for one rule:
// jobframework forbids the prebuilt-workload label on every kind not in a
// list of Kueue's own integrations, batch/v1 Jobs among them. Our Jobs run
// with a prebuilt Workload as batch/v1 Jobs do (MultiKueue's generic
// adapter creates every worker copy with the label, and the reconciler
// adopts the Workload), so the label is allowed here as it is for batch/v1;
// refusing it would refuse every MultiKueue dispatch. The label's value is
// still checked.
func validateOnCreate(job *Job) field.ErrorList {
	var errs field.ErrorList
	for _, err := range jobframework.ValidateJobOnCreate(job) {
		if err.Type == field.ErrorTypeForbidden && err.Field == prebuiltWorkloadPath.String() {
			continue
		}
		errs = append(errs, err)
	}
	return errs
}

// ValidateDelete allows every delete.
func (w *Webhook) ValidateDelete(context.Context, *jobsv1.Job) (admission.Warnings, error) {
	return nil, nil
}

// localQueueExists tells whether the LocalQueue namespace/name exists.
func (w *Webhook) localQueueExists(ctx context.Context, namespace, name string) (bool, error) {
	var lq kueue.LocalQueue
	err := w.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, &lq)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading LocalQueue %s/%s: %w", namespace, name, err)
	}
	return true, nil
}

// dispatchesWithMultiKueue tells whether the Job's LocalQueue points at a
// ClusterQueue one of whose AdmissionChecks is MultiKueue's. A queue,
// ClusterQueue or AdmissionCheck that does not exist (yet) is no
// MultiKueue, as Kueue's caches answer before they have seen it.
func (w *Webhook) dispatchesWithMultiKueue(ctx context.Context, obj *jobsv1.Job) (bool, error) {
	queueName, ok := obj.Labels[constants.QueueLabel]
	if !ok || queueName == "" {
		return false, nil
	}
	var lq kueue.LocalQueue
	if found, err := w.get(ctx, types.NamespacedName{Namespace: obj.Namespace, Name: queueName}, &lq); !found || err != nil {
		return false, err
	}
	var cq kueue.ClusterQueue
	if found, err := w.get(ctx, types.NamespacedName{Name: string(lq.Spec.ClusterQueue)}, &cq); !found || err != nil {
		return false, err
	}
	if cq.Spec.AdmissionChecksStrategy == nil {
		return false, nil
	}
	for _, rule := range cq.Spec.AdmissionChecksStrategy.AdmissionChecks {
		var ac kueue.AdmissionCheck
		found, err := w.get(ctx, types.NamespacedName{Name: string(rule.Name)}, &ac)
		if err != nil {
			return false, err
		}
		if found && ac.Spec.ControllerName == kueue.MultiKueueControllerName {
			return true, nil
		}
	}
	return false, nil
}

// get reads one object, reporting a missing one as not found rather than
// as an error.
func (w *Webhook) get(ctx context.Context, key types.NamespacedName, obj client.Object) (bool, error) {
	err := w.Client.Get(ctx, key, obj)
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading %T %s: %w", obj, key, err)
	}
	return true, nil
}

// validateMinParallelism checks the partial-admission annotation: a
// number of Pods from 1 to one less than the Job runs at once.
func validateMinParallelism(job *Job) field.ErrorList {
	value, ok := job.Annotations[minParallelismAnnotation]
	if !ok {
		return nil
	}
	n, err := strconv.Atoi(value)
	if err != nil {
		return field.ErrorList{field.Invalid(minParallelismPath, value, err.Error())}
	}
	if n <= 0 || int32(n) >= job.podCount() {
		return field.ErrorList{field.Invalid(minParallelismPath, n, fmt.Sprintf("should be between 0 and %d", job.podCount()-1))}
	}
	return nil
}

// validateCompletionsFollowParallelism checks the annotation that makes
// completions follow the admitted parallelism: a boolean, and when true
// only on an Indexed Job whose completions equal its parallelism.
func validateCompletionsFollowParallelism(job *Job) field.ErrorList {
	value, ok := job.Annotations[completionsFollowParallelismAnnot]
	if !ok {
		return nil
	}
	var errs field.ErrorList
	follow, err := strconv.ParseBool(value)
	if err != nil {
		errs = append(errs, field.Invalid(completionsFollowPath, value, err.Error()))
	}
	if !follow {
		return errs
	}
	if ptr.Deref(job.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.NonIndexedCompletion {
		errs = append(errs, field.Invalid(completionsFollowPath, value, "should not be enabled for NonIndexed jobs"))
	}
	if ptr.Deref(job.Spec.Parallelism, 1) != ptr.Deref(job.Spec.Completions, 1) {
		errs = append(errs, field.Invalid(field.NewPath("spec", "completions"), job.Spec.Completions,
			fmt.Sprintf("should be equal to parallelism when %s is annotation is true", completionsFollowParallelismAnnot)))
	}
	return errs
}

// validateRunningJobUpdate holds the two annotations of partial admission
// to what an admitted Job may change: not its parallelism while it runs
// (with the partial-admission annotation), nor whether completions follow
// the parallelism while it stays running.
func validateRunningJobUpdate(oldJob, newJob *Job) field.ErrorList {
	var errs field.ErrorList
	if _, partial := oldJob.Annotations[minParallelismAnnotation]; partial &&
		!ptr.Deref(oldJob.Spec.Suspend, false) &&
		ptr.Deref(oldJob.Spec.Parallelism, 1) != ptr.Deref(newJob.Spec.Parallelism, 1) {
		errs = append(errs, field.Forbidden(field.NewPath("spec", "parallelism"), "cannot change when partial admission is enabled and the job is not suspended"))
	}
	running := !oldJob.IsSuspended() && !newJob.IsSuspended()
	if running && oldJob.completionsFollowParallelism() != newJob.completionsFollowParallelism() {
		errs = append(errs, field.Forbidden(completionsFollowPath, apivalidation.FieldImmutableErrorMsg+" while the job is not suspended"))
	}
	return errs
}

// validateTopology checks the topology-aware scheduling annotations of the
// template, when Kueue's TopologyAwareScheduling gate is on (beta, on by
// default), as for a batch/v1 Job's template.
func validateTopology(ctx context.Context, job *Job) (field.ErrorList, error) {
	if !features.Enabled(features.TopologyAwareScheduling) {
		return nil, nil
	}
	if errs := jobframework.ValidateTASPodSetRequest(templateMetadataPath, &job.Spec.Template.ObjectMeta); len(errs) > 0 {
		return errs, nil
	}
	sets, err := job.PodSets(ctx)
	if err != nil {
		return nil, err
	}
	return jobframework.ValidateSliceSizeAnnotationUpperBound(templateMetadataPath, &job.Spec.Template.ObjectMeta, &sets[0]), nil
}

// completionsFollowParallelism tells whether the annotation asks that
// completions follow the admitted parallelism.
func (j *Job) completionsFollowParallelism() bool {
	follow, err := strconv.ParseBool(j.Annotations[completionsFollowParallelismAnnot])
	return err == nil && follow
}
