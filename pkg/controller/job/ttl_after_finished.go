package job

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// The TTL-after-finished policy: what kube-controller-manager's
// ttl-after-finished controller does for batch/v1 Jobs, done here for ours.
// A finished Job with spec.ttlSecondsAfterFinished is deleted (cascading in
// the foreground, as upstream) that many seconds after it finished.

// enqueueTTL schedules the TTL check of a finished Job that has a TTL.
func (jm *Controller) enqueueTTL(logger klog.Logger, job *batchv1.Job) {
	if job.DeletionTimestamp != nil || job.Spec.TTLSecondsAfterFinished == nil {
		return
	}
	remaining, ok := ttlRemaining(job, jm.clock.Now())
	if !ok {
		return
	}
	logger.V(4).Info("Job will be deleted after its TTL", "job", klog.KObj(job), "in", remaining)
	jm.ttlQueue.AddAfter(jobKey(job), remaining)
}

// ttlRemaining returns how long a finished Job with a TTL has left, and
// false when the Job is not finished or has no TTL.
func ttlRemaining(job *batchv1.Job, now time.Time) (time.Duration, bool) {
	if job.Spec.TTLSecondsAfterFinished == nil {
		return 0, false
	}
	cond, finished := finishedCondition(job)
	if !finished {
		return 0, false
	}
	finishAt := cond.LastTransitionTime.Time
	if job.Status.CompletionTime != nil && cond.Type == batchv1.JobComplete {
		finishAt = job.Status.CompletionTime.Time
	}
	expireAt := finishAt.Add(time.Duration(*job.Spec.TTLSecondsAfterFinished) * time.Second)
	return max(expireAt.Sub(now), 0), true
}

func (jm *Controller) ttlWorker(ctx context.Context) {
	for jm.processNextTTLItem(ctx) {
	}
}

func (jm *Controller) processNextTTLItem(ctx context.Context) bool {
	key, quit := jm.ttlQueue.Get()
	if quit {
		return false
	}
	defer jm.ttlQueue.Done(key)
	if err := jm.processTTL(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Deleting job after its TTL", "key", key)
		jm.ttlQueue.AddRateLimited(key)
		return true
	}
	jm.ttlQueue.Forget(key)
	return true
}

// processTTL deletes the Job of key when its TTL expired, checking a live
// copy first so that a TTL changed since the cache saw it is honoured.
func (jm *Controller) processTTL(ctx context.Context, key string) error {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	job, err := jm.jobLister.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if expired, err := jm.ttlExpired(ctx, job); err != nil || !expired {
		return err
	}
	fresh, err := jm.jobClient.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading job %s before its TTL deletion: %w", key, err)
	}
	if expired, err := jm.ttlExpired(ctx, fresh); err != nil || !expired {
		return err
	}
	policy := metav1.DeletePropagationForeground
	err = jm.jobClient.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{
		PropagationPolicy: &policy,
		Preconditions:     &metav1.Preconditions{UID: &fresh.UID, ResourceVersion: &fresh.ResourceVersion},
	})
	if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		// Gone, or changed since read: a later event re-evaluates it.
		return nil
	}
	if err != nil {
		return fmt.Errorf("deleting job %s after its TTL: %w", key, err)
	}
	klog.FromContext(ctx).V(2).Info("Deleted job after its TTL", "job", klog.KObj(fresh))
	return nil
}

// ttlExpired tells whether the Job's TTL expired; when it has not, it
// schedules another check for when it will.
func (jm *Controller) ttlExpired(ctx context.Context, job *batchv1.Job) (bool, error) {
	if job.DeletionTimestamp != nil || managedByExternalController(job) != nil {
		return false, nil
	}
	remaining, ok := ttlRemaining(job, jm.clock.Now())
	if !ok {
		return false, nil
	}
	if remaining > 0 {
		jm.ttlQueue.AddAfter(jobKey(job), remaining)
		return false, nil
	}
	return true, nil
}
