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
	"crypto"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"io/fs"
	"math/big"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
)

const (
	// StandaloneAdminUser is the user name (certificate common name) of the
	// admin client certificate of the standalone mode.
	StandaloneAdminUser = "batch-apiserver-admin"
	// StandaloneAdminGroup is the group (certificate organization) of the
	// admin client certificate of the standalone mode.
	StandaloneAdminGroup = "system:masters"
	// StandaloneKubeconfigName is the cluster and context name in the admin
	// kubeconfig of the standalone mode.
	StandaloneKubeconfigName = "batch-apiserver"
	// StandaloneKubeconfigUser is the user name in the admin kubeconfig of
	// the standalone mode.
	StandaloneKubeconfigUser = "admin"

	standalonePKIDir = "pki"
	// standaloneLeafValidity is the lifetime of the serving and admin
	// certificates; CAs live ten years (certutil.NewSelfSignedCACert).
	standaloneLeafValidity = 365 * 24 * time.Hour
	// standaloneRenewBefore is how close to its expiry a certificate is
	// replaced instead of reused.
	standaloneRenewBefore = 30 * 24 * time.Hour
)

// StandaloneCerts holds the paths of the certificates and keys the standalone
// mode keeps under <data dir>/pki. Certificates are PEM files readable by
// everyone, keys are PEM files with mode 0600.
//
// Two CAs are kept apart on purpose: the client CA (CAFile) only signs client
// certificates the server accepts, and the serving CA (ServingCAFile) only
// signs the serving certificate. Clients trust the serving CA rather than the
// serving certificate itself, so the yearly renewal of the serving
// certificate does not invalidate kubeconfigs or an APIService caBundle.
type StandaloneCerts struct {
	// CAFile is the client CA certificate, for --client-ca-file.
	CAFile string
	// CAKeyFile is the private key of the client CA.
	CAKeyFile string
	// ServingCAFile is the CA certificate that signs ServingCertFile, for a
	// kubeconfig's certificate-authority-data or an APIService's caBundle.
	ServingCAFile string
	// ServingCAKeyFile is the private key of the serving CA.
	ServingCAKeyFile string
	// ServingCertFile is the serving certificate, for --tls-cert-file.
	ServingCertFile string
	// ServingKeyFile is the serving certificate's key, for --tls-private-key-file.
	ServingKeyFile string
	// AdminCertFile is the admin client certificate: user
	// StandaloneAdminUser in group StandaloneAdminGroup.
	AdminCertFile string
	// AdminKeyFile is the admin client certificate's key.
	AdminKeyFile string
}

// EnsureStandaloneCerts makes sure <dataDir>/pki holds a client CA, a serving
// CA, a serving certificate and an admin client certificate, and returns
// their paths. It reuses what is there when it is still usable and replaces
// only what is missing, unreadable as a certificate and key pair, not signed
// by the current CA, expiring within 30 days, or (for the serving
// certificate) not for exactly 127.0.0.1, ::1, localhost and serviceNames.
// serviceNames may hold DNS names or IP addresses, for example
// "batch-apiserver.batch-system.svc".
//
// It is not safe to call concurrently on the same dataDir from several
// processes.
func EnsureStandaloneCerts(dataDir string, serviceNames []string) (*StandaloneCerts, error) {
	return ensureStandaloneCerts(dataDir, serviceNames, time.Now())
}

func ensureStandaloneCerts(dataDir string, serviceNames []string, now time.Time) (*StandaloneCerts, error) {
	if dataDir == "" {
		return nil, errors.New("ensuring standalone certificates: data directory is required")
	}
	dir := filepath.Join(dataDir, standalonePKIDir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", dir, err)
	}
	// MkdirAll leaves an existing directory's mode alone.
	if err := os.Chmod(dir, 0o700); err != nil {
		return nil, fmt.Errorf("restricting permissions of %s: %w", dir, err)
	}

	certs := &StandaloneCerts{
		CAFile:           filepath.Join(dir, "ca.crt"),
		CAKeyFile:        filepath.Join(dir, "ca.key"),
		ServingCAFile:    filepath.Join(dir, "serving-ca.crt"),
		ServingCAKeyFile: filepath.Join(dir, "serving-ca.key"),
		ServingCertFile:  filepath.Join(dir, "serving.crt"),
		ServingKeyFile:   filepath.Join(dir, "serving.key"),
		AdminCertFile:    filepath.Join(dir, "admin.crt"),
		AdminKeyFile:     filepath.Join(dir, "admin.key"),
	}

	clientCA, err := ensureStandaloneCA(certs.CAFile, certs.CAKeyFile, "batch-apiserver-client-ca", now)
	if err != nil {
		return nil, err
	}
	servingCA, err := ensureStandaloneCA(certs.ServingCAFile, certs.ServingCAKeyFile, "batch-apiserver-serving-ca", now)
	if err != nil {
		return nil, err
	}

	serving := standaloneLeafSpec{
		commonName: "batch-apiserver",
		usage:      x509.ExtKeyUsageServerAuth,
		dnsNames:   []string{"localhost"},
		ips:        []net.IP{net.ParseIP("127.0.0.1"), net.IPv6loopback},
	}
	for _, name := range serviceNames {
		if ip := net.ParseIP(name); ip != nil {
			serving.ips = append(serving.ips, ip)
		} else if name != "" {
			serving.dnsNames = append(serving.dnsNames, name)
		}
	}
	if err := ensureStandaloneLeaf(certs.ServingCertFile, certs.ServingKeyFile, servingCA, serving, now); err != nil {
		return nil, err
	}

	admin := standaloneLeafSpec{
		commonName:   StandaloneAdminUser,
		organization: []string{StandaloneAdminGroup},
		usage:        x509.ExtKeyUsageClientAuth,
	}
	if err := ensureStandaloneLeaf(certs.AdminCertFile, certs.AdminKeyFile, clientCA, admin, now); err != nil {
		return nil, err
	}
	return certs, nil
}

// standaloneKeyPair is a parsed certificate with its private key.
type standaloneKeyPair struct {
	cert *x509.Certificate
	key  crypto.Signer
}

// errStandaloneUnusable marks a certificate or key file that exists but
// cannot be used, so that it is replaced rather than reported.
var errStandaloneUnusable = errors.New("unusable certificate or key")

// loadStandaloneKeyPair reads a certificate and its key. It returns an error
// wrapping fs.ErrNotExist when a file is missing and errStandaloneUnusable
// when the files do not hold a matching certificate and key.
func loadStandaloneKeyPair(certFile, keyFile string) (*standaloneKeyPair, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", certFile, err)
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", keyFile, err)
	}
	// X509KeyPair also checks that the key belongs to the certificate.
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%w: %s and %s: %w", errStandaloneUnusable, certFile, keyFile, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		// Leaf is nil when GODEBUG has x509keypairleaf=0.
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, fmt.Errorf("%w: %s: %w", errStandaloneUnusable, certFile, err)
		}
	}
	key, ok := pair.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("%w: %s: key of type %T cannot sign", errStandaloneUnusable, keyFile, pair.PrivateKey)
	}
	return &standaloneKeyPair{cert: leaf, key: key}, nil
}

// loadStandaloneKeyPairForReuse returns the key pair in the files, nil if it
// has to be generated, or an error that regenerating would not cure (such as
// a permission error).
func loadStandaloneKeyPairForReuse(certFile, keyFile string) (*standaloneKeyPair, error) {
	kp, err := loadStandaloneKeyPair(certFile, keyFile)
	switch {
	case err == nil:
		// An existing key might have been created or copied with a wider mode.
		if err := os.Chmod(keyFile, 0o600); err != nil {
			return nil, fmt.Errorf("restricting permissions of %s: %w", keyFile, err)
		}
		return kp, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, errStandaloneUnusable):
		return nil, nil
	default:
		return nil, err
	}
}

// ensureStandaloneCA returns the CA in certFile and keyFile, replacing it by a
// new self-signed one when it is missing, unusable or close to expiry.
func ensureStandaloneCA(certFile, keyFile, commonName string, now time.Time) (*standaloneKeyPair, error) {
	kp, err := loadStandaloneKeyPairForReuse(certFile, keyFile)
	if err != nil {
		return nil, err
	}
	if kp != nil && kp.cert.IsCA && kp.cert.CheckSignatureFrom(kp.cert) == nil && standaloneValidAt(kp.cert, now) {
		return kp, nil
	}

	key, keyPEM, err := newStandalonePrivateKey()
	if err != nil {
		return nil, fmt.Errorf("generating key for %s: %w", certFile, err)
	}
	caCert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: commonName, NotBefore: now}, key)
	if err != nil {
		return nil, fmt.Errorf("creating CA certificate %s: %w", certFile, err)
	}
	if err := writeStandaloneKeyPair(certFile, keyFile, caCert, keyPEM); err != nil {
		return nil, err
	}
	return &standaloneKeyPair{cert: caCert, key: key}, nil
}

// standaloneLeafSpec is what a leaf certificate must say.
type standaloneLeafSpec struct {
	commonName   string
	organization []string
	usage        x509.ExtKeyUsage
	dnsNames     []string
	ips          []net.IP
}

// ensureStandaloneLeaf makes sure certFile and keyFile hold a certificate
// signed by ca that matches spec and is not close to expiry, and issues a new
// one otherwise.
func ensureStandaloneLeaf(certFile, keyFile string, ca *standaloneKeyPair, spec standaloneLeafSpec, now time.Time) error {
	kp, err := loadStandaloneKeyPairForReuse(certFile, keyFile)
	if err != nil {
		return err
	}
	if kp != nil && standaloneLeafMatches(kp.cert, ca.cert, spec, now) {
		return nil
	}

	key, keyPEM, err := newStandalonePrivateKey()
	if err != nil {
		return fmt.Errorf("generating key for %s: %w", certFile, err)
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return fmt.Errorf("generating serial number for %s: %w", certFile, err)
	}
	notAfter := now.Add(standaloneLeafValidity)
	// A certificate cannot outlive its issuer.
	if notAfter.After(ca.cert.NotAfter) {
		notAfter = ca.cert.NotAfter
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial.Add(serial, big.NewInt(1)),
		Subject:               pkix.Name{CommonName: spec.commonName, Organization: spec.organization},
		NotBefore:             now.UTC(),
		NotAfter:              notAfter.UTC(),
		KeyUsage:              x509.KeyUsageDigitalSignature,
		ExtKeyUsage:           []x509.ExtKeyUsage{spec.usage},
		BasicConstraintsValid: true,
		DNSNames:              spec.dnsNames,
		IPAddresses:           spec.ips,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, key.Public(), ca.key)
	if err != nil {
		return fmt.Errorf("signing certificate %s: %w", certFile, err)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return fmt.Errorf("parsing new certificate %s: %w", certFile, err)
	}
	return writeStandaloneKeyPair(certFile, keyFile, leaf, keyPEM)
}

// standaloneLeafMatches reports whether leaf can be kept: it chains to ca for
// the wanted usage, is not close to expiry, and names exactly what spec says.
func standaloneLeafMatches(leaf, ca *x509.Certificate, spec standaloneLeafSpec, now time.Time) bool {
	roots := x509.NewCertPool()
	roots.AddCert(ca)
	opts := x509.VerifyOptions{Roots: roots, CurrentTime: now, KeyUsages: []x509.ExtKeyUsage{spec.usage}}
	if _, err := leaf.Verify(opts); err != nil {
		return false
	}
	if !standaloneValidAt(leaf, now) {
		return false
	}
	if leaf.Subject.CommonName != spec.commonName || !slices.Equal(leaf.Subject.Organization, spec.organization) {
		return false
	}
	return standaloneSameNames(leaf.DNSNames, spec.dnsNames) &&
		standaloneSameNames(standaloneIPStrings(leaf.IPAddresses), standaloneIPStrings(spec.ips))
}

// standaloneValidAt reports whether cert is valid at now and stays valid for
// longer than the renewal margin.
func standaloneValidAt(cert *x509.Certificate, now time.Time) bool {
	return !now.Before(cert.NotBefore) && cert.NotAfter.Sub(now) > standaloneRenewBefore
}

// standaloneSameNames compares two name lists as sets.
func standaloneSameNames(a, b []string) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(slices.Compact(a), slices.Compact(b))
}

func standaloneIPStrings(ips []net.IP) []string {
	out := make([]string, 0, len(ips))
	for _, ip := range ips {
		out = append(out, ip.String())
	}
	return out
}

// newStandalonePrivateKey generates an ECDSA P-256 key and returns it parsed
// and PEM encoded.
func newStandalonePrivateKey() (crypto.Signer, []byte, error) {
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

// writeStandaloneKeyPair writes the key first: if the process dies in
// between, the certificate no longer matches the key and both are replaced on
// the next start.
func writeStandaloneKeyPair(certFile, keyFile string, cert *x509.Certificate, keyPEM []byte) error {
	if err := writeStandaloneFile(keyFile, keyPEM, 0o600); err != nil {
		return err
	}
	certPEM, err := certutil.EncodeCertificates(cert)
	if err != nil {
		return fmt.Errorf("encoding %s: %w", certFile, err)
	}
	return writeStandaloneFile(certFile, certPEM, 0o644)
}

// writeStandaloneFile replaces path with data atomically, so that a reader
// never sees a partial file, and so that the result has mode perm even when
// path existed with another one.
func writeStandaloneFile(path string, data []byte, perm os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}

// WriteAdminKubeconfig writes to path a kubeconfig that reaches serverURL (an
// https URL) as the standalone admin: it trusts the serving CA and
// authenticates with the admin client certificate, all embedded in the file.
// Its cluster and context are StandaloneKubeconfigName, its user
// StandaloneKubeconfigUser, and the context is the current one. The file is
// replaced if it exists and always ends up with mode 0600, since it holds a
// private key.
func WriteAdminKubeconfig(path, serverURL string, certs *StandaloneCerts) error {
	u, err := url.Parse(serverURL)
	if err != nil {
		return fmt.Errorf("writing kubeconfig %s: parsing server URL %q: %w", path, serverURL, err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("writing kubeconfig %s: server URL %q must be https://host[:port]", path, serverURL)
	}
	if certs == nil {
		return fmt.Errorf("writing kubeconfig %s: no certificates", path)
	}

	caData, err := os.ReadFile(certs.ServingCAFile)
	if err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	certData, err := os.ReadFile(certs.AdminCertFile)
	if err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	keyData, err := os.ReadFile(certs.AdminKeyFile)
	if err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}

	config := clientcmdapi.NewConfig()
	config.Clusters[StandaloneKubeconfigName] = &clientcmdapi.Cluster{
		Server:                   serverURL,
		CertificateAuthorityData: caData,
	}
	config.AuthInfos[StandaloneKubeconfigUser] = &clientcmdapi.AuthInfo{
		ClientCertificateData: certData,
		ClientKeyData:         keyData,
	}
	config.Contexts[StandaloneKubeconfigName] = &clientcmdapi.Context{
		Cluster:  StandaloneKubeconfigName,
		AuthInfo: StandaloneKubeconfigUser,
	}
	config.CurrentContext = StandaloneKubeconfigName

	data, err := clientcmd.Write(*config)
	if err != nil {
		return fmt.Errorf("encoding kubeconfig %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	return writeStandaloneFile(path, data, 0o600)
}
