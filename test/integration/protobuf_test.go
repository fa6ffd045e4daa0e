package integration

import (
	"context"
	"net/http"
	"testing"

	"k8s.io/client-go/rest"

	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// TestProtobufFallsBackToJSON checks that a client preferring protobuf (as the
// namespace controller does when it deletes collections) gets JSON: our types
// have no protobuf encoding, so the server must not offer it.
func TestProtobufFallsBackToJSON(t *testing.T) {
	ts := framework.StartServer(t)
	client, err := rest.HTTPClientFor(ts.ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []struct{ method, path string }{
		{http.MethodGet, "/apis/batch.jobs.dev/v1/jobs"},
		{http.MethodGet, "/apis/batch.jobs.dev/v1/namespaces/default/jobs"},
		{http.MethodDelete, "/apis/batch.jobs.dev/v1/namespaces/default/jobs"},
	} {
		method, path := r.method, r.path
		req, err := http.NewRequestWithContext(context.Background(), method, ts.ClientConfig.Host+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", "application/vnd.kubernetes.protobuf, application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s: status %d, want 200", method, path, resp.StatusCode)
		}
		if got := resp.Header.Get("Content-Type"); got != "application/json" {
			t.Errorf("%s %s: Content-Type %q, want application/json", method, path, got)
		}
	}
}
