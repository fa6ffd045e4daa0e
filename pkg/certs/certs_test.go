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
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

var testNow = time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC)

func mustCA(t *testing.T, name string, now time.Time, lifetime time.Duration) *KeyPair {
	t.Helper()
	ca, err := NewCA(name, now, lifetime)
	if err != nil {
		t.Fatalf("NewCA: %v", err)
	}
	return ca
}

func TestNewCALifetime(t *testing.T) {
	cases := map[string]struct {
		lifetime time.Duration
		want     time.Time
	}{
		"chosen lifetime":    {lifetime: time.Hour, want: testNow.Add(time.Hour)},
		"a lifetime of days": {lifetime: 72 * time.Hour, want: testNow.Add(72 * time.Hour)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ca := mustCA(t, "ca", testNow, tc.lifetime)
			if !IsSelfSignedCA(ca.Cert) {
				t.Errorf("CA is not a self-signed CA")
			}
			if !ca.Cert.NotAfter.Equal(tc.want) {
				t.Errorf("NotAfter = %v, want %v", ca.Cert.NotAfter, tc.want)
			}
			if _, err := ParseKeyPair(ca.CertPEM, ca.KeyPEM); err != nil {
				t.Errorf("PEM does not parse back: %v", err)
			}
		})
	}
}

// TestNewCADefaultLifetime checks client-go's default lifetime, which
// counts from the wall clock rather than from NotBefore.
func TestNewCADefaultLifetime(t *testing.T) {
	now := time.Now()
	ca := mustCA(t, "ca", now, 0)
	if min := now.Add(9 * 365 * 24 * time.Hour); ca.Cert.NotAfter.Before(min) {
		t.Errorf("NotAfter = %v, want at least nine years from now", ca.Cert.NotAfter)
	}
}

func TestNewLeaf(t *testing.T) {
	ca := mustCA(t, "ca", testNow, 10*time.Hour)
	other := mustCA(t, "other", testNow, 10*time.Hour)
	spec := ServingSpec("server", "svc.ns.svc", "127.0.0.1", "")

	leaf, err := NewLeaf(ca, spec, testNow, time.Hour)
	if err != nil {
		t.Fatalf("NewLeaf: %v", err)
	}
	got := map[string]any{
		"dns":      leaf.Cert.DNSNames,
		"ips":      ipStrings(leaf.Cert.IPAddresses),
		"notAfter": leaf.Cert.NotAfter,
	}
	want := map[string]any{
		"dns":      []string{"svc.ns.svc"},
		"ips":      []string{"127.0.0.1"},
		"notAfter": testNow.Add(time.Hour),
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("leaf (-want +got):\n%s", diff)
	}

	checks := map[string]struct {
		ca   *KeyPair
		spec LeafSpec
		now  time.Time
		want bool
	}{
		"its CA and spec":      {ca: ca, spec: spec, now: testNow, want: true},
		"another CA":           {ca: other, spec: spec, now: testNow},
		"another name":         {ca: ca, spec: ServingSpec("server", "other.ns.svc", "127.0.0.1"), now: testNow},
		"names in other order": {ca: ca, spec: ServingSpec("server", "127.0.0.1", "svc.ns.svc"), now: testNow, want: true},
		"client usage":         {ca: ca, spec: LeafSpec{CommonName: "server", Usage: x509.ExtKeyUsageClientAuth, DNSNames: spec.DNSNames, IPs: spec.IPs}, now: testNow},
		"expired":              {ca: ca, spec: spec, now: testNow.Add(2 * time.Hour)},
	}
	for name, tc := range checks {
		t.Run(name, func(t *testing.T) {
			if got := LeafMatches(leaf.Cert, tc.ca.Cert, tc.spec, tc.now); got != tc.want {
				t.Errorf("LeafMatches = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNewLeafNeverOutlivesItsCA(t *testing.T) {
	ca := mustCA(t, "ca", testNow, time.Hour)
	leaf, err := NewLeaf(ca, ServingSpec("server", "a"), testNow, 24*time.Hour)
	if err != nil {
		t.Fatalf("NewLeaf: %v", err)
	}
	if !leaf.Cert.NotAfter.Equal(ca.Cert.NotAfter) {
		t.Errorf("leaf NotAfter = %v, want the CA's %v", leaf.Cert.NotAfter, ca.Cert.NotAfter)
	}
}

func TestParseKeyPairRejectsMismatch(t *testing.T) {
	a := mustCA(t, "a", testNow, time.Hour)
	b := mustCA(t, "b", testNow, time.Hour)
	cases := map[string][2][]byte{
		"key of another certificate": {a.CertPEM, b.KeyPEM},
		"not PEM":                    {[]byte("nope"), a.KeyPEM},
		"no key":                     {a.CertPEM, nil},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if _, err := ParseKeyPair(tc[0], tc[1]); !errors.Is(err, ErrUnusable) {
				t.Errorf("ParseKeyPair error = %v, want ErrUnusable", err)
			}
		})
	}
}

func TestFilePairEnsure(t *testing.T) {
	dir := t.TempDir()
	caFiles := FilePair{CertFile: filepath.Join(dir, "ca.crt"), KeyFile: filepath.Join(dir, "ca.key")}
	leafFiles := FilePair{CertFile: filepath.Join(dir, "tls.crt"), KeyFile: filepath.Join(dir, "tls.key")}
	spec := ServingSpec("server", "localhost")

	ca, err := caFiles.EnsureCA("ca", testNow, time.Hour)
	if err != nil {
		t.Fatalf("EnsureCA: %v", err)
	}
	if err := leafFiles.EnsureLeaf(ca, spec, testNow, 10*time.Hour, time.Hour); err != nil {
		t.Fatalf("EnsureLeaf: %v", err)
	}
	first, err := leafFiles.Load()
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	if mode := fileMode(t, leafFiles.KeyFile); mode != 0o600 {
		t.Errorf("key mode = %o, want 600", mode)
	}

	// Still far from expiry: kept as is.
	again, err := caFiles.EnsureCA("ca", testNow.Add(time.Hour), time.Hour)
	if err != nil {
		t.Fatalf("EnsureCA: %v", err)
	}
	if !bytes.Equal(again.CertPEM, ca.CertPEM) {
		t.Errorf("EnsureCA replaced a CA ten years from expiry")
	}
	if err := leafFiles.EnsureLeaf(ca, spec, testNow.Add(time.Hour), 10*time.Hour, time.Hour); err != nil {
		t.Fatalf("EnsureLeaf: %v", err)
	}
	kept, _ := leafFiles.Load()
	if !bytes.Equal(kept.CertPEM, first.CertPEM) {
		t.Errorf("EnsureLeaf replaced a certificate with nine hours left (margin one hour)")
	}

	// Within the margin: replaced.
	if err := leafFiles.EnsureLeaf(ca, spec, testNow.Add(9*time.Hour+time.Minute), 10*time.Hour, time.Hour); err != nil {
		t.Fatalf("EnsureLeaf: %v", err)
	}
	renewed, _ := leafFiles.Load()
	if bytes.Equal(renewed.CertPEM, first.CertPEM) {
		t.Errorf("EnsureLeaf kept a certificate within its renewal margin")
	}

	// A broken file is replaced, not reported.
	if err := os.WriteFile(leafFiles.CertFile, []byte("garbage"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := leafFiles.EnsureLeaf(ca, spec, testNow, 10*time.Hour, time.Hour); err != nil {
		t.Fatalf("EnsureLeaf over a broken file: %v", err)
	}
	if _, err := leafFiles.Load(); err != nil {
		t.Errorf("Load after replacing a broken file: %v", err)
	}
}

func fileMode(t *testing.T, path string) os.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}
