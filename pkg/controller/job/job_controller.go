package job

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
	versioned "github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	jobinformers "github.com/batch-apiserver/batch-apiserver/pkg/generated/informers/externalversions/batch/v1"
	joblisters "github.com/batch-apiserver/batch-apiserver/pkg/generated/listers/batch/v1"
)

// controllerKind is the kind of the Pods' controller ownerReference.
var controllerKind = batchv1.SchemeGroupVersion.WithKind("Job")

// Tunables, as upstream's; variables so that tests can shorten them.
var (
	// SyncJobBatchPeriod batches the syncs that Pod events trigger.
	SyncJobBatchPeriod = time.Second
	// DefaultJobAPIBackOff is the first retry delay after a failed sync.
	DefaultJobAPIBackOff = time.Second
	// MaxJobAPIBackOff caps the retry delay after failed syncs.
	MaxJobAPIBackOff = time.Minute
	// DefaultJobPodFailureBackOff is the first delay before a failed Pod is replaced.
	DefaultJobPodFailureBackOff = 10 * time.Second
	// MaxJobPodFailureBackOff caps the delay before a failed Pod is replaced.
	MaxJobPodFailureBackOff = 10 * time.Minute
	// MaxUncountedPods keeps status.uncountedTerminatedPods roughly under 20 KB.
	MaxUncountedPods = 500
	// MaxPodCreateDeletePerSync bounds the Pods one sync creates or deletes.
	MaxPodCreateDeletePerSync = 500
)

// controllerUIDIndex indexes Pods by the UID of their controlling Job.
const controllerUIDIndex = "batch.jobs.dev/controller-uid"

// Config is what the server decides about the controller beyond its clients.
type Config struct {
	// DeletePodsOfDeletedJobs makes the controller delete the Pods of a Job
	// that is gone, because the host cluster's garbage collector cannot see
	// our API (standalone mode with --kubeconfig).
	DeletePodsOfDeletedJobs bool
}

// orphanPodKey names either one Pod or every Pod of a selector in a namespace
// whose tracking finalizer may have to be removed.
type orphanPodKey struct {
	namespace string
	// name of one Pod, or empty when selector is set.
	name     string
	selector string
}

// Controller runs the Pods of Jobs whose spec.managedBy is unset or
// kubernetes.io/job-controller.
type Controller struct {
	kubeClient kubernetes.Interface
	jobClient  versioned.Interface
	podControl podControl
	cfg        Config

	// updateStatusHandler and syncHandler are replaced by tests.
	updateStatusHandler func(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error)
	syncHandler         func(ctx context.Context, key string) error

	podStoreSynced cache.InformerSynced
	jobStoreSynced cache.InformerSynced

	// expectations holds the Pod creations and deletions each Job still
	// expects to observe in the informer.
	expectations *controllerExpectations
	// finalizerExpectations holds the Pods whose tracking finalizer removal
	// is not yet observed.
	finalizerExpectations *uidTrackingExpectations

	jobLister  joblisters.JobLister
	podStore   corelisters.PodLister
	podIndexer cache.Indexer

	queue       workqueue.TypedRateLimitingInterface[string]
	orphanQueue workqueue.TypedRateLimitingInterface[orphanPodKey]
	ttlQueue    workqueue.TypedRateLimitingInterface[string]

	broadcaster record.EventBroadcaster
	recorder    record.EventRecorder

	clock clock.WithTicker

	podBackoffStore *backoffStore

	// finishedJobExpectations holds the UIDs of Jobs this controller marked
	// finished whose update the informer has not delivered yet.
	finishedJobExpectations sync.Map
	// externallyManaged holds the UIDs of Jobs of other controllers already
	// counted and announced with an ExternallyManaged Event.
	externallyManaged sync.Map
	// namespaceTerminating holds the UIDs of Jobs whose Pod creation was
	// refused because their namespace is being deleted.
	namespaceTerminating sync.Map
}

// NewController returns a Job controller reading Jobs through jobInformer and
// writing them with jobClient, and managing Pods through podInformer and
// kubeClient in the host cluster. Call it before the informers start.
func NewController(ctx context.Context, podInformer coreinformers.PodInformer, jobInformer jobinformers.JobInformer,
	kubeClient kubernetes.Interface, jobClient versioned.Interface, cfg Config) (*Controller, error) {
	return newControllerWithClock(ctx, podInformer, jobInformer, kubeClient, jobClient, cfg, clock.RealClock{})
}

// eventScheme knows our Job, so that Events can reference it.
var eventScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(batchv1.AddToScheme(s))
	return s
}()

func newControllerWithClock(ctx context.Context, podInformer coreinformers.PodInformer, jobInformer jobinformers.JobInformer,
	kubeClient kubernetes.Interface, jobClient versioned.Interface, cfg Config, clk clock.WithTicker) (*Controller, error) {
	logger := klog.FromContext(ctx)
	broadcaster := record.NewBroadcaster(record.WithContext(ctx))
	recorder := broadcaster.NewRecorder(eventScheme, corev1.EventSource{Component: "job-controller"})

	jm := &Controller{
		kubeClient:            kubeClient,
		jobClient:             jobClient,
		podControl:            newRealPodControl(kubeClient, recorder),
		cfg:                   cfg,
		expectations:          newControllerExpectations(clk),
		finalizerExpectations: newUIDTrackingExpectations(),
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](DefaultJobAPIBackOff, MaxJobAPIBackOff),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "job", Clock: clk}),
		orphanQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[orphanPodKey](DefaultJobAPIBackOff, MaxJobAPIBackOff),
			workqueue.TypedRateLimitingQueueConfig[orphanPodKey]{Name: "job_orphan_pod", Clock: clk}),
		ttlQueue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "job_ttl_after_finished", Clock: clk}),
		broadcaster:     broadcaster,
		recorder:        recorder,
		clock:           clk,
		podBackoffStore: newBackoffStore(),
	}

	if _, err := jobInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { jm.addJob(logger, obj) },
		UpdateFunc: func(oldObj, newObj interface{}) { jm.updateJob(logger, oldObj, newObj) },
		DeleteFunc: func(obj interface{}) { jm.deleteJob(logger, obj) },
	}); err != nil {
		return nil, fmt.Errorf("adding Job event handler: %w", err)
	}
	jm.jobLister = jobInformer.Lister()
	jm.jobStoreSynced = jobInformer.Informer().HasSynced

	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj interface{}) { jm.addPod(logger, obj) },
		UpdateFunc: func(oldObj, newObj interface{}) { jm.updatePod(logger, oldObj, newObj) },
		DeleteFunc: func(obj interface{}) { jm.deletePod(logger, obj, true) },
	}); err != nil {
		return nil, fmt.Errorf("adding Pod event handler: %w", err)
	}
	if err := podInformer.Informer().AddIndexers(cache.Indexers{controllerUIDIndex: indexByJobUID}); err != nil {
		return nil, fmt.Errorf("adding Pod index by Job UID: %w", err)
	}
	jm.podStore = podInformer.Lister()
	jm.podStoreSynced = podInformer.Informer().HasSynced
	jm.podIndexer = podInformer.Informer().GetIndexer()

	jm.updateStatusHandler = jm.updateJobStatus
	jm.syncHandler = jm.syncJob

	metrics.Register()
	return jm, nil
}

// indexByJobUID indexes a Pod by the UID of its controller when that is a
// Job of our group; orphans are indexed under "".
func indexByJobUID(obj interface{}) ([]string, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil
	}
	ref := metav1.GetControllerOf(pod)
	if ref == nil {
		return []string{""}, nil
	}
	if !isOurJobRef(ref) {
		return nil, nil
	}
	return []string{string(ref.UID)}, nil
}

// isOurJobRef tells whether an ownerReference points to a Job of
// batch.jobs.dev (any version), not to a batch/v1 Job of the host.
func isOurJobRef(ref *metav1.OwnerReference) bool {
	if ref.Kind != controllerKind.Kind {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == batchv1.SchemeGroupVersion.Group
}

// Run starts the workers and blocks until ctx is done.
func (jm *Controller) Run(ctx context.Context, workers int) {
	defer utilruntime.HandleCrash()
	logger := klog.FromContext(ctx)

	jm.broadcaster.StartStructuredLogging(3)
	jm.broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: jm.kubeClient.CoreV1().Events("")})
	defer jm.broadcaster.Shutdown()

	defer jm.queue.ShutDown()
	defer jm.orphanQueue.ShutDown()
	defer jm.ttlQueue.ShutDown()

	logger.Info("Starting job controller")
	defer logger.Info("Shutting down job controller")

	if !cache.WaitForNamedCacheSyncWithContext(ctx, jm.podStoreSynced, jm.jobStoreSynced) {
		return
	}

	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Go(func() { wait.UntilWithContext(ctx, jm.worker, time.Second) })
	}
	wg.Go(func() { wait.UntilWithContext(ctx, jm.orphanWorker, time.Second) })
	wg.Go(func() { wait.UntilWithContext(ctx, jm.ttlWorker, time.Second) })
	<-ctx.Done()
	jm.queue.ShutDown()
	jm.orphanQueue.ShutDown()
	jm.ttlQueue.ShutDown()
	wg.Wait()
}

// jobKey is the queue key of a Job: namespace/name.
func jobKey(job *batchv1.Job) string {
	return cache.MetaObjectToName(job).String()
}

// getPodJobs returns the Jobs whose selector matches an orphan Pod.
func (jm *Controller) getPodJobs(pod *corev1.Pod) []*batchv1.Job {
	if len(pod.Labels) == 0 {
		return nil
	}
	jobs, err := jm.jobLister.Jobs(pod.Namespace).List(labels.Everything())
	if err != nil {
		return nil
	}
	var matching []*batchv1.Job
	for _, job := range jobs {
		selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
		if err != nil || selector.Empty() || !selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		matching = append(matching, job)
	}
	return matching
}

// resolveControllerRef returns the Job a controller reference points to,
// or nil when it is not one of our Jobs or that Job is gone.
func (jm *Controller) resolveControllerRef(namespace string, ref *metav1.OwnerReference) *batchv1.Job {
	if !isOurJobRef(ref) {
		return nil
	}
	job, err := jm.jobLister.Jobs(namespace).Get(ref.Name)
	if err != nil || job.UID != ref.UID {
		return nil
	}
	return job
}

// addPod observes a Pod creation and wakes up its Job.
func (jm *Controller) addPod(logger klog.Logger, obj interface{}) {
	pod := obj.(*corev1.Pod)
	recordFinishedPodWithTrackingFinalizer(nil, pod)
	if pod.DeletionTimestamp != nil {
		// A Pod seen for the first time already being deleted (after a
		// restart) is no creation to observe.
		jm.deletePod(logger, pod, false)
		return
	}
	if ref := metav1.GetControllerOf(pod); ref != nil {
		job := jm.resolveControllerRef(pod.Namespace, ref)
		if job == nil || managedByExternalController(job) != nil {
			return
		}
		key := jobKey(job)
		jm.expectations.creationObserved(logger, key)
		jm.enqueueSyncJobBatched(logger, job)
		return
	}
	if hasJobTrackingFinalizer(pod) {
		jm.enqueueOrphanPod(pod, false)
	}
	for _, job := range jm.getPodJobs(pod) {
		if managedByExternalController(job) == nil {
			jm.enqueueSyncJobBatched(logger, job)
		}
	}
}

// updatePod wakes up the Jobs a Pod belongs, or belonged, to.
func (jm *Controller) updatePod(logger klog.Logger, old, cur interface{}) {
	curPod := cur.(*corev1.Pod)
	oldPod := old.(*corev1.Pod)
	recordFinishedPodWithTrackingFinalizer(oldPod, curPod)
	if curPod.ResourceVersion == oldPod.ResourceVersion {
		return
	}
	if curPod.DeletionTimestamp != nil {
		// A graceful deletion: the Job may replace the Pod now rather than
		// when the kubelet is done with it.
		jm.deletePod(logger, curPod, false)
		return
	}

	finalizerRemoved := !hasJobTrackingFinalizer(curPod)
	curRef := metav1.GetControllerOf(curPod)
	oldRef := metav1.GetControllerOf(oldPod)
	refChanged := !reflect.DeepEqual(curRef, oldRef)
	if refChanged && oldRef != nil {
		if job := jm.resolveControllerRef(oldPod.Namespace, oldRef); job != nil && managedByExternalController(job) == nil {
			if finalizerRemoved {
				jm.finalizerExpectations.finalizerRemovalObserved(logger, jobKey(job), curPod.UID)
			}
			jm.enqueueSyncJobBatched(logger, job)
		}
	}
	if curRef != nil {
		job := jm.resolveControllerRef(curPod.Namespace, curRef)
		if job == nil || managedByExternalController(job) != nil {
			return
		}
		if finalizerRemoved {
			jm.finalizerExpectations.finalizerRemovalObserved(logger, jobKey(job), curPod.UID)
		}
		jm.enqueueSyncJobBatched(logger, job)
		return
	}
	if hasJobTrackingFinalizer(curPod) {
		jm.enqueueOrphanPod(curPod, false)
	}
	if refChanged || !reflect.DeepEqual(curPod.Labels, oldPod.Labels) {
		for _, job := range jm.getPodJobs(curPod) {
			if managedByExternalController(job) == nil {
				jm.enqueueSyncJobBatched(logger, job)
			}
		}
	}
}

// deletePod observes a Pod deletion (final) or deletion request and wakes
// up its Job. obj may be a tombstone.
func (jm *Controller) deletePod(logger klog.Logger, obj interface{}, final bool) {
	pod, ok := obj.(*corev1.Pod)
	if final {
		recordFinishedPodWithTrackingFinalizer(pod, nil)
	}
	if !ok {
		tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			utilruntime.HandleError(fmt.Errorf("couldn't get object from tombstone %+v", obj))
			return
		}
		pod, ok = tombstone.Obj.(*corev1.Pod)
		if !ok {
			utilruntime.HandleError(fmt.Errorf("tombstone contained object that is not a Pod %+v", obj))
			return
		}
	}
	ref := metav1.GetControllerOf(pod)
	hasFinalizer := hasJobTrackingFinalizer(pod)
	if ref == nil {
		if hasFinalizer {
			jm.enqueueOrphanPod(pod, false)
		}
		return
	}
	if !isOurJobRef(ref) {
		return
	}
	job := jm.resolveControllerRef(pod.Namespace, ref)
	if job != nil && managedByExternalController(job) != nil {
		return
	}
	if job == nil || isJobFinished(job) {
		// syncJob will not remove this finalizer.
		if hasFinalizer {
			jm.enqueueOrphanPod(pod, false)
		}
		return
	}
	key := jobKey(job)
	jm.expectations.deletionObserved(logger, key)
	if final || !hasFinalizer {
		jm.finalizerExpectations.finalizerRemovalObserved(logger, key, pod.UID)
	}
	jm.enqueueSyncJobBatched(logger, job)
}

// observeExternallyManaged counts a Job of another controller once and tells
// its owner, with one Event, that this controller leaves it alone. It
// returns whether the Job is managed by another controller.
func (jm *Controller) observeExternallyManaged(logger klog.Logger, job *batchv1.Job) bool {
	name := managedByExternalController(job)
	if name == nil {
		return false
	}
	if _, seen := jm.externallyManaged.LoadOrStore(job.UID, struct{}{}); !seen {
		metrics.JobByExternalControllerTotal.WithLabelValues(*name).Inc()
		jm.recorder.Eventf(job, corev1.EventTypeNormal, "ExternallyManaged",
			"Job is managed by %q, not by %s: the Job controller creates no Pods and writes no status for it", *name, batch.JobControllerName)
		logger.V(2).Info("Skipping Job managed by an external controller", "job", klog.KObj(job), "controllerName", *name)
	}
	return true
}

func (jm *Controller) addJob(logger klog.Logger, obj interface{}) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return
	}
	if jm.observeExternallyManaged(logger, job) {
		return
	}
	jm.enqueueSyncJobImmediately(logger, job)
	jm.enqueueTTL(logger, job)
}

func (jm *Controller) updateJob(logger klog.Logger, old, cur interface{}) {
	oldJob := old.(*batchv1.Job)
	curJob := cur.(*batchv1.Job)
	if jm.observeExternallyManaged(logger, curJob) {
		return
	}
	key := jobKey(curJob)
	if isJobFinished(curJob) {
		// Finalizers should be gone before a Job is finished; this is a
		// backup for Pods that still have one.
		jm.enqueueLabelSelector(curJob)
		jm.enqueueTTL(logger, curJob)
		return
	}
	if curJob.Generation == oldJob.Generation {
		// Status updates (typically from Pod events) are batched.
		jm.enqueueSyncJobBatched(logger, curJob)
	} else {
		jm.enqueueSyncJobImmediately(logger, curJob)
	}
	// A changed activeDeadlineSeconds needs its own resync.
	if curJob.Status.StartTime != nil && curJob.Spec.ActiveDeadlineSeconds != nil {
		oldADS := oldJob.Spec.ActiveDeadlineSeconds
		if oldADS == nil || *oldADS != *curJob.Spec.ActiveDeadlineSeconds {
			passed := jm.clock.Since(curJob.Status.StartTime.Time)
			total := time.Duration(*curJob.Spec.ActiveDeadlineSeconds) * time.Second
			jm.queue.AddAfter(key, total-passed)
		}
	}
}

// deleteJob forgets a Job and releases (or deletes) the Pods that still
// carry its tracking finalizer.
func (jm *Controller) deleteJob(logger klog.Logger, obj interface{}) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		tombstone, ok := obj.(cache.DeletedFinalStateUnknown)
		if !ok {
			utilruntime.HandleError(fmt.Errorf("couldn't get object from tombstone %+v", obj))
			return
		}
		job, ok = tombstone.Obj.(*batchv1.Job)
		if !ok {
			utilruntime.HandleError(fmt.Errorf("tombstone contained object that is not a Job %+v", obj))
			return
		}
	}
	if _, external := jm.externallyManaged.LoadAndDelete(job.UID); external {
		return
	}
	jm.enqueueSyncJobImmediately(logger, job)
	jm.finishedJobExpectations.Delete(job.UID)
	jm.namespaceTerminating.Delete(job.UID)
	jm.enqueueLabelSelector(job)
	key := jobKey(job)
	jm.expectations.deleteExpectations(logger, key)
	if err := jm.podBackoffStore.removeBackoffRecord(key); err != nil {
		utilruntime.HandleError(fmt.Errorf("removing backoff record of %s: %w", key, err))
	}
}

func (jm *Controller) enqueueLabelSelector(job *batchv1.Job) {
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		utilruntime.HandleError(fmt.Errorf("job %s has an invalid label selector: %w", klog.KObj(job), err))
		return
	}
	jm.orphanQueue.Add(orphanPodKey{namespace: job.Namespace, selector: selector.String()})
}

func (jm *Controller) enqueueSyncJobImmediately(logger klog.Logger, job *batchv1.Job) {
	jm.enqueueSyncJobInternal(logger, job, 0)
}

func (jm *Controller) enqueueSyncJobBatched(logger klog.Logger, job *batchv1.Job) {
	jm.enqueueSyncJobInternal(logger, job, SyncJobBatchPeriod)
}

// enqueueSyncJobWithDelay delays a sync by at least the batching period; it
// is how delayed Pod re-creations come back.
func (jm *Controller) enqueueSyncJobWithDelay(logger klog.Logger, job *batchv1.Job, delay time.Duration) {
	jm.enqueueSyncJobInternal(logger, job, max(delay, SyncJobBatchPeriod))
}

func (jm *Controller) enqueueSyncJobInternal(logger klog.Logger, job *batchv1.Job, delay time.Duration) {
	key := jobKey(job)
	logger.V(4).Info("Enqueueing job", "key", key, "delay", delay)
	jm.queue.AddAfter(key, delay)
}

func (jm *Controller) enqueueOrphanPod(pod *corev1.Pod, backoff bool) {
	key := orphanPodKey{namespace: pod.Namespace, name: pod.Name}
	if backoff {
		jm.orphanQueue.AddRateLimited(key)
	} else {
		jm.orphanQueue.Add(key)
	}
}

func (jm *Controller) worker(ctx context.Context) {
	for jm.processNextWorkItem(ctx) {
	}
}

func (jm *Controller) processNextWorkItem(ctx context.Context) bool {
	key, quit := jm.queue.Get()
	if quit {
		return false
	}
	defer jm.queue.Done(key)
	if err := jm.syncHandler(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing job", "key", key)
		jm.queue.AddRateLimited(key)
		return true
	}
	jm.queue.Forget(key)
	return true
}

func (jm *Controller) orphanWorker(ctx context.Context) {
	for jm.processNextOrphanPod(ctx) {
	}
}

func (jm *Controller) processNextOrphanPod(ctx context.Context) bool {
	key, quit := jm.orphanQueue.Get()
	if quit {
		return false
	}
	defer jm.orphanQueue.Done(key)
	if err := jm.syncOrphanPod(ctx, key); err != nil {
		utilruntime.HandleErrorWithContext(ctx, err, "Syncing orphan pod", "namespace", key.namespace, "name", key.name, "selector", key.selector)
		jm.orphanQueue.AddRateLimited(key)
		return true
	}
	jm.orphanQueue.Forget(key)
	return true
}

// syncOrphanPod removes the tracking finalizer from Pods no running Job
// tracks any more.
func (jm *Controller) syncOrphanPod(ctx context.Context, key orphanPodKey) error {
	if key.selector == "" {
		pod, err := jm.podStore.Pods(key.namespace).Get(key.name)
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return err
		}
		return jm.handleSingleOrphanPod(ctx, pod)
	}
	selector, err := labels.Parse(key.selector)
	if err != nil {
		return fmt.Errorf("parsing selector %q: %w", key.selector, err)
	}
	pods, err := jm.podStore.Pods(key.namespace).List(selector)
	if err != nil {
		return err
	}
	for _, pod := range pods {
		if err := jm.handleSingleOrphanPod(ctx, pod); err != nil {
			klog.FromContext(ctx).Error(err, "Syncing orphan pod", "pod", klog.KObj(pod))
			jm.enqueueOrphanPod(pod, true)
		}
	}
	return nil
}

// handleSingleOrphanPod removes the tracking finalizer of a Pod whose Job is
// gone or finished, and deletes the Pod of a gone Job when the host's
// garbage collector cannot.
func (jm *Controller) handleSingleOrphanPod(ctx context.Context, pod *corev1.Pod) error {
	jobGone := false
	if ref := metav1.GetControllerOf(pod); ref != nil {
		if !isOurJobRef(ref) {
			return nil
		}
		job := jm.resolveControllerRef(pod.Namespace, ref)
		if job != nil && managedByExternalController(job) != nil {
			return nil
		}
		if job != nil && !isJobFinished(job) {
			// Adopted, or still running: syncJob owns the finalizer.
			return nil
		}
		jobGone = job == nil
	}
	if patch := removeTrackingFinalizerPatch(pod); patch != nil {
		if err := jm.podControl.patchPod(ctx, pod.Namespace, pod.Name, patch); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	if jobGone && jm.cfg.DeletePodsOfDeletedJobs && pod.DeletionTimestamp == nil {
		err := jm.kubeClient.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{
			Preconditions: &metav1.Preconditions{UID: &pod.UID},
		})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting pod %s of a deleted job: %w", klog.KObj(pod), err)
		}
	}
	return nil
}

// getPodsForJob returns the Pods the Job controls, adopting orphans its
// selector matches and releasing owned Pods it no longer matches. The Pods
// are pointers into the cache, except adopted ones.
func (jm *Controller) getPodsForJob(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("converting job selector: %w", err)
	}
	owned, err := jm.podIndexer.ByIndex(controllerUIDIndex, string(job.UID))
	if err != nil {
		return nil, err
	}
	var pods []*corev1.Pod
	for _, obj := range owned {
		pod := obj.(*corev1.Pod)
		if pod.Namespace != job.Namespace {
			continue
		}
		if selector.Matches(labels.Set(pod.Labels)) || job.DeletionTimestamp != nil {
			pods = append(pods, pod)
			continue
		}
		if err := jm.releasePod(ctx, job, pod); err != nil {
			return nil, err
		}
	}
	if job.DeletionTimestamp != nil || selector.Empty() {
		return pods, nil
	}
	orphans, err := jm.podIndexer.ByIndex(controllerUIDIndex, "")
	if err != nil {
		return nil, err
	}
	for _, obj := range orphans {
		pod := obj.(*corev1.Pod)
		if pod.Namespace != job.Namespace || pod.DeletionTimestamp != nil || !selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		adopted, err := jm.adoptPod(ctx, job, pod)
		if err != nil {
			return nil, err
		}
		if adopted != nil {
			pods = append(pods, adopted)
		}
	}
	return pods, nil
}

// adoptPod makes the Job the controller of an orphan Pod its selector
// matches, adding the tracking finalizer, after checking with a live read
// that the Job is not being deleted.
func (jm *Controller) adoptPod(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) (*corev1.Pod, error) {
	fresh, err := jm.jobClient.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
	if err != nil {
		return nil, fmt.Errorf("checking job %s before adopting pods: %w", klog.KObj(job), err)
	}
	if fresh.UID != job.UID || fresh.DeletionTimestamp != nil {
		return nil, nil
	}
	ref := metav1.NewControllerRef(job, controllerKind)
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"apiVersion":%q,"kind":%q,"name":%q,"uid":%q,"controller":true,"blockOwnerDeletion":true}],"uid":%q,"finalizers":[%q]}}`,
		ref.APIVersion, ref.Kind, ref.Name, ref.UID, pod.UID, batch.JobTrackingFinalizer)
	if err := jm.podControl.patchPod(ctx, pod.Namespace, pod.Name, []byte(patch)); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, fmt.Errorf("adopting pod %s: %w", klog.KObj(pod), err)
	}
	adopted := pod.DeepCopy()
	adopted.OwnerReferences = append(adopted.OwnerReferences, *ref)
	if !hasJobTrackingFinalizer(adopted) {
		adopted.Finalizers = append(adopted.Finalizers, batch.JobTrackingFinalizer)
	}
	return adopted, nil
}

// releasePod drops the Job's controller reference from a Pod its selector
// no longer matches.
func (jm *Controller) releasePod(ctx context.Context, job *batchv1.Job, pod *corev1.Pod) error {
	patch := fmt.Sprintf(`{"metadata":{"ownerReferences":[{"$patch":"delete","uid":%q}],"uid":%q}}`, job.UID, pod.UID)
	err := jm.podControl.patchPod(ctx, pod.Namespace, pod.Name, []byte(patch))
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsInvalid(err) {
		return fmt.Errorf("releasing pod %s: %w", klog.KObj(pod), err)
	}
	return nil
}

// syncJob reconciles one Job: it counts its finished Pods, creates or
// deletes Pods, decides whether the Job is finished and writes the status.
// It is never called concurrently for the same key.
func (jm *Controller) syncJob(ctx context.Context, key string) (rErr error) {
	startTime := jm.clock.Now()
	logger := klog.FromContext(ctx)
	defer func() {
		logger.V(4).Info("Finished syncing job", "key", key, "elapsed", jm.clock.Since(startTime))
	}()

	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return err
	}
	if ns == "" || name == "" {
		return fmt.Errorf("invalid job key %q: either namespace or name is missing", key)
	}
	sharedJob, err := jm.jobLister.Jobs(ns).Get(name)
	if apierrors.IsNotFound(err) {
		logger.V(4).Info("Job has been deleted", "key", key)
		jm.expectations.deleteExpectations(logger, key)
		jm.finalizerExpectations.deleteExpectations(logger, key)
		if err := jm.podBackoffStore.removeBackoffRecord(key); err != nil {
			return fmt.Errorf("removing backoff record of %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	// A Job replaced under the same name by one with another managedBy may
	// still be queued: check again here, not only in the event handlers.
	if jm.observeExternallyManaged(logger, sharedJob) {
		return nil
	}

	// The lister returns the cache's object: work on a copy.
	job := sharedJob.DeepCopy()
	if isJobFinished(job) {
		if err := jm.podBackoffStore.removeBackoffRecord(key); err != nil {
			return fmt.Errorf("removing backoff record of %s: %w", key, err)
		}
		jm.finishedJobExpectations.Delete(job.UID)
		return nil
	}
	if _, ok := jm.finishedJobExpectations.Load(job.UID); ok {
		logger.V(2).Info("Skipping sync of a job marked finished whose update is not observed yet", "key", key, "uid", job.UID)
		return nil
	}
	if job.Spec.CompletionMode != nil && *job.Spec.CompletionMode != batchv1.NonIndexedCompletion && *job.Spec.CompletionMode != batchv1.IndexedCompletion {
		jm.recorder.Event(job, corev1.EventTypeWarning, "UnknownCompletionMode", "Skipped Job sync because completion mode is unknown")
		return nil
	}

	completionMode := completionModeStr(job)
	action := metrics.JobSyncActionReconciling
	defer func() {
		result := "success"
		if rErr != nil {
			result = "error"
		}
		metrics.JobSyncDurationSeconds.WithLabelValues(completionMode, result, action).Observe(jm.clock.Since(startTime).Seconds())
		metrics.JobSyncNum.WithLabelValues(completionMode, result, action).Inc()
	}()

	if job.Status.UncountedTerminatedPods == nil {
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	}

	// Check expectations before listing Pods: a Pod arriving in between
	// only defers the sync to the next event.
	satisfiedExpectations := jm.expectations.satisfiedExpectations(logger, key)

	pods, err := jm.getPodsForJob(ctx, job)
	if err != nil {
		return err
	}
	activePods := filterActivePods(logger, pods)
	jobCtx := &syncJobCtx{
		job:                  job,
		pods:                 pods,
		activePods:           activePods,
		ready:                countReadyPods(activePods),
		uncounted:            newUncountedTerminatedPods(*job.Status.UncountedTerminatedPods),
		expectedRmFinalizers: jm.finalizerExpectations.getExpectedUIDs(key),
		terminating:          ptr.To(countTerminatingPods(pods)),
	}
	active := int32(len(jobCtx.activePods))
	newSucceededPods, newFailedPods := getNewFinishedPods(jobCtx)
	jobCtx.succeeded = job.Status.Succeeded + int32(len(newSucceededPods)) + int32(len(jobCtx.uncounted.succeeded))
	jobCtx.failed = job.Status.Failed + int32(nonIgnoredFailedPodsCount(jobCtx, newFailedPods)) + int32(len(jobCtx.uncounted.failed))

	// The first start of a Job that is not suspended.
	if job.Status.StartTime == nil && !jobSuspended(job) {
		job.Status.StartTime = ptr.To(metav1.NewTime(jm.clock.Now()))
	}

	jobCtx.newBackoffRecord = jm.podBackoffStore.newBackoffRecord(key, newSucceededPods, newFailedPods)

	var manageJobErr error

	// The end state is decided in upstream's order: conditions from earlier
	// syncs first, then failures, then success.
	exceedsBackoffLimit := jobCtx.failed > *job.Spec.BackoffLimit
	jobCtx.finishedCondition = hasSuccessCriteriaMetCondition(job)
	if jobCtx.finishedCondition == nil {
		if ft := findConditionByType(job.Status.Conditions, batchv1.JobFailureTarget); ft != nil && ft.Status == corev1.ConditionTrue {
			jobCtx.finishedCondition = newFailedConditionForFailureTarget(ft, jm.clock.Now())
		} else if msg := getFailJobMessage(job, pods); msg != nil {
			// The interim FailureTarget records the message before the
			// finalizers, and so the Pods, go.
			jobCtx.finishedCondition = newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, batch.JobReasonPodFailurePolicy, *msg, jm.clock.Now())
		}
	}
	if jobCtx.finishedCondition == nil {
		if exceedsBackoffLimit || pastBackoffLimitOnFailure(job, pods) {
			jobCtx.finishedCondition = jm.newFailureCondition(batch.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit")
		} else if jm.pastActiveDeadline(job) {
			jobCtx.finishedCondition = jm.newFailureCondition(batch.JobReasonDeadlineExceeded, "Job was active longer than specified deadline")
		} else if job.Spec.ActiveDeadlineSeconds != nil && !jobSuspended(job) {
			syncDuration := time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second - jm.clock.Since(job.Status.StartTime.Time)
			logger.V(2).Info("Job has activeDeadlineSeconds; will sync again", "key", key, "nextSyncIn", syncDuration)
			jm.queue.AddAfter(key, syncDuration)
		}
	}

	if isIndexedJob(job) {
		jobCtx.prevSucceededIndexes, jobCtx.succeededIndexes = calculateSucceededIndexes(logger, job, pods)
		jobCtx.succeeded = int32(jobCtx.succeededIndexes.total())
		if hasBackoffLimitPerIndex(job) {
			jobCtx.failedIndexes = calculateFailedIndexes(logger, job, pods)
			if jobCtx.finishedCondition == nil {
				if job.Spec.MaxFailedIndexes != nil && jobCtx.failedIndexes.total() > int(*job.Spec.MaxFailedIndexes) {
					jobCtx.finishedCondition = jm.newFailureCondition(batch.JobReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes")
				} else if jobCtx.failedIndexes.total() > 0 && jobCtx.failedIndexes.total()+jobCtx.succeededIndexes.total() >= int(*job.Spec.Completions) {
					jobCtx.finishedCondition = jm.newFailureCondition(batch.JobReasonFailedIndexes, "Job has failed indexes")
				}
			}
			jobCtx.podsWithDelayedDeletionPerIndex = getPodsWithDelayedDeletionPerIndex(logger, jobCtx)
			if _, terminating := jm.namespaceTerminating.Load(job.UID); terminating {
				// No replacement can be created in a namespace being
				// deleted: keeping a failed Pod's finalizer for one would
				// block the namespace's deletion forever (namespaces
				// delete their Pods before anything else).
				jobCtx.podsWithDelayedDeletionPerIndex = nil
			}
		}
		if jobCtx.finishedCondition == nil {
			if msg, met := matchSuccessPolicy(logger, job.Spec.SuccessPolicy, *job.Spec.Completions, jobCtx.succeededIndexes); met {
				jobCtx.finishedCondition = newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batch.JobReasonSuccessPolicy, msg, jm.clock.Now())
			}
		}
	}

	suspendCondChanged := false
	if jobCtx.finishedCondition != nil {
		// The Job is ending: stop what still runs.
		deletedReady, deleted, err := jm.deleteActivePods(ctx, job, jobCtx.activePods)
		if deleted != active || !satisfiedExpectations {
			// Pods may remain, or be missing from the cache: not finished yet.
			jobCtx.finishedCondition = nil
		}
		active -= deleted
		*jobCtx.terminating += deleted
		jobCtx.ready -= deletedReady
		manageJobErr = err
	} else {
		manageJobCalled := false
		if satisfiedExpectations && job.DeletionTimestamp == nil {
			active, action, manageJobErr = jm.manageJob(ctx, job, jobCtx)
			manageJobCalled = true
		}
		complete := false
		if job.Spec.Completions == nil {
			// A work-queue Job is complete once any Pod succeeded and none runs.
			complete = jobCtx.succeeded > 0 && active == 0
		} else {
			complete = jobCtx.succeeded >= *job.Spec.Completions && active == 0
		}
		if complete {
			jobCtx.finishedCondition = jm.newSuccessCondition()
		} else if manageJobCalled {
			// Conditions and events change only in the sync that acted.
			if jobSuspended(job) {
				var updated bool
				job.Status.Conditions, updated = ensureJobConditionStatus(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", jm.clock.Now())
				if updated {
					suspendCondChanged = true
					jm.recorder.Event(job, corev1.EventTypeNormal, "Suspended", "Job suspended")
					// MutableSchedulingDirectivesForSuspendedJobs (beta, on
					// in 1.37): a suspended Job has no start time.
					job.Status.StartTime = nil
				}
			} else {
				var updated bool
				job.Status.Conditions, updated = ensureJobConditionStatus(job.Status.Conditions, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", jm.clock.Now())
				if updated {
					suspendCondChanged = true
					jm.recorder.Event(job, corev1.EventTypeNormal, "Resumed", "Job resumed")
					// activeDeadlineSeconds counts continuous activity:
					// a resumed Job starts again.
					job.Status.StartTime = ptr.To(metav1.NewTime(jm.clock.Now()))
				}
			}
		}
	}

	needsStatusUpdate := suspendCondChanged || active != job.Status.Active || !ptr.Equal(&jobCtx.ready, job.Status.Ready)
	needsStatusUpdate = needsStatusUpdate || !ptr.Equal(job.Status.Terminating, jobCtx.terminating)
	job.Status.Active = active
	job.Status.Ready = &jobCtx.ready
	job.Status.Terminating = jobCtx.terminating
	if err := jm.trackJobStatusAndRemoveFinalizers(ctx, jobCtx, needsStatusUpdate); err != nil {
		return fmt.Errorf("tracking status of job %s: %w", key, err)
	}
	return manageJobErr
}

func (jm *Controller) newFailureCondition(reason, message string) *batchv1.JobCondition {
	return newCondition(batchv1.JobFailureTarget, corev1.ConditionTrue, reason, message, jm.clock.Now())
}

func (jm *Controller) newSuccessCondition() *batchv1.JobCondition {
	return newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batch.JobReasonCompletionsReached,
		"Reached expected number of succeeded pods", jm.clock.Now())
}

// deleteActivePods deletes the active Pods of an ending Job, keeping their
// finalizers: trackJobStatusAndRemoveFinalizers removes those once counted.
// It returns how many ready Pods and how many Pods it deleted.
func (jm *Controller) deleteActivePods(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod) (int32, int32, error) {
	errCh := make(chan error, len(pods))
	successfulDeletes := int32(len(pods))
	var deletedReady int32
	var wg sync.WaitGroup
	for _, pod := range pods {
		wg.Go(func() {
			if err := jm.podControl.deletePod(ctx, job.Namespace, pod.Name, job); err != nil && !apierrors.IsNotFound(err) {
				atomic.AddInt32(&successfulDeletes, -1)
				errCh <- err
				return
			}
			if isPodReady(pod) {
				atomic.AddInt32(&deletedReady, 1)
			}
		})
	}
	wg.Wait()
	return deletedReady, successfulDeletes, errorFromChannel(errCh)
}

// nonIgnoredFailedPodsCount counts the failed Pods the pod failure policy
// does not ignore.
func nonIgnoredFailedPodsCount(jobCtx *syncJobCtx, failedPods []*corev1.Pod) int {
	result := len(failedPods)
	if jobCtx.job.Spec.PodFailurePolicy != nil {
		for _, p := range failedPods {
			if _, countFailed, _ := matchPodFailurePolicy(jobCtx.job.Spec.PodFailurePolicy, p); !countFailed {
				result--
			}
		}
	}
	return result
}

// deleteJobPods removes the tracking finalizer of the Pods and deletes them
// (suspension, scale down). It returns how many ready Pods and how many Pods
// it deleted.
func (jm *Controller) deleteJobPods(ctx context.Context, job *batchv1.Job, key string, pods []*corev1.Pod) (int32, int32, error) {
	logger := klog.FromContext(ctx)
	errCh := make(chan error, len(pods))
	successfulDeletes := int32(len(pods))
	var deletedReady int32
	failDelete := func(pod *corev1.Pod, err error) {
		// The informer will not observe this deletion.
		jm.expectations.deletionObserved(logger, key)
		if !apierrors.IsNotFound(err) {
			logger.V(2).Info("Failed to delete Pod", "job", klog.KObj(job), "pod", klog.KObj(pod), "err", err)
			atomic.AddInt32(&successfulDeletes, -1)
			errCh <- err
		}
	}
	var wg sync.WaitGroup
	for _, pod := range pods {
		wg.Go(func() {
			if patch := removeTrackingFinalizerPatch(pod); patch != nil {
				if err := jm.podControl.patchPod(ctx, pod.Namespace, pod.Name, patch); err != nil {
					failDelete(pod, fmt.Errorf("removing tracking finalizer: %w", err))
					return
				}
			}
			if err := jm.podControl.deletePod(ctx, job.Namespace, pod.Name, job); err != nil {
				failDelete(pod, err)
				return
			}
			if isPodReady(pod) {
				atomic.AddInt32(&deletedReady, 1)
			}
		})
	}
	wg.Wait()
	return deletedReady, successfulDeletes, errorFromChannel(errCh)
}

// trackJobStatusAndRemoveFinalizers counts finished Pods in
// status.uncountedTerminatedPods, removes their finalizers, moves them to
// the counters, and declares the Job finished when it is. It handles at
// most MaxUncountedPods Pods a sync so that one big Job does not starve the
// others, and writes status only when something changed.
func (jm *Controller) trackJobStatusAndRemoveFinalizers(ctx context.Context, jobCtx *syncJobCtx, needsFlush bool) error {
	logger := klog.FromContext(ctx)
	job := jobCtx.job
	isIndexed := isIndexedJob(job)
	var podsToRemoveFinalizer []*corev1.Pod
	uncountedStatus := job.Status.UncountedTerminatedPods
	var newSucceededIndexes []int
	if isIndexed {
		// Completed indexes are added in order.
		sort.Sort(byCompletionIndex(jobCtx.pods))
	}
	uidsWithFinalizer := make(sets.Set[types.UID], len(jobCtx.pods))
	for _, p := range jobCtx.pods {
		if hasJobTrackingFinalizer(p) && !jobCtx.expectedRmFinalizers.Has(p.UID) {
			uidsWithFinalizer.Insert(p.UID)
		}
	}

	// A shallow copy: only the counters are compared.
	oldCounters := job.Status
	if cleanUncountedPodsWithoutFinalizers(&job.Status, uidsWithFinalizer) {
		needsFlush = true
	}
	podFailureCountByPolicyAction := map[string]int{}
	reachedMaxUncountedPods := false
	for _, pod := range jobCtx.pods {
		if !hasJobTrackingFinalizer(pod) || jobCtx.expectedRmFinalizers.Has(pod.UID) {
			// Counted in an earlier sync.
			continue
		}
		considerPodFailed := isPodFailed(pod, job)
		if !canRemoveFinalizer(logger, jobCtx, pod, considerPodFailed) {
			continue
		}
		podsToRemoveFinalizer = append(podsToRemoveFinalizer, pod)
		if pod.Status.Phase == corev1.PodSucceeded && !jobCtx.uncounted.failed.Has(pod.UID) {
			if isIndexed {
				// The index is enough to never count a success twice.
				ix := getCompletionIndex(pod.Annotations)
				if ix != unknownCompletionIndex && ix < int(*job.Spec.Completions) && !jobCtx.prevSucceededIndexes.has(ix) {
					newSucceededIndexes = append(newSucceededIndexes, ix)
					needsFlush = true
				}
			} else if !jobCtx.uncounted.succeeded.Has(pod.UID) {
				needsFlush = true
				uncountedStatus.Succeeded = append(uncountedStatus.Succeeded, pod.UID)
			}
		} else if considerPodFailed || (jobCtx.finishedCondition != nil && !isSuccessCriteriaMetCondition(jobCtx.finishedCondition)) {
			// Once the Job is failing, every Pod that did not succeed failed.
			ix := getCompletionIndex(pod.Annotations)
			if !jobCtx.uncounted.failed.Has(pod.UID) && (!isIndexed || (ix != unknownCompletionIndex && ix < int(*job.Spec.Completions))) {
				if job.Spec.PodFailurePolicy != nil {
					_, countFailed, action := matchPodFailurePolicy(job.Spec.PodFailurePolicy, pod)
					if action != nil {
						podFailureCountByPolicyAction[string(*action)]++
					}
					if countFailed {
						needsFlush = true
						uncountedStatus.Failed = append(uncountedStatus.Failed, pod.UID)
					}
				} else {
					needsFlush = true
					uncountedStatus.Failed = append(uncountedStatus.Failed, pod.UID)
				}
			}
		}
		if len(newSucceededIndexes)+len(uncountedStatus.Succeeded)+len(uncountedStatus.Failed) >= MaxUncountedPods {
			// Enough for one sync; status and Pod updates bring the Job back.
			reachedMaxUncountedPods = true
			break
		}
	}
	if isIndexed {
		jobCtx.succeededIndexes = jobCtx.succeededIndexes.withOrderedIndexes(newSucceededIndexes)
		succeededIndexesStr := jobCtx.succeededIndexes.String()
		if succeededIndexesStr != job.Status.CompletedIndexes {
			needsFlush = true
		}
		job.Status.Succeeded = int32(jobCtx.succeededIndexes.total())
		job.Status.CompletedIndexes = succeededIndexesStr
		var failedIndexesStr *string
		if jobCtx.failedIndexes != nil {
			failedIndexesStr = ptr.To(jobCtx.failedIndexes.String())
		}
		if !ptr.Equal(job.Status.FailedIndexes, failedIndexesStr) {
			job.Status.FailedIndexes = failedIndexesStr
			needsFlush = true
		}
	}
	if jobCtx.finishedCondition != nil && jobCtx.finishedCondition.Type == batchv1.JobFailureTarget {
		// FailureTarget is written before the finalizers go; Failed after.
		job.Status.Conditions = append(job.Status.Conditions, *jobCtx.finishedCondition)
		needsFlush = true
		jobCtx.finishedCondition = newFailedConditionForFailureTarget(jobCtx.finishedCondition, jm.clock.Now())
	}
	if isSuccessCriteriaMetCondition(jobCtx.finishedCondition) {
		// SuccessCriteriaMet is written before the finalizers go; Complete after.
		if hasSuccessCriteriaMetCondition(job) == nil {
			job.Status.Conditions = append(job.Status.Conditions, *jobCtx.finishedCondition)
			needsFlush = true
		}
		jobCtx.finishedCondition = newCondition(batchv1.JobComplete, corev1.ConditionTrue, jobCtx.finishedCondition.Reason, jobCtx.finishedCondition.Message, jm.clock.Now())
	}
	var err error
	if jobCtx.job, needsFlush, err = jm.flushUncountedAndRemoveFinalizers(ctx, jobCtx, podsToRemoveFinalizer, uidsWithFinalizer, &oldCounters, podFailureCountByPolicyAction, needsFlush); err != nil {
		return err
	}
	jobFinished := !reachedMaxUncountedPods && jm.enactJobFinished(logger, jobCtx)
	if jobFinished {
		needsFlush = true
	}
	if needsFlush {
		if _, err := jm.updateStatusHandler(ctx, jobCtx.job); err != nil {
			return fmt.Errorf("removing uncounted pods from status: %w", err)
		}
		if jobFinished {
			jm.recordJobFinished(jobCtx.job, jobCtx.finishedCondition)
			jm.finishedJobExpectations.Store(jobCtx.job.UID, struct{}{})
		}
		recordJobPodFinished(logger, jobCtx.job, oldCounters)
	}
	return nil
}

// canRemoveFinalizer tells whether a Pod's finalizer may go: the Job is
// being deleted or ending, the Pod succeeded, or it failed and its index
// does not still need it to pass its failure count on to a replacement.
func canRemoveFinalizer(logger klog.Logger, jobCtx *syncJobCtx, pod *corev1.Pod, considerPodFailed bool) bool {
	if jobCtx.job.DeletionTimestamp != nil || jobCtx.finishedCondition != nil || pod.Status.Phase == corev1.PodSucceeded {
		return true
	}
	if !considerPodFailed {
		return false
	}
	if hasBackoffLimitPerIndex(jobCtx.job) {
		if index := getCompletionIndex(pod.Annotations); index != unknownCompletionIndex {
			if p, ok := jobCtx.podsWithDelayedDeletionPerIndex[index]; ok && p.UID == pod.UID {
				logger.V(3).Info("Delaying pod finalizer removal until the index has a replacement", "pod", klog.KObj(pod))
				return false
			}
		}
	}
	return true
}

// flushUncountedAndRemoveFinalizers writes the status holding the newly
// uncounted Pods (and interim conditions), removes those Pods' finalizers,
// and moves the Pods whose finalizer is gone to the counters. It returns
// whether the status still has changes to write.
func (jm *Controller) flushUncountedAndRemoveFinalizers(ctx context.Context, jobCtx *syncJobCtx, podsToRemoveFinalizer []*corev1.Pod,
	uidsWithFinalizer sets.Set[types.UID], oldCounters *batchv1.JobStatus, podFailureCountByPolicyAction map[string]int, needsFlush bool) (*batchv1.Job, bool, error) {
	logger := klog.FromContext(ctx)
	var err error
	if needsFlush {
		if jobCtx.job, err = jm.updateStatusHandler(ctx, jobCtx.job); err != nil {
			return jobCtx.job, needsFlush, fmt.Errorf("adding uncounted pods to status: %w", err)
		}
		if err := jm.podBackoffStore.updateBackoffRecord(jobCtx.newBackoffRecord); err != nil {
			// Re-syncing would not bring the information back.
			logger.Error(err, "Backoff update failed")
		}
		recordJobPodFinished(logger, jobCtx.job, *oldCounters)
		*oldCounters = jobCtx.job.Status
		needsFlush = false
	}
	recordJobPodFailurePolicyActions(podFailureCountByPolicyAction)

	key := jobKey(jobCtx.job)
	var rmErr error
	if len(podsToRemoveFinalizer) > 0 {
		var removed []bool
		removed, rmErr = jm.removeTrackingFinalizerFromPods(ctx, key, podsToRemoveFinalizer)
		for i, p := range podsToRemoveFinalizer {
			if removed[i] {
				uidsWithFinalizer.Delete(p.UID)
			}
		}
	}
	if cleanUncountedPodsWithoutFinalizers(&jobCtx.job.Status, uidsWithFinalizer) {
		needsFlush = true
	}
	if rmErr != nil && needsFlush {
		// Some removals failed: keep the progress made.
		if job, err := jm.updateStatusHandler(ctx, jobCtx.job); err != nil {
			return job, needsFlush, fmt.Errorf("removing uncounted pods from status: %w", err)
		}
	}
	return jobCtx.job, needsFlush, rmErr
}

// cleanUncountedPodsWithoutFinalizers moves the Pods whose finalizer is gone
// from status.uncountedTerminatedPods to the counters. It returns whether
// the status changed.
func cleanUncountedPodsWithoutFinalizers(status *batchv1.JobStatus, uidsWithFinalizer sets.Set[types.UID]) bool {
	updated := false
	uncounted := status.UncountedTerminatedPods
	if kept := filterInUncountedUIDs(uncounted.Succeeded, uidsWithFinalizer); len(kept) != len(uncounted.Succeeded) {
		updated = true
		status.Succeeded += int32(len(uncounted.Succeeded) - len(kept))
		uncounted.Succeeded = kept
	}
	if kept := filterInUncountedUIDs(uncounted.Failed, uidsWithFinalizer); len(kept) != len(uncounted.Failed) {
		updated = true
		status.Failed += int32(len(uncounted.Failed) - len(kept))
		uncounted.Failed = kept
	}
	return updated
}

// removeTrackingFinalizerFromPods removes the tracking finalizer from the
// Pods; the i-th result tells whether the i-th Pod's is gone (a Pod already
// deleted counts).
func (jm *Controller) removeTrackingFinalizerFromPods(ctx context.Context, key string, pods []*corev1.Pod) ([]bool, error) {
	logger := klog.FromContext(ctx)
	errCh := make(chan error, len(pods))
	succeeded := make([]bool, len(pods))
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	jm.finalizerExpectations.expectFinalizersRemoved(logger, key, uids)
	var wg sync.WaitGroup
	for i, pod := range pods {
		wg.Go(func() {
			patch := removeTrackingFinalizerPatch(pod)
			if patch == nil {
				return
			}
			if err := jm.podControl.patchPod(ctx, pod.Namespace, pod.Name, patch); err != nil {
				// No Pod update will come for a failed removal.
				jm.finalizerExpectations.finalizerRemovalObserved(logger, key, pod.UID)
				if !apierrors.IsNotFound(err) {
					errCh <- fmt.Errorf("removing tracking finalizer of pod %s: %w", klog.KObj(pod), err)
					return
				}
			}
			succeeded[i] = true
		})
	}
	wg.Wait()
	return succeeded, errorFromChannel(errCh)
}

// enactJobFinished sets the Complete or Failed condition once no Pod is
// uncounted or terminating. It returns whether the Job is finished.
func (jm *Controller) enactJobFinished(logger klog.Logger, jobCtx *syncJobCtx) bool {
	if jobCtx.finishedCondition == nil {
		return false
	}
	job := jobCtx.job
	if uncounted := job.Status.UncountedTerminatedPods; uncounted != nil {
		if count := len(uncounted.Succeeded) + len(uncounted.Failed); count > 0 {
			logger.V(4).Info("Delaying marking the Job as finished: uncounted pods remain", "job", klog.KObj(job), "condition", jobCtx.finishedCondition.Type, "count", count)
			return false
		}
	}
	if *jobCtx.terminating > 0 {
		logger.V(4).Info("Delaying marking the Job as finished: pods are terminating", "job", klog.KObj(job), "condition", jobCtx.finishedCondition.Type, "count", *jobCtx.terminating)
		return false
	}
	cond := jobCtx.finishedCondition
	job.Status.Conditions, _ = ensureJobConditionStatus(job.Status.Conditions, cond.Type, cond.Status, cond.Reason, cond.Message, jm.clock.Now())
	if cond.Type == batchv1.JobComplete {
		job.Status.CompletionTime = &cond.LastTransitionTime
	}
	return true
}

// recordJobFinished records the Event and metric of a finished Job.
func (jm *Controller) recordJobFinished(job *batchv1.Job, cond *batchv1.JobCondition) {
	completionMode := completionModeStr(job)
	if cond.Type == batchv1.JobComplete {
		if job.Spec.Completions != nil && job.Status.Succeeded > *job.Spec.Completions {
			jm.recorder.Event(job, corev1.EventTypeWarning, "TooManySucceededPods", "Too many succeeded pods running after completion count reached")
		}
		jm.recorder.Event(job, corev1.EventTypeNormal, "Completed", "Job completed")
		metrics.JobFinishedNum.WithLabelValues(completionMode, "succeeded", cond.Reason).Inc()
		return
	}
	jm.recorder.Event(job, corev1.EventTypeWarning, cond.Reason, cond.Message)
	metrics.JobFinishedNum.WithLabelValues(completionMode, "failed", cond.Reason).Inc()
}

func filterInUncountedUIDs(uncounted []types.UID, include sets.Set[types.UID]) []types.UID {
	var kept []types.UID
	for _, uid := range uncounted {
		if include.Has(uid) {
			kept = append(kept, uid)
		}
	}
	return kept
}

// newFailedConditionForFailureTarget is the Failed condition that follows
// an interim FailureTarget.
func newFailedConditionForFailureTarget(cond *batchv1.JobCondition, now time.Time) *batchv1.JobCondition {
	return newCondition(batchv1.JobFailed, corev1.ConditionTrue, cond.Reason, cond.Message, now)
}

// pastBackoffLimitOnFailure tells whether the container restarts of a
// restartPolicy OnFailure Job reached its backoffLimit.
func pastBackoffLimitOnFailure(job *batchv1.Job, pods []*corev1.Pod) bool {
	if job.Spec.Template.Spec.RestartPolicy != corev1.RestartPolicyOnFailure {
		return false
	}
	var restarts int32
	for _, po := range pods {
		if po.Status.Phase != corev1.PodRunning && po.Status.Phase != corev1.PodPending {
			continue
		}
		for _, s := range po.Status.InitContainerStatuses {
			restarts += s.RestartCount
		}
		for _, s := range po.Status.ContainerStatuses {
			restarts += s.RestartCount
		}
	}
	if *job.Spec.BackoffLimit == 0 {
		return restarts > 0
	}
	return restarts >= *job.Spec.BackoffLimit
}

// pastActiveDeadline tells whether a running Job exceeded activeDeadlineSeconds.
func (jm *Controller) pastActiveDeadline(job *batchv1.Job) bool {
	if job.Spec.ActiveDeadlineSeconds == nil || job.Status.StartTime == nil || jobSuspended(job) {
		return false
	}
	return jm.clock.Since(job.Status.StartTime.Time) >= time.Duration(*job.Spec.ActiveDeadlineSeconds)*time.Second
}

func newCondition(conditionType batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) *batchv1.JobCondition {
	return &batchv1.JobCondition{
		Type:               conditionType,
		Status:             status,
		LastProbeTime:      metav1.NewTime(now),
		LastTransitionTime: metav1.NewTime(now),
		Reason:             reason,
		Message:            message,
	}
}

// getFailJobMessage returns the message of the first failed Pod a FailJob
// rule matches, or nil.
func getFailJobMessage(job *batchv1.Job, pods []*corev1.Pod) *string {
	if job.Spec.PodFailurePolicy == nil {
		return nil
	}
	for _, p := range pods {
		if !isPodFailed(p, job) {
			continue
		}
		if msg, _, _ := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p); msg != nil {
			return msg
		}
	}
	return nil
}

// getNewFinishedPods returns the succeeded and failed Pods the status does
// not count yet.
func getNewFinishedPods(jobCtx *syncJobCtx) (succeededPods, failedPods []*corev1.Pod) {
	succeededPods = getValidPodsWithFilter(jobCtx, jobCtx.uncounted.Succeeded(), func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodSucceeded
	})
	failedPods = getValidPodsWithFilter(jobCtx, jobCtx.uncounted.Failed(), func(p *corev1.Pod) bool {
		return isPodFailed(p, jobCtx.job)
	})
	return succeededPods, failedPods
}

func jobSuspended(job *batchv1.Job) bool {
	return ptr.Deref(job.Spec.Suspend, false)
}

// manageJob creates or deletes Pods so that the Job runs as many as it
// should, respecting the failure backoff; it returns the new active count
// and the sync action for the metrics.
func (jm *Controller) manageJob(ctx context.Context, job *batchv1.Job, jobCtx *syncJobCtx) (int32, string, error) {
	logger := klog.FromContext(ctx)
	active := int32(len(jobCtx.activePods))
	parallelism := *job.Spec.Parallelism
	key := jobKey(job)

	if jobSuspended(job) {
		logger.V(4).Info("Deleting all active pods in suspended job", "job", klog.KObj(job), "active", active)
		podsToDelete := activePodsForRemoval(job, jobCtx.activePods, int(active))
		jm.expectations.expectDeletions(logger, key, len(podsToDelete))
		removedReady, removed, err := jm.deleteJobPods(ctx, job, key, podsToDelete)
		active -= removed
		*jobCtx.terminating += removed
		jobCtx.ready -= removedReady
		return active, metrics.JobSyncActionPodsDeleted, err
	}

	var wantActive int32
	if job.Spec.Completions == nil {
		// A work-queue Job keeps parallelism Pods until one succeeds, then
		// lets the running ones finish.
		if jobCtx.succeeded > 0 {
			wantActive = active
		} else {
			wantActive = parallelism
		}
	} else {
		wantActive = max(min(*job.Spec.Completions-jobCtx.succeeded, parallelism), 0)
	}

	rmAtLeast := max(active-wantActive, 0)
	podsToDelete := activePodsForRemoval(job, jobCtx.activePods, int(rmAtLeast))
	if len(podsToDelete) > MaxPodCreateDeletePerSync {
		podsToDelete = podsToDelete[:MaxPodCreateDeletePerSync]
	}
	if len(podsToDelete) > 0 {
		jm.expectations.expectDeletions(logger, key, len(podsToDelete))
		logger.V(4).Info("Too many pods running for job", "job", klog.KObj(job), "deleted", len(podsToDelete), "target", wantActive)
		removedReady, removed, err := jm.deleteJobPods(ctx, job, key, podsToDelete)
		active -= removed
		*jobCtx.terminating += removed
		jobCtx.ready -= removedReady
		// One sync either deletes or creates; deletion first.
		return active, metrics.JobSyncActionPodsDeleted, err
	}

	var terminating int32
	if onlyReplaceFailedPods(job) {
		terminating = *jobCtx.terminating
	}
	diff := wantActive - terminating - active
	if diff <= 0 {
		return active, metrics.JobSyncActionTracking, nil
	}
	var remainingTime time.Duration
	if !hasBackoffLimitPerIndex(job) {
		remainingTime = jobCtx.newBackoffRecord.getRemainingTime(jm.clock, DefaultJobPodFailureBackOff, MaxJobPodFailureBackOff)
	}
	if remainingTime > 0 {
		jm.enqueueSyncJobWithDelay(logger, job, remainingTime)
		return active, metrics.JobSyncActionPodsCreated, nil
	}
	diff = min(diff, int32(MaxPodCreateDeletePerSync))

	var indexesToAdd []int
	if isIndexedJob(job) {
		indexesToAdd = firstPendingIndexes(jobCtx, int(diff), int(*job.Spec.Completions))
		if hasBackoffLimitPerIndex(job) {
			indexesToAdd, remainingTime = jm.getPodCreationInfoForIndependentIndexes(logger, indexesToAdd, jobCtx.podsWithDelayedDeletionPerIndex)
			if remainingTime > 0 {
				jm.enqueueSyncJobWithDelay(logger, job, remainingTime)
				return active, metrics.JobSyncActionPodsCreated, nil
			}
		}
		diff = int32(len(indexesToAdd))
	}

	jm.expectations.expectCreations(logger, key, int(diff))
	errCh := make(chan error, diff)
	logger.V(4).Info("Too few pods running", "key", key, "need", wantActive, "creating", diff)
	active += diff

	podTemplate := job.Spec.Template.DeepCopy()
	if isIndexedJob(job) {
		addCompletionIndexEnvVariables(podTemplate)
	}
	if !slices.Contains(podTemplate.Finalizers, batch.JobTrackingFinalizer) {
		podTemplate.Finalizers = append(podTemplate.Finalizers, batch.JobTrackingFinalizer)
	}

	var creationsSucceeded, creationsFailed int32
	// Slow start: batches of 1, 2, 4, ... stop at the first failure, so that
	// a quota or an admission webhook refusing every Pod costs one request,
	// not hundreds.
	var wg sync.WaitGroup
	for batchSize := min(diff, 1); diff > 0; batchSize = min(2*batchSize, diff) {
		errorCount := len(errCh)
		for range batchSize {
			completionIndex := unknownCompletionIndex
			if len(indexesToAdd) > 0 {
				completionIndex = indexesToAdd[0]
				indexesToAdd = indexesToAdd[1:]
			}
			wg.Go(func() {
				template := podTemplate
				generateName := ""
				if completionIndex != unknownCompletionIndex {
					template = podTemplate.DeepCopy()
					addCompletionIndexAnnotation(template, completionIndex)
					addCompletionIndexLabel(template, completionIndex)
					template.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, completionIndex)
					generateName = podGenerateNameWithIndex(job.Name, completionIndex)
					if hasBackoffLimitPerIndex(job) {
						addIndexFailureCountAnnotation(logger, template, job, jobCtx.podsWithDelayedDeletionPerIndex[completionIndex])
					}
				}
				err := jm.podControl.createPods(ctx, job.Namespace, template, job, metav1.NewControllerRef(job, controllerKind), generateName)
				if err != nil && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					// Every further creation fails the same way; nothing to
					// retry, but the Pods kept for replacements must go.
					if _, seen := jm.namespaceTerminating.LoadOrStore(job.UID, struct{}{}); !seen {
						jm.enqueueSyncJobBatched(logger, job)
					}
					return
				}
				if err != nil {
					logger.V(2).Info("Failed creation, decrementing expectations", "job", klog.KObj(job), "err", err)
					// The informer will not observe this Pod.
					jm.expectations.creationObserved(logger, key)
					atomic.AddInt32(&active, -1)
					atomic.AddInt32(&creationsFailed, 1)
					errCh <- err
					return
				}
				atomic.AddInt32(&creationsSucceeded, 1)
			})
		}
		wg.Wait()
		skippedPods := diff - batchSize
		if errorCount < len(errCh) && skippedPods > 0 {
			logger.V(2).Info("Slow-start failure: skipping the remaining pods", "skippedCount", skippedPods, "job", klog.KObj(job))
			active -= skippedPods
			for range skippedPods {
				jm.expectations.creationObserved(logger, key)
			}
			break
		}
		diff -= batchSize
	}
	recordJobPodsCreationTotal(job, jobCtx, creationsSucceeded, creationsFailed)
	return active, metrics.JobSyncActionPodsCreated, errorFromChannel(errCh)
}

// getPodCreationInfoForIndependentIndexes returns the indexes whose per-index
// backoff is over or, when none is, the shortest remaining delay.
func (jm *Controller) getPodCreationInfoForIndependentIndexes(logger klog.Logger, indexesToAdd []int, podsWithDelayedDeletionPerIndex map[int]*corev1.Pod) ([]int, time.Duration) {
	var now []int
	var minRemaining *time.Duration
	for _, ix := range indexesToAdd {
		remaining := getRemainingTimePerIndex(logger, jm.clock, DefaultJobPodFailureBackOff, MaxJobPodFailureBackOff, podsWithDelayedDeletionPerIndex[ix])
		if remaining == 0 {
			now = append(now, ix)
		} else if minRemaining == nil || remaining < *minRemaining {
			minRemaining = &remaining
		}
	}
	if len(now) > 0 {
		return now, 0
	}
	return nil, ptr.Deref(minRemaining, 0)
}

// activePodsForRemoval picks the Pods to delete: duplicated or out-of-range
// indexes first, then the least advanced Pods (not ready before ready,
// unscheduled before scheduled, pending before running).
func activePodsForRemoval(job *batchv1.Job, pods []*corev1.Pod, rmAtLeast int) []*corev1.Pod {
	var rm, left []*corev1.Pod
	if isIndexedJob(job) {
		rm = make([]*corev1.Pod, 0, rmAtLeast)
		left = make([]*corev1.Pod, 0, len(pods))
		rm, left = appendDuplicatedIndexPodsForRemoval(rm, left, pods, int(*job.Spec.Completions))
	} else {
		left = slices.Clone(pods)
	}
	if len(rm) < rmAtLeast {
		sort.Sort(activePods(left))
		rm = append(rm, left[:rmAtLeast-len(rm)]...)
	}
	return rm
}

// updateJobStatus writes the status through our own status subresource, so
// that the API's status rules check this controller too.
func (jm *Controller) updateJobStatus(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	return jm.jobClient.BatchV1().Jobs(job.Namespace).UpdateStatus(ctx, job, metav1.UpdateOptions{})
}

// getValidPodsWithFilter returns the Pods that still have their finalizer,
// are not uncounted yet and, for Indexed Jobs, have a valid index, and that
// pass the filter.
func getValidPodsWithFilter(jobCtx *syncJobCtx, uncounted sets.Set[types.UID], filter func(*corev1.Pod) bool) []*corev1.Pod {
	var result []*corev1.Pod
	for _, p := range jobCtx.pods {
		if !hasJobTrackingFinalizer(p) || uncounted.Has(p.UID) || jobCtx.expectedRmFinalizers.Has(p.UID) {
			continue
		}
		if isIndexedJob(jobCtx.job) {
			if ix := getCompletionIndex(p.Annotations); ix == unknownCompletionIndex || ix >= int(*jobCtx.job.Spec.Completions) {
				continue
			}
		}
		if filter(p) {
			result = append(result, p)
		}
	}
	return result
}

func errorFromChannel(errCh <-chan error) error {
	select {
	case err := <-errCh:
		return err
	default:
		return nil
	}
}

// ensureJobConditionStatus sets a condition of the given type, appending it
// unless it would be a new False one. It returns whether the list changed.
func ensureJobConditionStatus(list []batchv1.JobCondition, cType batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) ([]batchv1.JobCondition, bool) {
	if cond := findConditionByType(list, cType); cond != nil {
		if cond.Status != status || cond.Reason != reason || cond.Message != message {
			*cond = *newCondition(cType, status, reason, message, now)
			return list, true
		}
		return list, false
	}
	if status != corev1.ConditionFalse {
		return append(list, *newCondition(cType, status, reason, message, now)), true
	}
	return list, false
}

// isPodFailed tells whether a Pod counts as failed: phase Failed, or being
// deleted before it succeeded unless the Job replaces only failed Pods.
func isPodFailed(p *corev1.Pod, job *batchv1.Job) bool {
	if p.Status.Phase == corev1.PodFailed {
		return true
	}
	if onlyReplaceFailedPods(job) {
		return false
	}
	// Deleted Pods count as failed: orphans may never reach the Failed phase.
	return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
}

func findConditionByType(list []batchv1.JobCondition, cType batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range list {
		if list[i].Type == cType {
			return &list[i]
		}
	}
	return nil
}

// isJobFinished tells whether a Job has a Complete or Failed condition that is True.
func isJobFinished(job *batchv1.Job) bool {
	_, finished := finishedCondition(job)
	return finished
}

// finishedCondition returns the type of a Job's True Complete or Failed
// condition and its time.
func finishedCondition(job *batchv1.Job) (*batchv1.JobCondition, bool) {
	for i, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i], true
		}
	}
	return nil, false
}

func recordJobPodFinished(logger klog.Logger, job *batchv1.Job, oldCounters batchv1.JobStatus) {
	completionMode := completionModeStr(job)
	var diff int
	// For Indexed Jobs the succeeded count follows the indexes, which an
	// elastic scale down may leave out of range.
	if isIndexedJob(job) {
		completions := int(*job.Spec.Completions)
		if job.Status.CompletedIndexes != oldCounters.CompletedIndexes {
			diff = indexesCount(logger, &job.Status.CompletedIndexes, completions) - indexesCount(logger, &oldCounters.CompletedIndexes, completions)
		}
		backoffLimitLabel := backoffLimitMetricsLabel(job)
		metrics.JobFinishedIndexesTotal.WithLabelValues(metrics.Succeeded, backoffLimitLabel).Add(float64(diff))
		if hasBackoffLimitPerIndex(job) && !ptr.Equal(job.Status.FailedIndexes, oldCounters.FailedIndexes) {
			if failedDiff := indexesCount(logger, job.Status.FailedIndexes, completions) - indexesCount(logger, oldCounters.FailedIndexes, completions); failedDiff > 0 {
				metrics.JobFinishedIndexesTotal.WithLabelValues(metrics.Failed, backoffLimitLabel).Add(float64(failedDiff))
			}
		}
	} else {
		diff = int(job.Status.Succeeded) - int(oldCounters.Succeeded)
	}
	metrics.JobPodsFinished.WithLabelValues(completionMode, metrics.Succeeded).Add(float64(diff))
	metrics.JobPodsFinished.WithLabelValues(completionMode, metrics.Failed).Add(float64(job.Status.Failed - oldCounters.Failed))
}

func indexesCount(logger klog.Logger, indexesStr *string, completions int) int {
	if indexesStr == nil {
		return 0
	}
	return parseIndexesFromString(logger, *indexesStr, completions).total()
}

func backoffLimitMetricsLabel(job *batchv1.Job) string {
	if hasBackoffLimitPerIndex(job) {
		return "perIndex"
	}
	return "global"
}

func recordJobPodFailurePolicyActions(podFailureCountByPolicyAction map[string]int) {
	for action, count := range podFailureCountByPolicyAction {
		metrics.PodFailuresHandledByFailurePolicy.WithLabelValues(action).Add(float64(count))
	}
}

func countReadyPods(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if isPodReady(p) {
			n++
		}
	}
	return n
}

// countTerminatingPods counts the Pods being deleted that have not finished.
func countTerminatingPods(pods []*corev1.Pod) int32 {
	var n int32
	for _, p := range pods {
		if p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			n++
		}
	}
	return n
}

// onlyReplaceFailedPods tells whether the Job waits for a terminating Pod
// to fail before replacing it (podReplacementPolicy Failed).
func onlyReplaceFailedPods(job *batchv1.Job) bool {
	return ptr.Deref(job.Spec.PodReplacementPolicy, batchv1.TerminatingOrFailed) == batchv1.Failed
}

func recordJobPodsCreationTotal(job *batchv1.Job, jobCtx *syncJobCtx, succeeded, failed int32) {
	reason := metrics.PodCreateNew
	if onlyReplaceFailedPods(job) && jobCtx.failed > 0 {
		reason = metrics.PodRecreateFailed
	} else if jobCtx.failed > 0 || ptr.Deref(jobCtx.terminating, 0) > 0 {
		reason = metrics.PodRecreateTerminatingOrFailed
	}
	if succeeded > 0 {
		metrics.JobPodsCreationTotal.WithLabelValues(reason, metrics.Succeeded).Add(float64(succeeded))
	}
	if failed > 0 {
		metrics.JobPodsCreationTotal.WithLabelValues(reason, metrics.Failed).Add(float64(failed))
	}
}

// managedByExternalController returns the spec.managedBy of a Job that
// another controller reconciles, or nil for our own Jobs. JobManagedBy is GA
// and locked on.
func managedByExternalController(job *batchv1.Job) *string {
	if name := job.Spec.ManagedBy; name != nil && *name != batch.JobControllerName {
		return name
	}
	return nil
}
