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
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
)

// The act side: one sync of one Job. It gathers the Snapshot, lets decide
// plan, and carries the plan out through the clients, step by step,
// feeding each step's outcome back to decide. What to do is never decided
// here, only how to do it safely: expectations, slow start, the order of
// the two status writes around the finalizer removals.

// options are the decide.Options of the package tunables, read at each
// sync so that tests may change them.
func options() decide.Options {
	return decide.Options{
		MaxUncountedPods:     MaxUncountedPods,
		MaxPodChangesPerSync: MaxPodCreateDeletePerSync,
		PodBackoff:           DefaultJobPodFailureBackOff,
		MaxPodBackoff:        MaxJobPodFailureBackOff,
		BatchPeriod:          SyncJobBatchPeriod,
	}
}

// syncJob syncs the Job of key. The queue never hands the same key to two
// workers at once. An error sends the key back with backoff.
func (jm *Controller) syncJob(ctx context.Context, key string) (err error) {
	logger := klog.FromContext(ctx)
	began := jm.clock.Now()
	// What the sync did, for the log at level 4: enough to tell a sync
	// that changed something from one that found nothing to do.
	var did struct {
		created, deleted, finalizersRemoved, statusWrites int
		fromOwnWrite                                      bool
	}
	var budget *writeBudget
	defer func() {
		logger.V(4).Info("Finished syncing job", "key", key, "elapsed", jm.clock.Since(began),
			"created", did.created, "deleted", did.deleted, "finalizersRemoved", did.finalizersRemoved,
			"statusWrites", did.statusWrites, "fromOwnWrite", did.fromOwnWrite, "budgetCut", budget != nil && budget.cut)
	}()

	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return fmt.Errorf("splitting job key %q: %w", key, err)
	}
	cached, err := jm.jobs.get(ns, name)
	if apierrors.IsNotFound(err) {
		jm.podExpect.forget(key)
		jm.finalizerExpect.forget(key)
		jm.failures.forget(key)
		jm.starts.forget(key)
		jm.ownWrites.forget(key, "")
		jm.refused.forget(key)
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading job %s: %w", key, err)
	}
	// A queued key may now name a new Job of another controller.
	if jm.leftToOthers(logger, cached) {
		return nil
	}
	if decide.IsFinished(cached) {
		jm.failures.forget(key)
		jm.starts.forget(key)
		jm.finishing.remove(cached.UID)
		jm.ownWrites.forget(key, cached.UID)
		return nil
	}
	if jm.finishing.has(cached.UID) {
		// Syncing the stale copy could undo the finish this controller
		// has just written.
		logger.V(2).Info("Skipping sync of a job finished by this controller until the informer shows it", "job", klog.KObj(cached))
		return nil
	}
	base := cached
	if written := jm.ownWrites.newer(key, cached); written != nil {
		// The informer has not shown the status this controller wrote
		// last. That write returned the whole Job, newer than the cached
		// one: the sync starts from it, instead of working from old
		// counts into a conflicting write, or waiting for the informer.
		logger.V(4).Info("Syncing a job from the controller's own last status write, ahead of the informer",
			"job", klog.KObj(cached), "cachedResourceVersion", cached.ResourceVersion, "writtenResourceVersion", written.ResourceVersion)
		base = written
		did.fromOwnWrite = true
	}
	job := base.DeepCopy()
	jm.starts.note(key, began)

	budget = newWriteBudget(jm.clock, began, func() bool {
		// Keys ready for a worker; not this Job's, which waits beside
		// the queue while it is being synced.
		return jm.queue.Len() > 0
	})
	defer func() {
		if budget.cut && err == nil {
			// The rest of the work, at once: nothing else may bring the
			// Job back (a finalizer left on has no event to come).
			jm.queue.Add(key)
		}
	}()
	action, counted := metrics.JobSyncActionReconciling, true
	defer func() {
		if !counted {
			return
		}
		result := "success"
		if err != nil {
			result = "error"
		}
		mode := decide.CompletionModeLabel(job)
		metrics.JobSyncDurationSeconds.WithLabelValues(mode, result, action).Observe(jm.clock.Since(began).Seconds())
		metrics.JobSyncNum.WithLabelValues(mode, result, action).Inc()
	}()

	// Read before the Pods: a Pod arriving in between then only delays
	// the sync to its own event, it is never counted twice.
	met := jm.podExpect.metOrHold(key)
	if !met {
		creations, deletions, _ := jm.podExpect.counts(key)
		logger.V(4).Info("Waiting for the pod changes of the last sync", "job", klog.KObj(job), "creations", creations, "deletions", deletions)
	}
	pods, err := jm.claimPods(ctx, job)
	if err != nil {
		return err
	}
	// Before the Pods: the new ones join the PodGroup.
	group, err := jm.ensureScheduling(ctx, job, pods)
	if err != nil {
		return fmt.Errorf("ensuring Workload and PodGroup for job %s: %w", key, err)
	}
	plan := decide.Decide(decide.Snapshot{
		Job:                  job,
		Pods:                 pods,
		Now:                  jm.clock.Now(),
		ExpectationsMet:      met,
		FinalizersInFlight:   jm.finalizerExpect.inFlight(key),
		Failures:             jm.failures.get(key),
		NamespaceTerminating: jm.nsTerminating.has(job.UID),
		SchedulingGroup:      group,
		Options:              options(),
	})
	// No action: the Job is one this controller does not run (an unknown
	// completion mode), which kube-controller-manager does not count.
	action, counted = plan.SyncAction, plan.SyncAction != ""
	jm.record(job, plan.Events)

	outcome, podErr := jm.applyPodChanges(ctx, job, key, plan, budget)
	did.created, did.deleted = outcome.Created, countTrue(outcome.Deleted)
	if plan.RequeueAfter > 0 {
		logger.V(4).Info("Requeueing job", "key", key, "after", plan.RequeueAfter)
		jm.queue.AddAfter(key, plan.RequeueAfter)
	}

	tracking := plan.AfterPods(outcome)
	jm.record(job, tracking.Events)
	if tracking.Capped {
		// The finished Pods past the cap wait for the next sync, a batch
		// period from now, as kube-controller-manager's own writes bring
		// it about there.
		defer func() {
			if err == nil {
				// Work left undone: not spaced.
				jm.enqueueAfter(logger, job, SyncJobBatchPeriod, "finished pods left past the uncounted cap")
			}
		}()
	}
	current := job
	if tracking.Interim != nil {
		if current, err = jm.writeStatus(ctx, job, tracking.Interim); err != nil {
			return fmt.Errorf("tracking status of job %s: %w", key, err)
		}
		did.statusWrites++
		// The failures of this sync are in the status now: a retry will
		// not see them as new.
		jm.failures.put(key, plan.Failures)
		countFinishedPods(job, &job.Status, &current.Status)
	}
	for action, n := range tracking.PolicyActions {
		metrics.PodFailuresHandledByFailurePolicy.WithLabelValues(string(action)).Add(float64(n))
	}

	removed, rmErr := jm.removeFinalizers(ctx, key, tracking.RemoveFinalizers, budget)
	did.finalizersRemoved = removed.Len()
	// A finalizer still on, because its request failed or because the
	// budget left it to the next sync, holds the Job's end back: an
	// Indexed Job has counted its succeeded Pods by index already.
	final := tracking.AfterFinalizers(removed, removed.Len() < len(tracking.RemoveFinalizers))
	if final.Status != nil {
		written, err := jm.writeStatus(ctx, current, final.Status)
		if err != nil {
			return fmt.Errorf("tracking status of job %s: %w", key, err)
		}
		did.statusWrites++
		countFinishedPods(job, &current.Status, &written.Status)
		if final.Finished != nil {
			jm.finishing.add(job.UID)
			countFinishedJob(job, final.Finished)
		}
		current = written
	}
	jm.record(current, final.Events)

	if rmErr != nil {
		return fmt.Errorf("tracking status of job %s: %w", key, rmErr)
	}
	return podErr
}

// writeStatus writes status as the Job's through the status subresource of
// our own API (never storage), so that the API's status rules judge the
// controller too. job carries the resourceVersion the write is based on.
// The Job it returns is remembered until the informer shows it.
func (jm *Controller) writeStatus(ctx context.Context, job *batchv1.Job, status *batchv1.JobStatus) (*batchv1.Job, error) {
	next := job.DeepCopy()
	next.Status = *status.DeepCopy()
	key := keyOf(job)
	jm.ownWrites.begin(key)
	written, err := jm.jobClient.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, next, metav1.UpdateOptions{})
	if err != nil {
		jm.ownWrites.end(key, nil)
		if apierrors.IsConflict(err) {
			jm.refused.note(key, job)
			return nil, &staleWriteError{err: fmt.Errorf("writing status: %w", err)}
		}
		return nil, fmt.Errorf("writing status: %w", err)
	}
	// Kept as the informer keeps Jobs: without managedFields, which the
	// status writes based on it then leave as the server has them.
	written.ManagedFields = nil
	if jm.ownWrites.end(key, written) {
		// Someone else's status write came in while ours was in flight.
		jm.enqueueBatched(klog.FromContext(ctx), written, "job status changed during a status write")
	}
	return written, nil
}

// countTrue counts the true values of bs.
func countTrue(bs []bool) int {
	n := 0
	for _, b := range bs {
		if b {
			n++
		}
	}
	return n
}

// record records decide's Events on the Job.
func (jm *Controller) record(job *batchv1.Job, events []decide.Event) {
	for _, e := range events {
		jm.recorder.Event(job, e.Type, e.Reason, e.Message)
	}
}

// applyPodChanges carries out the plan's deletions, then its creations,
// as far as the budget goes.
func (jm *Controller) applyPodChanges(ctx context.Context, job *batchv1.Job, key string, plan decide.Plan, budget *writeBudget) (decide.PodOutcome, error) {
	deleted, notFound, delErr := jm.deletePods(ctx, job, key, plan.Deletions, budget)
	created, createErr := jm.createPods(ctx, job, key, plan.Creations, plan.CreationReason, budget)
	return decide.PodOutcome{Deleted: deleted, NotFound: notFound, Created: created}, errors.Join(delErr, createErr)
}

// deletePods deletes Pods in parallel. The Pods of a suspended or
// scaled-down Job lose their finalizer first, as they are never counted;
// those of an ending Job keep it until the status counts them. Only the
// former are expected back from the informer, as kube-controller-manager
// does. The i-th results tell whether the i-th Pod is gone or going, and
// whether it was found gone already; a deletion the budget left for the
// next sync is neither.
func (jm *Controller) deletePods(ctx context.Context, job *batchv1.Job, key string, deletions []decide.PodDeletion, budget *writeBudget) (done, notFound []bool, err error) {
	if len(deletions) == 0 {
		return nil, nil, nil
	}
	expected := 0
	for _, d := range deletions {
		if d.Reason != decide.DeleteFinishing {
			expected++
		}
	}
	if expected > 0 {
		jm.podExpect.expect(key, 0, expected)
	}
	done, notFound = make([]bool, len(deletions)), make([]bool, len(deletions))
	errs := make([]error, len(deletions))
	ran := budget.forEach(len(deletions), func(i int) {
		d := deletions[i]
		err := jm.deleteOne(ctx, job, d)
		if err != nil && d.Reason != decide.DeleteFinishing {
			// The informer will show no deletion for this one.
			jm.podExpect.observe(key, 0, 1)
		}
		notFound[i] = apierrors.IsNotFound(err)
		if err == nil || notFound[i] {
			done[i] = true
			return
		}
		errs[i] = err
	})
	for _, d := range deletions[ran:] {
		if d.Reason != decide.DeleteFinishing {
			jm.podExpect.observe(key, 0, 1)
		}
	}
	return done, notFound, errors.Join(errs...)
}

func (jm *Controller) deleteOne(ctx context.Context, job *batchv1.Job, d decide.PodDeletion) error {
	if d.RemoveFinalizer {
		if err := jm.removeFinalizer(ctx, d.Pod); err != nil {
			return err
		}
	}
	return jm.deletePod(ctx, job, d.Pod)
}

// createPods creates Pods in slow-start batches of 1, 2, 4, ...: when the
// host refuses them all (quota, admission), the sync costs one request, not
// hundreds. It stops after the first batch with a failure, or when the
// budget is spent. It returns how many Pods count as created.
func (jm *Controller) createPods(ctx context.Context, job *batchv1.Job, key string, creations []decide.PodCreation, reason string, budget *writeBudget) (int, error) {
	total := len(creations)
	if total == 0 {
		return 0, nil
	}
	logger := klog.FromContext(ctx)
	jm.podExpect.expect(key, total, 0)
	var (
		mu                       sync.Mutex
		created, refused, failed int
		errs                     []error
	)
	next := 0
	for size := 1; next < total; size *= 2 {
		batch := creations[next:min(next+size, total)]
		failedBefore := failed
		ran := budget.forEach(len(batch), func(i int) {
			err := jm.createPod(ctx, job, batch[i])
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				created++
			case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
				// Every create fails alike from now on and the Job goes
				// with its namespace. As kube-controller-manager, the Pod
				// is not taken for a failure; the Job is told, so that it
				// stops holding failed Pods for replacements that cannot
				// come.
				refused++
				if jm.nsTerminating.add(job.UID) {
					jm.enqueueBatched(logger, job, "namespace terminating")
				}
			default:
				jm.podExpect.observe(key, 1, 0)
				failed++
				errs = append(errs, fmt.Errorf("creating pod for job %s: %w", key, err))
			}
		})
		next += ran
		if next == total {
			break
		}
		if failed > failedBefore || ran < len(batch) {
			skipped := total - next
			if ran < len(batch) {
				logger.V(4).Info("Sync budget spent: leaving the remaining pods to the next sync", "job", klog.KObj(job), "left", skipped)
			} else {
				logger.V(2).Info("Slow-start failure: skipping the remaining pods", "job", klog.KObj(job), "skipped", skipped)
			}
			jm.podExpect.observe(key, skipped, 0)
			break
		}
	}
	countCreations(reason, created, failed)
	return created + refused, errors.Join(errs...)
}

// removeFinalizers takes the tracking finalizer off the Pods in parallel,
// as far as the budget goes. It returns the Pods whose finalizer is gone
// (a Pod that is gone counts).
func (jm *Controller) removeFinalizers(ctx context.Context, key string, pods []*corev1.Pod, budget *writeBudget) (sets.Set[types.UID], error) {
	gone := sets.New[types.UID]()
	if len(pods) == 0 {
		return gone, nil
	}
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	jm.finalizerExpect.expect(key, uids...)
	var (
		mu   sync.Mutex
		errs []error
	)
	ran := budget.forEach(len(pods), func(i int) {
		pod := pods[i]
		err := jm.removeFinalizer(ctx, pod)
		if err != nil {
			// The informer will show no removal for this one.
			jm.finalizerExpect.observe(key, pod.UID)
		}
		mu.Lock()
		defer mu.Unlock()
		if err == nil || apierrors.IsNotFound(err) {
			gone.Insert(pod.UID)
			return
		}
		errs = append(errs, err)
	})
	for _, pod := range pods[ran:] {
		jm.finalizerExpect.observe(key, pod.UID)
	}
	return gone, errors.Join(errs...)
}
