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

package jobhost

import (
	"context"
	"errors"
	"fmt"
	"os"
	"reflect"
	"sync"
	"sync/atomic"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	genericapiserver "k8s.io/apiserver/pkg/server"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/klog/v2"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	"github.com/batch-apiserver/batch-apiserver/pkg/apiserver"
	jobcontroller "github.com/batch-apiserver/batch-apiserver/pkg/controller/job"
	jobmetrics "github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
	"github.com/batch-apiserver/batch-apiserver/pkg/features"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/informers/externalversions"
	"github.com/batch-apiserver/batch-apiserver/pkg/hostcluster"
)

const (
	// JobControllerPostStartHook is the name of the post-start hook that
	// starts the Job controller (it shows in /readyz and /livez as
	// poststarthook/start-job-controller).
	JobControllerPostStartHook = "start-job-controller"

	// informerResync is kube-controller-manager's default
	// --min-resync-period.
	informerResync = 12 * time.Hour
)

// hostClientConfig returns the client configuration of the host cluster the
// controller runs Pods in, at the controller's rate.
func hostClientConfig(kubeconfig string, qps float32, burst int32) (*rest.Config, error) {
	cfg, err := hostcluster.ClientConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	cfg.QPS, cfg.Burst = qps, int(burst)
	return cfg, nil
}

// hostInformerConfig is the configuration of the client the Pod informer
// lists and watches with: unlimited by the writes' budget and without gzip.
// The host compresses a watch stream when the client accepts gzip, and for
// the stream of every Pod update of the controller's Jobs that costs the
// host more CPU than the bytes saved are worth between a controller and its
// API server (in bench-scale's batch mix, a tenth of kube-apiserver's CPU
// and of ours, which inflated it).
func hostInformerConfig(hostConfig *rest.Config) *rest.Config {
	cfg := rest.AddUserAgent(rest.CopyConfig(hostConfig), "job-controller-informers")
	cfg.DisableCompression = true
	return cfg
}

// withContentType makes cfg send contentType and accept it first, JSON
// second (for what has no protobuf form, such as custom resources).
func withContentType(cfg *rest.Config, contentType string) {
	cfg.ContentType = contentType
	cfg.AcceptContentTypes = contentType
	if contentType != runtime.ContentTypeJSON {
		cfg.AcceptContentTypes += "," + runtime.ContentTypeJSON
	}
}

// sharedRateLimiter is a budget of the controller's requests, shared by
// the requests of one kind, or nil (no limit) for a negative qps.
func sharedRateLimiter(qps float32, burst int32) flowcontrol.RateLimiter {
	if qps < 0 {
		return nil
	}
	return flowcontrol.NewTokenBucketRateLimiter(qps, int(burst))
}

// jobClients are the controller's clients of our own API: read feeds the
// informers, write carries the status writes.
type jobClients struct {
	read, write versioned.Interface
}

// leaseNamespace is the namespace of the leader-election Lease: the flag if
// given, else the namespace the server runs in (hostcluster.Namespace).
func leaseNamespace(flag string, getenv func(string) string, readFile func(string) ([]byte, error)) string {
	if flag != "" {
		return flag
	}
	return hostcluster.Namespace(getenv, readFile)
}

// leaseName is the name of the leader-election Lease: the one
// --leader-elect-resource-name gives, else one named after the server
// identity.
func leaseName(flag, identity string) string {
	if flag != "" {
		return flag
	}
	return JobControllerLeasePrefix + identity
}

// serverPodsSelector selects the Pods of the server with identity: the
// only Pods its controller sees.
func serverPodsSelector(identity string) string {
	return labels.SelectorFromSet(labels.Set{batch.ServerIdentityLabel: identity}).String()
}

// dropManagedFields is the transform of the Pod informer: the controller
// never reads managedFields, and they are a large share of a small object.
func dropManagedFields(obj interface{}) (interface{}, error) {
	if m, err := meta.Accessor(obj); err == nil {
		m.SetManagedFields(nil)
	}
	return obj, nil
}

// newJobInformerFactory returns the factory of the controller's Job
// informer. Its cache holds every Job the server stores, next to the watch
// cache in the same process, so it keeps them as the controller reads them:
// a Job the controller runs without its managedFields, any other (finished,
// or run by another controller) as a stand-in of the few fields the
// controller reads of it (see jobcontroller.TrimForCache).
func newJobInformerFactory(client versioned.Interface) externalversions.SharedInformerFactory {
	return externalversions.NewSharedInformerFactoryWithOptions(client, informerResync,
		externalversions.WithTransform(jobcontroller.TrimForCache))
}

// jobControllerRunner runs the Job controller of one server: under leader
// election when it is on, a fresh controller and informers for each term.
type jobControllerRunner struct {
	opts       *Options
	cfg        jobcontroller.Config
	kubeClient kubernetes.Interface
	// informerClient lists and watches the host's Pods, with a rate of
	// its own.
	informerClient kubernetes.Interface
	// writes is the rate limiter of kubeClient: the Pod and Event
	// requests to the host. statusWrites, at the same rate, is the one of
	// the Job status writes to our own API. Both are nil when
	// --kube-api-qps is negative.
	writes, statusWrites flowcontrol.RateLimiter
	// lock is nil without leader election.
	lock resourcelock.Interface
	// leaseName and leaseNamespace name the Lease, when lock is set.
	leaseName, leaseNamespace string
	// waitForLegacyLease is set when the Lease has its default name in
	// aggregated mode (see Plan.WaitForLegacyLease).
	waitForLegacyLease bool

	// running is held while a controller runs, so that the controller of
	// a new term starts only after the one of the lost term has stopped.
	running sync.Mutex
	// done is closed when the runner has stopped (lease released).
	done chan struct{}
	// started is set by the hook, which the server runs in a goroutine.
	started atomic.Bool

	// workloadsOn, once workloadsDecided, tells whether the controller
	// keeps the Jobs' Workloads and PodGroups (manageWorkloads).
	workloadsDecided, workloadsOn bool
}

// newJobControllerRunner builds the clients of the host cluster and the
// leader-election lock. Errors here fail the server at startup.
func newJobControllerRunner(opts *Options, plan Plan) (*jobControllerRunner, error) {
	hostConfig, err := hostClientConfig(plan.Kubeconfig, opts.KubeAPIQPS, opts.KubeAPIBurst)
	if err != nil {
		return nil, err
	}
	withContentType(hostConfig, opts.KubeAPIContentType)
	r := &jobControllerRunner{
		opts:         opts,
		cfg:          jobcontroller.Config{DeletePodsOfDeletedJobs: plan.DeletePodsOfDeletedJobs, Identity: plan.Identity},
		writes:       sharedRateLimiter(opts.KubeAPIQPS, opts.KubeAPIBurst),
		statusWrites: sharedRateLimiter(opts.KubeAPIQPS, opts.KubeAPIBurst),
		done:         make(chan struct{}),
	}
	writeConfig := rest.AddUserAgent(rest.CopyConfig(hostConfig), "job-controller")
	writeConfig.RateLimiter = r.writes
	if r.kubeClient, err = kubernetes.NewForConfig(writeConfig); err != nil {
		return nil, fmt.Errorf("creating host cluster client: %w", err)
	}
	if r.informerClient, err = kubernetes.NewForConfig(hostInformerConfig(hostConfig)); err != nil {
		return nil, fmt.Errorf("creating host cluster client: %w", err)
	}
	le := opts.LeaderElection
	if !le.LeaderElect {
		return r, nil
	}
	hostname, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("getting hostname for the leader-election identity: %w", err)
	}
	// As kube-controller-manager: unique even when two replicas share a
	// hostname.
	identity := hostname + "_" + string(uuid.NewUUID())
	ns := leaseNamespace(le.ResourceNamespace, os.Getenv, os.ReadFile)
	r.leaseName, r.leaseNamespace = leaseName(le.ResourceName, plan.Identity), ns
	r.waitForLegacyLease = plan.WaitForLegacyLease && le.ResourceName == ""
	// NewFromKubeconfig bounds every lease request by the renew deadline.
	r.lock, err = resourcelock.NewFromKubeconfig(le.ResourceLock, ns, r.leaseName,
		resourcelock.ResourceLockConfig{Identity: identity},
		rest.AddUserAgent(rest.CopyConfig(hostConfig), "leader-election"), le.RenewDeadline.Duration)
	if err != nil {
		return nil, fmt.Errorf("creating leader-election lock %s/%s: %w", ns, r.leaseName, err)
	}
	return r, nil
}

// addPostStartHook registers the hook that starts the controller once the
// server serves, so that the controller reaches our API through the
// server's handler chain. The hook returns at once; the controller stops
// when the hook's context is done, i.e. when the server stops.
func (r *jobControllerRunner) addPostStartHook(s *genericapiserver.GenericAPIServer) error {
	return s.AddPostStartHook(JobControllerPostStartHook, func(hookCtx genericapiserver.PostStartHookContext) error {
		// Jobs are read and written through our own API, never storage,
		// so that validation, defaulting and admission apply to the
		// controller's writes as to anybody's.
		// Both clients call the server's handler in process with the
		// loopback credentials: every request still passes authentication,
		// authorization, admission, validation and priority and fairness,
		// but no TLS, HTTP/2 or gzip, which cost the server a visible share
		// of its CPU when the controller went over the loopback connection.
		// The informers read without a limit, as the server's own loopback
		// clients do. The status writes have a budget of their own, at the
		// host writes' rate: they cost the host nothing, so they do not
		// take the Pod requests' share of --kube-api-qps, and the budget
		// still keeps a runaway controller off our server, whose priority
		// and fairness exempt the loopback user.
		clients := jobClients{}
		inProcess := apiserver.InProcessConfig(hookCtx.LoopbackClientConfig, s.Handler)
		readConfig := rest.AddUserAgent(rest.CopyConfig(inProcess), "job-controller-informers")
		writeConfig := rest.AddUserAgent(rest.CopyConfig(inProcess), "job-controller")
		writeConfig.RateLimiter = r.statusWrites
		withContentType(readConfig, r.opts.KubeAPIContentType)
		withContentType(writeConfig, r.opts.KubeAPIContentType)
		var err error
		if clients.read, err = versioned.NewForConfig(readConfig); err != nil {
			return fmt.Errorf("creating in-process Job client: %w", err)
		}
		if clients.write, err = versioned.NewForConfig(writeConfig); err != nil {
			return fmt.Errorf("creating in-process Job client: %w", err)
		}
		r.started.Store(true)
		go func() {
			defer close(r.done)
			r.run(hookCtx, clients)
		}()
		return nil
	})
}

// wait blocks until the controller has stopped and the lease is released,
// if the hook ran.
func (r *jobControllerRunner) wait() {
	if !r.started.Load() {
		return
	}
	<-r.done
	r.running.Lock()
	defer r.running.Unlock()
}

// run runs the controller until ctx is done.
func (r *jobControllerRunner) run(ctx context.Context, jobClient jobClients) {
	logger := klog.FromContext(ctx)
	if r.lock == nil {
		r.runController(ctx, jobClient)
		return
	}
	if r.waitForLegacyLease {
		le := r.opts.LeaderElection
		if err := WaitForLegacyLeaseRelease(ctx, r.kubeClient, r.leaseNamespace, le.RetryPeriod.Duration, le.LeaseDuration.Duration, time.Now); err != nil {
			// Only when the server stops.
			logger.Info("Job controller not started", "err", err)
			return
		}
	}
	for {
		r.runTerm(ctx, jobClient)
		if ctx.Err() != nil {
			return
		}
		// Unlike kube-controller-manager, which exits when it loses its
		// lease, the server keeps serving the API: the controller of this
		// term has been stopped, and this replica campaigns again.
		logger.Info("Job controller stopped: leadership lost; campaigning again", "lease", r.lock.Describe())
		select {
		case <-ctx.Done():
			return
		case <-time.After(r.opts.LeaderElection.RetryPeriod.Duration):
		}
	}
}

// runTerm campaigns for the lease and runs the controller while it holds
// it. It returns when the lease is lost (the controller stopped) or ctx is
// done (the controller stopped, then the lease released).
//
// The lease is released only once the controller of this term has
// stopped, its workers included: the elector releases when its own context
// ends, so that context is not ctx but one this term ends itself after
// runController has returned. A replica shutting down during a rolling
// update therefore never lets the next leader start while its own workers
// still create Pods or write status.
func (r *jobControllerRunner) runTerm(ctx context.Context, jobClient jobClients) {
	logger := klog.FromContext(ctx)
	le := r.opts.LeaderElection
	termCtx, endTerm := context.WithCancel(context.WithoutCancel(ctx))
	defer endTerm()
	// Campaigning stops with ctx; leading, the term ends when the
	// controller has stopped (below).
	var leading atomic.Bool
	stopCampaign := context.AfterFunc(ctx, func() {
		if !leading.Load() {
			endTerm()
		}
	})
	defer stopCampaign()
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            r.lock,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            r.leaseName,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leaseCtx context.Context) {
				leading.Store(true)
				logger.Info("Leading: starting the Job controller", "lease", r.lock.Describe(), "identity", r.lock.Identity())
				// The controller stops when the server stops or the
				// lease is lost, whichever comes first.
				controllerCtx, stopController := context.WithCancel(ctx)
				stopOnLoss := context.AfterFunc(leaseCtx, stopController)
				r.runController(controllerCtx, jobClient)
				stopOnLoss()
				stopController()
				// Stopped, on its own (it failed to start) or not: only
				// now may the lease go to another replica.
				endTerm()
			},
			OnStoppedLeading: func() {
				logger.Info("Not leading", "lease", r.lock.Describe(), "identity", r.lock.Identity())
			},
		},
	})
	if err != nil {
		// Validate checked the durations; this is a bug.
		logger.Error(err, "Creating the leader elector; the Job controller does not run")
		<-ctx.Done()
		return
	}
	elector.Run(termCtx)
}

// runController starts the informers, waits for their caches and runs the
// controller until ctx is done.
func (r *jobControllerRunner) runController(ctx context.Context, jobClient jobClients) {
	r.running.Lock()
	defer r.running.Unlock()
	if ctx.Err() != nil {
		return
	}
	logger := klog.FromContext(ctx)

	// Pods an older release created for this server's Jobs get the label
	// first, so that the informer sees them.
	if n, err := ClaimUnlabelledPods(ctx, r.kubeClient, jobClient.read, r.cfg.Identity); err != nil {
		logger.Error(err, "Some Pods created before the server identity are not labelled with it; the Job controller does not see them", "labelled", n)
	} else if n > 0 {
		logger.Info("Labelled the Pods created before the server identity", "pods", n, "identity", r.cfg.Identity)
	}

	// The Pod informer lists and watches only this server's Pods, those
	// labelled with its identity: the Pods of another batch-apiserver on
	// the same host are none of its business (they would look like the
	// Pods of deleted Jobs), and the server does not cache every Pod of
	// the host. Unlike upstream, an orphan Pod without the label is never
	// seen, and so never adopted.
	podSelector := serverPodsSelector(r.cfg.Identity)
	podFactory := informers.NewSharedInformerFactoryWithOptions(r.informerClient, informerResync,
		informers.WithTransform(dropManagedFields),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = podSelector }))
	jobFactory := newJobInformerFactory(jobClient.read)
	workloads := r.manageWorkloads(ctx)
	if ctx.Err() != nil {
		return
	}
	jm, err := jobcontroller.NewController(ctx, podFactory.Core().V1().Pods(), jobFactory.Batch().V1().Jobs(), r.kubeClient, jobClient.write, r.cfg)
	if err != nil {
		logger.Error(err, "Creating the Job controller; it does not run")
		return
	}
	factories := []interface {
		Start(stop <-chan struct{})
		WaitForCacheSync(stop <-chan struct{}) map[reflect.Type]bool
		Shutdown()
	}{podFactory, jobFactory}
	if workloads {
		schedulingFactory, err := r.schedulingInformers(jm)
		if err != nil {
			logger.Error(err, "Creating the Job controller; it does not run")
			return
		}
		factories = append(factories, schedulingFactory)
	}
	for _, f := range factories {
		// Shutdown waits for the informers' goroutines, which end with ctx.
		defer f.Shutdown()
		f.Start(ctx.Done())
	}
	for _, f := range factories {
		for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
			if !ok {
				logger.Info("Job controller not started: informer cache did not sync", "type", typ.String())
				return
			}
		}
	}
	logger.Info("Starting the Job controller", "workers", r.opts.ConcurrentJobSyncs, "deletePodsOfDeletedJobs", r.cfg.DeletePodsOfDeletedJobs,
		"podSelector", podSelector)
	jm.Run(ctx, int(r.opts.ConcurrentJobSyncs))
	logger.Info("Stopped the Job controller")
}

// Start decides about the Job controller and, when it runs,
// registers its post-start hook on s. It prints the one line about a
// controller that does not run to out (or logs it when out is nil). The
// returned function waits for the controller to stop after the server has.
func Start(ctx context.Context, s *genericapiserver.GenericAPIServer, opts *Options, plan Plan, out func(string)) (wait func(), err error) {
	if !plan.Run {
		out(plan.Off)
		return func() {}, nil
	}
	if plan.Identity == "" {
		return nil, errors.New("starting the Job controller: no server identity")
	}
	jobmetrics.Register()
	r, err := newJobControllerRunner(opts, plan)
	if err != nil {
		return nil, err
	}
	if err := r.addPostStartHook(s); err != nil {
		return nil, fmt.Errorf("adding the Job controller's post-start hook: %w", err)
	}
	host := plan.Kubeconfig
	if host == "" {
		host = "in-cluster config"
	}
	keys := []any{"hostCluster", host, "identity", plan.Identity, "leaderElect", opts.LeaderElection.LeaderElect,
		"deletePodsOfDeletedJobs", plan.DeletePodsOfDeletedJobs,
		string(features.WorkloadWithJob), utilfeature.DefaultFeatureGate.Enabled(features.WorkloadWithJob)}
	if r.lock != nil {
		keys = append(keys, "lease", r.lock.Describe())
	}
	klog.FromContext(ctx).Info("Job controller: on", keys...)
	return r.wait, nil
}
