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

package framework

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
)

// Names the artifacts and the harness agree on.
const (
	// Namespace is where batch-apiserver's ServiceAccount and Service live.
	Namespace = "batch-system"
	// ServiceName is the Service the APIServices point at.
	ServiceName = "batch-apiserver"
	// ServiceAccountName is the identity batch-apiserver uses in the host cluster.
	ServiceAccountName = "batch-apiserver"
	// EtcdPrefix is batch-apiserver's own prefix in the host cluster's etcd.
	EtcdPrefix = "/batch.jobs.dev"
	// FrontProxyClientName is the common name of kube-apiserver's proxy client
	// certificate, the only name --requestheader-allowed-names lets through.
	FrontProxyClientName = "front-proxy-client"
)

// APIServiceNames are the APIServices artifacts/deploy/apiservice.yaml registers.
var APIServiceNames = []string{"v1.batch.jobs.dev", "v1beta1.batch.jobs.dev"}

// ArtifactFiles are the manifests of artifacts/deploy the harness applies,
// in order, before it starts batch-apiserver. The Service and the
// Deployment are not among them: batch-apiserver runs as a local process
// reached through an ExternalName Service.
var ArtifactFiles = []string{
	"artifacts/deploy/namespace.yaml",
	"artifacts/deploy/serviceaccount.yaml",
	"artifacts/deploy/rbac.yaml",
	"artifacts/deploy/clusterroles-aggregated.yaml",
}

// APIServiceFile holds the APIServices; the harness fills in caBundle.
const APIServiceFile = "artifacts/deploy/apiservice.yaml"

// Users are the client certificates for the security tests, beside admin.
var Users = []string{"alice", "bob", "carol"}

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// Phase is how long a part of the start took.
type Phase struct {
	Name     string
	Duration time.Duration
}

// Cluster is the running host cluster with batch-apiserver aggregated into it.
type Cluster struct {
	Bins *Binaries
	// Dir holds certificates, kubeconfigs, logs and etcd data.
	Dir    string
	LogDir string
	PKIDir string

	// HostURL is kube-apiserver's address.
	HostURL string
	// BatchURL is batch-apiserver's own address, bypassing the aggregator.
	BatchURL string
	// BatchPort is batch-apiserver's port.
	BatchPort int
	// EtcdEndpoints is the host cluster's etcd, shared with batch-apiserver.
	EtcdEndpoints []string

	// ClusterCA signs kube-apiserver's serving certificate and the client
	// certificates kube-apiserver accepts.
	ClusterCA *KeyPair
	// FrontProxyCA signs kube-apiserver's proxy client certificate.
	FrontProxyCA *KeyPair
	// BatchCA signs batch-apiserver's serving certificate; it is the
	// APIServices' caBundle.
	BatchCA *KeyPair

	// AdminKubeconfig is a system:masters user of kube-apiserver.
	AdminKubeconfig string
	// Admin is the rest config of AdminKubeconfig.
	Admin *rest.Config
	// AdminClient is a clientset of Admin.
	AdminClient kubernetes.Interface
	// Dynamic is a dynamic client of Admin.
	Dynamic dynamic.Interface

	// Phases are the steps of Start and how long each took.
	Phases []Phase

	// BatchAPIServer is the batch-apiserver process the APIServices point
	// at; KillProcess and RestartBatchAPIServer replace it.
	BatchAPIServer *Process
	// KubeAPIServer is the kube-apiserver process.
	KubeAPIServer *Process
	// KubeControllerManager is the kube-controller-manager process.
	KubeControllerManager *Process
	// ControllerManagerURL is kube-controller-manager's address (its
	// /metrics takes the admin user's client certificate).
	ControllerManagerURL string
	// BatchFlags are the flags the batch-apiserver binary knows (from its
	// --help), so that the harness turns on only what the binary has.
	BatchFlags map[string]bool

	// batchKubeconfig is the host kubeconfig of batch-apiserver's
	// ServiceAccount.
	batchKubeconfig string

	etcd  *embeddedetcd.Server
	procs []*Process
	opts  ClusterOptions
	// kubeAPIServerArgs are kube-apiserver's flags, for a restart.
	kubeAPIServerArgs []string
}

// StartCluster starts everything and returns when both APIServices are
// Available and kube-controller-manager is healthy. On error it stops what
// it started; the logs stay in dir.
func StartCluster(ctx context.Context, bins *Binaries, dir string) (c *Cluster, err error) {
	return StartClusterWith(ctx, bins, dir, ClusterOptions{})
}

// ClusterOptions change what StartClusterWith starts.
type ClusterOptions struct {
	// EtcdEndpoints is an etcd the cluster uses instead of one embedded in
	// the test process (the benchmark runs etcd as a process of its own,
	// to read its CPU time).
	EtcdEndpoints []string
	// NoControllerManager leaves kube-controller-manager out.
	NoControllerManager bool
	// NoBatchAPIServer leaves out batch-apiserver and its APIServices: a
	// host cluster for standalone servers only. (With the APIServices,
	// the host's garbage collector looks a standalone server's Jobs up in
	// the aggregated server, does not find them, and deletes their Pods.)
	NoBatchAPIServer bool
	// NoAPIServices starts batch-apiserver but registers no APIService:
	// the host knows nothing of batch.jobs.dev (no discovery, no OpenAPI),
	// as before an install's APIServices are Available.
	NoAPIServices bool
	// KubeControllers replaces the --controllers list of
	// kube-controller-manager when it is not empty.
	KubeControllers []string
	// KubeAPIServerArgs are further kube-apiserver flags (e.g.
	// --feature-gates, --runtime-config).
	KubeAPIServerArgs []string
	// KubeControllerManagerArgs are further kube-controller-manager flags
	// (e.g. --kube-api-qps).
	KubeControllerManagerArgs []string
	// BatchAPIServerArgs are further flags of the batch-apiserver behind
	// the APIServices (e.g. --kube-api-qps); they win over the usual ones.
	BatchAPIServerArgs []string
}

// StartClusterWith is StartCluster with opts.
func StartClusterWith(ctx context.Context, bins *Binaries, dir string, opts ClusterOptions) (c *Cluster, err error) {
	c = &Cluster{
		Bins:   bins,
		Dir:    dir,
		LogDir: filepath.Join(dir, "logs"),
		PKIDir: filepath.Join(dir, "pki"),
		opts:   opts,
	}
	defer func() {
		if err != nil {
			c.Stop()
		}
	}()
	for _, d := range []string{c.LogDir, c.PKIDir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return c, err
		}
	}
	steps := []struct {
		name string
		fn   func(context.Context) error
	}{
		{"etcd", c.startEtcd},
		{"certificates", c.makeCertificates},
		{"kube-apiserver", c.startKubeAPIServer},
		{"artifacts", c.applyArtifacts},
		{"batch-apiserver", c.startBatchAPIServer},
		{"apiservices", c.registerAPIServices},
		{"kube-controller-manager", c.startKubeControllerManager},
	}
	for _, s := range steps {
		if s.name == "etcd" && len(opts.EtcdEndpoints) > 0 {
			c.EtcdEndpoints = opts.EtcdEndpoints
			continue
		}
		if s.name == "kube-controller-manager" && opts.NoControllerManager {
			continue
		}
		if (s.name == "batch-apiserver" || s.name == "apiservices") && opts.NoBatchAPIServer {
			continue
		}
		if s.name == "apiservices" && opts.NoAPIServices {
			continue
		}
		start := time.Now()
		if err := s.fn(ctx); err != nil {
			return c, fmt.Errorf("starting the e2e cluster, step %s: %w", s.name, err)
		}
		c.Phases = append(c.Phases, Phase{Name: s.name, Duration: time.Since(start)})
	}
	return c, nil
}

// Stop stops every process (kube-controller-manager first, etcd last).
// It is safe to call more than once.
func (c *Cluster) Stop() {
	for i := len(c.procs) - 1; i >= 0; i-- {
		c.procs[i].Stop()
	}
	c.procs = nil
	if c.etcd != nil {
		if err := c.etcd.Close(); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: stopping etcd: %v\n", err)
		}
		c.etcd = nil
	}
}

// Healthy returns an error when one of the processes has exited.
func (c *Cluster) Healthy() error {
	var errs []error
	for _, p := range c.procs {
		if err := p.Exited(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DumpLogs writes the last lines of every process log to w.
func (c *Cluster) DumpLogs(w io.Writer, lines int) {
	for _, p := range c.procs {
		fmt.Fprintf(w, "===== %s (pid %d), last %d lines of %s =====\n%s\n", p.Name, p.PID(), lines, p.LogFile, Tail(p.LogFile, lines))
	}
}

// Kubectl returns kubectl as the admin user of the host cluster.
func (c *Cluster) Kubectl() Kubectl {
	return Kubectl{Bin: c.Bins.Kubectl, Kubeconfig: c.AdminKubeconfig}
}

// KubectlAs returns kubectl as one of Users (a client certificate of the
// cluster CA with no groups).
func (c *Cluster) KubectlAs(user string) Kubectl {
	return Kubectl{Bin: c.Bins.Kubectl, Kubeconfig: c.userKubeconfig(user)}
}

// AnonymousKubectl returns kubectl with no credentials.
func (c *Cluster) AnonymousKubectl() Kubectl {
	return Kubectl{Bin: c.Bins.Kubectl, Kubeconfig: filepath.Join(c.Dir, "anonymous.kubeconfig")}
}

func (c *Cluster) userKubeconfig(user string) string {
	return filepath.Join(c.Dir, user+".kubeconfig")
}

// Artifact returns the path of a file in the repository.
func (c *Cluster) Artifact(rel string) string {
	return filepath.Join(c.Bins.RepoRoot, rel)
}

func (c *Cluster) startEtcd(ctx context.Context) error {
	etcd, err := embeddedetcd.Start(ctx, embeddedetcd.Config{
		DataDir: filepath.Join(c.Dir, "etcd"),
		// kube-apiserver and the aggregated server, separate processes,
		// share it as they would share a cluster's etcd: loopback TCP.
		ClientURL:         "http://127.0.0.1:0",
		SnapshotCount:     5000,
		QuotaBackendBytes: 1 << 30,
		UnsafeNoFsync:     true,
	})
	if err != nil {
		return err
	}
	c.etcd = etcd
	c.EtcdEndpoints = etcd.Endpoints()
	return nil
}

func (c *Cluster) makeCertificates(context.Context) error {
	var err error
	loopback := []net.IP{net.ParseIP("127.0.0.1")}
	if c.ClusterCA, err = NewCA(c.PKIDir, "cluster-ca"); err != nil {
		return err
	}
	if _, err = c.ClusterCA.Sign(c.PKIDir, "kube-apiserver", LeafSpec{
		CommonName: "kube-apiserver",
		DNSNames:   []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPs:        append(loopback, net.ParseIP("10.0.0.1")),
		Server:     true,
	}); err != nil {
		return err
	}
	if c.FrontProxyCA, err = NewCA(c.PKIDir, "front-proxy-ca"); err != nil {
		return err
	}
	if _, err = c.FrontProxyCA.Sign(c.PKIDir, FrontProxyClientName, LeafSpec{CommonName: FrontProxyClientName, Client: true}); err != nil {
		return err
	}
	saKey, saKeyPEM, err := newKey()
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(c.PKIDir, "sa.key"), saKeyPEM, 0o600); err != nil {
		return err
	}
	if err := writePublicKey(filepath.Join(c.PKIDir, "sa.pub"), saKey); err != nil {
		return err
	}
	// batch-apiserver's serving certificate carries the name the aggregator
	// checks (<service>.<namespace>.svc) and 127.0.0.1 for direct requests.
	if c.BatchCA, err = NewCA(c.PKIDir, "batch-apiserver-ca"); err != nil {
		return err
	}
	svc := ServiceName + "." + Namespace + ".svc"
	if _, err = c.BatchCA.Sign(c.PKIDir, "batch-apiserver", LeafSpec{
		CommonName: svc,
		DNSNames:   []string{svc, svc + ".cluster.local", "localhost"},
		IPs:        loopback,
		Server:     true,
	}); err != nil {
		return err
	}

	clients := []LeafSpec{
		{CommonName: "e2e-admin", Organization: []string{"system:masters"}, Client: true},
		{CommonName: "system:kube-controller-manager", Client: true},
	}
	for _, u := range Users {
		clients = append(clients, LeafSpec{CommonName: u, Client: true})
	}
	for _, spec := range clients {
		if _, err := c.ClusterCA.Sign(c.PKIDir, spec.CommonName, spec); err != nil {
			return err
		}
	}
	return nil
}

func (c *Cluster) pki(name string) string { return filepath.Join(c.PKIDir, name) }

func (c *Cluster) startKubeAPIServer(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	c.HostURL = "https://127.0.0.1:" + strconv.Itoa(port)

	kubeconfigs := map[string]string{
		"admin":                   "e2e-admin",
		"kube-controller-manager": "system:kube-controller-manager",
	}
	for _, u := range Users {
		kubeconfigs[u] = u
	}
	for file, cn := range kubeconfigs {
		if err := c.writeHostKubeconfig(filepath.Join(c.Dir, file+".kubeconfig"), clientcmdapi.AuthInfo{
			ClientCertificate: c.pki(cn + ".crt"),
			ClientKey:         c.pki(cn + ".key"),
		}); err != nil {
			return err
		}
	}
	if err := c.writeHostKubeconfig(filepath.Join(c.Dir, "anonymous.kubeconfig"), clientcmdapi.AuthInfo{}); err != nil {
		return err
	}
	c.AdminKubeconfig = filepath.Join(c.Dir, "admin.kubeconfig")
	if c.Admin, err = clientcmd.BuildConfigFromFlags("", c.AdminKubeconfig); err != nil {
		return err
	}
	if c.AdminClient, err = kubernetes.NewForConfig(c.Admin); err != nil {
		return err
	}
	if c.Dynamic, err = dynamic.NewForConfig(c.Admin); err != nil {
		return err
	}

	c.kubeAPIServerArgs = []string{
		"--etcd-servers=" + strings.Join(c.EtcdEndpoints, ","),
		"--bind-address=127.0.0.1",
		"--advertise-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(c.Dir, "kube-apiserver"),
		"--tls-cert-file=" + c.pki("kube-apiserver.crt"),
		"--tls-private-key-file=" + c.pki("kube-apiserver.key"),
		"--client-ca-file=" + c.ClusterCA.CertFile,
		"--authorization-mode=Node,RBAC",
		"--service-account-issuer=https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file=" + c.pki("sa.pub"),
		"--service-account-signing-key-file=" + c.pki("sa.key"),
		"--service-cluster-ip-range=10.0.0.0/24",
		"--requestheader-client-ca-file=" + c.FrontProxyCA.CertFile,
		"--requestheader-allowed-names=" + FrontProxyClientName,
		"--requestheader-username-headers=X-Remote-User",
		"--requestheader-group-headers=X-Remote-Group",
		"--requestheader-uid-headers=X-Remote-Uid",
		"--requestheader-extra-headers-prefix=X-Remote-Extra-",
		"--proxy-client-cert-file=" + c.pki(FrontProxyClientName+".crt"),
		"--proxy-client-key-file=" + c.pki(FrontProxyClientName+".key"),
		// Route to the Service, not to its endpoints: with routing on,
		// kube-apiserver reads EndpointSlices only, and those cannot hold
		// 127.0.0.1. The ExternalName Service can.
		"--enable-aggregator-routing=false",
		// kube-apiserver cannot publish 127.0.0.1 in the kubernetes
		// Service's endpoints either; nothing here needs them.
		"--endpoint-reconciler-type=none",
	}
	c.kubeAPIServerArgs = append(c.kubeAPIServerArgs, c.opts.KubeAPIServerArgs...)
	return c.runKubeAPIServer(ctx)
}

func (c *Cluster) runKubeAPIServer(ctx context.Context) error {
	p, err := c.start("kube-apiserver", c.Bins.KubeAPIServer, c.kubeAPIServerArgs...)
	if err != nil {
		return err
	}
	c.KubeAPIServer = p
	return c.waitHealthy(ctx, p, c.Admin, c.HostURL+"/readyz", 2*time.Minute)
}

// RestartKubeAPIServer starts kube-apiserver again with the same flags
// (after KillProcess or StopProcess) and waits until it is ready.
func (c *Cluster) RestartKubeAPIServer(ctx context.Context) error {
	return c.runKubeAPIServer(ctx)
}

// writeHostKubeconfig writes a kubeconfig for kube-apiserver.
func (c *Cluster) writeHostKubeconfig(path string, auth clientcmdapi.AuthInfo) error {
	return writeKubeconfig(path, c.HostURL, c.ClusterCA.CertPEM, auth)
}

func writeKubeconfig(path, server string, caPEM []byte, auth clientcmdapi.AuthInfo) error {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["e2e"] = &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caPEM}
	cfg.AuthInfos["e2e"] = &auth
	cfg.Contexts["e2e"] = &clientcmdapi.Context{Cluster: "e2e", AuthInfo: "e2e", Namespace: "default"}
	cfg.CurrentContext = "e2e"
	return clientcmd.WriteToFile(*cfg, path)
}

// applyArtifacts applies the deploy manifests and the ExternalName Service.
func (c *Cluster) applyArtifacts(ctx context.Context) error {
	k := c.Kubectl()
	for _, rel := range ArtifactFiles {
		path := c.Artifact(rel)
		if _, err := os.Stat(path); err != nil {
			return fmt.Errorf("artifact %s: %w", rel, err)
		}
		res, err := k.Run("apply", "-f", path)
		if err != nil {
			return err
		}
		if res.ExitCode != 0 {
			return fmt.Errorf("kubectl apply -f %s: %s", rel, res.Combined())
		}
	}

	port, err := freePort()
	if err != nil {
		return err
	}
	c.BatchPort = port
	c.BatchURL = "https://127.0.0.1:" + strconv.Itoa(port)
	// kube-apiserver refuses loopback addresses in EndpointSlices, so the
	// Service is an ExternalName of 127.0.0.1. For an ExternalName Service
	// the aggregator dials <externalName>:<APIService spec.service.port>
	// (the Service's own ports play no part), so the APIService port is
	// batch-apiserver's port; the Service names the same port to read true.
	svc := map[string]any{
		"apiVersion": "v1",
		"kind":       "Service",
		"metadata":   map[string]any{"name": ServiceName, "namespace": Namespace},
		"spec": map[string]any{
			"type":         "ExternalName",
			"externalName": "127.0.0.1",
			"ports":        []any{map[string]any{"name": "https", "port": port, "targetPort": port}},
		},
	}
	manifest, err := json.Marshal(svc)
	if err != nil {
		return err
	}
	res, err := k.RunStdin(string(manifest), "apply", "-f", "-")
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("creating the ExternalName Service: %s", res.Combined())
	}
	return nil
}

func (c *Cluster) startBatchAPIServer(ctx context.Context) error {
	flags, err := binaryFlags(c.Bins.BatchAPIServer)
	if err != nil {
		return err
	}
	c.BatchFlags = flags
	// batch-apiserver talks to the host as its ServiceAccount, so that the
	// RBAC of artifacts/deploy is what lets it work (the Job controller's
	// Pods, Events and Lease included).
	res, err := c.Kubectl().Run("create", "token", ServiceAccountName, "-n", Namespace, "--duration=24h")
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("creating a token for %s/%s: %s", Namespace, ServiceAccountName, res.Combined())
	}
	c.batchKubeconfig = filepath.Join(c.Dir, "batch-apiserver-sa.kubeconfig")
	if err := c.writeHostKubeconfig(c.batchKubeconfig, clientcmdapi.AuthInfo{Token: strings.TrimSpace(res.Stdout)}); err != nil {
		return err
	}
	p, err := c.startBatchProcess(ctx, c.Bins.BatchAPIServer, "batch-apiserver", c.BatchPort, c.opts.BatchAPIServerArgs...)
	if err != nil {
		return err
	}
	c.BatchAPIServer = p
	return nil
}

// Leader election timing of the embedded Job controller. Shorter than the
// defaults (15s/10s/2s) so that a killed leader is replaced within seconds,
// long enough that a busy 2-core machine does not make the leader miss a
// renewal.
const (
	leaseDuration = "8s"
	renewDeadline = "6s"
	retryPeriod   = "1s"
)

// EnvBatchControllers overrides batch-apiserver's --controllers ("*").
const EnvBatchControllers = "E2E_BATCH_CONTROLLERS"

// batchControllerArgs are the Job controller flags the binary supports:
// the controller on, in leader election with short timings. A binary
// without these flags runs with its defaults.
func (c *Cluster) batchControllerArgs() []string {
	want := []struct{ flag, value string }{
		{"controllers", "*"},
		{"leader-elect", "true"},
		{"leader-elect-lease-duration", leaseDuration},
		{"leader-elect-renew-deadline", renewDeadline},
		{"leader-elect-retry-period", retryPeriod},
	}
	// E2E_BATCH_CONTROLLERS=-job runs the package with our controller off,
	// to tell a controller problem from a server one.
	if v := os.Getenv(EnvBatchControllers); v != "" {
		want[0].value = v
	}
	var args []string
	for _, w := range want {
		if c.BatchFlags[w.flag] {
			args = append(args, "--"+w.flag+"="+w.value)
		}
	}
	return args
}

// ControllerFlagsMissing returns the Job controller flags the
// batch-apiserver binary does not have yet; the controller tests skip
// while it is not empty.
func (c *Cluster) ControllerFlagsMissing() []string {
	var missing []string
	for _, f := range []string{"controllers", "concurrent-job-syncs", "leader-elect", "leader-elect-lease-duration"} {
		if !c.BatchFlags[f] {
			missing = append(missing, "--"+f)
		}
	}
	return missing
}

// startBatchProcess starts one batch-apiserver on port, with the
// controller (it has a host cluster through --kubeconfig) and
// POD_NAMESPACE for its Lease, and waits until it is ready. Every replica
// shares the host etcd, the serving certificate and the identity.
func (c *Cluster) startBatchProcess(ctx context.Context, bin, name string, port int, extraArgs ...string) (*Process, error) {
	args := []string{
		"--etcd-servers=" + strings.Join(c.EtcdEndpoints, ","),
		"--etcd-prefix=" + EtcdPrefix,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--tls-cert-file=" + c.pki("batch-apiserver.crt"),
		"--tls-private-key-file=" + c.pki("batch-apiserver.key"),
		"--authentication-kubeconfig=" + c.batchKubeconfig,
		"--authorization-kubeconfig=" + c.batchKubeconfig,
		"--kubeconfig=" + c.batchKubeconfig,
		"--cert-dir=" + filepath.Join(c.Dir, name),
	}
	args = append(args, c.batchControllerArgs()...)
	// An older host needs a few flags more (compat.go).
	args = append(args, c.Bins.hostBatchArgs()...)
	// A test may point a replica at another etcd or Lease: its flags
	// replace the usual ones (a repeated list flag such as --etcd-servers
	// would add to them, not replace them).
	args = append(withoutFlags(args, extraArgs), extraArgs...)
	p, err := StartProcessEnv(c.LogDir, name, bin, []string{"POD_NAMESPACE=" + Namespace}, args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	// /readyz is open to anonymous requests in aggregated mode.
	url := "https://127.0.0.1:" + strconv.Itoa(port)
	cfg := &rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{CAData: c.BatchCA.CertPEM}}
	if err := c.waitHealthy(ctx, p, cfg, url+"/readyz", 2*time.Minute); err != nil {
		return nil, err
	}
	return p, nil
}

// withoutFlags returns args without the --name=value flags that others
// also set.
func withoutFlags(args, others []string) []string {
	set := map[string]bool{}
	for _, a := range others {
		set[strings.SplitN(a, "=", 2)[0]] = true
	}
	var kept []string
	for _, a := range args {
		if !set[strings.SplitN(a, "=", 2)[0]] {
			kept = append(kept, a)
		}
	}
	return kept
}

// BatchReplica is a further batch-apiserver on the same etcd, not behind
// the APIServices: a second replica for the leader-election tests.
type BatchReplica struct {
	*Process
	// URL is the replica's own address.
	URL string
	// Config is a rest config of the replica as the admin user (a client
	// certificate of the cluster CA, which its delegated authentication
	// trusts).
	Config *rest.Config
}

// StartBatchReplica starts another batch-apiserver named name (its log is
// <LogDir>/<name>.log), with extraArgs after the usual flags (they win),
// and waits until it is ready. Stop stops it with the
// rest; KillProcess ends it early.
func (c *Cluster) StartBatchReplica(ctx context.Context, name string, extraArgs ...string) (*BatchReplica, error) {
	return c.StartBatchReplicaOf(ctx, c.Bins.BatchAPIServer, name, extraArgs...)
}

// StartBatchReplicaOf is StartBatchReplica with another batch-apiserver
// binary (the upgrade tier runs the previous version's beside this one).
func (c *Cluster) StartBatchReplicaOf(ctx context.Context, bin, name string, extraArgs ...string) (*BatchReplica, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	p, err := c.startBatchProcess(ctx, bin, name, port, extraArgs...)
	if err != nil {
		return nil, err
	}
	url := "https://127.0.0.1:" + strconv.Itoa(port)
	return &BatchReplica{Process: p, URL: url, Config: c.adminConfigFor(url)}, nil
}

// BatchAdminConfig is a rest config that talks straight to the batch-apiserver
// the APIServices point at, as the admin user.
func (c *Cluster) BatchAdminConfig() *rest.Config { return c.adminConfigFor(c.BatchURL) }

// BatchMetrics returns the text of batch-apiserver's own /metrics (the
// aggregator proxies only /apis), read as the e2e admin.
func (c *Cluster) BatchMetrics(ctx context.Context) (string, error) {
	client, err := rest.HTTPClientFor(c.BatchAdminConfig())
	if err != nil {
		return "", err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.BatchURL+"/metrics", nil)
	if err != nil {
		return "", err
	}
	resp, err := client.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s/metrics: %s: %s", c.BatchURL, resp.Status, body)
	}
	return string(body), nil
}

func (c *Cluster) adminConfigFor(url string) *rest.Config {
	return &rest.Config{Host: url, TLSClientConfig: rest.TLSClientConfig{
		CAData:   c.BatchCA.CertPEM,
		CertFile: c.pki("e2e-admin.crt"),
		KeyFile:  c.pki("e2e-admin.key"),
	}}
}

// KillProcess ends p with SIGKILL and forgets it, so that Healthy does
// not report it as a crash.
func (c *Cluster) KillProcess(p *Process) {
	p.Kill()
	c.forget(p)
}

func (c *Cluster) forget(p *Process) {
	for i, q := range c.procs {
		if q == p {
			c.procs = append(c.procs[:i], c.procs[i+1:]...)
			return
		}
	}
}

// StopProcess stops p gracefully (SIGTERM: a leader releases its Lease)
// and forgets it.
func (c *Cluster) StopProcess(p *Process) {
	p.Stop()
	c.forget(p)
}

// RestartBatchAPIServer starts the batch-apiserver behind the APIServices
// again on its port (after KillProcess) and waits until the APIServices are
// Available again.
func (c *Cluster) RestartBatchAPIServer(ctx context.Context) error {
	p, err := c.startBatchProcess(ctx, c.Bins.BatchAPIServer, "batch-apiserver", c.BatchPort, c.opts.BatchAPIServerArgs...)
	if err != nil {
		return err
	}
	c.BatchAPIServer = p
	return c.waitAPIServicesAvailable(ctx)
}

// binaryFlags returns the long flags bin --help lists.
func binaryFlags(bin string) (map[string]bool, error) {
	res, err := run(time.Minute, nil, bin, "--help")
	if err != nil {
		return nil, err
	}
	flags := map[string]bool{}
	for _, m := range flagRE.FindAllStringSubmatch(res.Stdout+res.Stderr, -1) {
		flags[m[1]] = true
	}
	if len(flags) == 0 {
		return nil, fmt.Errorf("%s --help lists no flags: %s", bin, res.Combined())
	}
	return flags, nil
}

var flagRE = regexp.MustCompile(`(?m)^\s+(?:-\w, )?--([a-z0-9][a-z0-9-]*)`)

// PrepareBatchReplicas does for a cluster started with NoBatchAPIServer
// what starting the batch-apiserver behind the APIServices does for the
// replicas that follow: it reads the flags of the binary (so that the Job
// controller runs with the harness's leader election timings) and writes
// the kubeconfig of batch-apiserver's ServiceAccount.
func (c *Cluster) PrepareBatchReplicas() error {
	flags, err := binaryFlags(c.Bins.BatchAPIServer)
	if err != nil {
		return err
	}
	c.BatchFlags = flags
	_, err = c.ServiceAccountKubeconfig()
	return err
}

// RegisterAPIServices registers the APIServices at BatchPort (a cluster
// started with NoBatchAPIServer, once something serves there) and waits
// until they are Available.
func (c *Cluster) RegisterAPIServices(ctx context.Context) error {
	return c.registerAPIServices(ctx)
}

// registerAPIServices applies artifacts/deploy/apiservice.yaml with the
// real caBundle and port and waits until every APIService is Available.
func (c *Cluster) registerAPIServices(ctx context.Context) error {
	items, err := c.APIServiceManifests()
	if err != nil {
		return err
	}
	list, err := json.Marshal(map[string]any{"apiVersion": "v1", "kind": "List", "items": items})
	if err != nil {
		return err
	}
	res, err := c.Kubectl().RunStdin(string(list), "apply", "-f", "-")
	if err != nil {
		return err
	}
	if res.ExitCode != 0 {
		return fmt.Errorf("applying %s: %s", APIServiceFile, res.Combined())
	}
	return c.waitAPIServicesAvailable(ctx)
}

// waitAPIServicesAvailable waits until every APIService is Available.
func (c *Cluster) waitAPIServicesAvailable(ctx context.Context) error {
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := c.Healthy(); err != nil {
			return false, err
		}
		for _, name := range APIServiceNames {
			obj, err := c.Dynamic.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				last = err.Error()
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
			available := false
			for _, cond := range conds {
				m, _ := cond.(map[string]any)
				if m["type"] == "Available" {
					available = m["status"] == "True"
					last = fmt.Sprintf("%s: Available=%v reason=%v message=%v", name, m["status"], m["reason"], m["message"])
				}
			}
			if !available {
				return false, nil
			}
		}
		return true, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the APIServices to be Available (last: %s): %w", last, err)
	}
	return nil
}

// APIServiceManifests reads the APIServices of artifacts/deploy and returns
// them with caBundle set to the CA of batch-apiserver's serving certificate
// and the port set to the local batch-apiserver. It checks the contract:
// the right names and Service, and no insecureSkipTLSVerify.
func (c *Cluster) APIServiceManifests() ([]any, error) {
	data, err := os.ReadFile(c.Artifact(APIServiceFile))
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", APIServiceFile, err)
	}
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var items []any
	seen := map[string]bool{}
	for {
		var obj map[string]any
		if err := dec.Decode(&obj); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("decoding %s: %w", APIServiceFile, err)
		}
		if obj == nil {
			continue
		}
		u := unstructured.Unstructured{Object: obj}
		if u.GetKind() != "APIService" {
			return nil, fmt.Errorf("%s: unexpected %s %q", APIServiceFile, u.GetKind(), u.GetName())
		}
		name := u.GetName()
		svcName, _, _ := unstructured.NestedString(obj, "spec", "service", "name")
		svcNamespace, _, _ := unstructured.NestedString(obj, "spec", "service", "namespace")
		if svcName != ServiceName || svcNamespace != Namespace {
			return nil, fmt.Errorf("%s: APIService %s points at Service %s/%s, want %s/%s", APIServiceFile, name, svcNamespace, svcName, Namespace, ServiceName)
		}
		if skip, _, _ := unstructured.NestedBool(obj, "spec", "insecureSkipTLSVerify"); skip {
			return nil, fmt.Errorf("%s: APIService %s sets insecureSkipTLSVerify", APIServiceFile, name)
		}
		if err := unstructured.SetNestedField(obj, base64.StdEncoding.EncodeToString(c.BatchCA.CertPEM), "spec", "caBundle"); err != nil {
			return nil, err
		}
		if err := unstructured.SetNestedField(obj, int64(c.BatchPort), "spec", "service", "port"); err != nil {
			return nil, err
		}
		seen[name] = true
		items = append(items, obj)
	}
	for _, name := range APIServiceNames {
		if !seen[name] {
			return nil, fmt.Errorf("%s: no APIService %s", APIServiceFile, name)
		}
	}
	return items, nil
}

func (c *Cluster) startKubeControllerManager(ctx context.Context) error {
	port, err := freePort()
	if err != nil {
		return err
	}
	kubeconfig := filepath.Join(c.Dir, "kube-controller-manager.kubeconfig")
	controllers := "garbage-collector-controller,namespace-controller,serviceaccount-controller,serviceaccount-token-controller,clusterrole-aggregation-controller,job-controller,ttl-after-finished-controller,pod-garbage-collector-controller"
	if len(c.opts.KubeControllers) > 0 {
		controllers = strings.Join(c.opts.KubeControllers, ",")
	}
	args := []string{
		"--kubeconfig=" + kubeconfig,
		"--authentication-kubeconfig=" + kubeconfig,
		"--authorization-kubeconfig=" + kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--cert-dir=" + filepath.Join(c.Dir, "kube-controller-manager"),
		"--leader-elect=false",
		"--use-service-account-credentials=true",
		"--service-account-private-key-file=" + c.pki("sa.key"),
		"--root-ca-file=" + c.ClusterCA.CertFile,
		// The garbage collector and the namespace controller are what the
		// tests exercise; the ServiceAccount controllers give each
		// namespace its default ServiceAccount (Pods need it) and the
		// controllers their credentials; the aggregation controller
		// merges the aggregate-to-* ClusterRoles into admin/edit/view.
		// The job and ttl-after-finished controllers run batch/v1 Jobs,
		// the reference the controller tests compare ours with. The pod
		// garbage collector does what it does on any cluster for Pods no
		// node will ever run: it marks a deleted unscheduled Pod Failed
		// and removes it, so that a Job with a podFailurePolicy (whose
		// controller waits for deleted Pods to be terminal) lets go of it.
		"--controllers=" + controllers,
	}
	p, err := c.start("kube-controller-manager", c.Bins.KubeControllerManager, append(args, c.opts.KubeControllerManagerArgs...)...)
	if err != nil {
		return err
	}
	c.KubeControllerManager = p
	c.ControllerManagerURL = "https://127.0.0.1:" + strconv.Itoa(port)
	// kube-controller-manager's certificate is self-signed in --cert-dir;
	// only its health matters here.
	cfg := &rest.Config{Host: "https://127.0.0.1:" + strconv.Itoa(port), TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	return c.waitHealthy(ctx, p, cfg, cfg.Host+"/healthz", 2*time.Minute)
}

func (c *Cluster) start(name, bin string, args ...string) (*Process, error) {
	p, err := StartProcess(c.LogDir, name, bin, args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// waitHealthy polls url until it answers 200, failing early when the
// process exits.
func (c *Cluster) waitHealthy(ctx context.Context, p *Process, cfg *rest.Config, url string, timeout time.Duration) error {
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return err
	}
	client.Timeout = 5 * time.Second
	var last string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := p.Exited(); err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return true, nil
		}
		last = fmt.Sprintf("%d: %s", resp.StatusCode, body)
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s at %s (last answer: %s): %w\nlog %s:\n%s", p.Name, url, last, err, p.LogFile, Tail(p.LogFile, 30))
	}
	return nil
}

// freePort returns a TCP port on 127.0.0.1 that was free a moment ago.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// HTTPClient returns an HTTP client that trusts ca and presents the client
// certificate in certFile/keyFile when they are not empty.
func HTTPClient(caPEM []byte, certFile, keyFile string) (*http.Client, error) {
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(caPEM) {
		return nil, errors.New("no CA certificate")
	}
	tlsConfig := &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	if certFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		tlsConfig.Certificates = []tls.Certificate{cert}
	}
	return &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig}, Timeout: 30 * time.Second}, nil
}

// PKIFile returns the path of a certificate or key, e.g. "alice.crt".
func (c *Cluster) PKIFile(name string) string { return c.pki(name) }
