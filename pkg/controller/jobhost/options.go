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
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	componentbaseconfig "k8s.io/component-base/config"
	componentbaseoptions "k8s.io/component-base/config/options"

	"github.com/batch-apiserver/batch-apiserver/pkg/hostcluster"
)

const (
	// JobControllerName is the name of the embedded Job controller in
	// --controllers, as kube-controller-manager names its Job controller.
	JobControllerName = "job"
	// JobControllerLeasePrefix starts the default name of the Lease the
	// replicas of one server elect the one running the Job controller
	// with; the server identity ends it, so that two servers on one host
	// cluster do not compete for one Lease.
	JobControllerLeasePrefix = "batch-apiserver-job-controller-"

	// defaultKubeAPIQPS and defaultKubeAPIBurst bound the controller's
	// requests (Pods, Events, Job status). kube-controller-manager's
	// defaults are 20 and 30, which cap a Job controller near 1 000 Pods a
	// minute; KEP-2307 sets the bar of a Job controller at 100 QPS. The
	// host is protected by its API Priority and Fairness rather than by a
	// low client rate: our ServiceAccount is not in kube-system, so its
	// requests fall in the host's "service-accounts" flow schema, at the
	// workload-low priority level, below the system's own controllers.
	defaultKubeAPIQPS   = 100
	defaultKubeAPIBurst = 200
)

// Options are the flags of the embedded controllers.
type Options struct {
	// Controllers is --controllers, spelled as kube-controller-manager's:
	// "*" enables every controller on by default, "job" enables the Job
	// controller, "-job" disables it.
	Controllers []string
	// ConcurrentJobSyncs is the number of Jobs synced at the same time.
	ConcurrentJobSyncs int32
	// KubeAPIQPS and KubeAPIBurst are the rate of the controller's
	// requests to the host (Pods, Events), as kube-controller-manager's
	// bound every request of its job controller. Its Job status writes to
	// our own API and the informers have budgets of their own at the same
	// rate. A negative QPS turns the limits off.
	KubeAPIQPS   float32
	KubeAPIBurst int32
	// KubeAPIContentType is the encoding of the controller's requests and
	// of what it asks for, to the host and to our own API.
	KubeAPIContentType string
	// LeaderElection decides which replica runs the controller.
	LeaderElection componentbaseconfig.LeaderElectionConfiguration
}

// NewOptions returns the controller options with
// kube-controller-manager's defaults.
func NewOptions() *Options {
	return &Options{
		Controllers:        []string{"*"},
		ConcurrentJobSyncs: 5,
		KubeAPIQPS:         defaultKubeAPIQPS,
		KubeAPIBurst:       defaultKubeAPIBurst,
		KubeAPIContentType: runtime.ContentTypeProtobuf,
		LeaderElection: componentbaseconfig.LeaderElectionConfiguration{
			LeaderElect:   true,
			LeaseDuration: metav1.Duration{Duration: 15 * time.Second},
			RenewDeadline: metav1.Duration{Duration: 10 * time.Second},
			RetryPeriod:   metav1.Duration{Duration: 2 * time.Second},
			ResourceLock:  resourcelock.LeasesResourceLock,
			// Empty: named after the server identity (see leaseName).
			ResourceName: "",
			// Empty: the namespace the server runs in (see leaseNamespace).
			ResourceNamespace: "",
		},
	}
}

// AddFlags adds --controllers, --concurrent-job-syncs and the leader
// election flags to fs.
func (c *Options) AddFlags(fs *pflag.FlagSet) {
	fs.StringSliceVar(&c.Controllers, "controllers", c.Controllers, fmt.Sprintf(
		"A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables the controller named "+
			"'foo', '-foo' disables the controller named 'foo'.\nAll controllers: %s\nDisabled-by-default controllers: ",
		JobControllerName))
	fs.Int32Var(&c.ConcurrentJobSyncs, "concurrent-job-syncs", c.ConcurrentJobSyncs,
		"The number of job objects that are allowed to sync concurrently. Larger number = more responsive jobs, but more CPU (and network) load")
	fs.Float32Var(&c.KubeAPIQPS, "kube-api-qps", c.KubeAPIQPS,
		"Requests per second the Job controller may send to the host cluster (Pods, Events); its Job status writes to this server "+
			"have a budget of their own at the same rate. A negative value sends without limit. kube-controller-manager's default is 20.")
	fs.Int32Var(&c.KubeAPIBurst, "kube-api-burst", c.KubeAPIBurst,
		"Requests the Job controller may send at once above --kube-api-qps. kube-controller-manager's default is 30.")
	fs.StringVar(&c.KubeAPIContentType, "kube-api-content-type", c.KubeAPIContentType,
		"The encoding of the Job controller's requests, to the host cluster and to this server: "+
			runtime.ContentTypeProtobuf+" (as kube-controller-manager) or "+runtime.ContentTypeJSON+".")
	componentbaseoptions.BindLeaderElectionFlags(&c.LeaderElection, fs)
	// The upstream text does not say where the Lease is when the namespace
	// is not given.
	if f := fs.Lookup("leader-elect-resource-namespace"); f != nil {
		f.Usage += " Default: $" + hostcluster.PodNamespaceEnv + ", else the namespace of the in-cluster ServiceAccount, else 'default'. The Lease is in the host cluster."
	}
	if f := fs.Lookup("leader-elect-resource-name"); f != nil {
		f.Usage += " Default: " + JobControllerLeasePrefix + "<server identity>, the identity kept in the server's storage, " +
			"so that every server on a host cluster has a Lease of its own and the replicas of one share it."
	}
}

// Validate checks the controller flags.
func (c *Options) Validate() []error {
	var errs []error
	for _, name := range c.Controllers {
		if name == "*" {
			continue
		}
		if strings.TrimPrefix(name, "-") != JobControllerName {
			errs = append(errs, fmt.Errorf("--controllers: %q is not in the list of known controllers", name))
		}
	}
	if c.ConcurrentJobSyncs < 1 {
		errs = append(errs, fmt.Errorf("--concurrent-job-syncs must be greater than 0, but got %d", c.ConcurrentJobSyncs))
	}
	if c.KubeAPIContentType != runtime.ContentTypeProtobuf && c.KubeAPIContentType != runtime.ContentTypeJSON {
		errs = append(errs, fmt.Errorf("--kube-api-content-type: %q is not supported, only %q and %q",
			c.KubeAPIContentType, runtime.ContentTypeProtobuf, runtime.ContentTypeJSON))
	}
	// client-go reads a QPS of 0 as its own default of 5.
	if c.KubeAPIQPS == 0 {
		errs = append(errs, errors.New("--kube-api-qps must not be 0 (a negative value turns the limit off)"))
	}
	if c.KubeAPIQPS > 0 && c.KubeAPIBurst < 1 {
		errs = append(errs, fmt.Errorf("--kube-api-burst must be greater than 0, but got %d", c.KubeAPIBurst))
	}
	le := c.LeaderElection
	if !le.LeaderElect {
		return errs
	}
	if le.ResourceLock != resourcelock.LeasesResourceLock {
		errs = append(errs, fmt.Errorf("--leader-elect-resource-lock: %q is not supported, only %q", le.ResourceLock, resourcelock.LeasesResourceLock))
	}
	// The same checks leaderelection.NewLeaderElector makes, reported at
	// startup instead of when the controller would start.
	if le.LeaseDuration.Duration <= le.RenewDeadline.Duration {
		errs = append(errs, fmt.Errorf("--leader-elect-lease-duration (%v) must be greater than --leader-elect-renew-deadline (%v)",
			le.LeaseDuration.Duration, le.RenewDeadline.Duration))
	}
	if le.RetryPeriod.Duration <= 0 {
		errs = append(errs, fmt.Errorf("--leader-elect-retry-period (%v) must be greater than zero", le.RetryPeriod.Duration))
	}
	if le.RenewDeadline.Duration <= time.Duration(leaderelection.JitterFactor*float64(le.RetryPeriod.Duration)) {
		errs = append(errs, fmt.Errorf("--leader-elect-renew-deadline (%v) must be greater than %v times --leader-elect-retry-period (%v)",
			le.RenewDeadline.Duration, leaderelection.JitterFactor, le.RetryPeriod.Duration))
	}
	return errs
}

// JobControllerEnabled reports whether --controllers enables the Job
// controller, with kube-controller-manager's rules: the first entry naming
// the controller ("job" or "-job") decides; otherwise it is on when "*" is
// in the list.
func (c *Options) JobControllerEnabled() bool {
	star := false
	for _, name := range c.Controllers {
		switch name {
		case JobControllerName:
			return true
		case "-" + JobControllerName:
			return false
		case "*":
			star = true
		}
	}
	return star
}

// Plan is what the server does about the Job controller.
type Plan struct {
	// Run is true when the controller runs.
	Run bool
	// Kubeconfig is the host cluster's kubeconfig; empty means the
	// in-cluster config.
	Kubeconfig string
	// DeletePodsOfDeletedJobs is passed to the controller.
	DeletePodsOfDeletedJobs bool
	// WaitForLegacyLease makes the controller wait, before it campaigns
	// for its default Lease, until no replica of a release from before
	// the server identity holds the Lease they all used (aggregated mode:
	// the replicas of a rolling update; see WaitForLegacyLeaseRelease).
	WaitForLegacyLease bool
	// Identity is the server identity (ServerIdentity), set once
	// it has been read: the controller's Pods carry it, and the default
	// Lease is named after it.
	Identity string
	// Off is the one line printed at startup when the controller does not
	// run: why, and how to change it.
	Off string
}

// NewPlan decides whether the Job controller runs. It needs a
// cluster to run Pods in: in aggregated mode the host (the --kubeconfig
// given, else the in-cluster config, the same the generic server already
// requires for delegated authentication); in standalone mode only a cluster
// named by --kubeconfig.
func NewPlan(standalone, enabled bool, kubeconfig string) Plan {
	switch {
	case !enabled:
		return Plan{Off: "Job controller: off (--controllers disables job); Jobs are stored but not run. Pass --controllers=* to run them."}
	case standalone && kubeconfig == "":
		return Plan{Off: "Job controller: off (no cluster to run Pods in); Jobs are stored but not run. Pass --kubeconfig <host cluster kubeconfig> to run them."}
	}
	return Plan{
		Run:        true,
		Kubeconfig: kubeconfig,
		// In standalone mode the host cluster's garbage collector cannot
		// see our API, so it never deletes the Pods of a deleted Job.
		DeletePodsOfDeletedJobs: standalone,
		// A standalone server is one process on its data dir: no older
		// replica of it can run beside it.
		WaitForLegacyLease: !standalone,
	}
}
