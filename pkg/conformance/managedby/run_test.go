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
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	fakediscovery "k8s.io/client-go/discovery/fake"
	fakedynamic "k8s.io/client-go/dynamic/fake"
	clienttesting "k8s.io/client-go/testing"
)

var testJobsGVR = schema.GroupVersionResource{Group: "batch.jobs.dev", Version: "v1", Resource: "jobs"}

// newPermissiveServer returns a fake server that stores whatever it is sent
// and validates nothing, serving jobs with a status subresource and neither
// namespaces nor Pods. As for a custom resource, a strategic merge patch is
// answered 415; server-side apply merges the configuration into the object.
func newPermissiveServer(t *testing.T) (*fakedynamic.FakeDynamicClient, *fakediscovery.FakeDiscovery) {
	t.Helper()
	dyn := fakedynamic.NewSimpleDynamicClientWithCustomListKinds(runtime.NewScheme(), map[schema.GroupVersionResource]string{testJobsGVR: "JobList"})
	dyn.PrependReactor("patch", "jobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		patch := action.(clienttesting.PatchAction)
		switch patch.GetPatchType() {
		case types.StrategicMergePatchType:
			return true, nil, &apierrors.StatusError{ErrStatus: metav1.Status{
				Status: metav1.StatusFailure, Code: 415, Reason: metav1.StatusReasonUnsupportedMediaType,
			}}
		case types.ApplyPatchType:
			stored, err := dyn.Tracker().Get(testJobsGVR, patch.GetNamespace(), patch.GetName())
			if err != nil {
				return true, nil, err
			}
			obj := stored.(*unstructured.Unstructured).DeepCopy()
			var config map[string]any
			if err := json.Unmarshal(patch.GetPatch(), &config); err != nil {
				return true, nil, fmt.Errorf("decoding the apply configuration: %w", err)
			}
			mergeInto(obj.Object, config)
			return true, obj, dyn.Tracker().Update(testJobsGVR, obj, patch.GetNamespace())
		}
		return false, nil, nil
	})
	disc := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: []*metav1.APIResourceList{{
		GroupVersion: "batch.jobs.dev/v1",
		APIResources: []metav1.APIResource{
			{Name: "jobs", Kind: "Job", Namespaced: true},
			{Name: "jobs/status", Kind: "Job", Namespaced: true},
		},
	}}}}
	return dyn, disc
}

// mergeInto sets every leaf of from into into, keeping what from lacks.
func mergeInto(into, from map[string]any) {
	for k, v := range from {
		sub, ok := v.(map[string]any)
		if dst, isMap := into[k].(map[string]any); ok && isMap {
			mergeInto(dst, sub)
			continue
		}
		into[k] = v
	}
}

// reconcileReserved makes the fake behave as if a controller had written the
// status of the object with the reserved value as soon as it is read.
func reconcileReserved(dyn *fakedynamic.FakeDynamicClient) {
	dyn.PrependReactor("get", "jobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		get := action.(clienttesting.GetAction)
		if get.GetName() != "mb-reconcile-reserved" {
			return false, nil, nil
		}
		stored, err := dyn.Tracker().Get(testJobsGVR, get.GetNamespace(), get.GetName())
		if err != nil {
			return true, nil, err
		}
		obj := stored.(*unstructured.Unstructured).DeepCopy()
		obj.Object["status"] = map[string]any{"active": int64(1)}
		return true, obj, nil
	})
}

// TestRunOnPermissiveServer runs the kit against servers that validate
// nothing: every cell that asks for a refusal is n, strategic merge patch is
// recorded as not served, and the kit deletes every object it made.
func TestRunOnPermissiveServer(t *testing.T) {
	cases := []struct {
		name      string
		reconcile bool
		setUp     func(*fakedynamic.FakeDynamicClient)
		want      Cells
	}{
		{
			name: "reconcile not measured",
			want: Cells{OpenSet: Yes, MaxLength63: No, Format: No, Immutable: No, ImmutableStatus: No, ValidatesStatus: No, SkipsReconcile: NotMeasured},
		},
		{
			name:      "no controller reconciles the reserved value",
			reconcile: true,
			want:      Cells{OpenSet: Yes, MaxLength63: No, Format: No, Immutable: No, ImmutableStatus: No, ValidatesStatus: No, SkipsReconcile: No},
		},
		{
			name:      "a controller reconciles the reserved value only",
			reconcile: true,
			setUp:     reconcileReserved,
			want:      Cells{OpenSet: Yes, MaxLength63: No, Format: No, Immutable: No, ImmutableStatus: No, ValidatesStatus: No, SkipsReconcile: Yes},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dyn, disc := newPermissiveServer(t)
			if tc.setUp != nil {
				tc.setUp(dyn)
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()

			row, err := Run(ctx, Config{
				Dynamic: dyn, Discovery: disc, Resource: "jobs.v1.batch.jobs.dev",
				Reconcile: tc.reconcile, ReconcileWait: 300 * time.Millisecond,
			})
			if err != nil {
				t.Fatalf("Run: %v", err)
			}
			if diff := cmp.Diff(tc.want, row.Cells); diff != "" {
				t.Errorf("cells (-want +got):\n%s", diff)
			}
			var strategic []string
			for _, e := range row.Evidence[CellImmutable] {
				if e.Probe == "strategic merge patch" {
					strategic = append(strategic, e.Result)
				}
			}
			if diff := cmp.Diff([]string{NotServed}, strategic); diff != "" {
				t.Errorf("strategic merge patch (-want +got):\n%s", diff)
			}
			list, err := dyn.Resource(testJobsGVR).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("listing jobs: %v", err)
			}
			if diff := cmp.Diff([]unstructured.Unstructured(nil), list.Items); diff != "" {
				t.Errorf("objects left behind (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRunRefusesWhatItCannotMeasure checks the configurations Run refuses
// before it makes anything.
func TestRunRefusesWhatItCannotMeasure(t *testing.T) {
	cases := []struct {
		name     string
		resource string
	}{
		{"not RESOURCE.VERSION.GROUP", "jobs"},
		{"resource not served", "cronjobs.v1.batch.jobs.dev"},
		{"group version not served", "jobs.v2.batch.jobs.dev"},
		{"no template for an unknown resource", "widgets.v1.batch.jobs.dev"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dyn, disc := newPermissiveServer(t)
			disc.Resources[0].APIResources = append(disc.Resources[0].APIResources, metav1.APIResource{Name: "widgets", Kind: "Widget", Namespaced: true})
			row, err := Run(context.Background(), Config{Dynamic: dyn, Discovery: disc, Resource: tc.resource})
			if err == nil {
				t.Fatalf("Run of %s succeeded: %+v", tc.resource, row)
			}
			if diff := cmp.Diff(0, len(dyn.Actions())); diff != "" {
				t.Errorf("requests made (-want +got):\n%s", diff)
			}
		})
	}
}
