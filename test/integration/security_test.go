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
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"io"
	"io/fs"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// TestStandaloneRefusesRequestsWithoutClientCertificate checks that a client
// that trusts the server's CA but presents no client certificate gets a 401
// Status on every path, health checks and discovery included: the
// standalone server knows no anonymous user.
func TestStandaloneRefusesRequestsWithoutClientCertificate(t *testing.T) {
	ts := framework.StartServer(t)
	anonymous := rest.AnonymousClientConfig(ts.ClientConfig)
	if anonymous.CertData != nil || anonymous.KeyData != nil || anonymous.CertFile != "" {
		t.Fatalf("the anonymous config still has a client certificate")
	}
	client, err := rest.HTTPClientFor(anonymous)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		HTTPCode int
		Kind     string
		Code     int32
		Reason   metav1.StatusReason
		Message  string
	}
	want := result{HTTPCode: http.StatusUnauthorized, Kind: "Status", Code: http.StatusUnauthorized, Reason: metav1.StatusReasonUnauthorized, Message: "Unauthorized"}
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/apis/batch.jobs.dev/v1/namespaces/default/jobs"},
		{http.MethodGet, "/apis/batch.jobs.dev/v1/jobs?watch=1"},
		{http.MethodPost, "/apis/batch.jobs.dev/v1/namespaces/default/jobs"},
		{http.MethodGet, "/apis"},
		{http.MethodGet, "/version"},
		{http.MethodGet, "/readyz"},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			var body io.Reader
			if tc.method == http.MethodPost {
				body = strings.NewReader(`{"apiVersion":"batch.jobs.dev/v1","kind":"Job","metadata":{"name":"anonymous"}}`)
			}
			req, err := http.NewRequestWithContext(testContext(t), tc.method, ts.ClientConfig.Host+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", tc.method, tc.path, err)
			}
			raw, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			var status metav1.Status
			if err := json.Unmarshal(raw, &status); err != nil {
				t.Fatalf("status %d, body %q is not a Status: %v", resp.StatusCode, raw, err)
			}
			got := result{HTTPCode: resp.StatusCode, Kind: status.Kind, Code: status.Code, Reason: status.Reason, Message: status.Message}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s %s without a client certificate (-want +got):\n%s\nbody: %s", tc.method, tc.path, diff, raw)
			}
		})
	}
}

// TestStandaloneTLSVersions checks that the server refuses TLS 1.0 and 1.1
// handshakes and accepts TLS 1.2 and 1.3.
func TestStandaloneTLSVersions(t *testing.T) {
	ts := framework.StartServer(t)
	u, err := url.Parse(ts.ClientConfig.Host)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ts.ClientConfig.CAData) {
		t.Fatalf("no CA certificate in the admin kubeconfig")
	}
	type result struct {
		Version uint16
		Err     string
	}
	for _, tc := range []struct {
		name    string
		version uint16
		want    result
	}{
		{"TLS 1.0", tls.VersionTLS10, result{Err: "remote error: tls: protocol version not supported"}},
		{"TLS 1.1", tls.VersionTLS11, result{Err: "remote error: tls: protocol version not supported"}},
		{"TLS 1.2", tls.VersionTLS12, result{Version: tls.VersionTLS12}},
		{"TLS 1.3", tls.VersionTLS13, result{Version: tls.VersionTLS13}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dialer := &tls.Dialer{
				NetDialer: &net.Dialer{},
				Config: &tls.Config{
					RootCAs:    roots,
					ServerName: u.Hostname(),
					MinVersion: tc.version,
					MaxVersion: tc.version,
				},
			}
			var got result
			conn, err := dialer.DialContext(testContext(t), "tcp", u.Host)
			if err != nil {
				got.Err = err.Error()
			} else {
				got.Version = conn.(*tls.Conn).ConnectionState().Version
				_ = conn.Close()
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("%s handshake (-want +got):\n%s", tc.name, diff)
			}
		})
	}
}

// TestStandaloneFileModes starts the server with umask 0 on a fresh data dir
// and on one that exists with mode 0755, and checks that only the public
// certificates are readable by anyone but the owner: every directory is
// 0700; keys, the admin kubeconfig and everything etcd keeps (its socket
// included) are 0600; certificates are 0644 (inside the 0700 pki directory).
func TestStandaloneFileModes(t *testing.T) {
	old := syscall.Umask(0)
	defer syscall.Umask(old)

	for _, tc := range []struct {
		name    string
		prepare func(t *testing.T, dataDir string)
	}{
		{name: "fresh data dir", prepare: func(*testing.T, string) {}},
		{name: "existing data dir with mode 0755", prepare: func(t *testing.T, dataDir string) {
			if err := os.Mkdir(dataDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.Chmod(dataDir, 0o755); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dataDir := filepath.Join(t.TempDir(), "data")
			tc.prepare(t, dataDir)
			ts := framework.StartServerOnDataDir(t, dataDir)
			// Something is in etcd, so that it has written to its files.
			if _, err := ts.Client.BatchV1().Jobs("default").Create(testContext(t), newTestJob("default", "modes").Obj(), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}

			got := map[string]fs.FileMode{}
			want := map[string]fs.FileMode{}
			var sockets, keys int
			err := filepath.WalkDir(dataDir, func(path string, d fs.DirEntry, err error) error {
				if err != nil {
					return err
				}
				info, err := os.Lstat(path)
				if err != nil {
					return err
				}
				rel, err := filepath.Rel(dataDir, path)
				if err != nil {
					return err
				}
				got[rel] = info.Mode().Perm()
				switch {
				case info.IsDir():
					want[rel] = 0o700
				case strings.HasSuffix(rel, ".crt"):
					want[rel] = 0o644
				default:
					want[rel] = 0o600
				}
				if info.Mode()&fs.ModeSocket != 0 {
					sockets++
				}
				if strings.HasSuffix(rel, ".key") {
					keys++
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("modes under the data dir (-want +got):\n%s", diff)
			}
			// The walk saw what matters.
			seen := struct {
				Kubeconfig bool
				EtcdSocket bool
				EtcdWAL    bool
				Sockets    int
				Keys       int
			}{
				Kubeconfig: got["kubeconfig"] != 0,
				EtcdSocket: got[filepath.Join("etcd", "etcd.sock")] != 0,
				EtcdWAL:    got[filepath.Join("etcd", "member", "wal")] != 0,
				Sockets:    sockets,
				Keys:       keys,
			}
			wantSeen := seen
			wantSeen.Kubeconfig, wantSeen.EtcdSocket, wantSeen.EtcdWAL, wantSeen.Sockets, wantSeen.Keys = true, true, true, 1, 4
			if diff := cmp.Diff(wantSeen, seen); diff != "" {
				t.Errorf("files under the data dir (-want +got):\n%s\nall: %v", diff, got)
			}
		})
	}
}
