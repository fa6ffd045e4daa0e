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
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// The Job cache.
//
// The controller's Job informer holds every Job the server stores, in the
// same process as the server's watch cache, and on a busy cluster nearly
// all of them are finished (the history) or run by another controller. The
// controller never syncs those again: it only needs to know that they
// exist, who runs them, when a TTL deletes them, and which Pods a finished
// one may still hold. So the informer keeps a Job it runs whole (without
// managedFields, which the controller never reads) and keeps of every other
// Job a doneJob: about a sixth of the memory of a decoded Job without its
// template, a tenth with it.
//
// Nothing is lost by it. A finished Job cannot leave its terminal state
// and spec.managedBy cannot change, so a Job kept as a doneJob is never one
// the controller has to sync; any later version comes through the informer
// and is trimmed again.
//
// The generated lister would refuse a doneJob, so the controller reads the
// informer's indexer through jobCache, which hands out *batchv1.Job in
// either case.

// doneJob is what the Job cache keeps of a finished or externally managed
// Job: exactly the fields that the controller reads of such a Job.
type doneJob struct {
	// ObjectMeta keeps the name, namespace, UID, resourceVersion,
	// generation, creation and deletion timestamps; the informer keys
	// and compares the doneJob by it.
	metav1.ObjectMeta
	managedBy *string
	// selector is kept for a Job of ours only: a finished Job's Pods are
	// still found by it (the orphan sweep). Another controller's Pods are
	// never touched.
	selector       *metav1.LabelSelector
	ttl            *int32
	completionMode *batchv1.CompletionMode
	// conditions are the Job's true Complete or Failed condition, without
	// reason or message.
	conditions     []batchv1.JobCondition
	completionTime *metav1.Time
}

// TrimForCache is the transform of the Job informer the controller reads:
// a Job this controller runs loses its managedFields, any other Job
// becomes a doneJob. Anything but a Job is returned as it is.
func TrimForCache(obj any) (any, error) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return obj, nil
	}
	external := isExternal(job)
	end, finished := decide.Finished(job)
	if !external && !finished {
		job.ManagedFields = nil
		return job, nil
	}
	done := &doneJob{
		ObjectMeta: metav1.ObjectMeta{
			Name:              job.Name,
			Namespace:         job.Namespace,
			UID:               job.UID,
			ResourceVersion:   job.ResourceVersion,
			Generation:        job.Generation,
			CreationTimestamp: job.CreationTimestamp,
			DeletionTimestamp: job.DeletionTimestamp,
		},
		managedBy: job.Spec.ManagedBy,
	}
	if external {
		return done, nil
	}
	done.selector = job.Spec.Selector
	done.ttl = job.Spec.TTLSecondsAfterFinished
	done.completionMode = job.Spec.CompletionMode
	done.conditions = []batchv1.JobCondition{{Type: end.Type, Status: end.Status, LastTransitionTime: end.LastTransitionTime}}
	done.completionTime = job.Status.CompletionTime
	return done, nil
}

// job returns the Job a doneJob stands for, with the fields it keeps. The
// Job is new at every call, so the caller may keep it; it shares no field
// that the caller may change in place.
func (d *doneJob) job() *batchv1.Job {
	shared := &batchv1.Job{
		ObjectMeta: d.ObjectMeta,
		Spec: batchv1.JobSpec{
			ManagedBy:               d.managedBy,
			Selector:                d.selector,
			TTLSecondsAfterFinished: d.ttl,
			CompletionMode:          d.completionMode,
		},
		Status: batchv1.JobStatus{Conditions: d.conditions, CompletionTime: d.completionTime},
	}
	return shared.DeepCopy()
}

// jobFrom returns the Job an object of the Job cache or of an informer
// event stands for: a Job, a doneJob, or a tombstone of either.
func jobFrom(obj any) (*batchv1.Job, bool) {
	switch o := obj.(type) {
	case *batchv1.Job:
		return o, true
	case *doneJob:
		return o.job(), true
	case cache.DeletedFinalStateUnknown:
		return jobFrom(o.Obj)
	}
	return nil, false
}

// jobCache reads the Job informer's indexer, whose objects are Jobs and
// doneJobs (see TrimForCache). A Job it returns is the cached object, not
// to be changed; one made from a doneJob is the caller's.
type jobCache struct {
	indexer cache.Indexer
}

// get returns the Job namespace/name, or a NotFound error as a lister does.
func (c jobCache) get(namespace, name string) (*batchv1.Job, error) {
	obj, exists, err := c.indexer.GetByKey(cache.ObjectName{Namespace: namespace, Name: name}.String())
	if err != nil {
		return nil, err
	}
	if !exists {
		return nil, apierrors.NewNotFound(batchv1.Resource("job"), name)
	}
	job, ok := jobFrom(obj)
	if !ok {
		return nil, fmt.Errorf("the Job cache holds a %T for %s/%s", obj, namespace, name)
	}
	return job, nil
}

// list returns the Jobs of namespace that keep accepts. keep sees the
// cached spec.managedBy and selector, so that of the many doneJobs of a
// namespace only those wanted are made into Jobs.
func (c jobCache) list(namespace string, keep func(managedBy *string, selector *metav1.LabelSelector) bool) ([]*batchv1.Job, error) {
	objs, err := c.indexer.ByIndex(cache.NamespaceIndex, namespace)
	if err != nil {
		return nil, err
	}
	var jobs []*batchv1.Job
	for _, obj := range objs {
		switch o := obj.(type) {
		case *batchv1.Job:
			if keep(o.Spec.ManagedBy, o.Spec.Selector) {
				jobs = append(jobs, o)
			}
		case *doneJob:
			if keep(o.managedBy, o.selector) {
				jobs = append(jobs, o.job())
			}
		}
	}
	return jobs, nil
}
