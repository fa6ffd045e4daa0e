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
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/rest"
)

// TestHostServesMutatingPolicies checks the discovery question against a
// host serving admissionregistration.k8s.io/v1 with and without the
// policies, and one without the group version at all.
func TestHostServesMutatingPolicies(t *testing.T) {
	cases := map[string]struct {
		resources []string // nil: 404 for the group version
		status    int
		want      bool
		wantErr   bool
	}{
		"1.36 and later":              {resources: []string{"mutatingadmissionpolicies", "mutatingadmissionpolicybindings", "validatingadmissionpolicies"}, want: true},
		"before 1.36":                 {resources: []string{"validatingadmissionpolicies", "validatingwebhookconfigurations"}, want: false},
		"no admissionregistration v1": {status: http.StatusNotFound, want: false},
		"host error":                  {status: http.StatusInternalServerError, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path != "/apis/admissionregistration.k8s.io/v1" {
					http.NotFound(w, r)
					return
				}
				if tc.status != 0 {
					w.WriteHeader(tc.status)
					return
				}
				list := metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: "admissionregistration.k8s.io/v1"}
				for _, r := range tc.resources {
					list.APIResources = append(list.APIResources, metav1.APIResource{Name: r, Namespaced: false, Kind: "X", Verbs: []string{"get"}})
				}
				w.Header().Set("Content-Type", "application/json")
				_ = json.NewEncoder(w).Encode(list)
			}))
			defer srv.Close()
			got, err := hostServesMutatingPolicies(&rest.Config{Host: srv.URL})
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want an error: %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("serves = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestFitAdmissionToHost checks when the MutatingAdmissionPolicy plugin is
// turned off: only when the host lacks the API and the operator did not
// name the plugin.
func TestFitAdmissionToHost(t *testing.T) {
	const off = "Admission plugin MutatingAdmissionPolicy: off, the host cluster does not serve admissionregistration.k8s.io/v1 mutatingadmissionpolicies (Kubernetes before 1.36); --enable-admission-plugins=MutatingAdmissionPolicy keeps it on"
	type result struct {
		Disabled []string
		Line     string
		Err      bool
		Asked    bool
	}
	cases := map[string]struct {
		enable, disable []string
		serves          bool
		err             error
		want            result
	}{
		"host serves them":     {serves: true, want: result{Asked: true}},
		"host lacks them":      {serves: false, want: result{Disabled: []string{"MutatingAdmissionPolicy"}, Line: off, Asked: true}},
		"others disabled kept": {disable: []string{"NamespaceLifecycle"}, want: result{Disabled: []string{"NamespaceLifecycle", "MutatingAdmissionPolicy"}, Line: off, Asked: true}},
		"operator disabled it": {disable: []string{"MutatingAdmissionPolicy"}, want: result{Disabled: []string{"MutatingAdmissionPolicy"}}},
		"operator enabled it":  {enable: []string{"MutatingAdmissionPolicy"}, want: result{}},
		"host cannot be asked": {err: errors.New("connection refused"), want: result{Err: true, Asked: true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := genericoptions.NewAdmissionOptions()
			a.EnablePlugins, a.DisablePlugins = tc.enable, tc.disable
			asked := false
			line, err := fitAdmissionToHost(a, func() (bool, error) { asked = true; return tc.serves, tc.err })
			got := result{Disabled: a.DisablePlugins, Line: line, Err: err != nil, Asked: asked}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if line, err := fitAdmissionToHost(nil, func() (bool, error) { t.Fatal("asked without admission"); return false, nil }); line != "" || err != nil {
		t.Errorf("no admission (standalone): line %q, err %v; want nothing", line, err)
	}
}
