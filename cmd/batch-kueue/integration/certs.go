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

package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// The file names of the serving certificate and key, in the Secret and in
// the certificate directory (controller-runtime's and cert-controller's
// defaults).
const (
	certFile = "tls.crt"
	keyFile  = "tls.key"
)

// CertOptions name what the webhook's serving certificate is for and
// where it is kept.
type CertOptions struct {
	// Secret holds the CA and the serving certificate; it must exist (the
	// component ships it empty) and batch-kueue fills and renews it.
	Secret types.NamespacedName
	// Dir is where the webhook server reads tls.crt and tls.key; batch-kueue
	// writes them there from the Secret.
	Dir string
	// Service is the webhook's Service: the certificate is for
	// <name>.<namespace>.svc.
	Service types.NamespacedName
	// ExtraDNSNames are more names the certificate is for.
	ExtraDNSNames []string
	// MutatingWebhookConfiguration and ValidatingWebhookConfiguration are
	// the configurations whose caBundle is kept the Secret's CA.
	MutatingWebhookConfiguration   string
	ValidatingWebhookConfiguration string
}

// SetupCertRotation adds to mgr what keeps the webhook's serving
// certificate: cert-controller's rotator (the one Kueue's
// internalCertManagement runs), which creates the CA and the certificate
// in the Secret, renews them before they expire and keeps both webhook
// configurations' caBundle equal to the CA; and a writer of the Secret's
// certificate into the directory the webhook server reads (no Secret
// volume, so no wait for the kubelet to sync one). The returned channel is
// closed once the certificate is in the directory and the caBundles are
// set. mgr's cache must hold the Secret (SecretCacheOptions).
func SetupCertRotation(mgr ctrl.Manager, opts CertOptions) (<-chan struct{}, error) {
	ready := make(chan struct{})
	err := rotator.AddRotator(mgr, &rotator.CertRotator{
		SecretKey:      opts.Secret,
		CertDir:        opts.Dir,
		CAName:         "batch-kueue-ca",
		CAOrganization: "batch-apiserver",
		DNSName:        fmt.Sprintf("%s.%s.svc", opts.Service.Name, opts.Service.Namespace),
		ExtraDNSNames:  opts.ExtraDNSNames,
		IsReady:        ready,
		Webhooks: []rotator.WebhookInfo{
			{Type: rotator.Mutating, Name: opts.MutatingWebhookConfiguration},
			{Type: rotator.Validating, Name: opts.ValidatingWebhookConfiguration},
		},
		// Every replica serves the webhook, so every replica needs the
		// certificate: the rotator runs in all of them, and a write that
		// loses a race to another replica's is retried on the new Secret.
		RequireLeaderElection: false,
		EnableReadinessCheck:  true,
		ControllerName:        "batch-kueue-cert-rotator",
		FieldOwner:            "batch-kueue",
	})
	if err != nil {
		return nil, fmt.Errorf("setting up the webhook certificate rotation: %w", err)
	}
	if err := mgr.Add(&certWriter{cache: mgr.GetCache(), secret: opts.Secret, dir: opts.Dir}); err != nil {
		return nil, err
	}
	return ready, nil
}

// SecretCacheOptions limit the manager's cache of Secrets to the one that
// holds the certificate: batch-kueue reads no other.
func SecretCacheOptions(secret types.NamespacedName) cache.ByObject {
	return cache.ByObject{
		Namespaces: map[string]cache.Config{secret.Namespace: {}},
		Field:      fields.OneTermEqualSelector("metadata.name", secret.Name),
	}
}

// certWriter writes the Secret's certificate and key into dir whenever
// they change, each file replaced whole (the webhook server's certificate
// watcher reloads them).
type certWriter struct {
	cache  cache.Cache
	secret types.NamespacedName
	dir    string
}

// NeedLeaderElection is false: every replica serves the webhook.
func (w *certWriter) NeedLeaderElection() bool { return false }

// Start watches the Secret until ctx ends.
func (w *certWriter) Start(ctx context.Context) error {
	informer, err := w.cache.GetInformer(ctx, &corev1.Secret{})
	if err != nil {
		return fmt.Errorf("watching the webhook certificate's Secret: %w", err)
	}
	log := ctrl.LoggerFrom(ctx).WithName("webhook-cert-writer")
	write := func(obj any) {
		secret, ok := obj.(*corev1.Secret)
		if !ok || secret.Namespace != w.secret.Namespace || secret.Name != w.secret.Name {
			return
		}
		if err := w.write(secret); err != nil {
			log.Error(err, "Writing the webhook certificate", "dir", w.dir)
		}
	}
	if _, err := informer.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    write,
		UpdateFunc: func(_, obj any) { write(obj) },
	}); err != nil {
		return err
	}
	<-ctx.Done()
	return nil
}

// write puts the Secret's key and certificate into dir, the key first so
// that a reader that sees the new certificate finds its key; a Secret not
// filled yet writes nothing.
func (w *certWriter) write(secret *corev1.Secret) error {
	cert, key := secret.Data[certFile], secret.Data[keyFile]
	if len(cert) == 0 || len(key) == 0 {
		return nil
	}
	if err := os.MkdirAll(w.dir, 0o700); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{keyFile, key}, {certFile, cert}} {
		if err := replaceFile(filepath.Join(w.dir, f.name), f.data); err != nil {
			return err
		}
	}
	return nil
}

// replaceFile writes data to path through a temporary file and a rename,
// unless path holds it already.
func replaceFile(path string, data []byte) error {
	if old, err := os.ReadFile(path); err == nil && bytes.Equal(old, data) {
		return nil
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+"-")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		_ = tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
