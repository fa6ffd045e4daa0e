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
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// In standalone mode no garbage collector knows our Jobs, so the Workloads
// and PodGroups the controller made for a Job would outlive it. The orphan
// worker deletes them, as it deletes the Pods of a deleted Job: those
// carrying this server's identity whose controller reference names one of
// our Jobs that the Job informer does not hold (with that UID).

// The resources of orphanKey.resource for the scheduling objects.
const (
	resourceWorkloads = "workloads"
	resourcePodGroups = "podgroups"
)

// schedulingOwnerIndex indexes the Workloads and PodGroups of this server
// by the UID of the Job that controls them.
const schedulingOwnerIndex = "batch.jobs.dev/scheduling-owner"

// ownedSchedulingObject returns the controller reference of a Workload or
// PodGroup the controller made: one carrying this server's identity (as
// its Pods do) and controlled by one of our Jobs. Several servers may share
// a host, and an ownerReference does not say which server's Job it names.
func (jm *Controller) ownedSchedulingObject(obj metav1.Object) *metav1.OwnerReference {
	if obj.GetLabels()[batch.ServerIdentityLabel] != jm.cfg.Identity {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(obj)
	if !refersToOurJob(ref) {
		return nil
	}
	return ref
}

// withIdentity labels a Workload or PodGroup about to be created with this
// server's identity, as its Pods are.
func (jm *Controller) withIdentity(obj metav1.Object) {
	if jm.cfg.Identity == "" {
		return
	}
	labels := obj.GetLabels()
	if labels == nil {
		labels = map[string]string{}
	}
	labels[batch.ServerIdentityLabel] = jm.cfg.Identity
	obj.SetLabels(labels)
}

// schedulingOwnerKeys is the schedulingOwnerIndex function.
func (jm *Controller) schedulingOwnerKeys(obj any) ([]string, error) {
	o, ok := obj.(metav1.Object)
	if !ok {
		return nil, nil
	}
	if ref := jm.ownedSchedulingObject(o); ref != nil {
		return []string{string(ref.UID)}, nil
	}
	return nil, nil
}

// schedulingOrphanHandler sends the Workloads or PodGroups (resource) that
// events and resyncs show without their Job to the orphan worker. The
// worker looks again once the informers have synced: at the first list
// the Job informer may not hold a live Job yet.
func (jm *Controller) schedulingOrphanHandler(resource string) cache.ResourceEventHandler {
	queue := func(obj any) {
		o, ok := obj.(metav1.Object)
		if !ok {
			return
		}
		ref := jm.ownedSchedulingObject(o)
		if ref == nil || o.GetDeletionTimestamp() != nil || jm.ownerJob(o.GetNamespace(), ref) != nil {
			return
		}
		jm.orphans.Add(orphanKey{resource: resource, namespace: o.GetNamespace(), name: o.GetName()})
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    queue,
		UpdateFunc: func(_, newObj any) { queue(newObj) },
	}
}

// queueSchedulingOrphans sends the Workloads and PodGroups the deleted Job
// controls to the orphan worker.
func (jm *Controller) queueSchedulingOrphans(job *batchv1.Job) {
	if jm.scheduling == nil || !jm.cfg.DeletePodsOfDeletedJobs {
		return
	}
	for resource, indexer := range map[string]cache.Indexer{
		resourceWorkloads: jm.scheduling.workloadIndexer,
		resourcePodGroups: jm.scheduling.podGroupIndexer,
	} {
		objs, err := indexer.ByIndex(schedulingOwnerIndex, string(job.UID))
		if err != nil {
			utilruntime.HandleError(fmt.Errorf("listing the %s of job %s: %w", resource, klog.KObj(job), err))
			continue
		}
		for _, obj := range objs {
			if o, ok := obj.(metav1.Object); ok {
				jm.orphans.Add(orphanKey{resource: resource, namespace: o.GetNamespace(), name: o.GetName()})
			}
		}
	}
}

// deleteSchedulingOrphan deletes the Workload or PodGroup of key when the
// controller made it, its Job is gone and nothing else will delete it.
func (jm *Controller) deleteSchedulingOrphan(ctx context.Context, key orphanKey) error {
	if jm.scheduling == nil || !jm.cfg.DeletePodsOfDeletedJobs {
		return nil
	}
	indexer := jm.scheduling.workloadIndexer
	if key.resource == resourcePodGroups {
		indexer = jm.scheduling.podGroupIndexer
	}
	obj, exists, err := indexer.GetByKey(cache.NewObjectName(key.namespace, key.name).String())
	if err != nil {
		return fmt.Errorf("reading %s %s/%s: %w", key.resource, key.namespace, key.name, err)
	}
	o, ok := obj.(metav1.Object)
	if !exists || !ok || o.GetDeletionTimestamp() != nil {
		return nil
	}
	ref := jm.ownedSchedulingObject(o)
	if ref == nil || jm.ownerJob(o.GetNamespace(), ref) != nil {
		return nil
	}
	opts := metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: new(o.GetUID())}}
	client := jm.kubeClient.SchedulingV1beta1()
	if key.resource == resourcePodGroups {
		err = client.PodGroups(key.namespace).Delete(ctx, key.name, opts)
	} else {
		err = client.Workloads(key.namespace).Delete(ctx, key.name, opts)
	}
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("deleting %s %s of a deleted job: %w", key.resource, klog.KObj(o), err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted a scheduling object of a deleted job", "resource", key.resource, "object", klog.KObj(o), "job", ref.Name)
	return nil
}
