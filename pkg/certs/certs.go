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

// Package certs makes, keeps and checks the certificates batch-apiserver
// uses: the CAs, serving and client certificates of the standalone mode
// (kept in files); the serving and etcd certificates of the aggregated
// mode, kept in Secrets of the host cluster by a SecretSyncer
// (ServingSecretConfig says how they rotate, NewEtcdCALiveness when the
// etcd client must restart); the client CA of delegated authentication,
// loaded before the server serves (LoadDelegatedClientCA); and the cache
// of client certificate verifications (NewCachingCertAuthenticator). It
// builds on client-go's certificate utilities (k8s.io/client-go/util/cert
// and util/keyutil); the server hands what it makes to the generic
// apiserver's dynamic certificate providers, which reload it while
// serving.
package certs

import (
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"math/big"
	"net"
	"slices"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// KeyPair is a parsed certificate with its private key, and both in PEM.
type KeyPair struct {
	Cert *x509.Certificate
	Key  crypto.Signer

	CertPEM []byte
	KeyPEM  []byte
}

// ErrUnusable marks a certificate or key that exists but cannot be used
// (not PEM, not matching, a key that cannot sign), so that callers replace
// it rather than report it.
var ErrUnusable = errors.New("unusable certificate or key")

// ParseKeyPair parses a PEM certificate (the first one of certPEM) and its
// PEM key. Its errors wrap ErrUnusable.
func ParseKeyPair(certPEM, keyPEM []byte) (*KeyPair, error) {
	// X509KeyPair also checks that the key belongs to the certificate.
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		// Leaf is nil when GODEBUG has x509keypairleaf=0.
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrUnusable, err)
		}
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%w: key of type %T cannot sign", ErrUnusable, pair.PrivateKey)
	}
	return &KeyPair{Cert: leaf, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// ParseCertificates parses every certificate of a PEM bundle. Its errors
// wrap ErrUnusable.
func ParseCertificates(bundle []byte) ([]*x509.Certificate, error) {
	certs, err := certutil.ParseCertsPEM(bundle)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrUnusable, err)
	}
	return certs, nil
}

// EncodeCertificates returns certs as one PEM bundle, in order.
func EncodeCertificates(certs ...*x509.Certificate) ([]byte, error) {
	return certutil.EncodeCertificates(certs...)
}

// newPrivateKey generates an ECDSA P-256 key and returns it parsed and PEM
// encoded.
func newPrivateKey() (crypto.Signer, []byte, error) {
	keyPEM, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return nil, nil, err
	}
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, nil, err
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, nil, fmt.Errorf("generated key of type %T cannot sign", key)
	}
	return signer, keyPEM, nil
}

// NewCA returns a new self-signed CA valid from now for lifetime; a
// lifetime of 0 means client-go's default of ten years.
func NewCA(commonName string, now time.Time, lifetime time.Duration) (*KeyPair, error) {
	key, keyPEM, err := newPrivateKey()
	if err != nil {
		return nil, fmt.Errorf("generating key of CA %s: %w", commonName, err)
	}
	var cert *x509.Certificate
	if lifetime == 0 {
		cert, err = certutil.NewSelfSignedCACert(certutil.Config{CommonName: commonName, NotBefore: now}, key)
	} else {
		cert, err = newSelfSignedCA(commonName, key, now, lifetime)
	}
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate %s: %w", commonName, err)
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return nil, fmt.Errorf("encoding CA certificate %s: %w", commonName, err)
	}
	return &KeyPair{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// newSelfSignedCA is certutil.NewSelfSignedCACert with a lifetime of our
// choosing: the self-managed serving CA is rotated long before ten years,
// and tests rotate it in seconds.
func newSelfSignedCA(commonName string, key crypto.Signer, now time.Time, lifetime time.Duration) (*x509.Certificate, error) {
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: commonName},
		NotBefore:             now.UTC(),
		NotAfter:              now.Add(lifetime).UTC(),
		KeyUsage:              x509.KeyUsageKeyEncipherment | x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	return x509.ParseCertificate(der)
}

// randomSerial returns a positive random 128-bit serial number.
func randomSerial() (*big.Int, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, fmt.Errorf("generating serial number: %w", err)
	}
	return serial.Add(serial, big.NewInt(1)), nil
}

// LeafSpec is what a serving or client certificate must say.
type LeafSpec struct {
	CommonName   string
	Organization []string
	Usage        x509.ExtKeyUsage
	// AlsoClientAuth adds client authentication to a serving certificate:
	// an etcd member's certificate serves clients and authenticates it to
	// its peers.
	AlsoClientAuth bool
	DNSNames       []string
	IPs            []net.IP
}

// ServingSpec returns the spec of a serving certificate for names, each a
// DNS name or an IP address; empty names are skipped.
func ServingSpec(commonName string, names ...string) LeafSpec {
	spec := LeafSpec{CommonName: commonName, Usage: x509.ExtKeyUsageServerAuth}
	for _, name := range names {
		if ip := net.ParseIP(name); ip != nil {
			spec.IPs = append(spec.IPs, ip)
		} else if name != "" {
			spec.DNSNames = append(spec.DNSNames, name)
		}
	}
	return spec
}

// NewLeaf issues a certificate for spec signed by ca, valid from now for
// lifetime but never past the CA's own expiry.
func NewLeaf(ca *KeyPair, spec LeafSpec, now time.Time, lifetime time.Duration) (*KeyPair, error) {
	key, keyPEM, err := newPrivateKey()
	if err != nil {
		return nil, fmt.Errorf("generating key of certificate %s: %w", spec.CommonName, err)
	}
	serial, err := randomSerial()
	if err != nil {
		return nil, err
	}
	notAfter := now.Add(lifetime)
	// A certificate cannot outlive its issuer.
	if notAfter.After(ca.Cert.NotAfter) {
		notAfter = ca.Cert.NotAfter
	}
	usages := []x509.ExtKeyUsage{spec.Usage}
	if spec.AlsoClientAuth && spec.Usage != x509.ExtKeyUsageClientAuth {
		usages = append(usages, x509.ExtKeyUsageClientAuth)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial,
		Subject:               pkix.Name{CommonName: spec.CommonName, Organization: spec.Organization},
		NotBefore:             now.UTC(),
		NotAfter:              notAfter.UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           usages,
		BasicConstraintsValid: true,
		DNSNames:              spec.DNSNames,
		IPAddresses:           spec.IPs,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing certificate %s: %w", spec.CommonName, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing new certificate %s: %w", spec.CommonName, err)
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return nil, fmt.Errorf("encoding certificate %s: %w", spec.CommonName, err)
	}
	return &KeyPair{Cert: cert, Key: key, CertPEM: certPEM, KeyPEM: keyPEM}, nil
}

// IsSelfSignedCA reports whether cert is a CA that signed itself.
func IsSelfSignedCA(cert *x509.Certificate) bool {
	return cert.IsCA && cert.CheckSignatureFrom(cert) == nil
}

// LeafMatches reports whether leaf chains to ca for spec's usage at now and
// names exactly what spec says. It does not look at how long leaf has left.
func LeafMatches(leaf, ca *x509.Certificate, spec LeafSpec, now time.Time) bool {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	opts := x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{spec.Usage}}
	if _, err := leaf.Verify(opts); err != nil {
		return false
	}
	if leaf.Subject.CommonName != spec.CommonName || !slices.Equal(leaf.Subject.Organization, spec.Organization) {
		return false
	}
	return sameNames(leaf.DNSNames, spec.DNSNames) && sameNames(ipStrings(leaf.IPAddresses), ipStrings(spec.IPs))
}

// RemainingAbove reports whether cert is valid at now and stays valid for
// more than margin.
func RemainingAbove(cert *x509.Certificate, now time.Time, margin time.Duration) bool {
	return !now.Before(cert.NotBefore) && cert.NotAfter.Sub(now) > margin
}

// sameNames compares two name lists as sets.
func sameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}
