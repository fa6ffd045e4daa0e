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
	"crypto"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

// certValidity is long enough for any test run; the certificates live in a
// temporary directory that is removed afterwards.
const certValidity = 24 * time.Hour

// KeyPair is a certificate and its private key, in memory and as PEM files.
type KeyPair struct {
	Cert     *x509.Certificate
	Key      crypto.Signer
	CertFile string
	KeyFile  string
	CertPEM  []byte
	KeyPEM   []byte
}

// newKey returns an ECDSA P-256 key: every component of the host cluster
// accepts it, and it is much faster to make than an RSA key.
func newKey() (crypto.Signer, []byte, error) {
	keyPEM, err := keyutil.MakeEllipticPrivateKeyPEM()
	if err != nil {
		return nil, nil, fmt.Errorf("generating key: %w", err)
	}
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, nil, fmt.Errorf("parsing generated key: %w", err)
	}
	return key.(crypto.Signer), keyPEM, nil
}

// NewCA makes a self-signed CA and writes <dir>/<name>.crt and .key.
func NewCA(dir, name string) (*KeyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: name}, key)
	if err != nil {
		return nil, fmt.Errorf("creating CA %s: %w", name, err)
	}
	return writeKeyPair(dir, name, cert, keyPEM, key)
}

// LeafSpec describes a certificate a CA signs.
type LeafSpec struct {
	CommonName   string
	Organization []string
	DNSNames     []string
	IPs          []net.IP
	Server       bool
	Client       bool
}

// Sign makes a key and a certificate for spec signed by ca, and writes
// <dir>/<name>.crt and .key.
func (ca *KeyPair) Sign(dir, name string, spec LeafSpec) (*KeyPair, error) {
	key, keyPEM, err := newKey()
	if err != nil {
		return nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, fmt.Errorf("generating serial: %w", err)
	}
	var usages []x509.ExtKeyUsage
	if spec.Server {
		usages = append(usages, x509.ExtKeyUsageServerAuth)
	}
	if spec.Client {
		usages = append(usages, x509.ExtKeyUsageClientAuth)
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: spec.CommonName, Organization: spec.Organization},
		DNSNames:     spec.DNSNames,
		IPAddresses:  spec.IPs,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(certValidity),
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usages,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return nil, fmt.Errorf("signing %s: %w", name, err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, fmt.Errorf("parsing %s: %w", name, err)
	}
	return writeKeyPair(dir, name, cert, keyPEM, key)
}

func writeKeyPair(dir, name string, cert *x509.Certificate, keyPEM []byte, key crypto.Signer) (*KeyPair, error) {
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return nil, fmt.Errorf("encoding %s: %w", name, err)
	}
	kp := &KeyPair{
		Cert:     cert,
		Key:      key,
		CertFile: filepath.Join(dir, name+".crt"),
		KeyFile:  filepath.Join(dir, name+".key"),
		CertPEM:  certPEM,
		KeyPEM:   keyPEM,
	}
	if err := os.WriteFile(kp.CertFile, certPEM, 0o644); err != nil {
		return nil, err
	}
	if err := os.WriteFile(kp.KeyFile, keyPEM, 0o600); err != nil {
		return nil, err
	}
	return kp, nil
}

// writePublicKey writes the public half of key as PEM, for
// --service-account-key-file.
func writePublicKey(path string, key crypto.Signer) error {
	der, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return fmt.Errorf("encoding public key: %w", err)
	}
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o644)
}
