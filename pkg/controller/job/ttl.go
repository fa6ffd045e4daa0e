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
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// spec.ttlSecondsAfterFinished is kube-controller-manager's
// ttl-after-finished controller's business for batch/v1; nothing else
// would do it for our Jobs, so this controller does: once the TTL of a
// finished Job runs out, the Job is deleted in the foreground, its Pods
// first.

// enqueueTTL schedules a look at a finished Job for when its TTL runs out.
func (jm *Controller) enqueueTTL(logger klog.Logger, job *batchv1.Job) {
	left, applies := decide.TTL(job, jm.clock.Now())
	if !applies {
		return
	}
	logger.V(4).Info("Job will be deleted after its TTL", "job", klog.KObj(job), "in", left)
	jm.ttl.AddAfter(keyOf(job), left)
}

// expire deletes the Job of key if its TTL ran out. The cache may be
// behind a user who just raised the TTL, so a live read confirms it first,
// and the delete is conditional on that read.
func (jm *Controller) expire(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return fmt.Errorf("splitting job key %q: %w", key, err)
	}
	cached, err := jm.jobs.get(ns, name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading job %s: %w", key, err)
	}
	if !jm.ttlDue(cached) {
		return nil
	}
	live, err := jm.jobClient.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading job %s before its TTL deletion: %w", key, err)
	}
	if !jm.ttlDue(live) {
		return nil
	}
	foreground := metav1.DeletePropagationForeground
	err = jm.jobClient.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &foreground,
		Preconditions:     &metav1.Preconditions{UID: &live.UID, ResourceVersion: &live.ResourceVersion},
	})
	switch {
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or changed since the read: its update event
		// brings it back here if it still has a TTL.
		return nil
	case err != nil:
		return fmt.Errorf("deleting job %s after its TTL: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted job after its TTL", "job", klog.KObj(live))
	return nil
}

// ttlDue tells whether the Job's TTL ran out; when it has not yet, it
// schedules another look for then.
func (jm *Controller) ttlDue(job *batchv1.Job) bool {
	left, applies := decide.TTL(job, jm.clock.Now())
	if !applies {
		return false
	}
	if left > 0 {
		jm.ttl.AddAfter(keyOf(job), left)
		return false
	}
	return true
}
