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

package jobhost

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apiserver/pkg/storage/storagebackend"

	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd/etcdtest"
)

// startTCPEtcd starts a member serving plain HTTP on loopback, reached as
// an external etcd (--etcd-servers) is.
func startTCPEtcd(t *testing.T) []string {
	t.Helper()
	cfg := etcdtest.TestConfig(t)
	cfg.ClientURL = "http://127.0.0.1:0"
	member, err := embeddedetcd.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(func() {
		if err := member.Close(); err != nil {
			t.Errorf("stopping etcd: %v", err)
		}
	})
	return member.Endpoints()
}

// etcdStorage is the storage configuration --etcd-servers=endpoints and
// --etcd-prefix=prefix give.
func etcdStorage(endpoints []string, prefix string) storagebackend.Config {
	return storagebackend.Config{Prefix: prefix, Transport: storagebackend.TransportConfig{ServerList: endpoints}}
}

// identityOf reads the server identity of the storage of endpoints and
// prefix.
func identityOf(t *testing.T, endpoints []string, prefix string) string {
	t.Helper()
	id, err := ServerIdentity(context.Background(), nil, etcdStorage(endpoints, prefix))
	if err != nil {
		t.Fatalf("ServerIdentity on %v under %s: %v", endpoints, prefix, err)
	}
	if !serverIdentityRE.MatchString(id) {
		t.Fatalf("identity %q is not a lowercase UUID", id)
	}
	return id
}

// TestServerIdentityPerStorage checks that the identity belongs to the
// storage: the same etcd and prefix give the same one every time (the
// replicas of one deployment, a restart), another prefix or another etcd
// a different one.
func TestServerIdentityPerStorage(t *testing.T) {
	etcd1, etcd2 := startTCPEtcd(t), startTCPEtcd(t)
	first := identityOf(t, etcd1, "/registry")
	type identities struct {
		Again, OtherPrefix, OtherEtcd string
	}
	got := identities{
		Again:       identityOf(t, etcd1, "/registry"),
		OtherPrefix: identityOf(t, etcd1, "/other"),
		OtherEtcd:   identityOf(t, etcd2, "/registry"),
	}
	want := identities{Again: first, OtherPrefix: got.OtherPrefix, OtherEtcd: got.OtherEtcd}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("identities (-want +got):\n%s", diff)
	}
	distinct := map[string]bool{first: true, got.OtherPrefix: true, got.OtherEtcd: true}
	if len(distinct) != 3 {
		t.Errorf("identities of three storages %v: want three different ones", got)
	}

	// Where it is kept: beside the API's keys under the prefix.
	client, err := clientv3.New(clientv3.Config{Endpoints: etcd1, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	resp, err := client.Get(context.Background(), "/registry/batch.jobs.dev/server-identity")
	if err != nil {
		t.Fatal(err)
	}
	var stored []string
	for _, kv := range resp.Kvs {
		stored = append(stored, string(kv.Value))
	}
	if diff := cmp.Diff([]string{first}, stored); diff != "" {
		t.Errorf("values at /registry/batch.jobs.dev/server-identity (-want +got):\n%s", diff)
	}
}

// TestServerIdentityStandaloneRestart checks the standalone case: the
// identity is read through the embedded member's in-process client and
// survives a restart of the member on the same data dir.
func TestServerIdentityStandaloneRestart(t *testing.T) {
	cfg := etcdtest.TestConfig(t)
	read := func() string {
		t.Helper()
		member, err := embeddedetcd.Start(context.Background(), cfg)
		if err != nil {
			t.Fatalf("starting etcd: %v", err)
		}
		defer func() {
			if err := member.Close(); err != nil {
				t.Errorf("stopping etcd: %v", err)
			}
		}()
		// Standalone: no etcd servers, the default prefix.
		id, err := ServerIdentity(context.Background(), member, storagebackend.Config{Prefix: "/registry"})
		if err != nil {
			t.Fatalf("ServerIdentity: %v", err)
		}
		return id
	}
	first := read()
	if !serverIdentityRE.MatchString(first) {
		t.Fatalf("identity %q is not a lowercase UUID", first)
	}
	if again := read(); again != first {
		t.Errorf("identity after a restart %q, want the first one %q", again, first)
	}
}

// TestServerIdentityConcurrentReplicas checks that replicas starting at
// the same time on an etcd without an identity agree on one: exactly one
// of them creates it.
func TestServerIdentityConcurrentReplicas(t *testing.T) {
	endpoints := startTCPEtcd(t)
	const replicas = 8
	type result struct {
		ID      string
		Created bool
	}
	results := make([]result, replicas)
	errs := make([]error, replicas)
	var wg sync.WaitGroup
	for i := range replicas {
		// A client each, as separate processes have.
		client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		defer client.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i].ID, results[i].Created, errs[i] = ensureServerIdentity(context.Background(), client, serverIdentityKey("/registry"))
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	want := make([]result, replicas)
	for i, r := range results {
		want[i] = result{ID: results[0].ID, Created: r.Created}
	}
	if diff := cmp.Diff(want, results); diff != "" {
		t.Errorf("identities of concurrent replicas (-want +got):\n%s", diff)
	}
	created := 0
	for _, r := range results {
		if r.Created {
			created++
		}
	}
	if created != 1 {
		t.Errorf("%d replicas created the identity, want 1: %+v", created, results)
	}
}

// TestServerIdentityNotAUUID checks that a key holding something else
// fails the start at once, saying what to do, instead of labelling Pods
// with it or retrying.
func TestServerIdentityNotAUUID(t *testing.T) {
	endpoints := startTCPEtcd(t)
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if _, err := client.Put(context.Background(), "/registry/batch.jobs.dev/server-identity", "Not A UUID"); err != nil {
		t.Fatal(err)
	}
	// Retrying would run into this deadline.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err = ServerIdentity(ctx, nil, etcdStorage(endpoints, "/registry"))
	if !errors.Is(err, errBadServerIdentity) || !strings.Contains(err.Error(), "delete the key") {
		t.Errorf("ServerIdentity error = %v, want one wrapping errBadServerIdentity that says to delete the key", err)
	}
	if ctx.Err() != nil {
		t.Errorf("ServerIdentity retried a stored value that is not an identity until the deadline")
	}
}

// TestServerIdentityEtcdTLSFiles checks that the etcd client takes the
// storage's TLS files: a missing one fails the start with its name.
func TestServerIdentityEtcdTLSFiles(t *testing.T) {
	missing := t.TempDir() + "/missing-ca.crt"
	storage := etcdStorage([]string{"https://127.0.0.1:1"}, "/registry")
	storage.Transport.TrustedCAFile = missing
	_, err := ServerIdentity(context.Background(), nil, storage)
	if err == nil || !strings.Contains(err.Error(), "missing-ca.crt") {
		t.Errorf("ServerIdentity error = %v, want one naming the missing CA file", err)
	}
}
