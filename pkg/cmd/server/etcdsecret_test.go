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
	"crypto/x509"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestEtcdServerHosts(t *testing.T) {
	cases := map[string]struct {
		servers []string
		want    []string
		wantErr bool
	}{
		"members by name": {
			servers: []string{"https://etcd-1.etcd.batch-system.svc:2379", "https://etcd-0.etcd.batch-system.svc:2379"},
			want:    []string{"127.0.0.1", "::1", "etcd-0.etcd.batch-system.svc", "etcd-1.etcd.batch-system.svc", "localhost"},
		},
		"an address": {
			servers: []string{"https://10.0.0.7:2379"},
			want:    []string{"10.0.0.7", "127.0.0.1", "::1", "localhost"},
		},
		"plain http": {servers: []string{"http://etcd-0.etcd.batch-system.svc:2379"}, wantErr: true},
		"no host":    {servers: []string{"https://:2379"}, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := etcdServerHosts(tc.servers)
			if (err != nil) != tc.wantErr {
				t.Fatalf("error = %v, want error: %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("hosts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestEtcdSecretOptionsValidate(t *testing.T) {
	https := []string{"https://etcd-0.etcd.batch-system.svc:2379"}
	cases := map[string]struct {
		secret  string
		servers []string
		wantErr bool
	}{
		"off":                 {servers: []string{"http://127.0.0.1:2379"}},
		"https servers":       {secret: "batch-apiserver-etcd", servers: https},
		"plain http servers":  {secret: "batch-apiserver-etcd", servers: []string{"http://127.0.0.1:2379"}, wantErr: true},
		"an invalid name":     {secret: "a/b/c", servers: https, wantErr: true},
		"namespace and name":  {secret: "batch-system/batch-apiserver-etcd", servers: https},
		"a namespace, a name": {secret: "batch-system/", servers: https, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewEtcdSecretOptions()
			o.Secret = tc.secret
			if errs := o.Validate(tc.servers); (len(errs) > 0) != tc.wantErr {
				t.Errorf("Validate() = %v, want errors: %v", errs, tc.wantErr)
			}
		})
	}
}

// TestEtcdSecretSyncer checks what the server connects to etcd with: the
// CA file holds the Secret's ca.crt, the certificate verifies against it
// as a client certificate and as the members' serving certificate, and
// /livez fails once a CA appears that the process did not load at start.
func TestEtcdSecretSyncer(t *testing.T) {
	h := newServingHost(t)
	o := NewEtcdSecretOptions()
	o.CALifetime, o.CertLifetime, o.TrustGrace = 30*time.Hour, 9*time.Hour, time.Hour
	hosts, err := etcdServerHosts([]string{"https://etcd-0.etcd.batch-system.svc:2379"})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	r := &servingSecretSyncer{
		secrets:     h.client,
		apiServices: h.dynamic,
		config:      o.config("batch-system", "batch-apiserver-etcd", hosts),
		file:        filepath.Join(dir, etcdSecretFileName),
		caFile:      filepath.Join(dir, etcdSecretCAFileName),
		clock:       h.clock,
	}
	mustSync(t, r)
	live := &etcdCALiveness{syncer: r, loaded: r.currentCA()}

	caPEM, err := os.ReadFile(r.caFile)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(caPEM) {
		t.Fatalf("%s holds no CA", r.caFile)
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
	h.clock.SetTime(servingTestNow.Add(21 * time.Hour))
	mustSync(t, r)
	if err := live.Check(nil); err == nil {
		t.Errorf("/livez etcd-ca passes though ca.crt holds a CA the process has not loaded")
	}
}
