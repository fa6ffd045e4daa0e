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
	"fmt"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/endpoints/deprecation"
)

// checkVersionStamp fails when the binary is stamped (gitMajor, gitMinor of
// k8s.io/component-base/version) with another Kubernetes release than the
// one whose API it serves.
//
// The generic apiserver decides whether an API version is deprecated, and
// so whether it sends the deprecation Warning header and counts
// apiserver_requested_deprecated_apis, by comparing the prerelease-lifecycle
// tags of its types with those two fields, as in kube-apiserver, whose
// stamp is its Kubernetes release. hack/version.sh stamps them with the
// served release (1.37), never the git version (v0.x), and an unstamped build
// leaves them empty, which the generic apiserver takes as "deprecated as
// soon as tagged". Any other stamp would silently move v1beta1's deprecation.
func checkVersionStamp(info apimachineryversion.Info, served *utilversion.Version) error {
	if info.Major == "" && info.Minor == "" {
		return nil
	}
	major, minor, err := deprecation.MajorMinor(info)
	if err != nil {
		return fmt.Errorf("binary stamped with Kubernetes version %q.%q: %w", info.Major, info.Minor, err)
	}
	if served == nil || uint(major) != served.Major() || uint(minor) != served.Minor() {
		return fmt.Errorf("binary stamped as Kubernetes %d.%d (k8s.io/component-base/version gitMajor and gitMinor), but it serves the Kubernetes %v API: API deprecation would follow %d.%d; build with the -ldflags of hack/version.sh", major, minor, served, major, minor)
	}
	return nil
}
