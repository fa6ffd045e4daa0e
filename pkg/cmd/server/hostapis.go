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

package server

import (
	"fmt"
	"slices"

	"k8s.io/apiserver/pkg/admission/plugin/policy/mutating"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/batch-apiserver/batch-apiserver/pkg/hostcluster"
)

// mutatingPolicyGroupVersion and mutatingPolicyResource are where the
// MutatingAdmissionPolicy admission plugin reads its policies from: the
// host serves them from 1.36 on.
const (
	mutatingPolicyGroupVersion = "admissionregistration.k8s.io/v1"
	mutatingPolicyResource     = "mutatingadmissionpolicies"
)

// hostServesMutatingPolicies asks the host's discovery whether it serves
// MutatingAdmissionPolicies in the version the admission plugin watches.
func hostServesMutatingPolicies(cfg *rest.Config) (bool, error) {
	client, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return false, err
	}
	return hostcluster.Serves(client, mutatingPolicyGroupVersion, mutatingPolicyResource)
}

// fitAdmissionToHost turns the MutatingAdmissionPolicy plugin off when the
// host cluster does not serve the policies (hosts before 1.36): the plugin
// would wait for an informer of an API that does not exist, and /readyz
// would never pass. An operator who enabled the plugin by name keeps it;
// a host that cannot be asked keeps it too (the error is returned for the
// log). It returns the line to log, empty when nothing changed.
func fitAdmissionToHost(admission *genericoptions.AdmissionOptions, servesPolicies func() (bool, error)) (string, error) {
	name := mutating.PluginName
	if admission == nil || slices.Contains(admission.DisablePlugins, name) || slices.Contains(admission.EnablePlugins, name) {
		return "", nil
	}
	serves, err := servesPolicies()
	if err != nil {
		return "", fmt.Errorf("asking the host cluster whether it serves %s %s (admission plugin %s left on): %w",
			mutatingPolicyGroupVersion, mutatingPolicyResource, name, err)
	}
	if serves {
		return "", nil
	}
	admission.DisablePlugins = append(admission.DisablePlugins, name)
	return fmt.Sprintf("Admission plugin %s: off, the host cluster does not serve %s %s (Kubernetes before 1.36); --enable-admission-plugins=%s keeps it on",
		name, mutatingPolicyGroupVersion, mutatingPolicyResource, name), nil
}
