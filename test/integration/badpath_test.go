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

package integration

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// TestBadRequestPath checks that a namespace path segment the storage layer
// cannot use ("." and "..") and a watch resourceVersion that is not a number get a 400
// Status that names nothing of the storage layout, and that ordinary lists
// and watches are not affected.
func TestBadRequestPath(t *testing.T) {
	ts := framework.StartServer(t)
	ctx := testContext(t)
	client, err := rest.HTTPClientFor(ts.ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	const base = "/apis/batch.jobs.dev/v1"
	for _, tc := range []struct {
		name   string
		method string
		path   string
	}{
		{name: "list in namespace ..", path: base + "/namespaces/../jobs"},
		{name: "list in namespace .", path: base + "/namespaces/./jobs"},
		{name: "get in namespace .", path: base + "/namespaces/./jobs/x"},
		{name: "get in namespace ..", path: base + "/namespaces/../jobs/x"},
		{name: "watch in namespace ..", path: base + "/namespaces/../jobs?watch=1"},
		{name: "create in namespace ..", method: http.MethodPost, path: base + "/namespaces/../jobs"},
		{name: "delete in namespace .", method: http.MethodDelete, path: base + "/namespaces/./jobs/x"},
		{name: "watch with resourceVersion bogus", path: base + "/jobs?watch=1&resourceVersion=bogus"},
		{name: "watch with resourceVersion -5", path: base + "/namespaces/default/jobs?watch=1&resourceVersion=-5"},
		// Already a 400 in the generic code (as in kube-apiserver); kept here so it stays one.
		{name: "list with resourceVersion bogus", path: base + "/jobs?resourceVersion=bogus"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			var body io.Reader
			if method == http.MethodPost {
				body = strings.NewReader(`{"apiVersion":"batch.jobs.dev/v1","kind":"Job","metadata":{"name":"x"}}`)
			}
			req, err := http.NewRequestWithContext(ctx, method, ts.ClientConfig.Host+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				t.Fatalf("%s %s: %v", method, tc.path, err)
			}
			raw, err := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			if err != nil {
				t.Fatalf("reading body: %v", err)
			}
			var status metav1.Status
			if err := json.Unmarshal(raw, &status); err != nil {
				t.Fatalf("status %d, body %q is not a Status: %v", resp.StatusCode, raw, err)
			}
			type result struct {
				HTTPCode int
				Kind     string
				Code     int32
				Reason   metav1.StatusReason
			}
			want := result{http.StatusBadRequest, "Status", http.StatusBadRequest, metav1.StatusReasonBadRequest}
			got := result{resp.StatusCode, status.Kind, status.Code, status.Reason}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s %s (-want +got):\n%s\nbody: %s", method, tc.path, diff, raw)
			}
			if strings.Contains(string(raw), framework.EtcdPrefix) || strings.Contains(string(raw), "/jobs/") {
				t.Errorf("body shows the storage key: %s", raw)
			}
		})
	}

	t.Run("list and watch still work", func(t *testing.T) {
		ns := testNamespace(t)
		jobs := ts.Client.BatchV1().Jobs(ns)
		list, err := jobs.List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatalf("listing: %v", err)
		}
		w, err := jobs.Watch(ctx, metav1.ListOptions{ResourceVersion: list.ResourceVersion})
		if err != nil {
			t.Fatalf("watching from %s: %v", list.ResourceVersion, err)
		}
		defer w.Stop()
		created, err := jobs.Create(ctx, newTestJob(ns, "after-watch").Obj(), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating: %v", err)
		}
		ev := nextTestWatchEvent(ctx, t, w)
		obj, err := meta.Accessor(ev.Object)
		if err != nil {
			t.Fatalf("watch event %s: %v", ev.Type, err)
		}
		if diff := cmp.Diff([]string{string(watch.Added), created.Name}, []string{string(ev.Type), obj.GetName()}); diff != "" {
			t.Errorf("watch event (-want +got):\n%s", diff)
		}
	})
}
