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
	"strings"

	grpccodes "google.golang.org/grpc/codes"
	grpcstatus "google.golang.org/grpc/status"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/registry/generic"
	"k8s.io/apiserver/pkg/storage"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/apiserver/pkg/storage/storagebackend/factory"
	"k8s.io/client-go/tools/cache"
)

// tooLargeAsEntityTooLarge gives the jobs storage a layer that answers a
// write etcd cannot take because of its size with 413 Request Entity Too
// Large, instead of the raw etcd error.
//
// Without it a too large create was retried by the generic create handler
// with managedFields dropped, but after the strategy had run again with a
// new UID against the template labels of the first try, so the user got a
// 422 about controller-uid; a too large update or a create with
// manualSelector got a 500 "etcdserver: request is too large". Here a too
// large create is retried once without managedFields (what the handler
// meant to do) on the object the strategy already prepared, and whatever
// still does not fit is a 413. The limit is etcd's --max-request-bytes or
// the etcd client's 2 MiB message limit, whichever is smaller.
type tooLargeAsEntityTooLarge struct {
	generic.RESTOptionsGetter
}

// GetRESTOptions wraps the storage the options build.
func (g tooLargeAsEntityTooLarge) GetRESTOptions(resource schema.GroupResource, example runtime.Object) (generic.RESTOptions, error) {
	opts, err := g.RESTOptionsGetter.GetRESTOptions(resource, example)
	if err != nil {
		return opts, err
	}
	decorator := opts.Decorator
	if decorator == nil {
		decorator = generic.UndecoratedStorage
	}
	opts.Decorator = func(config *storagebackend.ConfigForResource, resourcePrefix string,
		keyFunc func(obj runtime.Object) (string, error), newFunc, newListFunc func() runtime.Object,
		getAttrsFunc storage.AttrFunc, trigger storage.IndexerFuncs, indexers *cache.Indexers) (storage.Interface, factory.DestroyFunc, error) {
		s, destroy, err := decorator(config, resourcePrefix, keyFunc, newFunc, newListFunc, getAttrsFunc, trigger, indexers)
		if err != nil {
			return nil, nil, err
		}
		return sizeLimitedStorage{Interface: s, resource: resource}, destroy, nil
	}
	return opts, nil
}

// sizeLimitedStorage is the storage.Interface of tooLargeAsEntityTooLarge.
type sizeLimitedStorage struct {
	storage.Interface
	resource schema.GroupResource
}

// Create stores obj; when it is too large, it tries once more without
// managedFields, as kube-apiserver's create handler does.
func (s sizeLimitedStorage) Create(ctx context.Context, key string, obj, out runtime.Object, ttl uint64) error {
	err := s.Interface.Create(ctx, key, obj, out, ttl)
	if !isTooLarge(err) {
		return err
	}
	accessor, accessorErr := meta.Accessor(obj)
	if accessorErr != nil || len(accessor.GetManagedFields()) == 0 {
		return s.entityTooLarge(obj, err)
	}
	accessor.SetManagedFields(nil)
	if err := s.Interface.Create(ctx, key, obj, out, ttl); isTooLarge(err) {
		return s.entityTooLarge(obj, err)
	} else {
		return err
	}
}

// GuaranteedUpdate updates the object; a new object that is too large is a 413.
func (s sizeLimitedStorage) GuaranteedUpdate(ctx context.Context, key string, destination runtime.Object, ignoreNotFound bool,
	preconditions *storage.Preconditions, tryUpdate storage.UpdateFunc, cachedExistingObject runtime.Object) error {
	var last runtime.Object
	err := s.Interface.GuaranteedUpdate(ctx, key, destination, ignoreNotFound, preconditions,
		func(input runtime.Object, res storage.ResponseMeta) (runtime.Object, *uint64, error) {
			out, ttl, err := tryUpdate(input, res)
			last = out
			return out, ttl, err
		}, cachedExistingObject)
	if isTooLarge(err) {
		return s.entityTooLarge(last, err)
	}
	return err
}

// entityTooLarge is the 413 for obj.
func (s sizeLimitedStorage) entityTooLarge(obj runtime.Object, cause error) error {
	name := ""
	if accessor, err := meta.Accessor(obj); err == nil {
		name = accessor.GetName()
	}
	return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
		"%s %q is too large to store (%v); make it smaller, for example with fewer or shorter labels, annotations, environment variables or commands",
		s.resource.String(), name, storageReason(cause)))
}

// storageReason says which limit refused the write, without etcd's
// internals.
func storageReason(err error) string {
	if st, ok := grpcstatus.FromError(err); ok && st.Code() == grpccodes.ResourceExhausted {
		return "larger than the 2 MiB the etcd client sends"
	}
	return "larger than etcd's request size limit"
}

// isTooLarge reports whether err is etcd's or its client's refusal of a
// request because of its size, as kube-apiserver's handlers recognize it.
func isTooLarge(err error) bool {
	if err == nil {
		return false
	}
	var coded interface {
		Code() grpccodes.Code
		Error() string
	}
	if errors.As(err, &coded) && coded.Code() == grpccodes.InvalidArgument && coded.Error() == "etcdserver: request is too large" {
		return true
	}
	var withStatus interface{ GRPCStatus() *grpcstatus.Status }
	if errors.As(err, &withStatus) {
		st := withStatus.GRPCStatus()
		return st.Code() == grpccodes.ResourceExhausted && strings.Contains(st.Message(), "trying to send message larger than max")
	}
	return false
}
