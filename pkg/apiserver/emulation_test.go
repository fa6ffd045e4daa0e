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
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/version"
	genericfeatures "k8s.io/apiserver/pkg/features"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompatibility "k8s.io/component-base/compatibility"
)

// TestPinEmulationVersion starts from what the generic apiserver sets up for
// a binary stamped v0.1.0 and checks that the pin brings the gates and the
// version registry back to the served release.
func TestPinEmulationVersion(t *testing.T) {
	gate := utilfeature.DefaultMutableFeatureGate
	kube, ok := utilcompatibility.DefaultComponentGlobalsRegistry.EffectiveVersionFor(basecompatibility.DefaultKubeComponent).(basecompatibility.MutableEffectiveVersion)
	if !ok {
		t.Fatal("the version registry has no mutable Kubernetes component")
	}
	t.Cleanup(pinEmulationVersion)

	stamped := version.MustParse("0.1")
	kube.SetEmulationVersion(stamped)
	if err := gate.SetEmulationVersion(stamped); err != nil {
		t.Fatal(err)
	}
	if gate.Enabled(genericfeatures.APIServerIdentity) {
		t.Fatal("APIServerIdentity is on at emulation version 0.1: the test no longer starts from the broken state")
	}

	pinEmulationVersion()

	type state struct {
		GateEmulation, RegistryEmulation string
		APIServerIdentity                bool
	}
	got := state{gate.EmulationVersion().String(), kube.EmulationVersion().String(), gate.Enabled(genericfeatures.APIServerIdentity)}
	want := state{"1.37", "1.37", true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("after pinEmulationVersion (-want +got):\n%s", diff)
	}
}
