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

// Package framework starts the whole batch apiserver in the test process, in
// its standalone mode, on an embedded etcd in a temporary data dir, and hands
// out clients for it.
package framework

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/server"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd/etcdtest"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
)

// EtcdPrefix is the server's default --etcd-prefix.
const EtcdPrefix = "/registry"

// TestServer is a running batch apiserver and its embedded etcd.
type TestServer struct {
	// DataDir holds the certificates, the admin kubeconfig and the etcd data.
	DataDir string
	// ClientConfig is the admin (system:masters) client configuration.
	ClientConfig *rest.Config
	// Client is the generated clientset for ClientConfig.
	Client versioned.Interface
	// EtcdEndpoints lets a test read and write etcd directly.
	EtcdEndpoints []string

	t        testing.TB
	overGRPC bool
	etcdCfg  embeddedetcd.Config
	etcd     *embeddedetcd.Server
	cancel   context.CancelFunc
	stopped  chan error
}

// Option changes the server options before it starts.
type Option func(*server.Options)

// EtcdOverGRPC makes the server reach its etcd over gRPC on the member's
// socket, as it reaches an external etcd, instead of in process: needed by
// tests that stop and restart etcd under a running server.
func EtcdOverGRPC(o *server.Options) { o.InProcessEtcd = nil }

// StartServer starts a server on a new data dir and stops it at the end of the test.
func StartServer(t testing.TB, opts ...Option) *TestServer {
	t.Helper()
	return StartServerOnDataDir(t, t.TempDir(), opts...)
}

// StartServerOnDataDir starts a server (and its etcd) on dataDir, which may
// hold the data of an earlier server.
func StartServerOnDataDir(t testing.TB, dataDir string, opts ...Option) *TestServer {
	t.Helper()
	return StartServerWithEtcd(t, dataDir, nil, opts...)
}

// StartServerWithEtcd starts a server on dataDir whose etcd is configured by
// etcdtest.TestConfig and then by changeEtcd, when it is not nil.
func StartServerWithEtcd(t testing.TB, dataDir string, changeEtcd func(*embeddedetcd.Config), opts ...Option) *TestServer {
	t.Helper()
	etcdCfg := etcdtest.TestConfig(t)
	etcdCfg.DataDir = filepath.Join(dataDir, "etcd")
	if changeEtcd != nil {
		changeEtcd(&etcdCfg)
	}
	etcd, err := embeddedetcd.Start(context.Background(), etcdCfg)
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = etcd.Close()
		t.Fatalf("listening: %v", err)
	}
	o := server.NewOptions(nil)
	o.DataDir = dataDir
	o.Listener = ln
	// As in standalone mode: the storage calls the member in process.
	o.InProcessEtcd = etcd
	for _, opt := range opts {
		opt(o)
	}
	if err := o.Complete(); err != nil {
		t.Fatalf("completing options: %v", err)
	}
	o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = etcd.Endpoints()
	if err := o.Validate(); err != nil {
		t.Fatalf("validating options: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	ts := &TestServer{
		overGRPC:      o.InProcessEtcd == nil,
		DataDir:       dataDir,
		EtcdEndpoints: etcd.Endpoints(),
		t:             t,
		etcdCfg:       etcdCfg,
		etcd:          etcd,
		cancel:        cancel,
		stopped:       make(chan error, 1),
	}
	go func() { ts.stopped <- o.Run(ctx) }()
	t.Cleanup(ts.Stop)

	kubeconfig := filepath.Join(dataDir, server.KubeconfigFileName)
	err = wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, 60*time.Second, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-ts.stopped:
			return false, errors.Join(errors.New("server stopped while starting"), err)
		default:
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, nil // not written yet
		}
		// Tests make many requests; client-side rate limiting only slows them.
		cfg.QPS = -1
		client, err := versioned.NewForConfig(cfg)
		if err != nil {
			return false, err
		}
		result := client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx)
		var code int
		result.StatusCode(&code)
		if code != 200 {
			return false, nil
		}
		ts.ClientConfig, ts.Client = cfg, client
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for the server to be ready: %v", err)
	}
	return ts
}

// Stop stops the server and its etcd; it is safe to call more than once.
func (ts *TestServer) Stop() {
	if ts.cancel == nil {
		return
	}
	ts.cancel()
	ts.cancel = nil
	select {
	case err := <-ts.stopped:
		if err != nil {
			ts.t.Errorf("server stopped with error: %v", err)
		}
	case <-time.After(60 * time.Second):
		ts.t.Errorf("server did not stop within a minute")
	}
	if err := ts.etcd.Close(); err != nil {
		ts.t.Errorf("stopping etcd: %v", err)
	}
}

// StopEtcd stops the server's etcd, as an outage of an external etcd would:
// the server keeps running.
func (ts *TestServer) StopEtcd() {
	ts.t.Helper()
	if !ts.overGRPC {
		ts.t.Fatalf("the server calls its etcd in process and cannot outlive it; start it with framework.EtcdOverGRPC")
	}
	if err := ts.etcd.Close(); err != nil {
		ts.t.Fatalf("stopping etcd: %v", err)
	}
}

// StartEtcd starts the server's etcd again after StopEtcd, on the same data
// and the same endpoint.
func (ts *TestServer) StartEtcd() {
	ts.t.Helper()
	etcd, err := embeddedetcd.Start(context.Background(), ts.etcdCfg)
	if err != nil {
		ts.t.Fatalf("starting etcd again: %v", err)
	}
	if diff := cmp.Diff(ts.EtcdEndpoints, etcd.Endpoints()); diff != "" {
		_ = etcd.Close()
		ts.t.Fatalf("etcd came back on other endpoints (-before +after):\n%s", diff)
	}
	ts.etcd = etcd
}

// EtcdClient returns a client of the server's etcd, closed at the end of the test.
func (ts *TestServer) EtcdClient() *clientv3.Client {
	ts.t.Helper()
	c, err := clientv3.New(clientv3.Config{Endpoints: ts.EtcdEndpoints, DialTimeout: 10 * time.Second})
	if err != nil {
		ts.t.Fatalf("etcd client: %v", err)
	}
	ts.t.Cleanup(func() { _ = c.Close() })
	return c
}

// JobKey is the etcd key of a Job: the generic storage puts each resource
// under <prefix>/<group>/<resource>.
func JobKey(namespace, name string) string {
	return EtcdPrefix + "/batch.jobs.dev/jobs/" + namespace + "/" + name
}
