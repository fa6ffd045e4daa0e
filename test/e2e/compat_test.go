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

package e2e

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// TestAPIServicesAvailable checks what the aggregator of the host makes of
// the APIServices: both Available, and the host's discovery of the group
// lists v1 (preferred) and v1beta1. It is the first row of make
// test-compat's table, so it says which host it ran on.
func TestAPIServicesAvailable(t *testing.T) {
	t.Logf("host kube-apiserver and kube-controller-manager v%s", bins.HostVersion)
	for _, a := range bins.HostAdjustments() {
		t.Logf("adjusted: %s", a)
	}
	ctx := context.Background()

	type condition struct{ Type, Status, Reason string }
	apiServices := schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}
	for _, name := range framework.APIServiceNames {
		obj, err := cluster.Dynamic.Resource(apiServices).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("APIService %s: %v", name, err)
		}
		conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
		var got []condition
		for _, c := range conds {
			m, _ := c.(map[string]any)
			typ, _ := m["type"].(string)
			status, _ := m["status"].(string)
			reason, _ := m["reason"].(string)
			got = append(got, condition{typ, status, reason})
		}
		want := []condition{{"Available", "True", "Passed"}}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("APIService %s conditions (-want +got):\n%s", name, diff)
		}
	}

	groups, err := cluster.AdminClient.Discovery().ServerGroups()
	if err != nil {
		t.Fatal(err)
	}
	var got *metav1.APIGroup
	for i := range groups.Groups {
		if groups.Groups[i].Name == "batch.jobs.dev" {
			got = &groups.Groups[i]
		}
	}
	want := &metav1.APIGroup{
		Name: "batch.jobs.dev",
		Versions: []metav1.GroupVersionForDiscovery{
			{GroupVersion: "batch.jobs.dev/v1", Version: "v1"},
			{GroupVersion: "batch.jobs.dev/v1beta1", Version: "v1beta1"},
		},
		PreferredVersion: metav1.GroupVersionForDiscovery{GroupVersion: "batch.jobs.dev/v1", Version: "v1"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the host's discovery of batch.jobs.dev (-want +got):\n%s", diff)
	}
}
