// Package features defines the feature gates of batch-apiserver and registers
// them in the apiserver's default feature gate, so --feature-gates sets them.
package features

import (
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
)

const (
	// JobManagedBy allows delegating a Job's reconciliation to an external
	// controller through spec.managedBy (KEP-4368). GA and locked on, as in
	// Kubernetes 1.35 and later.
	JobManagedBy featuregate.Feature = "JobManagedBy"

	// JobStrictStatusValidation runs every status validation rule on every
	// status write, instead of only the rules whose fields changed.
	JobStrictStatusValidation featuregate.Feature = "JobStrictStatusValidation"
)

// defaultVersionedFeatureGates lists each gate's maturity by Kubernetes minor
// version; the apiserver's emulation version picks the row in force.
var defaultVersionedFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{
	JobManagedBy: {
		{Version: version.MustParse("1.30"), Default: false, PreRelease: featuregate.Alpha},
		{Version: version.MustParse("1.32"), Default: true, PreRelease: featuregate.Beta},
		{Version: version.MustParse("1.35"), Default: true, PreRelease: featuregate.GA, LockToDefault: true},
	},
	JobStrictStatusValidation: {
		{Version: version.MustParse("1.37"), Default: false, PreRelease: featuregate.Alpha},
	},
}

func init() {
	runtime.Must(utilfeature.DefaultMutableFeatureGate.AddVersioned(defaultVersionedFeatureGates))
}
