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
	"context"
	"net"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/server/servertest"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd/etcdtest"
)

// shutdownBound is a generous upper limit on shutdown with an open watch. It
// is no speed requirement: it only proves the watch no longer holds the
// server until the 60 s request timeout, as it did before.
const shutdownBound = 10 * time.Second

// TestShutdownEndsOpenWatches starts the standalone server (with its own
// embedded etcd), opens a watch on Jobs and cancels the server's context as
// SIGTERM does through the command's context: Run must return well before
// the 60 s request timeout, the watch must have been ended by the server,
// and the embedded etcd must have been closed cleanly after the server.
func TestShutdownEndsOpenWatches(t *testing.T) {
	dataDir := t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	o := NewOptions(nil)
	o.DataDir = dataDir
	o.Listener = ln
	if err := o.Complete(); err != nil {
		t.Fatalf("completing options: %v", err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("validating options: %v", err)
	}
	if !o.Standalone() {
		t.Fatal("the options do not run standalone")
	}

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- o.Run(ctx) }()

	client := servertest.ReadyClient(t, filepath.Join(dataDir, KubeconfigFileName), stopped)

	// The watch's own context outlives the server's: only the server may end it.
	w, err := client.BatchV1().Jobs("").Watch(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatalf("opening a watch on Jobs: %v", err)
	}
	defer w.Stop()

	start := time.Now()
	cancel()
	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Run returned an error: %v", err)
		}
		t.Logf("Run returned %v after the context was cancelled", time.Since(start))
	case <-time.After(shutdownBound):
		t.Fatalf("Run did not return within %v of the context being cancelled with a watch open", shutdownBound)
	}

	// Run has returned, so the server has ended every response; whatever the
	// watch still buffers is drained and then its channel must be closed.
	deadline := time.After(shutdownBound)
	for open := true; open; {
		select {
		case _, open = <-w.ResultChan():
		case <-deadline:
			t.Fatal("the watch channel is still open after Run returned")
		}
	}

	// etcd closed cleanly: its data dir is no longer locked and opens again.
	cfg := etcdtest.TestConfig(t)
	cfg.DataDir = filepath.Join(dataDir, "etcd")
	etcd, err := embeddedetcd.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("reopening the embedded etcd data dir after shutdown: %v", err)
	}
	if err := etcd.Close(); err != nil {
		t.Errorf("closing the reopened etcd: %v", err)
	}
}
