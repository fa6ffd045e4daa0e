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
	"encoding/json"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	schedulinginformers "k8s.io/client-go/informers/scheduling/v1beta1"
	schedulinglisters "k8s.io/client-go/listers/scheduling/v1beta1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// The scheduling objects of a Job (WorkloadWithJob): the caches they are
// found in, and the act side of decide's three steps (Workload, PodGroup,
// gang size), carried out before the Pods are managed, so that new Pods
// join the PodGroup. As kube-controller-manager, no event of a Workload or
// PodGroup queues a Job: they are looked at when the Job is synced.

// Event reasons of the scheduling objects, as kube-controller-manager's.
const (
	reasonWorkloadCreated      = "WorkloadCreated"
	reasonFailedWorkloadCreate = "FailedWorkloadCreate"
	reasonPodGroupCreated      = "PodGroupCreated"
)

// The indexes of the scheduling caches.
const (
	workloadByJobIndex          = "batch.jobs.dev/workload-by-job"
	podGroupByWorkloadNameIndex = "batch.jobs.dev/podgroup-by-workload"
)

// schedulingCaches are the host's Workloads and PodGroups, indexed by what
// they name: a Workload by our Job in its spec.controllerRef, a PodGroup
// by the Workload in its spec.workloadRef. Names, not UIDs: decide checks
// the owner references.
type schedulingCaches struct {
	workloads       schedulinglisters.WorkloadLister
	workloadIndexer cache.Indexer
	podGroupIndexer cache.Indexer
}

// ManageWorkloads makes the controller keep the Workloads and PodGroups of
// its Jobs (WorkloadWithJob) with the host's informers of them. Call it
// when the gate is on and the host serves scheduling.k8s.io/v1beta1
// Workloads and PodGroups, after NewController and before the informers
// start; without it the controller makes none, and its Pods carry no
// spec.schedulingGroup of its making. With DeletePodsOfDeletedJobs it also
// deletes those it made for Jobs that are gone.
func (jm *Controller) ManageWorkloads(workloads schedulinginformers.WorkloadInformer, podGroups schedulinginformers.PodGroupInformer) error {
	wi, pi := workloads.Informer(), podGroups.Informer()
	if err := wi.AddIndexers(cache.Indexers{workloadByJobIndex: workloadJobKeys}); err != nil {
		return fmt.Errorf("adding the Workload index by Job: %w", err)
	}
	if err := pi.AddIndexers(cache.Indexers{podGroupByWorkloadNameIndex: podGroupWorkloadKeys}); err != nil {
		return fmt.Errorf("adding the PodGroup index by Workload: %w", err)
	}
	if jm.cfg.DeletePodsOfDeletedJobs {
		// Standalone mode: the orphan worker deletes them with their Job.
		for resource, informer := range map[string]cache.SharedIndexInformer{resourceWorkloads: wi, resourcePodGroups: pi} {
			if err := informer.AddIndexers(cache.Indexers{schedulingOwnerIndex: jm.schedulingOwnerKeys}); err != nil {
				return fmt.Errorf("adding the %s index by owning Job: %w", resource, err)
			}
			if _, err := informer.AddEventHandler(jm.schedulingOrphanHandler(resource)); err != nil {
				return fmt.Errorf("adding the %s event handler: %w", resource, err)
			}
		}
	}
	jm.scheduling = &schedulingCaches{workloads: workloads.Lister(), workloadIndexer: wi.GetIndexer(), podGroupIndexer: pi.GetIndexer()}
	jm.cachesReady = append(jm.cachesReady, wi.HasSynced, pi.HasSynced)
	return nil
}

// workloadJobKeys indexes a Workload whose spec.controllerRef names one of
// our Jobs under that Job's key.
func workloadJobKeys(obj any) ([]string, error) {
	wl, ok := obj.(*schedulingv1beta1.Workload)
	if !ok {
		return nil, fmt.Errorf("indexing Workloads: got %T", obj)
	}
	ref := wl.Spec.ControllerRef
	if ref == nil || ref.Name == "" || ref.APIGroup != jobKind.Group || ref.Kind != jobKind.Kind {
		return nil, nil
	}
	return []string{cache.NewObjectName(wl.Namespace, ref.Name).String()}, nil
}

// podGroupWorkloadKeys indexes a PodGroup under the key of the Workload its
// spec.workloadRef names.
func podGroupWorkloadKeys(obj any) ([]string, error) {
	pg, ok := obj.(*schedulingv1beta1.PodGroup)
	if !ok {
		return nil, fmt.Errorf("indexing PodGroups: got %T", obj)
	}
	ref := pg.Spec.WorkloadRef
	if ref == nil || ref.WorkloadName == "" {
		return nil, nil
	}
	return []string{cache.NewObjectName(pg.Namespace, ref.WorkloadName).String()}, nil
}

// workloadsFor returns the Workloads that may matter to the Job in mode:
// those naming it, or, delegated, all of its namespace (one of them is the
// owner's).
func (c *schedulingCaches) workloadsFor(job *batchv1.Job, mode decide.SchedulingMode) ([]*schedulingv1beta1.Workload, error) {
	if mode == decide.DelegatedPodGroup {
		return c.workloads.Workloads(job.Namespace).List(labels.Everything())
	}
	return byIndex[*schedulingv1beta1.Workload](c.workloadIndexer, workloadByJobIndex, keyOf(job))
}

// podGroupsOf returns the PodGroups naming the Workload.
func (c *schedulingCaches) podGroupsOf(wl *schedulingv1beta1.Workload) ([]*schedulingv1beta1.PodGroup, error) {
	return byIndex[*schedulingv1beta1.PodGroup](c.podGroupIndexer, podGroupByWorkloadNameIndex, cache.MetaObjectToName(wl).String())
}

func byIndex[T any](indexer cache.Indexer, index, key string) ([]T, error) {
	objs, err := indexer.ByIndex(index, key)
	if err != nil {
		return nil, fmt.Errorf("listing %s %s: %w", index, key, err)
	}
	out := make([]T, 0, len(objs))
	for _, o := range objs {
		if t, ok := o.(T); ok {
			out = append(out, t)
		}
	}
	return out, nil
}

// ensureScheduling carries out decide's steps for the Job's scheduling
// objects and returns the spec.schedulingGroup of the Pods to create, nil
// for Pods scheduled one by one. An error fails the sync before any Pod is
// created, as upstream.
func (jm *Controller) ensureScheduling(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) (*corev1.PodSchedulingGroup, error) {
	s := decide.NewScheduling(job, pods, jm.scheduling != nil)
	if s.Mode == decide.PodByPod {
		return nil, nil
	}
	workloads, err := jm.scheduling.workloadsFor(job, s.Mode)
	if err != nil {
		return nil, err
	}
	wp := s.PlanWorkload(workloads)
	jm.record(job, wp.Events)
	if wp.Err != nil {
		return nil, wp.Err
	}
	workload := wp.Workload
	if wp.Create != nil {
		if workload, err = jm.createWorkload(ctx, job, wp.Create); err != nil {
			return nil, err
		}
	}
	if workload == nil {
		fallBack(ctx, job, wp.PodByPod, wp.Ambiguous)
		return nil, nil
	}
	podGroups, err := jm.scheduling.podGroupsOf(workload)
	if err != nil {
		return nil, err
	}
	pp := s.PlanPodGroup(workload, wp.Template, podGroups)
	if pp.Err != nil {
		return nil, pp.Err
	}
	podGroup := pp.PodGroup
	if pp.Create != nil {
		if podGroup, err = jm.createPodGroup(ctx, job, pp.Create); err != nil {
			return nil, err
		}
	}
	if podGroup == nil {
		fallBack(ctx, job, pp.PodByPod, pp.Ambiguous)
	}
	mp, err := s.PlanMinCount(workload, wp.Template, podGroup)
	if err != nil {
		return nil, err
	}
	if mp.Workload != nil {
		if err := patchSchedulingObject(ctx, workload, mp.Workload, jm.kubeClient.SchedulingV1beta1().Workloads(workload.Namespace)); err != nil {
			return nil, fmt.Errorf("resizing the gang of Workload %s: %w", klog.KObj(workload), err)
		}
	}
	if mp.PodGroup != nil {
		if err := patchSchedulingObject(ctx, podGroup, mp.PodGroup, jm.kubeClient.SchedulingV1beta1().PodGroups(podGroup.Namespace)); err != nil {
			return nil, fmt.Errorf("resizing the gang of PodGroup %s: %w", klog.KObj(podGroup), err)
		}
	}
	return decide.SchedulingGroup(podGroup), nil
}

// fallBack logs why the Job's new Pods go without a PodGroup: as an error
// when the host holds conflicting objects, else at level 2.
func fallBack(ctx context.Context, job *batchv1.Job, why string, ambiguous bool) {
	const msg = "Job pods scheduled without a PodGroup"
	if ambiguous {
		utilruntime.HandleErrorWithContext(ctx, errors.New(why), msg, "job", klog.KObj(job))
		return
	}
	klog.FromContext(ctx).V(2).Info(msg, "job", klog.KObj(job), "reason", why)
}

// createWorkload creates the Job's Workload, labelled with this server's
// identity, and records the Event.
func (jm *Controller) createWorkload(ctx context.Context, job *batchv1.Job, wl *schedulingv1beta1.Workload) (*schedulingv1beta1.Workload, error) {
	jm.withIdentity(wl)
	created, err := jm.kubeClient.SchedulingV1beta1().Workloads(job.Namespace).Create(ctx, wl, metav1.CreateOptions{})
	if err != nil {
		// An AlreadyExists too: the cache is behind, the next sync (after
		// backoff) finds it.
		jm.recorder.Eventf(job, corev1.EventTypeWarning, reasonFailedWorkloadCreate, "Failed to create Workload for Job %s: %v", job.Name, err)
		return nil, fmt.Errorf("creating the Workload of job %s: %w", klog.KObj(job), err)
	}
	jm.recorder.Eventf(job, corev1.EventTypeNormal, reasonWorkloadCreated, "Created Workload %s for Job %s", created.Name, job.Name)
	return created, nil
}

// createPodGroup creates the Job's PodGroup, labelled with this server's
// identity, and records the Event.
func (jm *Controller) createPodGroup(ctx context.Context, job *batchv1.Job, pg *schedulingv1beta1.PodGroup) (*schedulingv1beta1.PodGroup, error) {
	jm.withIdentity(pg)
	created, err := jm.kubeClient.SchedulingV1beta1().PodGroups(job.Namespace).Create(ctx, pg, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating the PodGroup of job %s: %w", klog.KObj(job), err)
	}
	jm.recorder.Eventf(job, corev1.EventTypeNormal, reasonPodGroupCreated, "Created PodGroup %s for Job %s", created.Name, job.Name)
	return created, nil
}

// patcher is the one method of the typed clients patchSchedulingObject
// needs.
type patcher[T any] interface {
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error)
}

// patchSchedulingObject writes the difference from stored to want as a
// strategic merge patch: the gang size, the one field that may change.
func patchSchedulingObject[T metav1.Object, R any](ctx context.Context, stored, want T, client patcher[R]) error {
	before, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	after, err := json.Marshal(want)
	if err != nil {
		return err
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(before, after, stored)
	if err != nil {
		return err
	}
	_, err = client.Patch(ctx, stored.GetName(), types.StrategicMergePatchType, patch, metav1.PatchOptions{})
	return err
}
