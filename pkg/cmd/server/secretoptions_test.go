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
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/batch-apiserver/batch-apiserver/pkg/certs"
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

func TestServingSecretOptionsValidate(t *testing.T) {
	cases := map[string]struct {
		secret  string
		wantErr bool
	}{
		"off":                {secret: ""},
		"namespace and name": {secret: "batch-system/batch-apiserver-serving"},
		"name alone":         {secret: "batch-apiserver-serving"},
		"empty name":         {secret: "batch-system/", wantErr: true},
		"three parts":        {secret: "a/b/c", wantErr: true},
		"bad namespace":      {secret: "Batch_System/x", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := NewServingSecretOptions()
			o.Secret = tc.secret
			if errs := o.Validate(); (len(errs) > 0) != tc.wantErr {
				t.Errorf("Validate() = %v, want errors: %v", errs, tc.wantErr)
			}
		})
	}
}

// TestSecretSyncerConfigs checks what the flags of the two Secrets ask
// certs.SecretSyncer to keep: the same configurations the syncer's own
// tests run (with lifetimes of hours there).
func TestSecretSyncerConfigs(t *testing.T) {
	serving := NewServingSecretOptions()
	serving.CALifetime, serving.CertLifetime, serving.TrustGrace = 30*time.Hour, 9*time.Hour, time.Hour
	etcd := NewEtcdSecretOptions()
	etcd.CALifetime, etcd.CertLifetime, etcd.TrustGrace = 30*time.Hour, 9*time.Hour, time.Hour
	hosts, err := etcdServerHosts([]string{"https://etcd-0.etcd.batch-system.svc:2379"})
	if err != nil {
		t.Fatal(err)
	}
	got := []certs.SecretSyncerConfig{
		serving.syncerConfig("batch-system", "batch-apiserver-serving", "/certs"),
		etcd.syncerConfig("batch-system", "batch-apiserver-etcd", hosts, "/certs"),
	}
	want := []certs.SecretSyncerConfig{
		{
			Secret: certs.ServingSecretConfig{
				Namespace:  "batch-system",
				Name:       "batch-apiserver-serving",
				CommonName: "batch-apiserver",
				DNSNames:   []string{"batch-apiserver.batch-system.svc", "batch-apiserver.batch-system.svc.cluster.local"},
				CALifetime: 30 * time.Hour, CertLifetime: 9 * time.Hour, TrustGrace: time.Hour,
				Labels: map[string]string{"app": "batch-apiserver"},
			},
			APIServices: []string{"v1.batch.jobs.dev", "v1beta1.batch.jobs.dev"},
			File:        filepath.Join("/certs", "serving-secret.pem"),
		},
		{
			Secret: certs.ServingSecretConfig{
				Namespace:  "batch-system",
				Name:       "batch-apiserver-etcd",
				CommonName: "batch-apiserver-etcd",
				DNSNames:   []string{"127.0.0.1", "::1", "etcd-0.etcd.batch-system.svc", "localhost"},
				CALifetime: 30 * time.Hour, CertLifetime: 9 * time.Hour, TrustGrace: time.Hour,
				Labels:     map[string]string{"app": "batch-apiserver"},
				ClientAuth: true,
			},
			File:   filepath.Join("/certs", "etcd-client.pem"),
			CAFile: filepath.Join("/certs", "etcd-ca.crt"),
		},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("syncer configurations (-want +got):\n%s", diff)
	}
}
