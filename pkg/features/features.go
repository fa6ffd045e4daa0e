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

// Package features defines the feature gates of batch-apiserver and registers
// them in the apiserver's default feature gate, so --feature-gates sets them.
//
// It also carries kube-apiserver's own gates: importing
// k8s.io/kubernetes/pkg/features registers every Kubernetes gate in the same
// default gate, because the pod template is defaulted, validated and stripped
// of disabled fields by upstream's core packages, which consult those gates.
// --feature-gates therefore accepts what kube-apiserver's accepts.
package features

import (
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/component-base/featuregate"
	kubefeatures "k8s.io/kubernetes/pkg/features"
)

const (
	// JobManagedBy allows delegating a Job's reconciliation to an external
	// controller through spec.managedBy (KEP-4368). It is kube's own gate
	// (GA and locked on since 1.35), registered by k8s.io/kubernetes/pkg/features;
	// it is named here so that our code needs one features package.
	JobManagedBy = kubefeatures.JobManagedBy

	// WorkloadWithJob serves spec.scheduling, which makes a Job a workload
	// for the scheduler (basic or gang scheduling, KEP-5547). It is kube's own
	// gate (alpha and off since 1.36), registered by k8s.io/kubernetes/pkg/features
	// with its dependency on GenericWorkload: turning it on needs
	// GenericWorkload=true too. While it is off, spec.scheduling is dropped on
	// create and on updates of Jobs that do not have it yet.
	WorkloadWithJob = kubefeatures.WorkloadWithJob

	// GenericWorkload is kube's gate for the scheduling.k8s.io Workload and
	// PodGroup APIs (beta and off in 1.37) that WorkloadWithJob depends on.
	// Our API reads it only through that dependency.
	GenericWorkload = kubefeatures.GenericWorkload

	// JobStrictStatusValidation runs every status validation rule on every
	// status write, instead of only the rules whose fields changed. It is
	// batch-apiserver's own; Kubernetes has no such gate.
	JobStrictStatusValidation featuregate.Feature = "JobStrictStatusValidation"
)

// defaultVersionedFeatureGates lists the maturity of batch-apiserver's own
// gates by Kubernetes minor version; the apiserver's emulation version picks
// the row in force.
var defaultVersionedFeatureGates = map[featuregate.Feature]featuregate.VersionedSpecs{
	JobStrictStatusValidation: {
		{Version: version.MustParse("1.37"), Default: false, PreRelease: featuregate.Alpha},
	},
}

func init() {
	// Importing kubefeatures orders its init, which registers kube's gates,
	// before this one.
	runtime.Must(utilfeature.DefaultMutableFeatureGate.AddVersioned(defaultVersionedFeatureGates))
}
