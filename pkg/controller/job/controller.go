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
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	// The host cluster's Pods, Events and the work queues.
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
	versioned "github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	jobinformers "github.com/batch-apiserver/batch-apiserver/pkg/generated/informers/externalversions/batch/v1"
)

// The controller's tunables. They carry kube-controller-manager's values and
// are variables so that tests (unit and integration) can shorten them.
var (
	// SyncJobBatchPeriod is how long Pod events of one Job are gathered
	// before the Job is synced.
	SyncJobBatchPeriod = time.Second
	// SyncJobReadyBatchPeriod is how long a change of a Pod's readiness
	// alone waits for the Job's next sync, which counts it in
	// status.ready; any other event of the Job syncs it sooner. Not a
	// kube-controller-manager setting, which syncs after
	// SyncJobBatchPeriod for every Pod event.
	SyncJobReadyBatchPeriod = 5 * time.Second
	// SyncJobPodSpacing is the least time from the start of a Job's sync
	// to the next sync a Pod event of that Job queues. Not a
	// kube-controller-manager setting: see syncStarts.
	SyncJobPodSpacing = 4 * time.Second
	// DefaultJobAPIBackOff is the retry delay after a sync that failed.
	DefaultJobAPIBackOff = time.Second
	// MaxJobAPIBackOff caps the retry delay after repeated failed syncs.
	MaxJobAPIBackOff = time.Minute
	// DefaultJobPodFailureBackOff is the delay before the replacement of a
	// first failed Pod; it doubles with each further failure.
	DefaultJobPodFailureBackOff = 10 * time.Second
	// MaxJobPodFailureBackOff caps the delay before a failed Pod is
	// replaced.
	MaxJobPodFailureBackOff = 10 * time.Minute
	// MaxUncountedPods bounds how many finished Pods one sync records in
	// status.uncountedTerminatedPods, which keeps that list near 20 KB.
	MaxUncountedPods = 500
	// MaxPodCreateDeletePerSync bounds the Pods one sync creates or
	// deletes.
	MaxPodCreateDeletePerSync = 500
	// SyncPodWriteBudget is how long one sync keeps starting Pod
	// requests (creations, deletions, finalizer removals) while other
	// Jobs wait for a worker; what is left goes to the next sync, queued
	// at once. Zero lifts both bounds. Not a kube-controller-manager
	// setting: see writeBudget.
	SyncPodWriteBudget = 4 * time.Second
	// SyncPodWriteBudgetAlone is how long one sync keeps starting Pod
	// requests when no other Job waits for a worker.
	SyncPodWriteBudgetAlone = 12 * time.Second
)

// Config is what the server decides about the controller beyond its
// clients and informers.
type Config struct {
	// DeletePodsOfDeletedJobs makes the controller delete the Pods of a
	// Job that is gone. The host's garbage collector does that for an
	// aggregated server; it cannot for a standalone one, whose Jobs it
	// never sees.
	DeletePodsOfDeletedJobs bool
	// Identity names this batch-apiserver among those sharing the host
	// cluster. Every Pod the controller creates carries it in the
	// batch.ServerIdentityLabel label, and the controller touches no Pod
	// that carries another value (an empty Identity owns the Pods without
	// the label).
	Identity string
}

// componentName is the Event source and the metrics' view of the
// controller, as kube-controller-manager names it.
const componentName = "job-controller"

// Controller runs the Pods of the Jobs whose spec.managedBy is unset or
// kubernetes.io/job-controller. A Controller lives for one leader term: the
// server builds a new one, with new informers, for every term.
type Controller struct {
	kubeClient kubernetes.Interface
	jobClient  versioned.Interface
	cfg        Config
	clock      clock.WithTicker

	jobs        jobCache
	podLister   corelisters.PodLister
	podIndexer  cache.Indexer
	cachesReady []cache.InformerSynced
	// scheduling is nil unless the controller keeps the Jobs' Workloads
	// and PodGroups (ManageWorkloads).
	scheduling *schedulingCaches

	// queue holds Job keys (namespace/name) to sync; orphans holds Pods
	// (or a Job's selector) whose tracking finalizer nobody else removes;
	// ttl holds the keys of finished Jobs waiting for their TTL; external
	// holds the keys of externally managed Jobs to announce.
	queue    workqueue.TypedRateLimitingInterface[string]
	orphans  workqueue.TypedRateLimitingInterface[orphanKey]
	ttl      workqueue.TypedRateLimitingInterface[string]
	external workqueue.TypedRateLimitingInterface[string]

	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	podExpect       *podExpectations
	finalizerExpect *finalizerExpectations
	// finishing holds the Jobs this controller wrote finished whose
	// finished status the informer has not shown yet.
	finishing *uidSet
	// ownWrites holds the resourceVersion of each Job's last status write
	// until the informer shows it, so that no sync starts from an older
	// copy.
	ownWrites *statusWrites
	// refused holds the base version of each Job's last status write
	// refused for a conflict, until the informer shows a newer one.
	refused *refusedWrites
	// nsTerminating holds the Jobs whose Pod creation was refused because
	// their namespace is being deleted.
	nsTerminating *uidSet
	failures      *failureStore
	// starts holds when each running Job's last sync began, which spaces
	// the syncs its Pod events queue.
	starts *syncStarts
}

// eventScheme resolves our Job's kind for the Events recorded on it.
var eventScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(batchv1.AddToScheme(s))
	return s
}()

// NewController returns a Job controller that reads Jobs through
// jobInformer and writes their status with jobClient, and reads and writes
// the Pods of the host cluster through podInformer and kubeClient. Call it
// before the informers start: it registers its handlers and a Pod index.
func NewController(ctx context.Context, podInformer coreinformers.PodInformer, jobInformer jobinformers.JobInformer,
	kubeClient kubernetes.Interface, jobClient versioned.Interface, cfg Config) (*Controller, error) {
	return newController(ctx, podInformer, jobInformer, kubeClient, jobClient, cfg, clock.RealClock{})
}

func newController(ctx context.Context, podInformer coreinformers.PodInformer, jobInformer jobinformers.JobInformer,
	kubeClient kubernetes.Interface, jobClient versioned.Interface, cfg Config, clk clock.WithTicker) (*Controller, error) {
	logger := klog.FromContext(ctx)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	jm := &Controller{
		kubeClient:      kubeClient,
		jobClient:       jobClient,
		cfg:             cfg,
		clock:           clk,
		broadcaster:     broadcaster,
		recorder:        broadcaster.NewRecorder(eventScheme, corev1.EventSource{Component: componentName}),
		podExpect:       newPodExpectations(clk),
		finalizerExpect: newFinalizerExpectations(),
		finishing:       newUIDSet(),
		ownWrites:       newStatusWrites(),
		refused:         newRefusedWrites(),
		nsTerminating:   newUIDSet(),
		failures:        newFailureStore(),
		starts:          newSyncStarts(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](DefaultJobAPIBackOff, MaxJobAPIBackOff),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "job", Clock: clk}),
		orphans: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[orphanKey](DefaultJobAPIBackOff, MaxJobAPIBackOff),
			workqueue.TypedRateLimitingQueueConfig[orphanKey]{Name: "job_orphan_pod", Clock: clk}),
		ttl: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "job_ttl_after_finished", Clock: clk}),
		external: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](DefaultJobAPIBackOff, MaxJobAPIBackOff),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "job_externally_managed", Clock: clk}),
	}
	jobs := jobInformer.Informer()
	if _, err := jobs.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { jm.onJobAdd(logger, obj) },
		UpdateFunc: func(oldObj, newObj any) { jm.onJobUpdate(logger, oldObj, newObj) },
		DeleteFunc: func(obj any) { jm.onJobDelete(logger, obj) },
	}); err != nil {
		return nil, fmt.Errorf("adding the Job event handler: %w", err)
	}
	pods := podInformer.Informer()
	if _, err := pods.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { jm.onPodAdd(logger, obj) },
		UpdateFunc: func(oldObj, newObj any) { jm.onPodUpdate(logger, oldObj, newObj) },
		DeleteFunc: func(obj any) { jm.onPodDelete(logger, obj, true) },
	}); err != nil {
		return nil, fmt.Errorf("adding the Pod event handler: %w", err)
	}
	if err := pods.AddIndexers(cache.Indexers{podOwnerIndex: jm.podOwnerKeys}); err != nil {
		return nil, fmt.Errorf("adding the Pod index by owning Job: %w", err)
	}
	metrics.Register()
	jm.jobs = jobCache{indexer: jobs.GetIndexer()}
	jm.podLister = podInformer.Lister()
	jm.podIndexer = pods.GetIndexer()
	jm.cachesReady = []cache.InformerSynced{jobs.HasSynced, pods.HasSynced}
	return jm, nil
}

// Run waits for the informers, looks for the Pods that Jobs deleted while
// nobody led left behind, and runs workers Job workers and one worker for
// each of the orphan, TTL and announcement queues until ctx is done.
func (jm *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	// Events go to the host cluster, and to the log at level 3.
	jm.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: jm.kubeClient.CoreV1().Events("")})
	jm.broadcaster.StartStructuredLogging(3)
	defer jm.broadcaster.Shutdown()
	defer jm.shutDownQueues()

	logger := klog.FromContext(ctx)
	logger.Info("Starting job controller", "identity", jm.cfg.Identity)
	defer logger.Info("Shutting down job controller")
	if !cache.WaitForNamedCacheSyncWithContext(ctx, jm.cachesReady...) {
		return
	}
	jm.sweepOrphans(logger)

	var wg sync.WaitGroup
	start := func(work func(context.Context)) {
		wg.Go(func() { wait.UntilWithContext(ctx, work, time.Second) })
	}
	for range workers {
		start(func(ctx context.Context) { serve(ctx, jm.queue, "Syncing job", jm.handleJob) })
	}
	start(func(ctx context.Context) { serve(ctx, jm.orphans, "Releasing orphan pods", jm.syncOrphans) })
	start(func(ctx context.Context) { serve(ctx, jm.ttl, "Deleting job after its TTL", jm.expire) })
	start(func(ctx context.Context) {
		serve(ctx, jm.external, "Announcing an externally managed job", jm.announce)
	})
	<-ctx.Done()
	// The workers return once their queue is shut down.
	jm.shutDownQueues()
	wg.Wait()
}

func (jm *Controller) shutDownQueues() {
	jm.queue.ShutDown()
	jm.orphans.ShutDown()
	jm.ttl.ShutDown()
	jm.external.ShutDown()
}

// serve hands the keys of q to handle one at a time until q shuts down.
// A key whose handling failed comes back after the queue's backoff; a
// handled one has its backoff forgotten.
func serve[K comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[K], what string, handle func(context.Context, K) error) {
	for serveOne(ctx, q, what, handle) {
	}
}

// serveOne handles one key of q; it returns false once q is shut down.
func serveOne[K comparable](ctx context.Context, q workqueue.TypedRateLimitingInterface[K], what string, handle func(context.Context, K) error) bool {
	key, shutDown := q.Get()
	if shutDown {
		return false
	}
	defer q.Done(key)
	if err := handle(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, what, "key", key)
		q.AddRateLimited(key)
		return true
	}
	q.Forget(key)
	return true
}
