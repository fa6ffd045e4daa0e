package features

import (
	"testing"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

func TestDefaults(t *testing.T) {
	cases := []struct {
		feature featuregate.Feature
		want    bool
	}{
		{JobManagedBy, true},
		{JobStrictStatusValidation, false},
	}
	for _, tc := range cases {
		t.Run(string(tc.feature), func(t *testing.T) {
			if got := utilfeature.DefaultFeatureGate.Enabled(tc.feature); got != tc.want {
				t.Errorf("Enabled(%s) = %v, want %v", tc.feature, got, tc.want)
			}
		})
	}
}

// TestSet checks what --feature-gates may change, on a fresh gate with our
// specs so the process-wide gate is left alone.
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
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			gate := featuregate.NewFeatureGate()
			if err := gate.AddVersioned(defaultVersionedFeatureGates); err != nil {
				t.Fatal(err)
			}
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
