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
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/kubernetes/pkg/apis/core"
	corevalidation "k8s.io/kubernetes/pkg/apis/core/validation"
	"k8s.io/kubernetes/pkg/capabilities"
	"k8s.io/utils/ptr"
)

// TestAllowPrivileged checks that --allow-privileged decides, as on
// kube-apiserver, whether core validation lets a pod template run a
// privileged container. The setting is process-wide: the test resets it
// around each case and runs alone.
func TestAllowPrivileged(t *testing.T) {
	const path = "template.spec.containers[0].securityContext.privileged"
	template := &core.PodTemplateSpec{Spec: core.PodSpec{
		RestartPolicy: core.RestartPolicyNever,
		DNSPolicy:     core.DNSClusterFirst,
		Containers: []core.Container{{
			Name: "main", Image: "registry.example/app:1.0",
			ImagePullPolicy:          core.PullIfNotPresent,
			TerminationMessagePolicy: core.TerminationMessageReadFile,
			SecurityContext:          &core.SecurityContext{Privileged: ptr.To(true)},
		}},
	}}
	for name, tc := range map[string]struct {
		args []string
		want []field.ErrorType
	}{
		"default: refused":             {want: []field.ErrorType{field.ErrorTypeForbidden}},
		"--allow-privileged=false":     {args: []string{"--allow-privileged=false"}, want: []field.ErrorType{field.ErrorTypeForbidden}},
		"--allow-privileged: accepted": {args: []string{"--allow-privileged"}},
		"--allow-privileged=true":      {args: []string{"--allow-privileged=true"}},
	} {
		t.Run(name, func(t *testing.T) {
			capabilities.ResetForTest()
			t.Cleanup(capabilities.ResetForTest)
			parseOptions(t, tc.args...)
			var got []field.ErrorType
			for _, err := range corevalidation.ValidatePodTemplateSpec(template, field.NewPath("template"), corevalidation.PodValidationOptions{}) {
				if err.Field == path {
					got = append(got, err.Type)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("errors at %s (-want +got):\n%s", path, diff)
			}
		})
	}
}
