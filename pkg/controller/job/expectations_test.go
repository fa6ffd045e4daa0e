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

package job

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestPodExpectations(t *testing.T) {
	type state struct {
		Met                  bool
		Creations, Deletions int
	}
	cases := map[string]struct {
		steps func(e *podExpectations, clk *clocktesting.FakeClock)
		want  state
	}{
		"nothing expected": {steps: func(*podExpectations, *clocktesting.FakeClock) {}, want: state{Met: true}},
		"creations pending": {
			steps: func(e *podExpectations, _ *clocktesting.FakeClock) { e.expect("k", 2, 0); e.observe("k", 1, 0) },
			want:  state{Creations: 1},
		},
		"all observed": {
			steps: func(e *podExpectations, _ *clocktesting.FakeClock) { e.expect("k", 1, 1); e.observe("k", 1, 1) },
			want:  state{Met: true},
		},
		"pending past the timeout: met": {
			steps: func(e *podExpectations, clk *clocktesting.FakeClock) {
				e.expect("k", 0, 3)
				clk.Step(expectationsTimeout + time.Second)
			},
			want: state{Met: true, Deletions: 3},
		},
		"pending just at the timeout: not met": {
			steps: func(e *podExpectations, clk *clocktesting.FakeClock) {
				e.expect("k", 0, 3)
				clk.Step(expectationsTimeout)
			},
			want: state{Deletions: 3},
		},
		"observing does not restart the timeout": {
			steps: func(e *podExpectations, clk *clocktesting.FakeClock) {
				e.expect("k", 2, 0)
				clk.Step(expectationsTimeout)
				e.observe("k", 1, 0)
				clk.Step(time.Second)
			},
			want: state{Met: true, Creations: 1},
		},
		"forgotten": {
			steps: func(e *podExpectations, _ *clocktesting.FakeClock) { e.expect("k", 2, 2); e.forget("k") },
			want:  state{Met: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(testNow)
			e := newPodExpectations(clk)
			tc.steps(e, clk)
			c, d, _ := e.counts("k")
			if diff := cmp.Diff(tc.want, state{Met: e.met("k"), Creations: c, Deletions: d}); diff != "" {
				t.Errorf("expectations (-want +got):\n%s", diff)
			}
		})
	}
}
