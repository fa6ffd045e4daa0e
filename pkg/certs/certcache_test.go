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
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net/http"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/apiserver/pkg/authentication/user"
	clocktesting "k8s.io/utils/clock/testing"
)

type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pool *x509.CertPool
}

func newTestCA(t *testing.T, name string) testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	return testCA{cert: cert, key: key, pool: pool}
}

func (ca testCA) client(t *testing.T, cn string, notAfter time.Time) *x509.Certificate {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: cn, Organization: []string{"system:masters"}},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

type countingAuthenticator struct {
	delegate authenticator.Request
	calls    int
}

func (c *countingAuthenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	c.calls++
	return c.delegate.AuthenticateRequest(req)
}

// A client's chain is verified once, then again only when the CA bundle
// changes, the cache entry's minute is over or the certificate expires;
// the user is the one the x509 authenticator gives, and a chain the
// current CA bundle refuses is refused.
func TestCachingCertAuthenticator(t *testing.T) {
	ca, otherCA := newTestCA(t, "ca"), newTestCA(t, "other-ca")
	start := time.Now()
	clk := clocktesting.NewFakePassiveClock(start)
	alice := ca.client(t, "alice", start.Add(30*time.Second)) // expires before the cache minute
	bob := ca.client(t, "bob", start.Add(24*time.Hour))

	roots := ca.pool
	verifyOptions := func() (x509.VerifyOptions, bool) {
		return x509.VerifyOptions{Roots: roots, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}, true
	}
	counting := &countingAuthenticator{delegate: x509request.NewDynamic(verifyOptions, x509request.CommonNameUserConversion)}
	cached := NewCachingCertAuthenticator(counting, verifyOptions, clk)

	request := func(cert *x509.Certificate) *http.Request {
		return &http.Request{TLS: &tls.ConnectionState{PeerCertificates: []*x509.Certificate{cert}}}
	}
	type outcome struct {
		User          string
		Groups        []string
		OK            bool
		Err           bool
		DelegateCalls int
	}
	authenticate := func(cert *x509.Certificate) outcome {
		resp, ok, err := cached.AuthenticateRequest(request(cert))
		o := outcome{OK: ok, Err: err != nil, DelegateCalls: counting.calls}
		if resp != nil && resp.User != nil {
			o.User, o.Groups = resp.User.GetName(), resp.User.GetGroups()
		}
		return o
	}
	masters := []string{user.SystemPrivilegedGroup}
	steps := []struct {
		name  string
		setup func()
		cert  *x509.Certificate
		want  outcome
	}{
		{"first request verifies", nil, alice, outcome{"alice", masters, true, false, 1}},
		{"second request is remembered", nil, alice, outcome{"alice", masters, true, false, 1}},
		{"another client verifies", nil, bob, outcome{"bob", masters, true, false, 2}},
		{"a new CA bundle verifies again and refuses", func() { roots = otherCA.pool }, alice, outcome{"", nil, false, true, 3}},
		{"a refusal is not remembered", nil, alice, outcome{"", nil, false, true, 4}},
		{"the old bundle back: still remembered", func() { roots = ca.pool }, alice, outcome{"alice", masters, true, false, 4}},
		{"past the certificate's NotAfter: verified again", func() { clk.SetTime(start.Add(31 * time.Second)) }, alice, outcome{"alice", masters, true, false, 5}},
		{"within the minute: remembered", func() { clk.SetTime(start.Add(59 * time.Second)) }, bob, outcome{"bob", masters, true, false, 5}},
		{"after the minute: verified again", func() { clk.SetTime(start.Add(61 * time.Second)) }, bob, outcome{"bob", masters, true, false, 6}},
	}
	for _, step := range steps {
		if step.setup != nil {
			step.setup()
		}
		if diff := cmp.Diff(step.want, authenticate(step.cert)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", step.name, diff)
		}
	}
}
