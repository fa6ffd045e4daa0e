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
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/utils/clock"

	"github.com/batch-apiserver/batch-apiserver/pkg/certs"
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

// newEtcdSecretSyncer builds the syncer of the etcd Secret for the host
// cluster that kubeconfig names (in-cluster when empty), writing the
// client certificate and the CA into dir. No APIService trusts the etcd
// CA: only the grace period stands between a new CA and its first
// certificate.
func (o *EtcdSecretOptions) newEtcdSecretSyncer(kubeconfig, dir string, servers []string) (*servingSecretSyncer, error) {
	ref := ServingSecretOptions{Secret: o.Secret}
	namespace, name, err := ref.secretRef(os.Getenv, os.ReadFile)
	if err != nil {
		return nil, fmt.Errorf("--etcd-secret: %w", err)
	}
	hosts, err := etcdServerHosts(servers)
	if err != nil {
		return nil, err
	}
	client, dyn, err := secretSyncerClients(kubeconfig, dir)
	if err != nil {
		return nil, fmt.Errorf("--etcd-secret: %w", err)
	}
	return &servingSecretSyncer{
		secrets:     client,
		apiServices: dyn,
		config:      o.config(namespace, name, hosts),
		file:        filepath.Join(dir, etcdSecretFileName),
		caFile:      filepath.Join(dir, etcdSecretCAFileName),
		clock:       clock.RealClock{},
	}, nil
}

// etcdCALiveness fails /livez once ca.crt of the etcd Secret holds a CA
// that the etcd client of this process does not trust: the client reads
// --etcd-cafile only when it starts, so after a new etcd CA appears the
// process must restart before that CA signs (within the trust grace).
type etcdCALiveness struct {
	syncer *servingSecretSyncer
	loaded []byte
}

// Name implements healthz.HealthChecker.
func (c *etcdCALiveness) Name() string { return "etcd-ca" }

// Check implements healthz.HealthChecker.
func (c *etcdCALiveness) Check(*http.Request) error {
	current := c.syncer.currentCA()
	cas, err := certs.ParseCertificates(current)
	if err != nil {
		return nil
	}
	for _, ca := range cas {
		if !certs.BundleContains(c.loaded, ca) {
			return fmt.Errorf("the etcd Secret trusts the CA %q, which this process loaded after its start; it must restart", ca.Subject.CommonName)
		}
	}
	return nil
}
