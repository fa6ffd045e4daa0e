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

package features

import (
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	kubefeatures "k8s.io/kubernetes/pkg/features"
)

// TestDefaults checks the gates in force at the emulated Kubernetes version:
// ours, and kube's that the Job API and the pod template depend on.
func TestDefaults(t *testing.T) {
	cases := []struct {
		feature featuregate.Feature
		want    bool
	}{
		{JobManagedBy, true},
		{JobStrictStatusValidation, false},
		{WorkloadWithJob, false},
		{GenericWorkload, false},
		{kubefeatures.MutablePodResourcesForSuspendedJobs, true},
		{kubefeatures.MutableSchedulingDirectivesForSuspendedJobs, true},
	}
	for _, tc := range cases {
		t.Run(string(tc.feature), func(t *testing.T) {
			if got := utilfeature.DefaultFeatureGate.Enabled(tc.feature); got != tc.want {
				t.Errorf("Enabled(%s) = %v, want %v", tc.feature, got, tc.want)
			}
		})
	}
}

// TestSet checks what --feature-gates may change, on a copy of the
// process-wide gate (kube's gates and ours) so that the gate itself is left
// alone.
func TestSet(t *testing.T) {
	cases := []struct {
		name       string
		value      string
		wantErr    bool
		feature    featuregate.Feature
		wantEnable bool
	}{
		{name: "JobManagedBy is locked on", value: "JobManagedBy=false", wantErr: true, feature: JobManagedBy, wantEnable: true},
		{name: "JobManagedBy=true is accepted", value: "JobManagedBy=true", feature: JobManagedBy, wantEnable: true},
		{name: "strict status validation can be turned on", value: "JobStrictStatusValidation=true", feature: JobStrictStatusValidation, wantEnable: true},
		{name: "strict status validation can be turned off", value: "JobStrictStatusValidation=false", feature: JobStrictStatusValidation, wantEnable: false},
		{name: "WorkloadWithJob is refused without GenericWorkload", value: "WorkloadWithJob=true", wantErr: true, feature: WorkloadWithJob, wantEnable: false},
		{name: "WorkloadWithJob is accepted with GenericWorkload", value: "GenericWorkload=true,WorkloadWithJob=true", feature: WorkloadWithJob, wantEnable: true},
		{name: "GenericWorkload alone leaves WorkloadWithJob off", value: "GenericWorkload=true", feature: WorkloadWithJob, wantEnable: false},
		{name: "a kube beta gate can be turned off", value: "MutablePodResourcesForSuspendedJobs=false", feature: kubefeatures.MutablePodResourcesForSuspendedJobs, wantEnable: false},
		{name: "a kube gate is refused when gates that depend on it stay on", value: "PodLevelResources=false", wantErr: true, feature: kubefeatures.PodLevelResources, wantEnable: true},
		{name: "an unknown gate is refused", value: "NoSuchGate=true", wantErr: true, feature: JobStrictStatusValidation, wantEnable: false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := utilfeature.DefaultMutableFeatureGate.DeepCopy()
			err := gate.Set(tc.value)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Set(%q) error = %v, want error: %v", tc.value, err, tc.wantErr)
			}
			if got := gate.Enabled(tc.feature); got != tc.wantEnable {
				t.Errorf("Enabled(%s) = %v, want %v", tc.feature, got, tc.wantEnable)
			}
		})
	}
}

// TestStages checks the maturity --help prints for the gates of the Job API
// at the emulated Kubernetes version: 1.37's.
func TestStages(t *testing.T) {
	cases := []struct {
		feature featuregate.Feature
		want    string
	}{
		{JobStrictStatusValidation, "ALPHA"},
		{WorkloadWithJob, "ALPHA"},
		{GenericWorkload, "BETA"},
		{JobManagedBy, ""}, // GA has no stage name
	}
	specs := utilfeature.DefaultMutableFeatureGate.GetAll()
	for _, tc := range cases {
		t.Run(string(tc.feature), func(t *testing.T) {
			if got := string(specs[tc.feature].PreRelease); got != tc.want {
				t.Errorf("PreRelease(%s) = %q, want %q", tc.feature, got, tc.want)
			}
		})
	}
}
