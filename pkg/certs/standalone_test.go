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
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	certutil "k8s.io/client-go/util/cert"
)

// standaloneFiles returns every path in certs keyed by its base name.
func standaloneFiles(certs *StandaloneCerts) map[string]string {
	paths := []string{
		certs.CAFile, certs.CAKeyFile,
		certs.ServingCAFile, certs.ServingCAKeyFile,
		certs.ServingCertFile, certs.ServingKeyFile,
		certs.AdminCertFile, certs.AdminKeyFile,
	}
	out := map[string]string{}
	for _, p := range paths {
		out[filepath.Base(p)] = p
	}
	return out
}

// readStandaloneFiles returns the content of every file in certs keyed by
// base name.
func readStandaloneFiles(t *testing.T, certs *StandaloneCerts) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, p := range standaloneFiles(certs) {
		data, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		out[name] = data
	}
	return out
}

// readExistingStandaloneFiles is readStandaloneFiles leaving out missing
// files.
func readExistingStandaloneFiles(t *testing.T, certs *StandaloneCerts) map[string][]byte {
	t.Helper()
	out := map[string][]byte{}
	for name, p := range standaloneFiles(certs) {
		data, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			t.Fatalf("reading %s: %v", p, err)
		}
		out[name] = data
	}
	return out
}

func loadCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	certs, err := certutil.CertsFromFile(path)
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	if len(certs) != 1 {
		t.Fatalf("%s holds %d certificates, want 1", path, len(certs))
	}
	return certs[0]
}

func poolOf(t *testing.T, path string) *x509.CertPool {
	t.Helper()
	pool := x509.NewCertPool()
	pool.AddCert(loadCert(t, path))
	return pool
}

func ensureCerts(t *testing.T, dataDir string, names []string, now time.Time) *StandaloneCerts {
	t.Helper()
	certs, err := ensureStandaloneCerts(dataDir, names, now)
	if err != nil {
		t.Fatalf("ensureStandaloneCerts: %v", err)
	}
	return certs
}

func TestEnsureStandaloneCertsCreatesFilesWithModes(t *testing.T) {
	dataDir := t.TempDir()
	certs, err := EnsureStandaloneCerts(dataDir, nil)
	if err != nil {
		t.Fatalf("EnsureStandaloneCerts: %v", err)
	}

	got := map[string]fs.FileMode{"pki": fileMode(t, filepath.Join(dataDir, "pki"))}
	for name, p := range standaloneFiles(certs) {
		if filepath.Dir(p) != filepath.Join(dataDir, "pki") {
			t.Errorf("%s is outside <dataDir>/pki", p)
		}
		got[name] = fileMode(t, p)
	}
	want := map[string]fs.FileMode{
		"pki":            0o700,
		"ca.crt":         0o644,
		"ca.key":         0o600,
		"serving-ca.crt": 0o644,
		"serving-ca.key": 0o600,
		"serving.crt":    0o644,
		"serving.key":    0o600,
		"admin.crt":      0o644,
		"admin.key":      0o600,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("file modes mismatch (-want +got):\n%s", diff)
	}

	// Nothing but the eight files: no temporary files left behind.
	entries, err := os.ReadDir(filepath.Join(dataDir, "pki"))
	if err != nil {
		t.Fatalf("reading pki dir: %v", err)
	}
	if len(entries) != len(want)-1 {
		var names []string
		for _, e := range entries {
			names = append(names, e.Name())
		}
		t.Errorf("pki dir holds %v, want only the eight certificate and key files", names)
	}
}

func TestEnsureStandaloneCertsReusesOnRestart(t *testing.T) {
	dataDir := t.TempDir()
	names := []string{"batch-apiserver.batch-system.svc"}
	first, err := EnsureStandaloneCerts(dataDir, names)
	if err != nil {
		t.Fatalf("first EnsureStandaloneCerts: %v", err)
	}
	before := readStandaloneFiles(t, first)

	second, err := EnsureStandaloneCerts(dataDir, names)
	if err != nil {
		t.Fatalf("second EnsureStandaloneCerts: %v", err)
	}
	if diff := cmp.Diff(first, second); diff != "" {
		t.Errorf("paths mismatch (-first +second):\n%s", diff)
	}
	if diff := cmp.Diff(before, readStandaloneFiles(t, second)); diff != "" {
		t.Errorf("files changed on the second call (-before +after):\n%s", diff)
	}
}

func TestStandaloneServingCertVerifies(t *testing.T) {
	certs := ensureCerts(t, t.TempDir(), []string{"batch-apiserver.batch-system.svc", "10.96.0.10"}, time.Now())
	serving := loadCert(t, certs.ServingCertFile)
	clientCA := poolOf(t, certs.CAFile)
	servingCA := poolOf(t, certs.ServingCAFile)

	cases := []struct {
		name         string
		roots        *x509.CertPool
		dnsName      string
		wantHostErr  bool
		wantAuthErr  bool
		wantUsageErr bool
	}{
		{name: "IPv4 loopback", roots: servingCA, dnsName: "127.0.0.1"},
		{name: "IPv6 loopback", roots: servingCA, dnsName: "::1"},
		{name: "localhost", roots: servingCA, dnsName: "localhost"},
		{name: "extra service name", roots: servingCA, dnsName: "batch-apiserver.batch-system.svc"},
		{name: "extra IP", roots: servingCA, dnsName: "10.96.0.10"},
		{name: "name not asked for", roots: servingCA, dnsName: "example.com", wantHostErr: true},
		{name: "client CA does not sign serving certs", roots: clientCA, dnsName: "localhost", wantAuthErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := serving.Verify(x509.VerifyOptions{
				Roots:     tc.roots,
				DNSName:   tc.dnsName,
				KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
			})
			var hostErr x509.HostnameError
			var authErr x509.UnknownAuthorityError
			switch {
			case tc.wantHostErr:
				if !errors.As(err, &hostErr) {
					t.Fatalf("Verify() error = %v, want a HostnameError", err)
				}
			case tc.wantAuthErr:
				if !errors.As(err, &authErr) {
					t.Fatalf("Verify() error = %v, want an UnknownAuthorityError", err)
				}
			case err != nil:
				t.Fatalf("Verify(): %v", err)
			}
		})
	}
}

func TestStandaloneAdminCertVerifies(t *testing.T) {
	certs := ensureCerts(t, t.TempDir(), nil, time.Now())
	admin := loadCert(t, certs.AdminCertFile)

	if _, err := admin.Verify(x509.VerifyOptions{
		Roots:     poolOf(t, certs.CAFile),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}); err != nil {
		t.Errorf("admin certificate does not verify against the client CA for client auth: %v", err)
	}

	_, err := admin.Verify(x509.VerifyOptions{
		Roots:     poolOf(t, certs.ServingCAFile),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	var authErr x509.UnknownAuthorityError
	if !errors.As(err, &authErr) {
		t.Errorf("admin certificate against the serving CA: error = %v, want an UnknownAuthorityError", err)
	}

	_, err = admin.Verify(x509.VerifyOptions{
		Roots:     poolOf(t, certs.CAFile),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	})
	var invalidErr x509.CertificateInvalidError
	if !errors.As(err, &invalidErr) || invalidErr.Reason != x509.IncompatibleUsage {
		t.Errorf("admin certificate for server auth: error = %v, want IncompatibleUsage", err)
	}

	wantSubject := pkix.Name{CommonName: "batch-apiserver-admin", Organization: []string{"system:masters"}}
	gotSubject := pkix.Name{CommonName: admin.Subject.CommonName, Organization: admin.Subject.Organization}
	if diff := cmp.Diff(wantSubject, gotSubject); diff != "" {
		t.Errorf("admin subject mismatch (-want +got):\n%s", diff)
	}
}

func TestStandaloneCertValidity(t *testing.T) {
	now := time.Now()
	certs := ensureCerts(t, t.TempDir(), nil, now)
	cases := []struct {
		file     string
		validity time.Duration
	}{
		{file: certs.CAFile, validity: 10 * 365 * 24 * time.Hour},
		{file: certs.ServingCAFile, validity: 10 * 365 * 24 * time.Hour},
		{file: certs.ServingCertFile, validity: 365 * 24 * time.Hour},
		{file: certs.AdminCertFile, validity: 365 * 24 * time.Hour},
	}
	for _, tc := range cases {
		t.Run(filepath.Base(tc.file), func(t *testing.T) {
			c := loadCert(t, tc.file)
			// Certificates carry whole seconds; allow for that and for the
			// CA helper reading the clock itself.
			if got := c.NotAfter.Sub(c.NotBefore); got < tc.validity-time.Minute || got > tc.validity+time.Minute {
				t.Errorf("validity = %s, want %s", got, tc.validity)
			}
		})
	}
}

func TestEnsureStandaloneCertsRenews(t *testing.T) {
	day := 24 * time.Hour
	cases := []struct {
		name string
		// prepare runs between the first and the second call.
		prepare   func(t *testing.T, certs *StandaloneCerts)
		names     []string
		after     time.Duration
		wantFresh []string
	}{
		{
			name:  "a day later nothing changes",
			after: day,
		},
		{
			name:  "31 days before leaf expiry nothing changes",
			after: 334 * day,
		},
		{
			name:      "leafs expiring within 30 days are reissued, CAs kept",
			after:     336 * day,
			wantFresh: []string{"admin.crt", "admin.key", "serving.crt", "serving.key"},
		},
		{
			name:      "new service name reissues only the serving certificate",
			names:     []string{"batch-apiserver.batch-system.svc"},
			wantFresh: []string{"serving.crt", "serving.key"},
		},
		{
			name: "missing admin key reissues the admin certificate",
			prepare: func(t *testing.T, certs *StandaloneCerts) {
				if err := os.Remove(certs.AdminKeyFile); err != nil {
					t.Fatal(err)
				}
			},
			wantFresh: []string{"admin.crt", "admin.key"},
		},
		{
			name: "corrupt client CA key replaces the client CA and reissues the admin certificate",
			prepare: func(t *testing.T, certs *StandaloneCerts) {
				if err := os.WriteFile(certs.CAKeyFile, []byte("not a key"), 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantFresh: []string{"admin.crt", "admin.key", "ca.crt", "ca.key"},
		},
		{
			name: "serving key from another pair replaces it",
			prepare: func(t *testing.T, certs *StandaloneCerts) {
				admin, err := os.ReadFile(certs.AdminKeyFile)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(certs.ServingKeyFile, admin, 0o600); err != nil {
					t.Fatal(err)
				}
			},
			wantFresh: []string{"serving.crt", "serving.key"},
		},
		{
			name: "serving certificate signed by another CA is reissued",
			prepare: func(t *testing.T, certs *StandaloneCerts) {
				other := ensureCerts(t, t.TempDir(), nil, time.Now())
				for from, to := range map[string]string{other.ServingCertFile: certs.ServingCertFile, other.ServingKeyFile: certs.ServingKeyFile} {
					data, err := os.ReadFile(from)
					if err != nil {
						t.Fatal(err)
					}
					if err := os.WriteFile(to, data, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			},
			wantFresh: []string{"serving.crt", "serving.key"},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := t.TempDir()
			now := time.Now()
			certs := ensureCerts(t, dataDir, nil, now)
			before := readStandaloneFiles(t, certs)
			if tc.prepare != nil {
				tc.prepare(t, certs)
			}
			prepared := readExistingStandaloneFiles(t, certs)

			later := now.Add(tc.after)
			after := readStandaloneFiles(t, ensureCerts(t, dataDir, tc.names, later))

			var fresh []string
			for name, data := range after {
				if string(data) != string(before[name]) && string(data) != string(prepared[name]) {
					fresh = append(fresh, name)
				}
			}
			if diff := cmp.Diff(tc.wantFresh, fresh, cmpopts.SortSlices(func(a, b string) bool { return a < b }), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("regenerated files mismatch (-want +got):\n%s", diff)
			}

			// Whatever was kept or replaced, the set is consistent again.
			if _, err := loadCert(t, certs.ServingCertFile).Verify(x509.VerifyOptions{
				Roots:       poolOf(t, certs.ServingCAFile),
				DNSName:     "localhost",
				CurrentTime: later,
			}); err != nil {
				t.Errorf("serving certificate does not verify after the second call: %v", err)
			}
			if _, err := loadCert(t, certs.AdminCertFile).Verify(x509.VerifyOptions{
				Roots:       poolOf(t, certs.CAFile),
				KeyUsages:   []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
				CurrentTime: later,
			}); err != nil {
				t.Errorf("admin certificate does not verify after the second call: %v", err)
			}
			for _, p := range []string{certs.ServingCertFile, certs.AdminCertFile} {
				if _, err := tls.LoadX509KeyPair(p, strings.TrimSuffix(p, ".crt")+".key"); err != nil {
					t.Errorf("%s does not match its key: %v", p, err)
				}
			}
		})
	}
}

func TestEnsureStandaloneCertsTightensModes(t *testing.T) {
	dataDir := t.TempDir()
	certs := ensureCerts(t, dataDir, nil, time.Now())
	pki := filepath.Join(dataDir, "pki")
	if err := os.Chmod(pki, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(certs.ServingKeyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	before := readStandaloneFiles(t, certs)

	ensureCerts(t, dataDir, nil, time.Now())

	if diff := cmp.Diff(before, readStandaloneFiles(t, certs)); diff != "" {
		t.Errorf("files changed (-before +after):\n%s", diff)
	}
	got := map[string]fs.FileMode{"pki": fileMode(t, pki), "serving.key": fileMode(t, certs.ServingKeyFile)}
	want := map[string]fs.FileMode{"pki": 0o700, "serving.key": 0o600}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("modes mismatch (-want +got):\n%s", diff)
	}
}

func TestWriteAdminKubeconfig(t *testing.T) {
	certs := ensureCerts(t, t.TempDir(), nil, time.Now())
	files := readStandaloneFiles(t, certs)
	dir := t.TempDir()

	cases := []struct {
		name     string
		existing []byte
	}{
		{name: "new file"},
		{name: "replaces a readable file", existing: []byte("stale: true\n")},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"), "admin.kubeconfig")
			if tc.existing != nil {
				if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(path, tc.existing, 0o644); err != nil {
					t.Fatal(err)
				}
			}

			if err := WriteAdminKubeconfig(path, "https://127.0.0.1:8443", certs); err != nil {
				t.Fatalf("WriteAdminKubeconfig: %v", err)
			}

			if got := fileMode(t, path); got != 0o600 {
				t.Errorf("kubeconfig mode = %v, want 0600", got)
			}
			got, err := clientcmd.LoadFromFile(path)
			if err != nil {
				t.Fatalf("loading kubeconfig: %v", err)
			}
			want := clientcmdapi.NewConfig()
			want.Clusters["batch-apiserver"] = &clientcmdapi.Cluster{
				LocationOfOrigin:         path,
				Server:                   "https://127.0.0.1:8443",
				CertificateAuthorityData: files["serving-ca.crt"],
			}
			want.AuthInfos["admin"] = &clientcmdapi.AuthInfo{
				LocationOfOrigin:      path,
				ClientCertificateData: files["admin.crt"],
				ClientKeyData:         files["admin.key"],
			}
			want.Contexts["batch-apiserver"] = &clientcmdapi.Context{
				LocationOfOrigin: path,
				Cluster:          "batch-apiserver",
				AuthInfo:         "admin",
			}
			want.CurrentContext = "batch-apiserver"
			if diff := cmp.Diff(want, got, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("kubeconfig mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteAdminKubeconfigRejectsPlainHTTP(t *testing.T) {
	certs := ensureCerts(t, t.TempDir(), nil, time.Now())
	path := filepath.Join(t.TempDir(), "admin.kubeconfig")
	for _, serverURL := range []string{"http://127.0.0.1:8443", "127.0.0.1:8443", "https://"} {
		t.Run(serverURL, func(t *testing.T) {
			if err := WriteAdminKubeconfig(path, serverURL, certs); err == nil {
				t.Fatalf("WriteAdminKubeconfig(%q) succeeded, want an error", serverURL)
			}
			if _, err := os.Stat(path); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("kubeconfig written for a rejected URL: stat error = %v", err)
			}
		})
	}
}

// TestStandaloneKubeconfigTLSHandshake connects with the kubeconfig's client
// to a server using the standalone serving certificate and requiring a client
// certificate from the client CA, the way the standalone server is set up.
func TestStandaloneKubeconfigTLSHandshake(t *testing.T) {
	certs := ensureCerts(t, t.TempDir(), nil, time.Now())
	serving, err := tls.LoadX509KeyPair(certs.ServingCertFile, certs.ServingKeyFile)
	if err != nil {
		t.Fatalf("loading serving pair: %v", err)
	}

	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		peer := r.TLS.PeerCertificates[0]
		io.WriteString(w, peer.Subject.CommonName+"/"+strings.Join(peer.Subject.Organization, ","))
	}))
	srv.TLS = &tls.Config{
		Certificates: []tls.Certificate{serving},
		ClientCAs:    poolOf(t, certs.CAFile),
		ClientAuth:   tls.RequireAndVerifyClientCert,
	}
	srv.StartTLS()
	t.Cleanup(srv.Close)

	kubeconfig := filepath.Join(t.TempDir(), "admin.kubeconfig")
	if err := WriteAdminKubeconfig(kubeconfig, srv.URL, certs); err != nil {
		t.Fatalf("WriteAdminKubeconfig: %v", err)
	}
	restConfig, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("building rest config: %v", err)
	}
	client, err := rest.HTTPClientFor(restConfig)
	if err != nil {
		t.Fatalf("building HTTP client: %v", err)
	}
	resp, err := client.Get(srv.URL)
	if err != nil {
		t.Fatalf("GET %s: %v", srv.URL, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading response: %v", err)
	}
	if diff := cmp.Diff("batch-apiserver-admin/system:masters", string(body)); diff != "" {
		t.Errorf("identity seen by the server mismatch (-want +got):\n%s", diff)
	}
}
