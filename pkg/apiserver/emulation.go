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
	"k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/version"
	utilcompatibility "k8s.io/apiserver/pkg/util/compatibility"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	basecompatibility "k8s.io/component-base/compatibility"
	baseversion "k8s.io/component-base/version"
)

// KubeAPIVersion is the Kubernetes release whose Job API, feature gates and
// CEL libraries batch-apiserver serves: the release of its k8s.io/apiserver.
// It is what the server emulates, whatever version its binary is stamped
// with.
var KubeAPIVersion = version.MustParse(baseversion.DefaultKubeBinaryVersion)

func init() {
	pinEmulationVersion()
}

// pinEmulationVersion makes the default feature gate and the Kubernetes
// component of the generic apiserver's version registry emulate
// KubeAPIVersion.
//
// k8s.io/apiserver/pkg/util/compatibility registers them, when its package
// initializes, at the version parsed from the binary's git version stamp,
// which for a Kubernetes component is its Kubernetes release. A stamped
// batch-apiserver is v0.x: resolved at 0.x, every versioned gate (JobManagedBy,
// JobStrictStatusValidation, the generic apiserver's own) would be unknown or
// off, and admission policies' CEL would lose every library added since 1.0.
// It runs in init, before --feature-gates is parsed: a gate set at 0.x that
// does not exist there is refused.
// An unstamped build (v0.0.0-master) falls back to DefaultKubeBinaryVersion
// already; this makes a stamped one behave the same.
func pinEmulationVersion() {
	// Importing utilcompatibility orders its init, which registers the
	// Kubernetes component, before ours.
	if v, ok := utilcompatibility.DefaultComponentGlobalsRegistry.EffectiveVersionFor(basecompatibility.DefaultKubeComponent).(basecompatibility.MutableEffectiveVersion); ok {
		v.SetEmulationVersion(KubeAPIVersion)
	}
	runtime.Must(utilfeature.DefaultMutableFeatureGate.SetEmulationVersion(KubeAPIVersion))
}
