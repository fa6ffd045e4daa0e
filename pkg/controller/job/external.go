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
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
)

// Jobs whose spec.managedBy names another controller are left alone: no
// sync, no Pods, no status. Each is counted once in
// jobs_by_external_controller_total and announced with one
// ExternallyManaged Event. The Event has a name derived from the Job's UID,
// so that a second attempt (another term, another replica, a restart)
// meets AlreadyExists instead of adding a copy; nothing is written to the
// Job itself.

const externallyManagedReason = "ExternallyManaged"

// The memory of the externally managed Jobs outlives the controller of one
// term, as the metric does: countedExternal holds the Jobs this process
// counted, announced those whose Event it knows to exist (a cache that
// spares the request; the Event's name is what keeps it unique).
var (
	countedExternal sync.Map
	announced       = newUIDSet()
)

// forgetExternal drops a deleted Job from that memory.
func forgetExternal(uid types.UID) {
	countedExternal.Delete(uid)
	announced.remove(uid)
}

// leftToOthers tells whether another controller manages the Job; if so it
// counts the Job and has it announced.
func (jm *Controller) leftToOthers(logger klog.Logger, job *batchv1.Job) bool {
	manager, external := decide.ExternalManager(job)
	if !external {
		return false
	}
	if _, seen := countedExternal.LoadOrStore(job.UID, struct{}{}); !seen {
		metrics.JobByExternalControllerTotal.WithLabelValues(manager).Inc()
		logger.V(2).Info("Skipping job managed by another controller", "job", klog.KObj(job), "controllerName", manager)
	}
	if !announced.has(job.UID) {
		jm.external.Add(keyOf(job))
	}
	return true
}

// externallyManagedEventName is the name of the one ExternallyManaged
// Event of a Job: the Job's name, its UID without dashes and a fixed
// suffix, the name shortened so that the whole is a valid object name.
func externallyManagedEventName(job *batchv1.Job) string {
	suffix := "." + strings.ReplaceAll(string(job.UID), "-", "") + ".externally-managed"
	name := job.Name
	if room := validation.DNS1123SubdomainMaxLength - len(suffix); len(name) > room {
		name = strings.TrimRight(name[:max(room, 0)], ".-")
	}
	return name + suffix
}

// announce creates the ExternallyManaged Event of the Job of key, unless
// it exists.
func (jm *Controller) announce(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return fmt.Errorf("splitting job key %q: %w", key, err)
	}
	job, err := jm.jobs.get(ns, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading job %s: %w", key, err)
	}
	manager, external := decide.ExternalManager(job)
	if !external || announced.has(job.UID) {
		return nil
	}
	now := metav1.NewTime(jm.clock.Now())
	event := &corev1.Event{
		ObjectMeta: metav1.ObjectMeta{Name: externallyManagedEventName(job), Namespace: job.Namespace},
		InvolvedObject: corev1.ObjectReference{
			APIVersion:      jobKind.GroupVersion().String(),
			Kind:            jobKind.Kind,
			Namespace:       job.Namespace,
			Name:            job.Name,
			UID:             job.UID,
			ResourceVersion: job.ResourceVersion,
		},
		Reason: externallyManagedReason,
		Message: fmt.Sprintf("Job is managed by %q, not by %s: the Job controller creates no Pods and writes no status for it",
			manager, batch.JobControllerName),
		Type:                corev1.EventTypeNormal,
		Source:              corev1.EventSource{Component: componentName},
		FirstTimestamp:      now,
		LastTimestamp:       now,
		Count:               1,
		ReportingController: componentName,
	}
	_, err = jm.kubeClient.CoreV1().Events(job.Namespace).Create(ctx, event, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the %s event of job %s: %w", externallyManagedReason, key, err)
	}
	announced.add(job.UID)
	return nil
}
