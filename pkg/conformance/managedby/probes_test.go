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

package managedby

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilvalidation "k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// TestDomainPrefixedValue checks that the length probes send well-formed
// values of exactly the lengths they name, so that only the length decides.
func TestDomainPrefixedValue(t *testing.T) {
	for _, n := range []int{63, 64} {
		value := domainPrefixedValue(n)
		got := struct {
			Len  int
			Errs field.ErrorList
		}{len(value), utilvalidation.IsDomainPrefixedPath(field.NewPath("managedBy"), value)}
		want := struct {
			Len  int
			Errs field.ErrorList
		}{Len: n}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("domainPrefixedValue(%d) (-want +got):\n%s", n, diff)
		}
	}
}

func TestPatchBodies(t *testing.T) {
	cases := []struct {
		name    string
		path    []string
		nested  map[string]any
		pointer string
	}{
		{"spec field", []string{"spec", "managedBy"}, map[string]any{"spec": map[string]any{"managedBy": "v"}}, "/spec/managedBy"},
		{"top-level field", []string{"managedBy"}, map[string]any{"managedBy": "v"}, "/managedBy"},
		{"names that need escaping", []string{"spec", "a/b", "c~d"}, map[string]any{"spec": map[string]any{"a/b": map[string]any{"c~d": "v"}}}, "/spec/a~1b/c~0d"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.nested, nested(tc.path, "v")); diff != "" {
				t.Errorf("nested (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.pointer, jsonPointer(tc.path)); diff != "" {
				t.Errorf("jsonPointer (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLooksLikeJob(t *testing.T) {
	cases := []struct {
		name     string
		template map[string]any
		want     bool
	}{
		{"kind Job", map[string]any{"kind": "Job"}, true},
		{"Job-shaped status", map[string]any{"kind": "Workload", "status": map[string]any{"conditions": []any{}}}, true},
		{"other status", map[string]any{"kind": "Workload", "status": map[string]any{"phase": "Pending"}}, false},
		{"no status", map[string]any{"kind": "Workload"}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, looksLikeJob(&unstructured.Unstructured{Object: tc.template})); diff != "" {
				t.Errorf("looksLikeJob (-want +got):\n%s", diff)
			}
		})
	}
}
