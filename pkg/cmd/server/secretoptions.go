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

package server

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/batch-apiserver/batch-apiserver/pkg/certs"
	"github.com/batch-apiserver/batch-apiserver/pkg/hostcluster"
)

// The flags of the Secrets the aggregated server keeps its certificates
// in; certs.SecretSyncer keeps them.

// Defaults of the serving Secret's flags.
const (
	defaultServingService    = "batch-apiserver"
	defaultServingCALifetime = 5 * 365 * 24 * time.Hour
	defaultServingCertLife   = 90 * 24 * time.Hour
	defaultServingTrustGrace = time.Minute
	defaultServingSyncPeriod = 30 * time.Second
	servingSecretFileName    = "serving-secret.pem"
)

const (
	// defaultEtcdTrustGrace is how long a new etcd CA waits before it
	// signs: longer than the kubelet takes to bring a changed Secret into
	// the etcd members' volumes (its sync period plus its cache, about a
	// minute and a half with kubelet defaults).
	defaultEtcdTrustGrace = 5 * time.Minute
	etcdSecretFileName    = "etcd-client.pem"
	etcdSecretCAFileName  = "etcd-ca.crt"
)

// ServingSecretOptions are the flags of the self-managed serving
// certificate of the aggregated mode.
type ServingSecretOptions struct {
	// Secret is NAMESPACE/NAME or NAME (in the server's namespace); empty
	// turns the self-managed serving certificate off.
	Secret string
	// APIServices get the Secret's CA bundle in their caBundle.
	APIServices []string
	// Service is the Service the APIServices point at, in the Secret's
	// namespace: the serving certificate is for its DNS names.
	Service string

	// Hidden, for tests that rotate in seconds.
	CALifetime, CertLifetime, TrustGrace, SyncPeriod time.Duration
}

// NewServingSecretOptions returns the defaults: off until --serving-secret
// names a Secret.
func NewServingSecretOptions() *ServingSecretOptions {
	return &ServingSecretOptions{
		APIServices:  []string{"v1.batch.jobs.dev", "v1beta1.batch.jobs.dev"},
		Service:      defaultServingService,
		CALifetime:   defaultServingCALifetime,
		CertLifetime: defaultServingCertLife,
		TrustGrace:   defaultServingTrustGrace,
		SyncPeriod:   defaultServingSyncPeriod,
	}
}

// AddFlags adds the flags to fs.
func (o *ServingSecretOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Secret, "serving-secret", o.Secret,
		"NAMESPACE/NAME, or NAME in the server's namespace (POD_NAMESPACE), of the Secret holding the serving certificate, "+
			"used when --tls-cert-file and --tls-private-key-file are not given. The server creates it with its own CA when it does not exist, "+
			"renews it, rotates its CA and puts the CA into the caBundle of --apiservices; a kubernetes.io/tls Secret made by someone else "+
			"(cert-manager) is served as is and the APIServices are left alone. Aggregated mode only.")
	fs.StringSliceVar(&o.APIServices, "apiservices", o.APIServices,
		"APIServices whose caBundle the server keeps equal to the CA bundle of a self-managed --serving-secret.")
	fs.StringVar(&o.Service, "serving-service", o.Service,
		"Name of the Service the APIServices point at, in the namespace of --serving-secret: a self-managed serving certificate "+
			"is for <service>.<namespace>.svc and <service>.<namespace>.svc.cluster.local.")
	fs.DurationVar(&o.CALifetime, "serving-ca-lifetime", o.CALifetime, "Lifetime of a self-managed serving CA.")
	fs.DurationVar(&o.CertLifetime, "serving-cert-lifetime", o.CertLifetime, "Lifetime of a self-managed serving certificate.")
	fs.DurationVar(&o.TrustGrace, "serving-ca-trust-grace", o.TrustGrace,
		"How long a new serving CA waits, once every APIService trusts it, before it signs.")
	fs.DurationVar(&o.SyncPeriod, "serving-secret-sync-period", o.SyncPeriod, "How often the server reads the serving Secret.")
	for _, name := range []string{"serving-ca-lifetime", "serving-cert-lifetime", "serving-ca-trust-grace", "serving-secret-sync-period"} {
		_ = fs.MarkHidden(name)
	}
}

// Validate checks the flags.
func (o *ServingSecretOptions) Validate() []error {
	if o.Secret == "" {
		return nil
	}
	var errs []error
	if _, _, err := o.secretRef(func(string) string { return "x" }, nil); err != nil {
		errs = append(errs, err)
	}
	if err := o.config("x", "x").Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--serving-ca-lifetime, --serving-cert-lifetime, --serving-ca-trust-grace: %w", err))
	}
	if o.SyncPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--serving-secret-sync-period %v must be positive", o.SyncPeriod))
	}
	return errs
}

// secretRef splits --serving-secret; a name alone is in the server's
// namespace (hostcluster.Namespace reads it).
func (o *ServingSecretOptions) secretRef(getenv func(string) string, readFile func(string) ([]byte, error)) (string, string, error) {
	namespace, name, found := strings.Cut(o.Secret, "/")
	if !found {
		name = namespace
		namespace = hostcluster.Namespace(getenv, readFile)
	}
	if errs := validation.IsDNS1123Subdomain(name); name == "" || len(errs) > 0 || strings.Contains(name, "/") {
		return "", "", fmt.Errorf("--serving-secret %q: want NAMESPACE/NAME or NAME with a valid Secret name", o.Secret)
	}
	if errs := validation.IsDNS1123Label(namespace); len(errs) > 0 {
		return "", "", fmt.Errorf("--serving-secret %q: invalid namespace %q", o.Secret, namespace)
	}
	return namespace, name, nil
}

func (o *ServingSecretOptions) config(namespace, name string) certs.ServingSecretConfig {
	return certs.ServingSecretConfig{
		Namespace:  namespace,
		Name:       name,
		CommonName: o.Service,
		DNSNames: []string{
			fmt.Sprintf("%s.%s.svc", o.Service, namespace),
			fmt.Sprintf("%s.%s.svc.cluster.local", o.Service, namespace),
		},
		CALifetime:   o.CALifetime,
		CertLifetime: o.CertLifetime,
		TrustGrace:   o.TrustGrace,
		Labels:       map[string]string{"app": "batch-apiserver"},
	}
}

// syncerConfig is what the syncer of --serving-secret keeps: the Secret
// in namespace, served from a file in dir.
func (o *ServingSecretOptions) syncerConfig(namespace, name, dir string) certs.SecretSyncerConfig {
	return certs.SecretSyncerConfig{
		Secret:      o.config(namespace, name),
		APIServices: o.APIServices,
		File:        filepath.Join(dir, servingSecretFileName),
	}
}

// newServingSecretSyncer builds the syncer for the host cluster that
// kubeconfig names (in-cluster when empty), serving from a file in dir.
func (o *ServingSecretOptions) newServingSecretSyncer(kubeconfig, dir string) (*certs.SecretSyncer, error) {
	namespace, name, err := o.secretRef(os.Getenv, os.ReadFile)
	if err != nil {
		return nil, err
	}
	syncer, err := newSecretSyncer(kubeconfig, dir, o.syncerConfig(namespace, name, dir))
	if err != nil {
		return nil, fmt.Errorf("--serving-secret: %w", err)
	}
	return syncer, nil
}

// EtcdSecretOptions are the flags of the etcd certificates the server
// makes and keeps in a Secret: one CA, and one certificate that the etcd
// members serve clients and peers with and that the server presents as
// its client certificate.
type EtcdSecretOptions struct {
	// Secret is NAMESPACE/NAME or NAME (in the server's namespace); empty
	// turns it off.
	Secret string

	// Hidden, for tests that rotate in seconds.
	CALifetime, CertLifetime, TrustGrace, SyncPeriod time.Duration
}

// NewEtcdSecretOptions returns the defaults: off until --etcd-secret names
// a Secret.
func NewEtcdSecretOptions() *EtcdSecretOptions {
	return &EtcdSecretOptions{
		CALifetime:   defaultServingCALifetime,
		CertLifetime: defaultServingCertLife,
		TrustGrace:   defaultEtcdTrustGrace,
		SyncPeriod:   defaultServingSyncPeriod,
	}
}

// AddFlags adds the flags to fs.
func (o *EtcdSecretOptions) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&o.Secret, "etcd-secret", o.Secret,
		"NAMESPACE/NAME, or NAME in the server's namespace (POD_NAMESPACE), of the Secret holding the etcd certificates, "+
			"used when --etcd-cafile, --etcd-certfile and --etcd-keyfile are not given. The server creates it when it does not exist "+
			"(a CA in ca.crt, and in tls.crt and tls.key a certificate for the hosts of --etcd-servers that the members serve with "+
			"and the server authenticates with), renews and rotates it, and connects to etcd with it; the etcd members mount it. "+
			"A Secret without the server's CA key is used as is. --etcd-servers must be https. Aggregated mode only.")
	fs.DurationVar(&o.CALifetime, "etcd-ca-lifetime", o.CALifetime, "Lifetime of a self-managed etcd CA.")
	fs.DurationVar(&o.CertLifetime, "etcd-cert-lifetime", o.CertLifetime, "Lifetime of a self-managed etcd certificate.")
	fs.DurationVar(&o.TrustGrace, "etcd-ca-trust-grace", o.TrustGrace,
		"How long a new etcd CA waits in ca.crt before it signs: longer than a changed Secret takes to reach the etcd members.")
	fs.DurationVar(&o.SyncPeriod, "etcd-secret-sync-period", o.SyncPeriod, "How often the server reads the etcd Secret.")
	for _, name := range []string{"etcd-ca-lifetime", "etcd-cert-lifetime", "etcd-ca-trust-grace", "etcd-secret-sync-period"} {
		_ = fs.MarkHidden(name)
	}
}

// Validate checks the flags against the etcd servers.
func (o *EtcdSecretOptions) Validate(servers []string) []error {
	if o.Secret == "" {
		return nil
	}
	var errs []error
	ref := ServingSecretOptions{Secret: o.Secret}
	if _, _, err := ref.secretRef(func(string) string { return "x" }, nil); err != nil {
		errs = append(errs, fmt.Errorf("--etcd-secret: %w", err))
	}
	if _, err := etcdServerHosts(servers); err != nil {
		errs = append(errs, err)
	}
	if err := o.config("x", "x", nil).Validate(); err != nil {
		errs = append(errs, fmt.Errorf("--etcd-ca-lifetime, --etcd-cert-lifetime, --etcd-ca-trust-grace: %w", err))
	}
	if o.SyncPeriod <= 0 {
		errs = append(errs, fmt.Errorf("--etcd-secret-sync-period %v must be positive", o.SyncPeriod))
	}
	return errs
}

// etcdServerHosts returns the hosts of https etcd servers, with localhost
// and the loopback addresses (etcdctl inside a member's container), in the
// order given.
func etcdServerHosts(servers []string) ([]string, error) {
	var hosts []string
	for _, s := range servers {
		u, err := url.Parse(s)
		if err != nil || u.Scheme != "https" || u.Hostname() == "" {
			return nil, fmt.Errorf("--etcd-secret needs https etcd servers; --etcd-servers has %q", s)
		}
		hosts = append(hosts, u.Hostname())
	}
	hosts = append(hosts, "localhost", "127.0.0.1", net.IPv6loopback.String())
	slices.Sort(hosts)
	return slices.Compact(hosts), nil
}

func (o *EtcdSecretOptions) config(namespace, name string, hosts []string) certs.ServingSecretConfig {
	return certs.ServingSecretConfig{
		Namespace:    namespace,
		Name:         name,
		CommonName:   "batch-apiserver-etcd",
		DNSNames:     hosts,
		CALifetime:   o.CALifetime,
		CertLifetime: o.CertLifetime,
		TrustGrace:   o.TrustGrace,
		Labels:       map[string]string{"app": "batch-apiserver"},
		ClientAuth:   true,
	}
}

// syncerConfig is what the syncer of --etcd-secret keeps: the Secret in
// namespace, for hosts, with the client certificate and the CA written
// into dir. No APIService trusts the etcd CA.
func (o *EtcdSecretOptions) syncerConfig(namespace, name string, hosts []string, dir string) certs.SecretSyncerConfig {
	return certs.SecretSyncerConfig{
		Secret: o.config(namespace, name, hosts),
		File:   filepath.Join(dir, etcdSecretFileName),
		CAFile: filepath.Join(dir, etcdSecretCAFileName),
	}
}

// newEtcdSecretSyncer builds the syncer of the etcd Secret for the host
// cluster that kubeconfig names (in-cluster when empty), writing the
// client certificate and the CA into dir.
func (o *EtcdSecretOptions) newEtcdSecretSyncer(kubeconfig, dir string, servers []string) (*certs.SecretSyncer, error) {
	ref := ServingSecretOptions{Secret: o.Secret}
	namespace, name, err := ref.secretRef(os.Getenv, os.ReadFile)
	if err != nil {
		return nil, fmt.Errorf("--etcd-secret: %w", err)
	}
	hosts, err := etcdServerHosts(servers)
	if err != nil {
		return nil, err
	}
	syncer, err := newSecretSyncer(kubeconfig, dir, o.syncerConfig(namespace, name, hosts, dir))
	if err != nil {
		return nil, fmt.Errorf("--etcd-secret: %w", err)
	}
	return syncer, nil
}

// newSecretSyncer builds the syncer of c for the host cluster that
// kubeconfig names (in-cluster when empty), and makes sure dir, where it
// writes what it serves, exists.
func newSecretSyncer(kubeconfig, dir string, c certs.SecretSyncerConfig) (*certs.SecretSyncer, error) {
	host, err := hostcluster.ClientConfig(kubeconfig)
	if err != nil {
		return nil, err
	}
	syncer, err := certs.NewSecretSyncer(host, c)
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("--cert-dir %s: %w", dir, err)
	}
	return syncer, nil
}
