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

package v1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	batchv1beta1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1beta1"
)

// TestFieldLabelConversion checks the field selectors a Job list or watch
// accepts: the same three as upstream batch/v1, in both served versions.
func TestFieldLabelConversion(t *testing.T) {
	cases := []struct {
		label   string
		wantErr bool
	}{
		{label: "metadata.name"},
		{label: "metadata.namespace"},
		{label: "status.successful"},
		{label: "status.failed", wantErr: true},
		{label: "spec.completions", wantErr: true},
		{label: "metadata.labels", wantErr: true},
		{label: "", wantErr: true},
	}
	scheme := newScheme(t)
	for _, gv := range []schema.GroupVersion{batchv1.SchemeGroupVersion, batchv1beta1.SchemeGroupVersion} {
		for _, tc := range cases {
			t.Run(gv.Version+"/"+tc.label, func(t *testing.T) {
				kind := gv.WithKind("Job")
				label, value, err := scheme.ConvertFieldLabel(kind, tc.label, "x")
				if tc.wantErr {
					// The error carries no type to assert on; an accepted label
					// would come back unchanged instead.
					if err == nil {
						t.Fatalf("ConvertFieldLabel(%q) accepted it as %q=%q, want it rejected", tc.label, label, value)
					}
					return
				}
				if err != nil {
					t.Fatalf("ConvertFieldLabel(%q): %v", tc.label, err)
				}
				if diff := cmp.Diff([2]string{tc.label, "x"}, [2]string{label, value}); diff != "" {
					t.Errorf("ConvertFieldLabel(%q) (-want +got):\n%s", tc.label, diff)
				}
			})
		}
	}
}
