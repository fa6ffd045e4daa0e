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

package certs

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

const (
	// annotationCABundleSource, on an APIService, names the Secret
	// revision its caBundle comes from: "<Secret UID>/<ca.crt revision>".
	annotationCABundleSource = "batch.jobs.dev/ca-bundle-source"

	// firstSyncTimeout bounds FirstSync: the server cannot serve, or
	// reach etcd, before it has a certificate.
	firstSyncTimeout = 30 * time.Second
	// syncerQPS and syncerBurst are the rate of a syncer's host client: a
	// few requests a sync period.
	syncerQPS   = 5
	syncerBurst = 10
)

var apiServiceGVR = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

// SecretSyncerConfig says which Secret a SecretSyncer keeps in step, and
// where it writes what this replica serves.
type SecretSyncerConfig struct {
	// Secret names the Secret and says what it holds and when its
	// certificates change.
	Secret ServingSecretConfig
	// APIServices are the APIServices whose caBundle is the Secret's
	// ca.crt: a new CA signs only once every one of them trusts it. None
	// for a Secret no aggregator reads (etcd's): only the trust grace
	// stands between a new CA and its first certificate.
	APIServices []string
	// File receives tls.crt and tls.key, one after the other.
	File string
	// CAFile, when set, receives ca.crt: the CAs a client of the
	// certificate's holder trusts (--etcd-cafile).
	CAFile string
}

// SecretSyncer keeps the certificate of this replica in step with a
// Secret in the host cluster, the serving Secret and the etcd Secret
// alike: it creates the Secret when there is none, takes the rotation
// step ServingSecretConfig.Plan says is due, writes the certificate and
// key to one file that the consumer (the generic apiserver's dynamic
// certificate provider, the etcd client) reloads, and, for a self-managed
// Secret, puts its ca.crt into the APIServices' caBundle. A Secret it did
// not make (cert-manager's, an operator's) is used as is.
type SecretSyncer struct {
	secrets     kubernetes.Interface
	apiServices dynamic.Interface
	config      SecretSyncerConfig
	clock       clock.PassiveClock

	served []byte
	// mu guards servedCA, which health checks read.
	mu       sync.Mutex
	servedCA []byte
}

// NewSecretSyncer returns the syncer of c.Secret in the host cluster that
// host reaches.
func NewSecretSyncer(host *rest.Config, c SecretSyncerConfig) (*SecretSyncer, error) {
	cfg := rest.CopyConfig(host)
	cfg.QPS, cfg.Burst = syncerQPS, syncerBurst
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &SecretSyncer{secrets: client, apiServices: dyn, config: c, clock: clock.RealClock{}}, nil
}

// File is the file that holds the certificate and its key.
func (s *SecretSyncer) File() string { return s.config.File }

// CAFile is the file that holds ca.crt, or "" when the syncer writes none.
func (s *SecretSyncer) CAFile() string { return s.config.CAFile }

// Sync takes one step; it is safe to run in every replica at once.
func (s *SecretSyncer) Sync(ctx context.Context) error {
	ref := s.config.Secret
	secret, err := s.secrets.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		secret, err = s.create(ctx)
	}
	if err != nil {
		return fmt.Errorf("serving secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	if !SelfManaged(secret) {
		// The operator's (cert-manager's, their own CA's): served as is.
		if err := s.serveCA(secret); err != nil {
			return err
		}
		return s.serve(secret)
	}

	trusted := false
	if pending := PendingCA(secret); pending != nil {
		if trusted, err = s.apiServicesTrust(ctx, pending); err != nil {
			return err
		}
	}
	want, err := ref.Plan(secret, s.clock.Now(), trusted)
	if err != nil {
		return fmt.Errorf("serving secret %s/%s: %w", ref.Namespace, ref.Name, err)
	}
	if !apiequality.Semantic.DeepEqual(want, secret) {
		// With the resourceVersion read: when another replica took a step
		// in between, this one gets a Conflict and looks again next time.
		if secret, err = s.secrets.CoreV1().Secrets(ref.Namespace).Update(ctx, want, metav1.UpdateOptions{}); err != nil {
			return fmt.Errorf("updating serving secret %s/%s: %w", ref.Namespace, ref.Name, err)
		}
		klog.FromContext(ctx).Info("Updated the serving secret", "secret", klog.KObj(secret),
			"caBundleRevision", CABundleRevision(secret))
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
func (s *SecretSyncer) create(ctx context.Context) (*corev1.Secret, error) {
	ref := s.config.Secret
	want, err := ref.Plan(nil, s.clock.Now(), false)
	if err != nil {
		return nil, err
	}
	created, err := s.secrets.CoreV1().Secrets(ref.Namespace).Create(ctx, want, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return s.secrets.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	}
	if err == nil {
		klog.FromContext(ctx).Info("Created the serving secret", "secret", klog.KObj(created))
	}
	return created, err
}

// serve writes the Secret's certificate and key to the served file when
// they changed. The file is replaced at once, so the provider watching it
// never reads a certificate with the key of another.
func (s *SecretSyncer) serve(secret *corev1.Secret) error {
	cert, key := secret.Data[SecretCertKey], secret.Data[SecretKeyKey]
	if _, err := ParseKeyPair(cert, key); err != nil {
		return fmt.Errorf("serving secret %s/%s: %s and %s: %w", secret.Namespace, secret.Name, SecretCertKey, SecretKeyKey, err)
	}
	content := append(append(append([]byte{}, cert...), '\n'), key...)
	if bytes.Equal(content, s.served) {
		return nil
	}
	if err := WriteFile(s.config.File, content, 0o600); err != nil {
		return err
	}
	s.served = content
	return nil
}

// CurrentCA returns the last ca.crt written to CAFile.
func (s *SecretSyncer) CurrentCA() []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.servedCA
}

// serveCA writes the Secret's ca.crt to CAFile when it changed.
func (s *SecretSyncer) serveCA(secret *corev1.Secret) error {
	if s.config.CAFile == "" {
		return nil
	}
	bundle := secret.Data[SecretCABundleKey]
	if _, err := ParseCertificates(bundle); err != nil || len(bundle) == 0 {
		return fmt.Errorf("secret %s/%s: %s holds no CA certificate: %v", secret.Namespace, secret.Name, SecretCABundleKey, err)
	}
	if bytes.Equal(bundle, s.servedCA) {
		return nil
	}
	if err := WriteFile(s.config.CAFile, bundle, 0o644); err != nil {
		return err
	}
	s.mu.Lock()
	s.servedCA = bundle
	s.mu.Unlock()
	return nil
}

// apiServicesTrust reports whether every APIService's caBundle holds ca.
// A missing APIService trusts nothing: the rotation waits for it.
func (s *SecretSyncer) apiServicesTrust(ctx context.Context, ca *x509.Certificate) (bool, error) {
	for _, name := range s.config.APIServices {
		svc, err := s.apiServices.Resource(apiServiceGVR).Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		if err != nil {
			return false, fmt.Errorf("reading APIService %s: %w", name, err)
		}
		if !BundleContains(apiServiceCABundle(svc), ca) {
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
func (s *SecretSyncer) publish(ctx context.Context, secret *corev1.Secret) error {
	bundle := secret.Data[SecretCABundleKey]
	revision := CABundleRevision(secret)
	for _, name := range s.config.APIServices {
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

// FirstSync syncs until it succeeds or firstSyncTimeout passes: the server
// cannot serve, or reach etcd, before it has a certificate.
func (s *SecretSyncer) FirstSync(ctx context.Context) error {
	var last error
	err := wait.PollUntilContextTimeout(ctx, time.Second, firstSyncTimeout, true, func(ctx context.Context) (bool, error) {
		last = s.Sync(ctx)
		return last == nil, nil
	})
	if err != nil && last != nil {
		return last
	}
	return err
}

// Run syncs every period until ctx is done; a failed sync is logged and
// tried again at the next period.
func (s *SecretSyncer) Run(ctx context.Context, period time.Duration) {
	logger := klog.FromContext(ctx).WithValues("secret", klog.KRef(s.config.Secret.Namespace, s.config.Secret.Name))
	wait.UntilWithContext(ctx, func(ctx context.Context) {
		if err := s.Sync(ctx); err != nil {
			logger.Error(err, "Syncing the serving secret")
		}
	}, period)
}
