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
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"

	"github.com/batch-apiserver/batch-apiserver/pkg/certs"
)

// annotationCABundleSource, on an APIService, names the Secret revision
// its caBundle comes from: "<Secret UID>/<ca.crt revision>".
const annotationCABundleSource = "batch.jobs.dev/ca-bundle-source"

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// servingSecretSyncer keeps the serving certificate of this replica in step
// with the serving Secret: it creates the Secret when there is none, takes
// the rotation step certs.ServingSecretConfig.Plan says is due, writes the
// serving certificate and key to one file that the generic apiserver's
// dynamic certificate provider reloads, and, for a self-managed Secret,
// puts its ca.crt into the APIServices' caBundle.
type servingSecretSyncer struct {
	secrets     kubernetes.Interface
	apiServices dynamic.Interface
	config      certs.ServingSecretConfig
	// apiServiceNames are the APIServices whose caBundle is ca.crt.
	apiServiceNames []string
	// file receives tls.crt and tls.key, one after the other.
	file string
	// caFile, when set, receives ca.crt: the CAs a client of the
	// certificate's holder trusts (--etcd-cafile).
	caFile string
	clock  clock.PassiveClock

	served []byte
	// mu guards servedCA, which health checks read.
	mu       sync.Mutex
	servedCA []byte
}

// sync takes one step; it is safe to run in every replica at once.
func (s *servingSecretSyncer) sync(ctx context.Context) error {
	secret, err := s.secrets.CoreV1().Secrets(s.config.Namespace).Get(ctx, s.config.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		secret, err = s.create(ctx)
	}
	if err != nil {
		return fmt.Errorf("serving secret %s/%s: %w", s.config.Namespace, s.config.Name, err)
	}
	if !certs.SelfManaged(secret) {
		// The operator's (cert-manager's, their own CA's): served as is.
		if err := s.serveCA(secret); err != nil {
			return err
		}
		return s.serve(secret)
	}

	trusted := false
	if pending := certs.PendingCA(secret); pending != nil {
		if trusted, err = s.apiServicesTrust(ctx, pending); err != nil {
			return err
		}
	}
	want, err := s.config.Plan(secret, s.clock.Now(), trusted)
	if err != nil {
		return fmt.Errorf("serving secret %s/%s: %w", s.config.Namespace, s.config.Name, err)
	}
	if !apiequality.Semantic.DeepEqual(want, secret) {
		// With the resourceVersion read: when another replica took a step
		// in between, this one gets a Conflict and looks again next time.
		if secret, err = s.secrets.CoreV1().Secrets(s.config.Namespace).Update(ctx, want, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating serving secret %s/%s: %w", s.config.Namespace, s.config.Name, err)
		}
		klog.FromContext(ctx).Info("Updated the serving secret", "secret", klog.KObj(secret),
			"caBundleRevision", certs.CABundleRevision(secret))
	}
	// The CA first: a client must trust the CAs of ca.crt before it
	// presents or meets a certificate of the newest.
	if err := s.serveCA(secret); err != nil {
		return err
	}
	if err := s.serve(secret); err != nil {
		return err
	}
	return s.publish(ctx, secret)
}

// create makes the Secret, or reads the one another replica made first.
func (s *servingSecretSyncer) create(ctx context.Context) (*corev1.Secret, error) {
	want, err := s.config.Plan(nil, s.clock.Now(), false)
	if err != nil {
		return nil, err
	}
	created, err := s.secrets.CoreV1().Secrets(s.config.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return s.secrets.CoreV1().Secrets(s.config.Namespace).Get(ctx, s.config.Name, metav1.GetOptions{})
	}
	if err == nil {
		klog.FromContext(ctx).Info("Created the serving secret", "secret", klog.KObj(created))
	}
	return created, err
}

// serve writes the Secret's certificate and key to the served file when
// they changed. The file is replaced at once, so the provider watching it
// never reads a certificate with the key of another.
func (s *servingSecretSyncer) serve(secret *corev1.Secret) error {
	cert, key := secret.Data[certs.SecretCertKey], secret.Data[certs.SecretKeyKey]
	if _, err := certs.ParseKeyPair(cert, key); err != nil {
		return fmt.Errorf("serving secret %s/%s: %s and %s: %w", secret.Namespace, secret.Name, certs.SecretCertKey, certs.SecretKeyKey, err)
	}
	content := append(append(append([]byte{}, cert...), '\n'), key...)
	if bytes.Equal(content, s.served) {
		return nil
	}
	if err := certs.WriteFile(s.file, content, 0o600); err != nil {
		return err
	}
	s.served = content
	return nil
}

// currentCA returns the last ca.crt written to caFile.
func (s *servingSecretSyncer) currentCA() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servedCA
}

// serveCA writes the Secret's ca.crt to caFile when it changed.
func (s *servingSecretSyncer) serveCA(secret *corev1.Secret) error {
	if s.caFile == "" {
		return nil
	}
	bundle := secret.Data[certs.SecretCABundleKey]
	if _, err := certs.ParseCertificates(bundle); err != nil || len(bundle) == 0 {
		return fmt.Errorf("secret %s/%s: %s holds no CA certificate: %v", secret.Namespace, secret.Name, certs.SecretCABundleKey, err)
	}
	if bytes.Equal(bundle, s.servedCA) {
		return nil
	}
	if err := certs.WriteFile(s.caFile, bundle, 0o644); err != nil {
		return err
	}
	s.mu.Lock()
	s.servedCA = bundle
	s.mu.Unlock()
	return nil
}

// apiServicesTrust reports whether every APIService's caBundle holds ca.
// A missing APIService trusts nothing: the rotation waits for it.
func (s *servingSecretSyncer) apiServicesTrust(ctx context.Context, ca *x509.Certificate) (bool, error) {
	for _, name := range s.apiServiceNames {
		svc, err := s.apiServices.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading APIService %s: %w", name, err)
		}
		if !certs.BundleContains(apiServiceCABundle(svc), ca) {
			return false, nil
		}
	}
	return true, nil
}

// apiServiceCABundle is the decoded caBundle of an APIService.
func apiServiceCABundle(svc *unstructured.Unstructured) []byte {
	encoded, _, _ := unstructured.NestedString(svc.Object, "spec", "caBundle")
	bundle, err := base64.StdEncoding.DecodeString(encoded)
	if err != nil {
		return nil
	}
	return bundle
}

// publish puts the Secret's ca.crt into every APIService whose caBundle
// differs, unless the APIService already holds a later revision of the
// same Secret (this replica read an old copy). The patch carries the
// resourceVersion it decided on, so a concurrent write makes it fail
// rather than win.
func (s *servingSecretSyncer) publish(ctx context.Context, secret *corev1.Secret) error {
	bundle := secret.Data[certs.SecretCABundleKey]
	revision := certs.CABundleRevision(secret)
	for _, name := range s.apiServiceNames {
		svc, err := s.apiServices.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			// Not registered (yet): nothing to trust us.
			continue
		}
		if err != nil {
			return fmt.Errorf("reading APIService %s: %w", name, err)
		}
		if bytes.Equal(apiServiceCABundle(svc), bundle) {
			continue
		}
		if uid, rev, ok := parseCABundleSource(svc.GetAnnotations()[annotationCABundleSource]); ok && uid == secret.UID && rev > revision {
			continue
		}
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{
				"resourceVersion": svc.GetResourceVersion(),
				"annotations":     map[string]string{annotationCABundleSource: fmt.Sprintf("%s/%d", secret.UID, revision)},
			},
			"spec": map[string]any{"caBundle": base64.StdEncoding.EncodeToString(bundle)},
		})
		if err != nil {
			return err
		}
		if _, err := s.apiServices.Resource(apiServiceGVR).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("setting the caBundle of APIService %s: %w", name, err)
		}
		klog.FromContext(ctx).Info("Set the caBundle of an APIService", "apiService", name, "caBundleRevision", revision)
	}
	return nil
}

// parseCABundleSource splits "<uid>/<revision>".
func parseCABundleSource(v string) (types.UID, int64, bool) {
	uid, rev, ok := strings.Cut(v, "/")
	if !ok {
		return "", 0, false
	}
	n, err := strconv.ParseInt(rev, 10, 64)
	if err != nil {
		return "", 0, false
	}
	return types.UID(uid), n, true
}

// run syncs every period until ctx is done; a failed sync is logged and
// tried again at the next period.
func (s *servingSecretSyncer) run(ctx context.Context, period time.Duration) {
	logger := klog.FromContext(ctx).WithValues("secret", klog.KRef(s.config.Namespace, s.config.Name))
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := s.sync(ctx); err != nil {
			logger.Error(err, "Syncing the serving secret")
		}
	}, period)
}

// Defaults of the serving Secret's flags.
const (
	defaultServingService     = "batch-apiserver"
	defaultServingCALifetime  = 5 * 365 * 24 * time.Hour
	defaultServingCertLife    = 90 * 24 * time.Hour
	defaultServingTrustGrace  = time.Minute
	defaultServingSyncPeriod  = 30 * time.Second
	servingSecretFileName     = "serving-secret.pem"
	servingSecretFirstTimeout = 30 * time.Second
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
// namespace (namespaceOf reads it).
func (o *ServingSecretOptions) secretRef(getenv func(string) string, readFile func(string) ([]byte, error)) (string, string, error) {
	namespace, name, found := strings.Cut(o.Secret, "/")
	if !found {
		name = namespace
		namespace = leaseNamespace("", getenv, readFile)
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

// newServingSecretSyncer builds the syncer for the host cluster that
// kubeconfig names (in-cluster when empty), serving from a file in dir.
func (o *ServingSecretOptions) newServingSecretSyncer(kubeconfig, dir string) (*servingSecretSyncer, error) {
	namespace, name, err := o.secretRef(os.Getenv, os.ReadFile)
	if err != nil {
		return nil, err
	}
	client, dyn, err := secretSyncerClients(kubeconfig, dir)
	if err != nil {
		return nil, fmt.Errorf("--serving-secret: %w", err)
	}
	return &servingSecretSyncer{
		secrets:         client,
		apiServices:     dyn,
		config:          o.config(namespace, name),
		apiServiceNames: o.APIServices,
		file:            filepath.Join(dir, servingSecretFileName),
		clock:           clock.RealClock{},
	}, nil
}

// firstSync syncs until it succeeds or servingSecretFirstTimeout passes:
// the server cannot serve before it has a certificate.
func (s *servingSecretSyncer) firstSync(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, servingSecretFirstTimeout, true, func(ctx context.Context) (bool, error) {
		last = s.sync(ctx)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// secretSyncerClients returns the host clients of a Secret syncer, and
// makes sure dir, where it writes what it serves, exists.
func secretSyncerClients(kubeconfig, dir string) (kubernetes.Interface, dynamic.Interface, error) {
	cfg, err := hostClientConfig(kubeconfig, 5, 10)
	if err != nil {
		return nil, nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, nil, err
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, fmt.Errorf("--cert-dir %s: %w", dir, err)
	}
	return client, dyn, nil
}
