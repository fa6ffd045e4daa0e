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

package artifacts

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// runScript runs a hack/ script from the repository root and returns its
// standard output.
func runScript(t *testing.T, env []string, script string, args ...string) []byte {
	t.Helper()
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), "bash", append([]string{filepath.Join("hack", script)}, args...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", script, strings.Join(args, " "), err, stderr.String())
	}
	return stdout.Bytes()
}

func requireTools(t *testing.T) {
	t.Helper()
	for _, tool := range []string{"bash", "openssl"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not in PATH: %v", tool, err)
		}
	}
}

func readFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]string{}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		files[e.Name()] = string(data)
	}
	return files
}

func parseCert(t *testing.T, pemData string) *x509.Certificate {
	t.Helper()
	block, _ := pem.Decode([]byte(pemData))
	if block == nil || block.Type != "CERTIFICATE" {
		t.Fatalf("not a PEM certificate: %q", pemData)
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return cert
}

// verifyServing checks that tls.crt is a server certificate of ca.crt for
// every name, and that tls.key is its key.
func verifyServing(t *testing.T, files map[string]string, names ...string) {
	t.Helper()
	if _, err := tls.X509KeyPair([]byte(files["tls.crt"]), []byte(files["tls.key"])); err != nil {
		t.Errorf("tls.crt and tls.key do not pair: %v", err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(parseCert(t, files["ca.crt"]))
	cert := parseCert(t, files["tls.crt"])
	for _, name := range names {
		opts := x509.VerifyOptions{Roots: roots, DNSName: name, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
		if _, err := cert.Verify(opts); err != nil {
			t.Errorf("serving certificate for %s: %v", name, err)
		}
	}
}

// TestGenCerts runs hack/gen-certs.sh: the serving certificate verifies
// against the CA for the names the aggregator dials, keys are private, a
// second run changes nothing, and asking for another name reissues only the
// serving certificate.
func TestGenCerts(t *testing.T) {
	t.Parallel()
	requireTools(t)
	out := filepath.Join(t.TempDir(), "certs")
	runScript(t, nil, "gen-certs.sh", out)
	first := readFiles(t, out)

	if diff := cmp.Diff([]string{"ca.crt", "ca.key", "tls.crt", "tls.key"}, slices.Sorted(maps.Keys(first))); diff != "" {
		t.Fatalf("files written (-want +got):\n%s", diff)
	}
	verifyServing(t, first, "batch-apiserver.batch-system.svc", "batch-apiserver.batch-system.svc.cluster.local")
	if ca := parseCert(t, first["ca.crt"]); !ca.IsCA {
		t.Errorf("ca.crt is not a CA certificate")
	}
	for _, key := range []string{"ca.key", "tls.key"} {
		fi, err := os.Stat(filepath.Join(out, key))
		if err != nil {
			t.Fatal(err)
		}
		if perm := fi.Mode().Perm(); perm&0o077 != 0 {
			t.Errorf("%s has mode %v, want no access for group and others", key, perm)
		}
	}

	runScript(t, nil, "gen-certs.sh", out)
	if diff := cmp.Diff(first, readFiles(t, out)); diff != "" {
		t.Errorf("a second run changed the files (-first +second):\n%s", diff)
	}

	runScript(t, []string{"EXTRA_SANS=DNS:localhost"}, "gen-certs.sh", out)
	third := readFiles(t, out)
	if third["ca.crt"] != first["ca.crt"] || third["ca.key"] != first["ca.key"] {
		t.Errorf("adding a name replaced the CA")
	}
	if third["tls.crt"] == first["tls.crt"] {
		t.Errorf("adding a name kept the old serving certificate")
	}
	verifyServing(t, third, "batch-apiserver.batch-system.svc", "batch-apiserver.batch-system.svc.cluster.local", "localhost")
}

// TestRenderAPIService runs hack/render-apiservice.sh on a CA from
// hack/gen-certs.sh: the output still decodes, both APIServices carry the
// base64 of that CA, and no placeholder is left.
func TestRenderAPIService(t *testing.T) {
	t.Parallel()
	requireTools(t)
	out := filepath.Join(t.TempDir(), "certs")
	runScript(t, nil, "gen-certs.sh", out)
	ca, err := os.ReadFile(filepath.Join(out, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}

	for _, arg := range []string{out, filepath.Join(out, "ca.crt")} {
		rendered := runScript(t, nil, "render-apiservice.sh", arg)
		if bytes.Contains(rendered, []byte(caPlaceholder)) {
			t.Errorf("render-apiservice.sh %s left %s in the output", arg, caPlaceholder)
		}
		path := filepath.Join(t.TempDir(), "apiservice.yaml")
		if err := os.WriteFile(path, rendered, 0o600); err != nil {
			t.Fatal(err)
		}
		docs, err := decodeFile(path, "rendered apiservice.yaml")
		if err != nil {
			t.Fatalf("render-apiservice.sh %s: %v", arg, err)
		}
		got := map[string]string{}
		for _, d := range docs {
			bundle, _, _ := unstructured.NestedString(d.u.Object, "spec", "caBundle")
			decoded, err := base64.StdEncoding.DecodeString(bundle)
			if err != nil {
				t.Errorf("%s: caBundle is not base64: %v", d.key(), err)
			}
			got[d.key()] = string(decoded)
		}
		want := map[string]string{
			"APIService v1.batch.jobs.dev":      string(ca),
			"APIService v1beta1.batch.jobs.dev": string(ca),
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("render-apiservice.sh %s: decoded caBundle per APIService (-want +got):\n%s", arg, diff)
		}
	}
}
