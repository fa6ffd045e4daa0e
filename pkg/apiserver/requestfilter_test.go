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

package apiserver

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apiserver/pkg/endpoints/request"
)

func TestWithRequestValidation(t *testing.T) {
	const base = "/apis/batch.jobs.dev/v1"
	cases := []struct {
		name       string
		method     string
		path       string
		wantCode   int
		wantReason metav1.StatusReason
	}{
		{name: "list in a valid namespace", path: base + "/namespaces/default/jobs", wantCode: http.StatusOK},
		{name: "get in a valid namespace", path: base + "/namespaces/default/jobs/x", wantCode: http.StatusOK},
		{name: "list in all namespaces", path: base + "/jobs", wantCode: http.StatusOK},
		{name: "watch at a resourceVersion", path: base + "/namespaces/default/jobs?watch=1&resourceVersion=42", wantCode: http.StatusOK},
		{name: "watch at resourceVersion 0", path: base + "/jobs?watch=true&resourceVersion=0", wantCode: http.StatusOK},
		{name: "watch without resourceVersion", path: base + "/jobs?watch=true", wantCode: http.StatusOK},
		{name: "list with a bad resourceVersion is left to the generic code", path: base + "/jobs?resourceVersion=bogus", wantCode: http.StatusOK},
		{name: "discovery", path: base, wantCode: http.StatusOK},
		{name: "non-resource path", path: "/readyz", wantCode: http.StatusOK},
		{name: "list in namespace ..", path: base + "/namespaces/../jobs", wantCode: http.StatusBadRequest, wantReason: metav1.StatusReasonBadRequest},
		{name: "get in namespace .", path: base + "/namespaces/./jobs/x", wantCode: http.StatusBadRequest, wantReason: metav1.StatusReasonBadRequest},
		{name: "watch in namespace ..", path: base + "/namespaces/../jobs?watch=1", wantCode: http.StatusBadRequest, wantReason: metav1.StatusReasonBadRequest},
		{name: "legacy watch path in namespace ..", path: base + "/watch/namespaces/../jobs", wantCode: http.StatusBadRequest, wantReason: metav1.StatusReasonBadRequest},
		{name: "create in namespace ..", method: http.MethodPost, path: base + "/namespaces/../jobs", wantCode: http.StatusBadRequest, wantReason: metav1.StatusReasonBadRequest},
		{name: "delete in namespace .", method: http.MethodDelete, path: base + "/namespaces/./jobs/x", wantCode: http.StatusBadRequest, wantReason: metav1.StatusReasonBadRequest},
		{name: "namespace not a DNS-1123 label is left to the generic code", path: base + "/namespaces/Not_A_Label/jobs", wantCode: http.StatusOK},
		{name: "namespace with dots", path: base + "/namespaces/a..b/jobs", wantCode: http.StatusOK},
		{name: "namespace ...", path: base + "/namespaces/.../jobs", wantCode: http.StatusOK},
		{name: "watch with a resourceVersion that is not a number", path: base + "/jobs?watch=1&resourceVersion=bogus", wantCode: http.StatusBadRequest, wantReason: metav1.StatusReasonBadRequest},
		{name: "watch with a negative resourceVersion", path: base + "/namespaces/default/jobs?watch=1&resourceVersion=-5", wantCode: http.StatusBadRequest, wantReason: metav1.StatusReasonBadRequest},
		{name: "legacy watch path with a bad resourceVersion", path: base + "/watch/jobs?resourceVersion=bogus", wantCode: http.StatusBadRequest, wantReason: metav1.StatusReasonBadRequest},
	}
	resolver := &request.RequestInfoFactory{
		APIPrefixes:          sets.NewString("api", "apis"),
		GrouplessAPIPrefixes: sets.NewString("api"),
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, tc.path, nil)
			info, err := resolver.NewRequestInfo(req)
			if err != nil {
				t.Fatalf("parsing request info: %v", err)
			}
			req = req.WithContext(request.WithRequestInfo(req.Context(), info))
			next := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
			rec := httptest.NewRecorder()
			WithRequestValidation(next, Codecs).ServeHTTP(rec, req)

			if rec.Code != tc.wantCode {
				t.Fatalf("status code = %d, want %d; body: %s", rec.Code, tc.wantCode, rec.Body)
			}
			if tc.wantCode == http.StatusOK {
				return
			}
			body := rec.Body.String()
			var status metav1.Status
			if err := json.Unmarshal([]byte(body), &status); err != nil {
				t.Fatalf("decoding Status from %q: %v", body, err)
			}
			got := struct {
				Kind   string
				Code   int32
				Reason metav1.StatusReason
			}{status.Kind, status.Code, status.Reason}
			want := struct {
				Kind   string
				Code   int32
				Reason metav1.StatusReason
			}{"Status", int32(tc.wantCode), tc.wantReason}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("Status (-want +got):\n%s", diff)
			}
			// The message is for the client: nothing of the storage layout.
			if strings.Contains(body, "/registry") || strings.Contains(body, "/jobs/") || strings.Contains(body, "strconv") {
				t.Errorf("body shows internal detail: %s", body)
			}
		})
	}
}
