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
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"
)

// servingHost is a fake host cluster: the Secret's namespace and the two
// APIServices, registered without caBundle as artifacts/deploy does.
type servingHost struct {
	client  *fake.Clientset
	dynamic *dynamicfake.FakeDynamicClient
	clock   *clocktesting.FakeClock
}

func newServingHost(t *testing.T, objects ...runtime.Object) *servingHost {
	t.Helper()
	var apiServices []runtime.Object
	for _, name := range []string{"v1.batch.jobs.dev", "v1beta1.batch.jobs.dev"} {
		apiServices = append(apiServices, &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiregistration.k8s.io/v1",
			"kind":       "APIService",
			"metadata":   map[string]any{"name": name, "resourceVersion": "1"},
			"spec":       map[string]any{"group": "batch.jobs.dev", "service": map[string]any{"namespace": "batch-system", "name": "batch-apiserver"}},
		}})
	}
	return &servingHost{
		client:  fake.NewClientset(objects...),
		dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme(), apiServices...),
		clock:   clocktesting.NewFakeClock(testNow),
	}
}

// replica is one server's syncer of the serving Secret against the host,
// configured as --serving-secret=batch-system/batch-apiserver-serving
// configures it (see pkg/cmd/server), with lifetimes of hours.
func (h *servingHost) replica(t *testing.T) *SecretSyncer {
	t.Helper()
	return &SecretSyncer{
		secrets:     h.client,
		apiServices: h.dynamic,
		config: SecretSyncerConfig{
			Secret: ServingSecretConfig{
				Namespace:  "batch-system",
				Name:       "batch-apiserver-serving",
				CommonName: "batch-apiserver",
				DNSNames:   []string{"batch-apiserver.batch-system.svc", "batch-apiserver.batch-system.svc.cluster.local"},
				CALifetime: 30 * time.Hour, CertLifetime: 9 * time.Hour, TrustGrace: time.Hour,
				Labels: map[string]string{"app": "batch-apiserver"},
			},
			APIServices: []string{"v1.batch.jobs.dev", "v1beta1.batch.jobs.dev"},
			File:        filepath.Join(t.TempDir(), "serving-secret.pem"),
		},
		clock: h.clock,
	}
}

func (h *servingHost) secret(t *testing.T) *corev1.Secret {
	t.Helper()
	s, err := h.client.CoreV1().Secrets("batch-system").Get(context.Background(), "batch-apiserver-serving", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("reading the serving secret: %v", err)
	}
	return s
}

// caBundles returns the decoded caBundle of each APIService.
func (h *servingHost) caBundles(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, name := range []string{"v1.batch.jobs.dev", "v1beta1.batch.jobs.dev"} {
		svc, err := h.dynamic.Resource(apiServiceGVR).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("reading APIService %s: %v", name, err)
		}
		out[name] = string(apiServiceCABundle(svc))
	}
	return out
}

func mustSync(t *testing.T, r *SecretSyncer) {
	t.Helper()
	if err := r.Sync(context.Background()); err != nil {
		t.Fatalf("sync: %v", err)
	}
}

// servedCert is the certificate in the replica's served file, as the
// dynamic provider loads it.
func servedCert(t *testing.T, r *SecretSyncer) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(r.config.File)
	if err != nil {
		t.Fatalf("reading the served file: %v", err)
	}
	pair, err := tls.X509KeyPair(data, data)
	if err != nil {
		t.Fatalf("the served file is not a certificate and its key: %v", err)
	}
	cert, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

func verifiesFor(cert *x509.Certificate, bundle string, now time.Time) bool {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM([]byte(bundle)) {
		return false
	}
	_, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: now, DNSName: "batch-apiserver.batch-system.svc"})
	return err == nil
}

func countActions(c *k8stesting.Fake, verb, resource string) int {
	n := 0
	for _, a := range c.Actions() {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func TestServingSecretFirstReplicaCreates(t *testing.T) {
	h := newServingHost(t)
	r := h.replica(t)
	mustSync(t, r)

	s := h.secret(t)
	if !SelfManaged(s) {
		t.Fatalf("the created Secret is not self-managed")
	}
	want := map[string]string{
		"v1.batch.jobs.dev":      string(s.Data[SecretCABundleKey]),
		"v1beta1.batch.jobs.dev": string(s.Data[SecretCABundleKey]),
	}
	if diff := cmp.Diff(want, h.caBundles(t)); diff != "" {
		t.Errorf("caBundles (-want +got):\n%s", diff)
	}
	served := servedCert(t, r)
	if !bytes.Equal(served.Raw, mustParse(t, s.Data[SecretCertKey]).Raw) {
		t.Errorf("the replica does not serve the Secret's certificate")
	}
	if !verifiesFor(served, want["v1.batch.jobs.dev"], testNow) {
		t.Errorf("the served certificate does not verify for batch-apiserver.batch-system.svc against the caBundle")
	}

	// Nothing due: a second sync writes nothing.
	h.client.ClearActions()
	h.dynamic.ClearActions()
	mustSync(t, r)
	if n := countActions(&h.client.Fake, "update", "secrets") + countActions(&h.dynamic.Fake, "patch", "apiservices"); n != 0 {
		t.Errorf("a sync with nothing due wrote %d times", n)
	}
}

func TestServingSecretSecondReplicaReads(t *testing.T) {
	h := newServingHost(t)
	first, second := h.replica(t), h.replica(t)
	mustSync(t, first)
	created := h.secret(t)

	// The second replica lost the race: its Get saw no Secret, its Create
	// found one.
	h.client.ClearActions()
	gets := 0
	h.client.PrependReactor("get", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		gets++
		if gets == 1 {
			return true, nil, apierrors.NewNotFound(corev1.Resource("secrets"), "batch-apiserver-serving")
		}
		return false, nil, nil
	})
	mustSync(t, second)

	if diff := cmp.Diff(created, h.secret(t)); diff != "" {
		t.Errorf("the second replica changed the Secret (-first +after):\n%s", diff)
	}
	if n := countActions(&h.client.Fake, "create", "secrets"); n != 1 {
		t.Errorf("creates = %d, want the one that got AlreadyExists", n)
	}
	if !servedCert(t, second).Equal(servedCert(t, first)) {
		t.Errorf("the replicas serve different certificates")
	}
}

func TestServingSecretOperatorSecretUntouched(t *testing.T) {
	// A kubernetes.io/tls Secret of the operator, with a CA of theirs.
	ca, err := NewCA("operator-ca", testNow, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := NewLeaf(ca, ServingSpec("x", "batch-apiserver.batch-system.svc"), testNow, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	operator := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: "batch-system", Name: "batch-apiserver-serving"},
		Type:       corev1.SecretTypeTLS,
		Data:       map[string][]byte{"tls.crt": leaf.CertPEM, "tls.key": leaf.KeyPEM, "ca.crt": ca.CertPEM},
	}
	h := newServingHost(t, operator)
	r := h.replica(t)
	before := h.caBundles(t)
	// Even with the certificate about to expire, nothing is renewed.
	h.clock.SetTime(testNow.Add(59 * time.Minute))
	mustSync(t, r)

	if diff := cmp.Diff(operator, h.secret(t)); diff != "" {
		t.Errorf("the operator's Secret changed (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, h.caBundles(t)); diff != "" {
		t.Errorf("the APIServices changed (-want +got):\n%s", diff)
	}
	for verb, c := range map[string]*k8stesting.Fake{"update": &h.client.Fake, "create": &h.client.Fake, "patch": &h.dynamic.Fake} {
		for _, res := range []string{"secrets", "apiservices"} {
			if n := countActions(c, verb, res); n != 0 {
				t.Errorf("%d %s of %s", n, verb, res)
			}
		}
	}
	if !servedCert(t, r).Equal(leaf.Cert) {
		t.Errorf("the replica does not serve the operator's certificate")
	}
}

func TestServingSecretRenewal(t *testing.T) {
	h := newServingHost(t)
	r := h.replica(t)
	mustSync(t, r)
	before := servedCert(t, r)
	bundles := h.caBundles(t)

	h.clock.SetTime(testNow.Add(6*time.Hour + time.Minute))
	mustSync(t, r)
	after := servedCert(t, r)
	if after.Equal(before) {
		t.Fatalf("the serving certificate was not renewed with less than a third of its life left")
	}
	if diff := cmp.Diff(bundles, h.caBundles(t)); diff != "" {
		t.Errorf("a renewal by the same CA changed the caBundles (-before +after):\n%s", diff)
	}
}

// TestServingSecretCARotation runs two replicas through CA rotations, with
// the APIServices refusing writes five steps out of seven (a slow or
// unreachable host), and checks at every step that what each replica
// serves verifies against what every APIService holds.
func TestServingSecretCARotation(t *testing.T) {
	h := newServingHost(t)
	a, b := h.replica(t), h.replica(t)
	mustSync(t, a)
	mustSync(t, b)
	refuse := false
	h.dynamic.PrependReactor("patch", "apiservices", func(k8stesting.Action) (bool, runtime.Object, error) {
		if refuse {
			return true, nil, apierrors.NewServiceUnavailable("host busy")
		}
		return false, nil, nil
	})
	signers := map[string]bool{}
	sawTwo := false
	for step := 0; step < 200; step++ {
		h.clock.Step(30 * time.Minute)
		now := h.clock.Now()
		refuse = step%7 < 5
		for _, r := range []*SecretSyncer{a, b} {
			if err := r.Sync(context.Background()); err != nil && !refuse {
				t.Fatalf("sync: %v", err)
			}
			for name, bundle := range h.caBundles(t) {
				for rn, other := range map[string]*SecretSyncer{"a": a, "b": b} {
					if !verifiesFor(servedCert(t, other), bundle, now) {
						t.Fatalf("%v: replica %s serves a certificate of %s that APIService %s does not trust",
							now, rn, servedCert(t, other).Issuer.CommonName, name)
					}
				}
				if cas, _ := ParseCertificates([]byte(bundle)); len(cas) >= 2 {
					sawTwo = true
				}
			}
		}
		signers[servedCert(t, a).Issuer.CommonName] = true
	}
	if len(signers) < 3 {
		t.Errorf("%d CAs signed in 100 hours of 30-hour CAs, want at least 3", len(signers))
	}
	if !sawTwo {
		t.Errorf("the caBundle never held two CAs")
	}
}

// TestServingSecretStaleReplicaDoesNotRegress checks that a replica with an
// old copy of the Secret leaves an APIService holding a later bundle alone.
func TestServingSecretStaleReplicaDoesNotRegress(t *testing.T) {
	h := newServingHost(t)
	r := h.replica(t)
	mustSync(t, r)
	old := h.secret(t)

	// A later bundle of the same Secret is already in the APIServices.
	later := old.DeepCopy()
	later.Annotations[AnnotationCABundleRevision] = "7"
	later.Data[SecretCABundleKey] = append(append([]byte{}, old.Data[SecretCABundleKey]...), old.Data[SecretCABundleKey]...)
	if err := r.publish(context.Background(), later); err != nil {
		t.Fatal(err)
	}
	want := h.caBundles(t)

	if err := r.publish(context.Background(), old); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, h.caBundles(t)); diff != "" {
		t.Errorf("an older revision replaced the caBundle (-want +got):\n%s", diff)
	}
}

func mustParse(t *testing.T, pemData []byte) *x509.Certificate {
	t.Helper()
	cs, err := ParseCertificates(pemData)
	if err != nil || len(cs) == 0 {
		t.Fatalf("parsing certificate: %v", err)
	}
	return cs[0]
}

// TestEtcdSecretSyncer checks what the server connects to etcd with: the
// CA file holds the Secret's ca.crt, the certificate verifies against it
// as a client certificate and as the members' serving certificate, and
// /livez fails once a CA appears that the process did not load at start.
func TestEtcdSecretSyncer(t *testing.T) {
	h := newServingHost(t)
	dir := t.TempDir()
	// As --etcd-secret=batch-system/batch-apiserver-etcd with
	// --etcd-servers=https://etcd-0.etcd.batch-system.svc:2379 configures
	// it (see pkg/cmd/server), with lifetimes of hours.
	r := &SecretSyncer{
		secrets:     h.client,
		apiServices: h.dynamic,
		config: SecretSyncerConfig{
			Secret: ServingSecretConfig{
				Namespace:  "batch-system",
				Name:       "batch-apiserver-etcd",
				CommonName: "batch-apiserver-etcd",
				DNSNames:   []string{"127.0.0.1", "::1", "etcd-0.etcd.batch-system.svc", "localhost"},
				CALifetime: 30 * time.Hour, CertLifetime: 9 * time.Hour, TrustGrace: time.Hour,
				Labels:     map[string]string{"app": "batch-apiserver"},
				ClientAuth: true,
			},
			File:   filepath.Join(dir, "etcd-client.pem"),
			CAFile: filepath.Join(dir, "etcd-ca.crt"),
		},
		clock: h.clock,
	}
	mustSync(t, r)
	live := NewEtcdCALiveness(r)

	caPEM, err := os.ReadFile(r.config.CAFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("%s holds no CA", r.config.CAFile)
	}
	cert := servedCert(t, r)
	for _, usage := range []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth} {
		if _, err := cert.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: h.clock.Now(), DNSName: "etcd-0.etcd.batch-system.svc", KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
			t.Errorf("the etcd certificate does not verify for usage %v: %v", usage, err)
		}
	}
	if err := live.Check(nil); err != nil {
		t.Errorf("/livez etcd-ca fails with the CA loaded at start: %v", err)
	}
	// No APIService trusts the etcd CA: no patch, ever.
	if n := countActions(&h.dynamic.Fake, "patch", "apiservices"); n != 0 {
		t.Errorf("%d APIService patches for the etcd Secret", n)
	}

	// A third of the CA's life left: a next CA joins ca.crt.
	h.clock.SetTime(testNow.Add(21 * time.Hour))
	mustSync(t, r)
	if err := live.Check(nil); err == nil {
		t.Errorf("/livez etcd-ca passes though ca.crt holds a CA the process has not loaded")
	}
}
