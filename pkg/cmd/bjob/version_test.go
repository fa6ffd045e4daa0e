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

package bjob

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/component-base/version"

	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned/fake"
)

// TestVersionFlag checks that --version prints the stamped version and
// nothing else, and that -v is not taken for it.
func TestVersionFlag(t *testing.T) {
	out, errOut, code := run(t, fake.NewSimpleClientset(), kubefake.NewSimpleClientset(), "--version")
	want := "kubectl-bjob " + version.Get().GitVersion + "\n"
	if diff := cmp.Diff(want, out); diff != "" || errOut != "" || code != 0 {
		t.Errorf("--version: exit %d, stderr %q, stdout (-want +got):\n%s", code, errOut, diff)
	}
	if f := newCommand(genericiooptions.NewTestIOStreamsDiscard(), nil).Flags().Lookup("version"); f == nil || f.Shorthand != "" {
		t.Errorf("--version flag: %+v, want one without a shorthand", f)
	}
}
