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
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating/patch"
	"k8s.io/client-go/kubernetes/fake"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	batchv1beta1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1beta1"
)

// TestPolicySchemasMutateOurKinds runs the plugin's own type converter
// manager on PolicySchemas, as the plugin does in the server, and applies a
// policy's patch (spec.suspend) to a Job of each served version: the
// schemas are there as soon as the manager has listed them once, with no
// host cluster at all. A kind that is not ours has none.
func TestPolicySchemasMutateOurKinds(t *testing.T) {
	s, err := NewPolicySchemas()
	if err != nil {
		t.Fatal(err)
	}
	plugin, err := mutating.NewPlugin(nil)
	if err != nil {
		t.Fatal(err)
	}
	ready := s.ReadyzCheck()
	if err := ready.Check(nil); err != nil {
		t.Errorf("readyz before the plugin is in the chain: %v, want nil", err)
	}
	s.Initializer(fake.NewClientset(), true).Initialize(plugin)
	if err := ready.Check(nil); err == nil {
		t.Error("readyz with the plugin on and nothing listed yet: nil, want an error")
	}

	manager := patch.NewTypeConverterManager(nil, s)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go manager.Run(ctx)
	// The manager lists in a goroutine of its own: wait for its first
	// listing to be stored, which readyz follows.
	v1Job := batchv1.SchemeGroupVersion.WithKind("Job")
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return manager.GetTypeConverter(v1Job) != nil, nil
	}); err != nil {
		t.Fatalf("the manager never found %v: %v", v1Job, err)
	}
	if err := ready.Check(nil); err != nil {
		t.Errorf("readyz after the plugin listed our kinds: %v, want nil", err)
	}

	cases := []struct {
		name string
		job  runtime.Object
	}{
		{"v1", &batchv1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch.jobs.dev/v1", Kind: "Job"}, ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"}}},
		{"v1beta1", &batchv1beta1.Job{TypeMeta: metav1.TypeMeta{APIVersion: "batch.jobs.dev/v1beta1", Kind: "Job"}, ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gvk := tc.job.GetObjectKind().GroupVersionKind()
			converter := manager.GetTypeConverter(gvk)
			if converter == nil {
				t.Fatalf("no type converter for %v", gvk)
			}
			suspend := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": gvk.GroupVersion().String(),
				"kind":       "Job",
				"spec":       map[string]any{"suspend": true},
			}}
			patched, err := patch.ApplyStructuredMergeDiff(converter, tc.job, suspend)
			if err != nil {
				t.Fatal(err)
			}
			u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(patched)
			if err != nil {
				t.Fatal(err)
			}
			// The typed object's zero fields come back as empty maps;
			// what matters is who it is and what the policy set.
			type result struct {
				Name    string
				Suspend bool
			}
			var got result
			got.Name, _, _ = unstructured.NestedString(u, "metadata", "name")
			got.Suspend, _, _ = unstructured.NestedBool(u, "spec", "suspend")
			if diff := cmp.Diff(result{Name: "j", Suspend: true}, got); diff != "" {
				t.Errorf("patched Job (-want,+got):\n%s", diff)
			}
		})
	}

	upstream := schema.GroupVersionKind{Group: "batch", Version: "v1", Kind: "Job"}
	if got := manager.GetTypeConverter(upstream); got != nil {
		t.Errorf("type converter for %v: %v, want none (not a kind of this server)", upstream, got)
	}
}
