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

package embeddedetcd_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd/etcdtest"
)

// newClient returns an etcd client for endpoints, closed when the test ends.
func newClient(t *testing.T, endpoints []string) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 10 * time.Second,
		Logger:      zap.NewNop(),
	})
	if err != nil {
		t.Fatalf("creating etcd client: %v", err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func put(t *testing.T, endpoints []string, key, value string) {
	t.Helper()
	c := newClient(t, endpoints)
	if _, err := c.Put(t.Context(), key, value); err != nil {
		t.Fatalf("putting %s: %v", key, err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("closing etcd client: %v", err)
	}
}

func get(t *testing.T, endpoints []string, key string) []string {
	t.Helper()
	c := newClient(t, endpoints)
	resp, err := c.Get(t.Context(), key)
	if err != nil {
		t.Fatalf("getting %s: %v", key, err)
	}
	var values []string
	for _, kv := range resp.Kvs {
		values = append(values, string(kv.Value))
	}
	if err := c.Close(); err != nil {
		t.Fatalf("closing etcd client: %v", err)
	}
	return values
}

// freePort returns a loopback host:port that was free a moment ago.
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("finding a free port: %v", err)
	}
	defer l.Close()
	return l.Addr().String()
}

func TestStartServesClients(t *testing.T) {
	endpoints := etcdtest.Start(t)
	if len(endpoints) != 1 {
		t.Fatalf("Endpoints() = %v, want exactly one", endpoints)
	}
	put(t, endpoints, "/registry/jobs/default/a", "a")
	if diff := cmp.Diff([]string{"a"}, get(t, endpoints, "/registry/jobs/default/a")); diff != "" {
		t.Errorf("value mismatch (-want +got):\n%s", diff)
	}
}

func TestRestartKeepsData(t *testing.T) {
	cfg := etcdtest.TestConfig(t)
	// Data must reach the disk for this test to mean anything.
	cfg.UnsafeNoFsync = false
	// A fixed client URL also proves Close released the listener.
	cfg.ClientURL = "http://" + freePort(t)

	first, err := embeddedetcd.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("first Start: %v", err)
	}
	put(t, first.Endpoints(), "/registry/jobs/default/kept", "v1")
	if err := first.Close(); err != nil {
		t.Fatalf("first Close: %v", err)
	}

	second, err := embeddedetcd.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("second Start on the same data dir: %v", err)
	}
	t.Cleanup(func() { second.Close() })
	if diff := cmp.Diff([]string{cfg.ClientURL}, second.Endpoints()); diff != "" {
		t.Errorf("Endpoints() mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"v1"}, get(t, second.Endpoints(), "/registry/jobs/default/kept")); diff != "" {
		t.Errorf("value after restart mismatch (-want +got):\n%s", diff)
	}
}

func TestCloseIsIdempotent(t *testing.T) {
	s, err := embeddedetcd.Start(t.Context(), etcdtest.TestConfig(t))
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	for i := range 3 {
		if err := s.Close(); err != nil {
			t.Fatalf("Close #%d: %v", i+1, err)
		}
	}
	// Err is closed once the member has stopped.
	for err := range s.Err() {
		t.Errorf("unexpected error from a cleanly closed member: %v", err)
	}
}

func TestParallelMembersGetDistinctPorts(t *testing.T) {
	a := etcdtest.Start(t)
	b := etcdtest.Start(t)
	if a[0] == b[0] {
		t.Fatalf("two members share endpoint %s", a[0])
	}
	put(t, a, "k", "from-a")
	if got := get(t, b, "k"); len(got) != 0 {
		t.Errorf("member b sees member a's key: %v", got)
	}
}

func TestStartWithDoneContext(t *testing.T) {
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	s, err := embeddedetcd.Start(ctx, etcdtest.TestConfig(t))
	if err == nil {
		s.Close()
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Start() error = %v, want one wrapping context.Canceled", err)
	}
}

func TestStartFailsWhenPortIsTaken(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	defer l.Close()
	cfg := etcdtest.TestConfig(t)
	cfg.ClientURL = "http://" + l.Addr().String()
	s, err := embeddedetcd.Start(t.Context(), cfg)
	if err == nil {
		s.Close()
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) || opErr.Op != "listen" {
		t.Fatalf("Start() error = %v, want a listen error", err)
	}
}

func TestCleanCloseLogsNoErrors(t *testing.T) {
	core, logs := observer.New(zapcore.WarnLevel)
	cfg := etcdtest.TestConfig(t)
	cfg.Logger = zap.New(core)
	s, err := embeddedetcd.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	put(t, s.Endpoints(), "k", "v")
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	var got []string
	for _, entry := range logs.FilterLevelExact(zapcore.ErrorLevel).All() {
		got = append(got, entry.Message)
	}
	if diff := cmp.Diff([]string(nil), got); diff != "" {
		t.Errorf("error logs from a clean start and close (-want +got):\n%s", diff)
	}
}

func TestSecondMemberOnSameDataDirFails(t *testing.T) {
	cfg := etcdtest.TestConfig(t)
	first, err := embeddedetcd.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("first Start: %v", err)
	}
	t.Cleanup(func() { first.Close() })

	second, err := embeddedetcd.Start(t.Context(), cfg)
	if err == nil {
		second.Close()
	}
	if !errors.Is(err, embeddedetcd.ErrDataDirInUse) {
		t.Fatalf("second Start on a data dir in use: error = %v, want ErrDataDirInUse", err)
	}
	// The message must say it once and name the lock that is held.
	want := "etcd data directory is in use by another process (" + filepath.Join(cfg.DataDir, "embedded-etcd.lock") + " is locked)"
	if diff := cmp.Diff(want, err.Error()); diff != "" {
		t.Errorf("second Start error message (-want +got):\n%s", diff)
	}
}
