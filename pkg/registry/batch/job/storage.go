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
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/registry/generic"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/apiserver/pkg/registry/rest"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

// REST is the storage of the jobs resource.
type REST struct {
	*genericregistry.Store
}

var _ rest.ShortNamesProvider = &REST{}
var _ rest.CategoriesProvider = &REST{}

// ShortNames returns bjob, so `kubectl get bjob` works.
func (r *REST) ShortNames() []string { return []string{"bjob"} }

// Categories puts jobs in `kubectl get all`.
func (r *REST) Categories() []string { return []string{"all"} }

// Update updates a Job; see userErrorsAsBadRequest for how patch errors are reported.
func (r *REST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	return r.Store.Update(ctx, name, userErrorsAsBadRequest{objInfo}, createValidation, updateValidation, forceAllowCreate, options)
}

// userErrorsAsBadRequest reports a failure to compute the new object from
// the request (applying a strategic merge patch or a server-side apply patch
// to the stored Job) as 400 Bad Request. Those failures come from the
// request body, but strategicpatch and the apply type converter return plain
// Go errors, which the generic handlers would answer with 500.
type userErrorsAsBadRequest struct {
	rest.UpdatedObjectInfo
}

// UpdatedObject returns the new object, or the failure as a Status error.
func (i userErrorsAsBadRequest) UpdatedObject(ctx context.Context, oldObj runtime.Object) (runtime.Object, error) {
	obj, err := i.UpdatedObjectInfo.UpdatedObject(ctx, oldObj)
	var status apierrors.APIStatus
	if err != nil && !errors.As(err, &status) {
		return nil, apierrors.NewBadRequest(err.Error())
	}
	return obj, err
}

// NewREST returns the storage of jobs and of their status subresource, both
// backed by the same etcd prefix.
func NewREST(scheme *runtime.Scheme, optsGetter generic.RESTOptionsGetter) (*REST, *StatusREST, error) {
	strategy := NewStrategy(scheme)
	statusStrategy := NewStatusStrategy(strategy)

	store := &genericregistry.Store{
		NewFunc:                   func() runtime.Object { return &batch.Job{} },
		NewListFunc:               func() runtime.Object { return &batch.JobList{} },
		PredicateFunc:             MatchJob,
		DefaultQualifiedResource:  batch.Resource("jobs"),
		SingularQualifiedResource: batch.Resource("job"),

		CreateStrategy:      strategy,
		UpdateStrategy:      strategy,
		DeleteStrategy:      strategy,
		ResetFieldsStrategy: strategy,

		TableConvertor: newTableConvertor(),
	}
	options := &generic.StoreOptions{RESTOptions: tooLargeAsEntityTooLarge{optsGetter}, AttrFunc: GetAttrs}
	if err := store.CompleteWithOptions(options); err != nil {
		return nil, nil, fmt.Errorf("completing job storage: %w", err)
	}

	// The status store is a copy sharing the same storage; only how an update
	// is prepared and validated differs.
	status := *store
	status.UpdateStrategy, status.ResetFieldsStrategy = statusStrategy, statusStrategy
	return &REST{store}, &StatusREST{jobs: &status}, nil
}

// StatusREST is the storage of the status subresource.
type StatusREST struct {
	jobs *genericregistry.Store
}

var _ rest.Patcher = &StatusREST{}

// New returns an empty Job.
func (r *StatusREST) New() runtime.Object { return &batch.Job{} }

// Destroy does nothing: the main store owns the shared storage.
func (r *StatusREST) Destroy() {}

// Get returns the Job, so that patches of the status apply to the stored object.
func (r *StatusREST) Get(ctx context.Context, name string, options *metav1.GetOptions) (runtime.Object, error) {
	return r.jobs.Get(ctx, name, options)
}

// Update writes the status of a Job, keeping its spec.
func (r *StatusREST) Update(ctx context.Context, name string, objInfo rest.UpdatedObjectInfo, createValidation rest.ValidateObjectFunc, updateValidation rest.ValidateObjectUpdateFunc, forceAllowCreate bool, options *metav1.UpdateOptions) (runtime.Object, bool, error) {
	// The status subresource never creates a Job.
	return r.jobs.Update(ctx, name, userErrorsAsBadRequest{objInfo}, createValidation, updateValidation, false, options)
}

// GetResetFields returns the fields a status write never changes.
func (r *StatusREST) GetResetFields() map[fieldpath.APIVersion]*fieldpath.Set {
	return r.jobs.GetResetFields()
}

// ConvertToTable prints the Job as the main resource does.
func (r *StatusREST) ConvertToTable(ctx context.Context, object runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	return r.jobs.ConvertToTable(ctx, object, tableOptions)
}
