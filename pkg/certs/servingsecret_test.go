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
	"crypto/x509"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

func testSecretConfig() ServingSecretConfig {
	return ServingSecretConfig{
		Namespace:    "batch-system",
		Name:         "batch-apiserver-serving",
		CommonName:   "batch-apiserver",
		DNSNames:     []string{"batch-apiserver.batch-system.svc", "batch-apiserver.batch-system.svc.cluster.local"},
		CALifetime:   30 * time.Hour,
		CertLifetime: 9 * time.Hour,
		TrustGrace:   time.Hour,
		Labels:       map[string]string{"app": "batch-apiserver"},
	}
}

func plan(t *testing.T, c ServingSecretConfig, s *corev1.Secret, now time.Time, trusted bool) *corev1.Secret {
	t.Helper()
	out, err := c.Plan(s, now, trusted)
	if err != nil {
		t.Fatalf("Plan: %v", err)
	}
	return out
}

func servedLeaf(t *testing.T, s *corev1.Secret) *x509.Certificate {
	t.Helper()
	kp, err := ParseKeyPair(s.Data[SecretCertKey], s.Data[SecretKeyKey])
	if err != nil {
		t.Fatalf("serving pair of the Secret: %v", err)
	}
	return kp.Cert
}

// verifies reports whether leaf verifies for the aggregator against bundle
// at now, for the Service's name.
func verifies(leaf *x509.Certificate, bundle []byte, now time.Time) bool {
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(bundle) {
		return false
	}
	_, err := leaf.Verify(x509.VerifyOptions{
		Roots: roots, CurrentTime: now, DNSName: "batch-apiserver.batch-system.svc",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	return err == nil
}

func TestServingSecretConfigValidate(t *testing.T) {
	cases := map[string]struct {
		mutate  func(*ServingSecretConfig)
		wantErr bool
	}{
		"defaults of the test":        {mutate: func(*ServingSecretConfig) {}},
		"CA just three times as long": {mutate: func(c *ServingSecretConfig) { c.CALifetime = 27 * time.Hour }},
		"CA too short":                {mutate: func(c *ServingSecretConfig) { c.CALifetime = 27*time.Hour - time.Second }, wantErr: true},
		"no certificate lifetime":     {mutate: func(c *ServingSecretConfig) { c.CertLifetime = 0 }, wantErr: true},
		"negative grace":              {mutate: func(c *ServingSecretConfig) { c.TrustGrace = -time.Second }, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := testSecretConfig()
			tc.mutate(&c)
			if err := c.Validate(); (err != nil) != tc.wantErr {
				t.Errorf("Validate() = %v, want error: %v", err, tc.wantErr)
			}
		})
	}
}

func TestPlanCreates(t *testing.T) {
	c := testSecretConfig()
	s := plan(t, c, nil, testNow, false)

	if !SelfManaged(s) {
		t.Errorf("a created Secret is not self-managed")
	}
	got := map[string]any{
		"namespace": s.Namespace, "name": s.Name, "type": s.Type, "labels": s.Labels,
		"revision": CABundleRevision(s),
		"keys":     len(s.Data),
	}
	want := map[string]any{
		"namespace": "batch-system", "name": "batch-apiserver-serving", "type": corev1.SecretTypeTLS,
		"labels": map[string]string{"app": "batch-apiserver"}, "revision": int64(1),
		// tls.crt, tls.key, ca.crt, signing-ca.crt, signing-ca.key
		"keys": 5,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("created Secret (-want +got):\n%s", diff)
	}
	leaf := servedLeaf(t, s)
	if !verifies(leaf, s.Data[SecretCABundleKey], testNow) {
		t.Errorf("the serving certificate does not verify against ca.crt")
	}
	if diff := cmp.Diff(c.DNSNames, leaf.DNSNames); diff != "" {
		t.Errorf("DNS names (-want +got):\n%s", diff)
	}
	if PendingCA(s) != nil {
		t.Errorf("a new Secret has a pending CA")
	}
}

func TestPlanKeepsAFreshSecret(t *testing.T) {
	c := testSecretConfig()
	s := plan(t, c, nil, testNow, false)
	// Within the first two thirds of the certificate's life nothing is due,
	// whatever the clock of the replica says.
	for _, at := range []time.Duration{-30 * time.Second, 0, time.Hour, 5*time.Hour + 59*time.Minute} {
		again := plan(t, c, s, testNow.Add(at), false)
		if diff := cmp.Diff(s, again); diff != "" {
			t.Errorf("Plan at +%v changed a fresh Secret (-before +after):\n%s", at, diff)
		}
	}
}

func TestPlanRenewsTheServingCertificate(t *testing.T) {
	c := testSecretConfig()
	s := plan(t, c, nil, testNow, false)
	at := testNow.Add(6*time.Hour + time.Minute) // less than a third left
	renewed := plan(t, c, s, at, false)

	if bytes.Equal(renewed.Data[SecretCertKey], s.Data[SecretCertKey]) {
		t.Fatalf("the serving certificate was not renewed with a third of its life left")
	}
	for _, k := range []string{SecretCABundleKey, secretSigningCACertKey, SecretSigningCAKeyKey} {
		if !bytes.Equal(renewed.Data[k], s.Data[k]) {
			t.Errorf("%s changed on a serving certificate renewal", k)
		}
	}
	if CABundleRevision(renewed) != CABundleRevision(s) {
		t.Errorf("bundle revision changed on a serving certificate renewal")
	}
	if leaf := servedLeaf(t, renewed); !leaf.NotAfter.Equal(at.Add(c.CertLifetime)) {
		t.Errorf("renewed NotAfter = %v, want %v", leaf.NotAfter, at.Add(c.CertLifetime))
	}
}

func TestPlanReissuesForOtherNames(t *testing.T) {
	c := testSecretConfig()
	s := plan(t, c, nil, testNow, false)
	c.DNSNames = []string{"other.batch-system.svc"}
	got := servedLeaf(t, plan(t, c, s, testNow, false))
	if diff := cmp.Diff(c.DNSNames, got.DNSNames); diff != "" {
		t.Errorf("DNS names after a change of names (-want +got):\n%s", diff)
	}
}

func TestPlanStartsOverOnADamagedSecret(t *testing.T) {
	c := testSecretConfig()
	s := plan(t, c, nil, testNow, false)
	s.Data[secretSigningCACertKey] = []byte("garbage")
	fixed := plan(t, c, s, testNow, false)
	if !verifies(servedLeaf(t, fixed), fixed.Data[SecretCABundleKey], testNow) {
		t.Errorf("the serving certificate of a repaired Secret does not verify against its ca.crt")
	}
	if CABundleRevision(fixed) != 2 {
		t.Errorf("bundle revision = %d, want 2", CABundleRevision(fixed))
	}
}

// TestPlanRotatesTheCA runs the Secret through two CA rotations, half an
// hour at a time, with an aggregator that takes the Secret's ca.crt into
// its APIService only after the step (as a replica publishes it after
// writing the Secret), and checks at every step that
//   - the serving certificate of the new Secret verifies against the bundle
//     the aggregator held before the step (a replica may serve it at once);
//   - every serving certificate issued so far and not yet expired verifies
//     against the bundle of the new Secret (a replica may still serve it).
func TestPlanRotatesTheCA(t *testing.T) {
	c := testSecretConfig()
	now := testNow
	s := plan(t, c, nil, now, false)
	aggregatorBundle := s.Data[SecretCABundleKey]
	issued := []*x509.Certificate{servedLeaf(t, s)}
	signers := map[string]bool{string(s.Data[secretSigningCACertKey]): true}
	maxCAs, lastRevision := 1, CABundleRevision(s)

	for step := 0; step < 200; step++ {
		now = now.Add(30 * time.Minute)
		trusted := false
		if pending := PendingCA(s); pending != nil {
			trusted = BundleContains(aggregatorBundle, pending)
		}
		s = plan(t, c, s, now, trusted)

		leaf := servedLeaf(t, s)
		if !verifies(leaf, aggregatorBundle, now) {
			t.Fatalf("%v: the new serving certificate (issuer %s) does not verify against the aggregator's bundle", now, leaf.Issuer.CommonName)
		}
		if !issued[len(issued)-1].Equal(leaf) {
			issued = append(issued, leaf)
		}
		for _, old := range issued {
			if now.Before(old.NotAfter) && !verifies(old, s.Data[SecretCABundleKey], now) {
				t.Fatalf("%v: a serving certificate valid until %v (issuer %s) left the bundle", now, old.NotAfter, old.Issuer.CommonName)
			}
		}
		if rev := CABundleRevision(s); rev < lastRevision {
			t.Fatalf("bundle revision went back from %d to %d", lastRevision, rev)
		} else if rev == lastRevision && !bytes.Equal(aggregatorBundle, s.Data[SecretCABundleKey]) {
			t.Fatalf("ca.crt changed without a new revision")
		}
		lastRevision = CABundleRevision(s)
		cas, err := ParseCertificates(s.Data[SecretCABundleKey])
		if err != nil {
			t.Fatal(err)
		}
		maxCAs = max(maxCAs, len(cas))
		signers[string(s.Data[secretSigningCACertKey])] = true
		aggregatorBundle = s.Data[SecretCABundleKey]
	}
	if len(signers) < 3 {
		t.Errorf("%d CAs signed in 100 hours of 30-hour CAs, want at least 3", len(signers))
	}
	if maxCAs < 2 {
		t.Errorf("the bundle never held two CAs during a rotation")
	}
	if cas, _ := ParseCertificates(s.Data[SecretCABundleKey]); len(cas) > 3 {
		t.Errorf("the bundle holds %d CAs, want at most 3", len(cas))
	}
}

// TestPlanWaitsForTheAPIServices checks that a next CA does not sign while
// the APIServices do not trust it, however long that takes.
func TestPlanWaitsForTheAPIServices(t *testing.T) {
	c := testSecretConfig()
	s := plan(t, c, nil, testNow, false)
	signing := s.Data[secretSigningCACertKey]
	now := testNow.Add(21 * time.Hour) // a third of the CA's life left
	s = plan(t, c, s, now, false)
	if PendingCA(s) == nil {
		t.Fatalf("no next CA with a third of the CA's life left")
	}
	for i := 0; i < 10; i++ {
		now = now.Add(time.Hour)
		s = plan(t, c, s, now, false)
		if !bytes.Equal(s.Data[secretSigningCACertKey], signing) {
			t.Fatalf("the next CA signs at %v though no APIService trusts it", now)
		}
	}
	// Trusted now; it signs one grace period later.
	s = plan(t, c, s, now, true)
	if PendingCA(s) != nil {
		t.Errorf("the next CA is still pending once the APIServices trust it")
	}
	s = plan(t, c, s, now.Add(c.TrustGrace-time.Second), false)
	if !bytes.Equal(s.Data[secretSigningCACertKey], signing) {
		t.Errorf("the next CA signs before the grace period ends")
	}
	s = plan(t, c, s, now.Add(c.TrustGrace), false)
	if bytes.Equal(s.Data[secretSigningCACertKey], signing) {
		t.Errorf("the next CA does not sign once the grace period ends")
	}
}

func TestSelfManaged(t *testing.T) {
	ours := plan(t, testSecretConfig(), nil, testNow, false)
	operator := ours.DeepCopy()
	delete(operator.Data, SecretSigningCAKeyKey)
	cases := map[string]struct {
		secret *corev1.Secret
		want   bool
	}{
		"created by the server":         {secret: ours, want: true},
		"kubernetes.io/tls without key": {secret: operator},
		"none":                          {secret: nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := SelfManaged(tc.secret); got != tc.want {
				t.Errorf("SelfManaged = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPlanClientAuth checks the certificate of an etcd Secret: it serves
// and authenticates clients and peers, and a Secret made without client
// authentication gets a certificate with it.
func TestPlanClientAuth(t *testing.T) {
	c := testSecretConfig()
	plain := plan(t, c, nil, testNow, false)
	c.ClientAuth = true
	s := plan(t, c, plain, testNow, false)
	if bytes.Equal(s.Data[SecretCertKey], plain.Data[SecretCertKey]) {
		t.Fatalf("the certificate was kept though it lacks client authentication")
	}
	leaf := servedLeaf(t, s)
	want := []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth}
	if diff := cmp.Diff(want, leaf.ExtKeyUsage); diff != "" {
		t.Errorf("extended key usages (-want +got):\n%s", diff)
	}
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(s.Data[SecretCABundleKey])
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, CurrentTime: testNow, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		t.Errorf("the certificate does not verify as a client certificate: %v", err)
	}
	if again := plan(t, c, s, testNow, false); !bytes.Equal(again.Data[SecretCertKey], s.Data[SecretCertKey]) {
		t.Errorf("a certificate with client authentication was reissued")
	}
}
