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

package install

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/roundtrip"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/fuzzer"
)

// TestRoundTripTypes fuzzes the internal Job and JobList, converts them to v1
// and v1beta1, encodes them as JSON and as protobuf, decodes them (with
// defaulting) and converts them back, and expects the original object.
func TestRoundTripTypes(t *testing.T) {
	roundtrip.RoundTripProtobufTestForAPIGroup(t, Install, fuzzer.Funcs)
}

// TestRoundTripToUnstructured converts every served version through JSON and
// CBOR to unstructured and back, which is the path of server-side apply,
// dynamic clients and CBOR-speaking clients.
func TestRoundTripToUnstructured(t *testing.T) {
	scheme := runtime.NewScheme()
	Install(scheme)
	// metav1.AddToGroupVersion also registers the option kinds (CreateOptions,
	// ...) in our versions; they are apimachinery's to test, not ours.
	skipped := sets.New[schema.GroupVersionKind]()
	for gvk := range scheme.AllKnownTypes() {
		if gvk.Kind != "Job" && gvk.Kind != "JobList" {
			skipped.Insert(gvk)
		}
	}
	roundtrip.RoundtripToUnstructured(t, scheme, fuzzer.Funcs, skipped, nil)
}
