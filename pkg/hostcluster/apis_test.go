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

package hostcluster

import (
	"errors"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	fakediscovery "k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
)

func TestServes(t *testing.T) {
	scheduling := &metav1.APIResourceList{GroupVersion: "scheduling.k8s.io/v1beta1", APIResources: []metav1.APIResource{
		{Name: "workloads"}, {Name: "podgroups"}, {Name: "priorityclasses"},
	}}
	refused := errors.New("refused")
	cases := map[string]struct {
		lists     []*metav1.APIResourceList
		fail      error
		resources []string
		want      bool
		wantErr   error
	}{
		"all served":                   {lists: []*metav1.APIResourceList{scheduling}, resources: []string{"workloads", "podgroups"}, want: true},
		"one missing":                  {lists: []*metav1.APIResourceList{scheduling}, resources: []string{"workloads", "compositepodgroups"}},
		"the group version is unknown": {resources: []string{"workloads"}},
		"the host cannot be asked":     {lists: []*metav1.APIResourceList{scheduling}, fail: refused, resources: []string{"workloads"}, wantErr: refused},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d := &fakediscovery.FakeDiscovery{Fake: &clienttesting.Fake{Resources: tc.lists}}
			if tc.fail != nil {
				d.AddReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) { return true, nil, tc.fail })
			}
			got, err := Serves(d, "scheduling.k8s.io/v1beta1", tc.resources...)
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("Serves: error %v, want %v", err, tc.wantErr)
			}
			if got != tc.want {
				t.Errorf("Serves = %v, want %v", got, tc.want)
			}
		})
	}
}
