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

// Package server turns the command line into a running batch apiserver:
// options, their completion and validation, the configuration they give,
// Run, and the defaults of the standalone mode. What the options configure
// lives elsewhere: certificates and their Secrets in pkg/certs, the Job
// controller's hosting and the server identity in pkg/controller/jobhost.
package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"golang.org/x/term"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
	"k8s.io/apiserver/pkg/authorization/authorizerfactory"
	"k8s.io/apiserver/pkg/authorization/path"
	"k8s.io/apiserver/pkg/authorization/union"
	openapinamer "k8s.io/apiserver/pkg/endpoints/openapi"
	apiserverfeatures "k8s.io/apiserver/pkg/features"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/kubernetes"
	cliflag "k8s.io/component-base/cli/flag"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/logs"
	"k8s.io/component-base/metrics"
	baseversion "k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/pkg/capabilities"
	"k8s.io/utils/clock"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/apiserver"
	"github.com/batch-apiserver/batch-apiserver/pkg/certs"
	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/snapshot"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/jobhost"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
	_ "github.com/batch-apiserver/batch-apiserver/pkg/features" // registers our gates in --feature-gates
	generatedopenapi "github.com/batch-apiserver/batch-apiserver/pkg/generated/openapi"
)

const (
	defaultEtcdPathPrefix = "/registry"
	defaultDataDir        = "data"
	defaultBindPort       = 8443
	// KubeconfigFileName is the admin kubeconfig the standalone mode writes in its data dir.
	KubeconfigFileName = "kubeconfig"
	// coreAPIQPS and coreAPIBurst are the rate of the host cluster client
	// the admission plugins use, kube-apiserver's loopback client's.
	coreAPIQPS   = 50
	coreAPIBurst = 100
)

// Options holds everything the command line sets.
type Options struct {
	RecommendedOptions *genericoptions.RecommendedOptions

	// DataDir holds the embedded etcd, the certificates and the admin
	// kubeconfig in standalone mode.
	DataDir string
	// ServiceNames are extra DNS names (or IPs) put in the standalone serving
	// certificate, e.g. the APIService's <service>.<namespace>.svc.
	ServiceNames []string

	// AllowPrivileged lets pod templates ask for privileged containers, as
	// kube-apiserver's --allow-privileged does (default false there too).
	AllowPrivileged bool

	// ServingSecret holds the flags of the self-managed serving
	// certificate of the aggregated mode.
	ServingSecret *ServingSecretOptions
	// EtcdSecret holds the flags of the etcd certificates the aggregated
	// server makes and keeps in a Secret.
	EtcdSecret *EtcdSecretOptions

	// Shutdown holds the flags of a graceful stop.
	Shutdown *ShutdownOptions

	// Controller holds the flags of the embedded Job controller.
	Controller *jobhost.Options
	// Metrics holds component-base's metrics flags (--disabled-metrics...).
	Metrics *metrics.Options

	// Listener, when set, is used instead of listening on the bind address
	// (tests pass a listener on 127.0.0.1:0).
	Listener net.Listener

	Stdout io.Writer

	// InProcessEtcd, when set, is the embedded etcd member the storage
	// calls in process (Run sets it in standalone mode; tests may set it
	// to the member they started). The etcd servers still name the
	// member's socket, for the health checks.
	InProcessEtcd *embeddedetcd.Server

	// standalone is decided once, in Complete, before the embedded etcd
	// fills in the etcd servers.
	standalone bool
	// hostKubeconfig is --kubeconfig, kept by Complete before standalone
	// mode drops the CoreAPI options: it names the cluster the Job
	// controller runs Pods in.
	hostKubeconfig string
	// servingSecret keeps the serving certificate in step with
	// --serving-secret; Config sets it, Run runs it.
	servingSecret *certs.SecretSyncer
	// etcdSecret keeps the etcd client certificate in step with
	// --etcd-secret; Config sets it, Run runs it.
	etcdSecret *certs.SecretSyncer
}

// NewOptions returns the options with the defaults of the standalone mode.
func NewOptions(out io.Writer) *Options {
	o := &Options{
		RecommendedOptions: genericoptions.NewRecommendedOptions(
			defaultEtcdPathPrefix,
			apiserver.Codecs.LegacyCodec(batchv1.SchemeGroupVersion),
		),
		DataDir:       defaultDataDir,
		ServingSecret: NewServingSecretOptions(),
		EtcdSecret:    NewEtcdSecretOptions(),
		Shutdown:      NewShutdownOptions(),
		Controller:    jobhost.NewOptions(),
		Metrics:       metrics.NewOptions(),
		Stdout:        out,
	}
	o.RecommendedOptions.SecureServing.BindAddress = net.ParseIP("127.0.0.1")
	o.RecommendedOptions.SecureServing.BindPort = defaultBindPort
	// Stored in protobuf, as kube-apiserver stores; Config builds the
	// storage codec from --storage-media-type.
	o.RecommendedOptions.Etcd.DefaultStorageMediaType = apiserver.DefaultStorageMediaType
	return o
}

// Standalone reports whether the server runs on its own embedded etcd with
// its own certificates and authentication, i.e. no --etcd-servers was given.
// It is valid after Complete.
func (o *Options) Standalone() bool {
	return o.standalone
}

// Flags returns every flag of the server in named sets, the sections of
// --help, in the order kube-apiserver prints its own.
func (o *Options) Flags() cliflag.NamedFlagSets {
	var fss cliflag.NamedFlagSets
	ro := o.RecommendedOptions
	// RecommendedOptions.AddFlags takes a single flag set; its parts are
	// added one by one to get sections.
	ro.CoreAPI.AddFlags(fss.FlagSet("generic"))
	ro.Etcd.AddFlags(fss.FlagSet("etcd"))
	o.EtcdSecret.AddFlags(fss.FlagSet("etcd"))
	ro.SecureServing.AddFlags(fss.FlagSet("secure serving"))
	o.ServingSecret.AddFlags(fss.FlagSet("secure serving"))
	ro.Audit.AddFlags(fss.FlagSet("auditing"))
	ro.Features.AddFlags(fss.FlagSet("features"))
	utilfeature.DefaultMutableFeatureGate.AddFlag(fss.FlagSet("features"))
	ro.Authentication.AddFlags(fss.FlagSet("authentication"))
	ro.Authorization.AddFlags(fss.FlagSet("authorization"))
	ro.EgressSelector.AddFlags(fss.FlagSet("egress selector"))
	ro.Admission.AddFlags(fss.FlagSet("admission"))
	o.Metrics.AddFlags(fss.FlagSet("metrics"))
	// klog's flags, the ones component-base/cli.Run would add anyway, so
	// that they are listed.
	logs.AddFlags(fss.FlagSet("logs"))
	ro.Traces.AddFlags(fss.FlagSet("traces"))

	standalone := fss.FlagSet("standalone")
	standalone.StringVar(&o.DataDir, "data-dir", o.DataDir,
		"Directory of the standalone mode (no --etcd-servers): embedded etcd data, certificates and the admin kubeconfig. Standalone mode only.")
	standalone.StringSliceVar(&o.ServiceNames, "standalone-serving-names", o.ServiceNames,
		"Extra DNS names or IPs for the standalone serving certificate. Standalone mode only.")

	fss.FlagSet("generic").BoolVar(&o.AllowPrivileged, "allow-privileged", o.AllowPrivileged,
		"If true, the pod templates of Jobs may ask for privileged containers, as with kube-apiserver's --allow-privileged (kubeadm clusters set it to true). The setting is process-wide.")
	o.Shutdown.AddFlags(fss.FlagSet("generic"))

	o.Controller.AddFlags(fss.FlagSet("controller"))

	global := fss.FlagSet("global")
	verflag.AddFlags(global)
	global.BoolP("help", "h", false, "help for batch-apiserver")

	describeModes(fss)
	return fss
}

// describeModes says in the usage of the flags that matter in one mode only
// which mode that is, and what --kubeconfig is for in each.
func describeModes(fss cliflag.NamedFlagSets) {
	const aggregatedOnly = "Aggregated mode only (--etcd-servers given)."
	for _, name := range []string{"authentication", "authorization", "admission"} {
		fss.FlagSets[name].VisitAll(func(f *pflag.Flag) { appendUsage(f, aggregatedOnly) })
	}
	for _, name := range []string{"etcd-cafile", "etcd-certfile", "etcd-keyfile"} {
		appendUsage(fss.FlagSets["etcd"].Lookup(name), aggregatedOnly)
	}
	appendUsage(fss.FlagSets["features"].Lookup("enable-priority-and-fairness"),
		"Aggregated mode only: standalone mode turns it off.")
	appendUsage(fss.FlagSets["etcd"].Lookup("enable-garbage-collector"),
		"Aggregated mode only: standalone mode turns it off, as no garbage collector sees its API.")
	appendUsage(fss.FlagSets["etcd"].Lookup("etcd-servers"),
		"Given: aggregated mode. Not given: standalone mode, on an embedded etcd in --data-dir.")
	if f := fss.FlagSets["generic"].Lookup("kubeconfig"); f != nil {
		f.Usage = "kubeconfig file of the host cluster. Aggregated mode: the 'core' kubernetes server for delegated authentication, " +
			"authorization and admission (not given: the in-cluster config), and where the Job controller runs Pods. " +
			"Standalone mode: the cluster the Job controller runs Pods in; not given, Jobs are stored but not run."
	}
}

// appendUsage adds a sentence to the usage of f, if f exists (a later
// k8s.io/apiserver may drop a flag).
func appendUsage(f *pflag.Flag, sentence string) {
	if f == nil {
		return
	}
	if !strings.HasSuffix(f.Usage, ".") {
		f.Usage += "."
	}
	f.Usage += " " + sentence
}

// AddFlags adds every flag to cmd and makes --help print them in sections.
func (o *Options) AddFlags(cmd *cobra.Command) {
	fss := o.Flags()
	fs := cmd.Flags()
	for _, name := range fss.Order {
		fs.AddFlagSet(fss.FlagSets[name])
	}
	cliflag.SetUsageAndHelpFunc(cmd, fss, terminalColumns(cmd.OutOrStdout()))
}

// terminalColumns is the width of the terminal w writes to, or 0 (do not
// wrap) when w is not a terminal. component-base/term does the same but
// needs github.com/moby/term, which nothing else here uses.
func terminalColumns(w io.Writer) int {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return 0
	}
	cols, _, err := term.GetSize(int(f.Fd()))
	if err != nil {
		return 0
	}
	return cols
}

// Complete fills in what depends on the run mode.
func (o *Options) Complete() error {
	// Core validation reads the privileged switch from this process-wide
	// setting, which only its first setter decides.
	capabilities.Setup(o.AllowPrivileged, 0)
	o.standalone = len(o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList) == 0
	if o.RecommendedOptions.CoreAPI != nil {
		o.hostKubeconfig = o.RecommendedOptions.CoreAPI.CoreAPIKubeconfigPath
	}
	if o.standalone {
		ro := o.RecommendedOptions
		// No host cluster: no delegated authentication or authorization,
		// no core API client, no admission plugins that need one, no
		// priority and fairness.
		ro.Authentication = nil
		ro.Authorization = nil
		ro.CoreAPI = nil
		ro.Admission = nil
		ro.Features.EnablePriorityAndFairness = false
		// No garbage collector runs without a host cluster: orphan and
		// foreground finalizers would never be removed.
		ro.Etcd.EnableGarbageCollection = false
	}
	return nil
}

// jobControllerPlan decides about the Job controller. It is valid after
// Complete.
func (o *Options) jobControllerPlan() jobhost.Plan {
	return jobhost.NewPlan(o.Standalone(), o.Controller.JobControllerEnabled(), o.hostKubeconfig)
}

// Validate checks the options.
func (o *Options) Validate() error {
	var errs []error
	if o.Standalone() {
		// The embedded etcd fills in the servers at Run; check the rest.
		ro := *o.RecommendedOptions
		etcd := *ro.Etcd
		etcd.StorageConfig.Transport.ServerList = []string{"http://127.0.0.1:2379"}
		ro.Etcd = &etcd
		errs = append(errs, ro.Validate()...)
		if o.DataDir == "" {
			errs = append(errs, errors.New("--data-dir must be set in standalone mode (no --etcd-servers)"))
		}
	} else {
		errs = append(errs, o.RecommendedOptions.Validate()...)
	}
	if !o.Standalone() {
		errs = append(errs, o.ServingSecret.Validate()...)
		errs = append(errs, o.EtcdSecret.Validate(o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList)...)
	}
	errs = append(errs, o.Shutdown.Validate()...)
	errs = append(errs, o.Controller.Validate()...)
	errs = append(errs, o.Metrics.Validate()...)
	return utilerrors.NewAggregate(errs)
}

// Config builds the server configuration from the completed options. In
// standalone mode it creates the certificates in the data dir first.
func (o *Options) Config() (*apiserver.Config, *certs.StandaloneCerts, error) {
	var pki *certs.StandaloneCerts
	if o.Standalone() {
		// Also here, not only in Run: tests start the etcd themselves.
		if err := ensurePrivateDataDir(o.DataDir); err != nil {
			return nil, nil, err
		}
		var err error
		pki, err = certs.EnsureStandaloneCerts(filepath.Join(o.DataDir), o.ServiceNames)
		if err != nil {
			return nil, nil, fmt.Errorf("preparing standalone certificates: %w", err)
		}
		o.RecommendedOptions.SecureServing.ServerCert.CertKey.CertFile = pki.ServingCertFile
		o.RecommendedOptions.SecureServing.ServerCert.CertKey.KeyFile = pki.ServingKeyFile
	} else if o.usesServingSecret() {
		syncer, err := o.ServingSecret.newServingSecretSyncer(o.hostKubeconfig, o.RecommendedOptions.SecureServing.ServerCert.CertDirectory)
		if err != nil {
			return nil, nil, err
		}
		if err := syncer.FirstSync(context.Background()); err != nil {
			return nil, nil, fmt.Errorf("--serving-secret: %w", err)
		}
		// One file holds the certificate and its key, replaced at once;
		// the generic server's dynamic provider reloads it.
		o.RecommendedOptions.SecureServing.ServerCert.CertKey.CertFile = syncer.File()
		o.RecommendedOptions.SecureServing.ServerCert.CertKey.KeyFile = syncer.File()
		o.servingSecret = syncer
	} else if err := o.RecommendedOptions.SecureServing.MaybeDefaultWithSelfSignedCerts("localhost", nil, []net.IP{net.ParseIP("127.0.0.1")}); err != nil {
		return nil, nil, fmt.Errorf("creating self-signed certificates: %w", err)
	}
	if o.Listener != nil {
		o.RecommendedOptions.SecureServing.Listener = o.Listener
		o.RecommendedOptions.SecureServing.BindPort = o.Listener.Addr().(*net.TCPAddr).Port
	}

	var etcdCA healthz.HealthChecker
	if o.usesEtcdSecret() {
		transport := &o.RecommendedOptions.Etcd.StorageConfig.Transport
		syncer, err := o.EtcdSecret.newEtcdSecretSyncer(o.hostKubeconfig, o.RecommendedOptions.SecureServing.ServerCert.CertDirectory, transport.ServerList)
		if err != nil {
			return nil, nil, err
		}
		if err := syncer.FirstSync(context.Background()); err != nil {
			return nil, nil, fmt.Errorf("--etcd-secret: %w", err)
		}
		// The etcd client reloads its certificate and key at every
		// handshake, the CA only at start (certs.NewEtcdCALiveness).
		transport.TrustedCAFile, transport.CertFile, transport.KeyFile = syncer.CAFile(), syncer.File(), syncer.File()
		o.etcdSecret = syncer
		etcdCA = certs.NewEtcdCALiveness(syncer)
	}

	serverConfig := genericapiserver.NewRecommendedConfig(apiserver.Codecs)
	serverConfig.EffectiveVersion = compatibility.NewEffectiveVersionFromString(baseversion.DefaultKubeBinaryVersion, "", "")
	// Bad namespaces and watch resourceVersions get a 400, not the generic 500.
	serverConfig.BuildHandlerChainFunc = apiserver.BuildHandlerChain

	namer := openapinamer.NewDefinitionNamer(apiserver.Scheme)
	serverConfig.OpenAPIConfig = genericapiserver.DefaultOpenAPIConfig(generatedopenapi.GetOpenAPIDefinitions, namer)
	serverConfig.OpenAPIConfig.Info.Title = "batch-apiserver"
	serverConfig.OpenAPIV3Config = genericapiserver.DefaultOpenAPIV3Config(generatedopenapi.GetOpenAPIDefinitions, namer)
	serverConfig.OpenAPIV3Config.Info.Title = "batch-apiserver"

	var clientCAReady healthz.HealthChecker
	if !o.Standalone() {
		var err error
		if clientCAReady, err = certs.LoadDelegatedClientCA(o.RecommendedOptions.Authentication); err != nil {
			return nil, nil, err
		}
	}
	// The generic options store with the codec given to
	// NewRecommendedOptions whatever --storage-media-type says: replace it
	// with one that encodes in that media type (and decodes any).
	storageCodec, storageVersioner, err := apiserver.NewStorageCodec(o.RecommendedOptions.Etcd.DefaultStorageMediaType)
	if err != nil {
		return nil, nil, fmt.Errorf("--storage-media-type: %w", err)
	}
	o.RecommendedOptions.Etcd.StorageConfig.Codec = storageCodec
	o.RecommendedOptions.Etcd.StorageConfig.EncodeVersioner = storageVersioner
	// The core API client is applied first so that the clients the
	// admission plugins get from it have kube-apiserver's loopback rate
	// (50 QPS, burst 100), not client-go's default 5 QPS: namespace
	// lifecycle admission looks up every namespace its informer has not
	// seen yet, and a burst of creates into a new namespace queued behind
	// 5 QPS for up to the request timeout. The informers keep their own
	// client.
	if coreAPI := o.RecommendedOptions.CoreAPI; coreAPI != nil {
		if err := coreAPI.ApplyTo(serverConfig); err != nil {
			return nil, nil, fmt.Errorf("applying options: %w", err)
		}
		if serverConfig.ClientConfig.QPS == 0 {
			serverConfig.ClientConfig.QPS, serverConfig.ClientConfig.Burst = coreAPIQPS, coreAPIBurst
		}
		// Before the admission plugins are built: one of them needs an
		// API that hosts before 1.36 do not serve.
		hostConfig := serverConfig.ClientConfig
		line, err := "", error(nil)
		if hostConfig != nil {
			line, err = fitAdmissionToHost(o.RecommendedOptions.Admission, func() (bool, error) { return hostServesMutatingPolicies(hostConfig) })
		}
		if err != nil {
			klog.Background().Error(err, "Checking the host cluster's APIs")
		} else if line != "" {
			klog.Background().Info(line)
		}
		o.RecommendedOptions.CoreAPI = nil
		defer func() { o.RecommendedOptions.CoreAPI = coreAPI }()
	}
	// The MutatingAdmissionPolicy plugin takes the schemas of our own
	// kinds from this binary, not from the host's OpenAPI: a create its
	// policies match is never refused because the host has not aggregated
	// our OpenAPI yet (apiserver.PolicySchemas).
	var policySchemas *apiserver.PolicySchemas
	if o.RecommendedOptions.Admission != nil {
		if policySchemas, err = apiserver.NewPolicySchemas(); err != nil {
			return nil, nil, err
		}
		gate := o.RecommendedOptions.FeatureGate
		o.RecommendedOptions.ExtraAdmissionInitializers = func(c *genericapiserver.RecommendedConfig) ([]admission.PluginInitializer, error) {
			if c.ClientConfig == nil {
				return nil, nil
			}
			client, err := kubernetes.NewForConfig(c.ClientConfig)
			if err != nil {
				return nil, fmt.Errorf("building the admission policy client: %w", err)
			}
			on := gate != nil && gate.Enabled(apiserverfeatures.MutatingAdmissionPolicy)
			return []admission.PluginInitializer{policySchemas.Initializer(client, on)}, nil
		}
	}
	if err := o.RecommendedOptions.ApplyTo(serverConfig); err != nil {
		return nil, nil, fmt.Errorf("applying options: %w", err)
	}
	if policySchemas != nil {
		serverConfig.AddReadyzChecks(policySchemas.ReadyzCheck())
	}
	if clientCAReady != nil {
		serverConfig.AddReadyzChecks(clientCAReady)
	}
	if rhReady := certs.RequestHeaderReady(serverConfig.Authentication.RequestHeaderConfig); rhReady != nil {
		serverConfig.AddReadyzChecks(rhReady)
	}
	if etcdCA != nil {
		serverConfig.AddHealthChecks(etcdCA)
	}
	if o.InProcessEtcd != nil {
		etcdOpts := o.RecommendedOptions.Etcd
		// The same rule as the options' own RESTOptionsGetter: cached
		// unless --watch-cache=false or a size of 0 for the resource.
		sizes, err := genericoptions.ParseWatchCacheSizes(etcdOpts.WatchCacheSizes)
		if err != nil {
			return nil, nil, err
		}
		serverConfig.RESTOptionsGetter = o.InProcessEtcd.InProcessStorage(serverConfig.RESTOptionsGetter, func(gr schema.GroupResource) bool {
			size, ok := sizes[gr]
			return etcdOpts.EnableWatchCache && (!ok || size > 0)
		})
	}
	if pki != nil {
		if err := applyStandaloneAuth(&serverConfig.Config, pki); err != nil {
			return nil, nil, err
		}
	}
	return &apiserver.Config{GenericConfig: serverConfig}, pki, nil
}

// usesServingSecret reports whether the aggregated server serves from
// --serving-secret: named, and no certificate files given.
func (o *Options) usesServingSecret() bool {
	key := o.RecommendedOptions.SecureServing.ServerCert.CertKey
	return !o.Standalone() && o.ServingSecret.Secret != "" && key.CertFile == "" && key.KeyFile == ""
}

// usesEtcdSecret reports whether the aggregated server connects to etcd
// with the certificates of --etcd-secret: named, and no etcd certificate
// files given.
func (o *Options) usesEtcdSecret() bool {
	t := o.RecommendedOptions.Etcd.StorageConfig.Transport
	return !o.Standalone() && o.EtcdSecret.Secret != "" && t.TrustedCAFile == "" && t.CertFile == "" && t.KeyFile == ""
}

// ensurePrivateDataDir creates the standalone data dir with mode 0700, and
// restricts it to 0700 when it exists with a wider mode: it holds the keys,
// the admin kubeconfig and etcd, and no one else may enter it.
func ensurePrivateDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("creating data dir %s: %w", dir, err)
	}
	// MkdirAll leaves an existing directory's mode alone.
	if err := os.Chmod(dir, 0o700); err != nil {
		return fmt.Errorf("restricting data dir %s to its owner: %w", dir, err)
	}
	return nil
}

// applyStandaloneAuth authenticates client certificates of our own CA (and
// nothing else: no anonymous requests) and lets system:masters do anything.
func applyStandaloneAuth(c *genericapiserver.Config, standalone *certs.StandaloneCerts) error {
	caProvider, err := dynamiccertificates.NewDynamicCAContentFromFile("client-ca", standalone.CAFile)
	if err != nil {
		return fmt.Errorf("loading client CA %s: %w", standalone.CAFile, err)
	}
	if err := c.Authentication.ApplyClientCert(caProvider, c.SecureServing); err != nil {
		return fmt.Errorf("assigning client CA: %w", err)
	}
	c.Authentication.Authenticator = certs.NewCachingCertAuthenticator(
		x509.NewDynamic(caProvider.VerifyOptions, x509.CommonNameUserConversion), caProvider.VerifyOptions, clock.RealClock{})

	healthPaths, err := path.NewAuthorizer([]string{"/healthz", "/livez", "/readyz"})
	if err != nil {
		return fmt.Errorf("building path authorizer: %w", err)
	}
	authz, err := union.New(
		union.NamedAuthorizer{AuthorizerName: "health", Authorizer: healthPaths},
		union.NamedAuthorizer{AuthorizerName: "privileged-groups", Authorizer: authorizerfactory.NewPrivilegedGroups(user.SystemPrivilegedGroup)},
	)
	if err != nil {
		return fmt.Errorf("building authorizer: %w", err)
	}
	c.Authorization.Authorizer = authz
	return nil
}

// Run starts the server (and in standalone mode the embedded etcd) and blocks
// until ctx is done.
func (o *Options) Run(ctx context.Context) error {
	logger := klog.FromContext(ctx)
	o.Metrics.Apply()
	// Tests may start the embedded etcd themselves and pass its endpoints.
	if o.Standalone() && len(o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList) == 0 {
		if err := ensurePrivateDataDir(o.DataDir); err != nil {
			return err
		}
		etcd, err := embeddedetcd.Start(ctx, embeddedetcd.Config{DataDir: filepath.Join(o.DataDir, "etcd")})
		if err != nil {
			// Start's errors already say what failed in which etcd directory;
			// add only the flag the user can change.
			return fmt.Errorf("--data-dir %s: %w", o.DataDir, err)
		}
		defer func() {
			if err := etcd.Close(); err != nil {
				logger.Error(err, "Stopping embedded etcd")
			}
		}()
		o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = etcd.Endpoints()
		o.InProcessEtcd = etcd
		logger.Info("Started embedded etcd", "dataDir", o.DataDir, "endpoints", etcd.Endpoints())
	}

	config, pki, err := o.Config()
	if err != nil {
		return err
	}
	if o.servingSecret != nil {
		go o.servingSecret.Run(ctx, o.ServingSecret.SyncPeriod)
	}
	if o.etcdSecret != nil {
		go o.etcdSecret.Run(ctx, o.EtcdSecret.SyncPeriod)
	}
	applyShutdown(&config.GenericConfig.Config, o.Shutdown, ctx.Done())
	server, err := config.Complete().New()
	if err != nil {
		return err
	}

	if pki != nil {
		addr := config.GenericConfig.SecureServing.Listener.Addr().(*net.TCPAddr)
		kubeconfig := filepath.Join(o.DataDir, KubeconfigFileName)
		serverURL := fmt.Sprintf("https://%s", net.JoinHostPort(addr.IP.String(), fmt.Sprint(addr.Port)))
		if err := certs.WriteAdminKubeconfig(kubeconfig, serverURL, pki); err != nil {
			return fmt.Errorf("writing admin kubeconfig: %w", err)
		}
		if o.Stdout != nil {
			fmt.Fprintf(o.Stdout, "batch-apiserver serving on %s\nAdmin kubeconfig: %s\n  kubectl --kubeconfig %s get jobs.batch.jobs.dev\n",
				serverURL, kubeconfig, kubeconfig)
		}
	}
	plan := o.jobControllerPlan()
	if plan.Run {
		// Before the controller starts: its Pods, the Pods it sees and its
		// Lease are those of this identity.
		if plan.Identity, err = jobhost.ServerIdentity(ctx, o.InProcessEtcd, o.RecommendedOptions.Etcd.StorageConfig); err != nil {
			return err
		}
	}
	waitForController, err := jobhost.Start(ctx, server.GenericAPIServer, o.Controller, plan, o.printLine)
	if err != nil {
		return err
	}
	err = server.GenericAPIServer.PrepareRun().RunWithContext(ctx)
	// Let the controller stop and release its lease before the process
	// exits.
	waitForController()
	return err
}

// printLine prints a startup line for the person running the server, or
// logs it when there is no output (tests).
func (o *Options) printLine(line string) {
	if o.Stdout != nil {
		fmt.Fprintln(o.Stdout, line)
		return
	}
	klog.Background().Info(line)
}

// NewCommand returns the batch-apiserver command.
func NewCommand(ctx context.Context, out, errOut io.Writer) *cobra.Command {
	o := NewOptions(out)
	cmd := &cobra.Command{
		Use:   "batch-apiserver",
		Short: "Serve the batch.jobs.dev Job API (Kubernetes batch/v1 Job semantics)",
		Long: `batch-apiserver serves Jobs of group batch.jobs.dev with the behaviour of
Kubernetes batch/v1 Job. With no flags it runs standalone: embedded etcd and
certificates in --data-dir, HTTPS on 127.0.0.1:8443, and an admin kubeconfig
in <data-dir>/kubeconfig. With --etcd-servers it runs as an aggregated API
server with delegated authentication and authorization.

The embedded Job controller runs the Pods of Jobs when the server has a
cluster to run them in: in aggregated mode the host cluster (in-cluster
config or --kubeconfig); in standalone mode only the cluster --kubeconfig
names. Without one, Jobs are stored but not run.

batch-apiserver snapshot save|restore backs up a running standalone server
and restores a backup into a new data directory (batch-apiserver snapshot
--help).`,
		SilenceUsage: true,
		RunE: func(cmd *cobra.Command, args []string) error {
			if err := o.Complete(); err != nil {
				return err
			}
			if err := o.Validate(); err != nil {
				return err
			}
			return o.Run(cmd.Context())
		},
	}
	cmd.SetContext(ctx)
	cmd.SetOut(out)
	cmd.SetErr(errOut)
	o.AddFlags(cmd)
	cmd.AddCommand(snapshot.NewCommand(out))
	return cmd
}
