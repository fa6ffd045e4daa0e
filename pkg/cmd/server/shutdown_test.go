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
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/server/servertest"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd/etcdtest"
)

// shutdownBound is a generous upper limit on shutdown with an open watch. It
// is no speed requirement: it only proves the watch no longer holds the
// server until the 60 s request timeout, as it did before.
const shutdownBound = 10 * time.Second

// standaloneOptions returns the completed and validated options of a
// standalone server in a new data directory, on a listener of 127.0.0.1.
// check, when not nil, sees the defaults before Complete.
func standaloneOptions(t *testing.T, check func(*Options)) (o *Options, dataDir string, ln net.Listener) {
	t.Helper()
	dataDir = t.TempDir()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	o = NewOptions(nil)
	o.DataDir = dataDir
	o.Listener = ln
	if check != nil {
		check(o)
	}
	if err := o.Complete(); err != nil {
		t.Fatalf("completing options: %v", err)
	}
	if err := o.Validate(); err != nil {
		t.Fatalf("validating options: %v", err)
	}
	if !o.Standalone() {
		t.Fatal("the options do not run standalone")
	}
	return o, dataDir, ln
}

// TestShutdownEndsOpenWatches starts the standalone server (with its own
// embedded etcd), opens a watch on Jobs and cancels the server's context as
// SIGTERM does through the command's context: Run must return well before
// the 60 s request timeout, the watch must have been ended by the server,
// and the embedded etcd must have been closed cleanly after the server.
func TestShutdownEndsOpenWatches(t *testing.T) {
	o, dataDir, _ := standaloneOptions(t, nil)

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

// TestShutdownAnswersRetryAfterUntilDrained holds a create in flight (its
// body half sent), stops the server and checks what --shutdown-send-retry-after
// promises: the server keeps its listener while the create is unfinished,
// answers every new request 429 with Retry-After and Connection: close, and
// still completes the create it had; then it stops.
func TestShutdownAnswersRetryAfterUntilDrained(t *testing.T) {
	o, dataDir, ln := standaloneOptions(t, func(o *Options) {
		if !o.Shutdown.SendRetryAfter {
			t.Fatal("--shutdown-send-retry-after is off by default")
		}
	})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stopped := make(chan error, 1)
	go func() { stopped <- o.Run(ctx) }()

	kubeconfig := filepath.Join(dataDir, KubeconfigFileName)
	servertest.ReadyClient(t, kubeconfig, stopped)
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatalf("reading the admin kubeconfig: %v", err)
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		t.Fatalf("TLS config of the admin kubeconfig: %v", err)
	}
	tlsConfig.NextProtos = []string{"http/1.1"}

	// The held create: headers with Expect: 100-continue, then half the
	// body. net/http sends "100 Continue" when the handler first reads the
	// body, so once it arrives the request has passed the filters that
	// count it as in flight.
	const path = "/apis/batch.jobs.dev/v1/namespaces/default/jobs"
	body := []byte(`{"apiVersion":"batch.jobs.dev/v1","kind":"Job","metadata":{"name":"held"},` +
		`"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"c","image":"busybox"}]}}}}`)
	conn, err := tls.Dial("tcp", ln.Addr().String(), tlsConfig)
	if err != nil {
		t.Fatalf("dialing the server: %v", err)
	}
	defer conn.Close()
	half := len(body) / 2
	fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\nExpect: 100-continue\r\n\r\n",
		path, ln.Addr(), len(body))
	if _, err := conn.Write(body[:half]); err != nil {
		t.Fatalf("sending half the body: %v", err)
	}
	held := bufio.NewReader(conn)
	status, err := held.ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 100 ") {
		t.Fatalf("waiting for 100 Continue: got %q, %v", status, err)
	}
	if _, err := held.ReadString('\n'); err != nil { // the blank line after it
		t.Fatalf("reading the end of 100 Continue: %v", err)
	}

	cancel()

	// A new request is answered as usual until the server stops taking
	// new ones; from then on, while the create is in flight, with 429.
	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsConfig, DisableKeepAlives: true}, Timeout: 10 * time.Second}
	var refused *http.Response
	var refusedBody []byte
	err = wait.PollUntilContextTimeout(context.Background(), 20*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		resp, err := httpClient.Get("https://" + ln.Addr().String() + path)
		if err != nil {
			return false, fmt.Errorf("a request while the create is in flight: %w", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			return false, nil
		}
		refused, refusedBody = resp, b
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for the server to refuse new requests: %v", err)
	}
	got := map[string]string{
		"status":      refused.Status,
		"Retry-After": refused.Header.Get("Retry-After"),
		"close":       fmt.Sprint(refused.Close),
		"body":        strings.TrimSpace(string(refusedBody)),
	}
	want := map[string]string{
		"status":      "429 Too Many Requests",
		"Retry-After": "5",
		"close":       "true",
		"body":        "The apiserver is shutting down, please try again later.",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("a request after the stop, with a create in flight (-want +got):\n%s", diff)
	}
	select {
	case err := <-stopped:
		t.Fatalf("Run returned (%v) with the create still in flight", err)
	default:
	}

	// The rest of the body: the create completes.
	if _, err := conn.Write(body[half:]); err != nil {
		t.Fatalf("sending the rest of the body: %v", err)
	}
	resp, err := http.ReadResponse(held, nil)
	if err != nil {
		t.Fatalf("reading the held create's response: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated {
		t.Errorf("the create in flight at the stop: got %s, want 201 Created", resp.Status)
	}

	select {
	case err := <-stopped:
		if err != nil {
			t.Errorf("Run returned an error: %v", err)
		}
	case <-time.After(shutdownBound):
		t.Fatalf("Run did not return within %v of the last request in flight", shutdownBound)
	}
}

// TestConnectionDrain checks the filter the shutdown delay relies on: an
// HTTP/1.1 client keeps its connection while the server runs, and once the
// server is stopping gets its answer as usual, with Connection: close, after
// which the connection is closed and the next request dials a new one.
func TestConnectionDrain(t *testing.T) {
	stopping := make(chan struct{})
	handler := withConnectionDrain(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, "served")
	}), stopping)
	srv := httptest.NewServer(handler)
	defer srv.Close()

	var dials int
	var mu sync.Mutex
	transport := &http.Transport{DialContext: func(ctx context.Context, network, addr string) (net.Conn, error) {
		mu.Lock()
		dials++
		mu.Unlock()
		return (&net.Dialer{}).DialContext(ctx, network, addr)
	}}
	defer transport.CloseIdleConnections()
	client := &http.Client{Transport: transport}
	type answer struct {
		Status, Body string
		Close        bool
		Dials        int
	}
	get := func() answer {
		t.Helper()
		resp, err := client.Get(srv.URL)
		if err != nil {
			t.Fatalf("GET: %v", err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		mu.Lock()
		defer mu.Unlock()
		return answer{Status: resp.Status, Body: string(b), Close: resp.Close, Dials: dials}
	}

	got := []answer{get(), get()}
	close(stopping)
	got = append(got, get(), get())
	want := []answer{
		{Status: "200 OK", Body: "served", Dials: 1},
		{Status: "200 OK", Body: "served", Dials: 1},
		{Status: "200 OK", Body: "served", Close: true, Dials: 1},
		{Status: "200 OK", Body: "served", Close: true, Dials: 2},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers before and after the stop (-want +got):\n%s", diff)
	}
}
