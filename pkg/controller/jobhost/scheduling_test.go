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

package jobhost

import (
	"errors"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	fakediscovery "k8s.io/client-go/discovery/fake"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/klog/v2/ktesting"

	"github.com/batch-apiserver/batch-apiserver/pkg/features"
)

func TestDecideWorkloads(t *testing.T) {
	refused := errors.New("refused")
	cases := map[string]struct {
		gateOn  bool
		serves  bool
		err     error
		want    bool
		line    string // a part of the line said
		wantErr error
		asked   bool
	}{
		"gate off: off, the host not asked, nothing said": {},
		"gate on, served: on":                             {gateOn: true, serves: true, asked: true, want: true, line: "Workloads and PodGroups: on"},
		"gate on, not served: off, said":                  {gateOn: true, asked: true, line: "Workloads and PodGroups: off, the host cluster does not serve scheduling.k8s.io/v1beta1 workloads and podgroups"},
		"gate on, the host not answering: an error":       {gateOn: true, err: refused, asked: true, wantErr: refused},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			asked := false
			on, line, err := decideWorkloads(tc.gateOn, func() (bool, error) { asked = true; return tc.serves, tc.err })
			if !errors.Is(err, tc.wantErr) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if on != tc.want || asked != tc.asked {
				t.Errorf("on = %v, asked = %v; want %v, %v", on, asked, tc.want, tc.asked)
			}
			if (tc.line == "") != (line == "") || !strings.Contains(line, tc.line) {
				t.Errorf("line %q, want one with %q", line, tc.line)
			}
		})
	}
}

// The answer is kept for the next terms, and a host that does not answer
// is asked again.
func TestManageWorkloadsOnce(t *testing.T) {
	featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, featuregatetesting.FeatureOverrides{
		features.GenericWorkload: true, features.WorkloadWithJob: true,
	})
	defer func(d time.Duration) { schedulingAskEvery = d }(schedulingAskEvery)
	schedulingAskEvery = time.Millisecond
	host := k8sfake.NewClientset()
	d := host.Discovery().(*fakediscovery.FakeDiscovery)
	d.Resources = []*metav1.APIResourceList{{GroupVersion: "scheduling.k8s.io/v1beta1", APIResources: []metav1.APIResource{{Name: "workloads"}, {Name: "podgroups"}}}}
	calls := 0
	d.PrependReactor("get", "resource", func(clienttesting.Action) (bool, runtime.Object, error) {
		calls++
		if calls == 1 {
			return true, nil, errors.New("not yet")
		}
		return false, nil, nil
	})
	_, ctx := ktesting.NewTestContext(t)
	r := &jobControllerRunner{informerClient: host}
	if !r.manageWorkloads(ctx) {
		t.Fatal("first term: off, want on")
	}
	d.Resources = nil
	if !r.manageWorkloads(ctx) {
		t.Fatal("second term: off, want the first term's answer")
	}
	if calls != 2 {
		t.Errorf("discovery asked %d times, want 2 (a failure, an answer)", calls)
	}
}
