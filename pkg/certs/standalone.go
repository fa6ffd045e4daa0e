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
	"crypto/x509"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
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

	c := &StandaloneCerts{
		CAFile:           filepath.Join(dir, "ca.crt"),
		CAKeyFile:        filepath.Join(dir, "ca.key"),
		ServingCAFile:    filepath.Join(dir, "serving-ca.crt"),
		ServingCAKeyFile: filepath.Join(dir, "serving-ca.key"),
		ServingCertFile:  filepath.Join(dir, "serving.crt"),
		ServingKeyFile:   filepath.Join(dir, "serving.key"),
		AdminCertFile:    filepath.Join(dir, "admin.crt"),
		AdminKeyFile:     filepath.Join(dir, "admin.key"),
	}

	clientCA, err := FilePair{CertFile: c.CAFile, KeyFile: c.CAKeyFile}.
		EnsureCA("batch-apiserver-client-ca", now, standaloneRenewBefore)
	if err != nil {
		return nil, err
	}
	servingCA, err := FilePair{CertFile: c.ServingCAFile, KeyFile: c.ServingCAKeyFile}.
		EnsureCA("batch-apiserver-serving-ca", now, standaloneRenewBefore)
	if err != nil {
		return nil, err
	}

	serving := ServingSpec("batch-apiserver", append([]string{"localhost", "127.0.0.1", "::1"}, serviceNames...)...)
	err = FilePair{CertFile: c.ServingCertFile, KeyFile: c.ServingKeyFile}.
		EnsureLeaf(servingCA, serving, now, standaloneLeafValidity, standaloneRenewBefore)
	if err != nil {
		return nil, err
	}

	admin := LeafSpec{
		CommonName:   StandaloneAdminUser,
		Organization: []string{StandaloneAdminGroup},
		Usage:        x509.ExtKeyUsageClientAuth,
	}
	err = FilePair{CertFile: c.AdminCertFile, KeyFile: c.AdminKeyFile}.
		EnsureLeaf(clientCA, admin, now, standaloneLeafValidity, standaloneRenewBefore)
	if err != nil {
		return nil, err
	}
	return c, nil
}

// WriteAdminKubeconfig writes to path a kubeconfig that reaches serverURL (an
// https URL) as the standalone admin: it trusts the serving CA and
// authenticates with the admin client certificate, all embedded in the file.
// Its cluster and context are StandaloneKubeconfigName, its user
// StandaloneKubeconfigUser, and the context is the current one. The file is
// replaced if it exists and always ends up with mode 0600, since it holds a
// private key.
func WriteAdminKubeconfig(path, serverURL string, c *StandaloneCerts) error {
	u, err := url.Parse(serverURL)
	if err != nil {
		return fmt.Errorf("writing kubeconfig %s: parsing server URL %q: %w", path, serverURL, err)
	}
	if u.Scheme != "https" || u.Host == "" {
		return fmt.Errorf("writing kubeconfig %s: server URL %q must be https://host[:port]", path, serverURL)
	}
	if c == nil {
		return fmt.Errorf("writing kubeconfig %s: no certificates", path)
	}

	caData, err := os.ReadFile(c.ServingCAFile)
	if err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	certData, err := os.ReadFile(c.AdminCertFile)
	if err != nil {
		return fmt.Errorf("writing kubeconfig %s: %w", path, err)
	}
	keyData, err := os.ReadFile(c.AdminKeyFile)
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
	return WriteFile(path, data, 0o600)
}
