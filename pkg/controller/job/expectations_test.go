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

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
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

// TestStatusWritesShown: which update events the controller takes for its
// own status writes, with and without a write in flight, and what it keeps.
func TestStatusWritesShown(t *testing.T) {
	at := func(rv string) *batchv1.Job { return makeJob("j").ResourceVersion(rv).Obj() }
	other := makeJob("j").UID("other-uid").ResourceVersion("9").Obj()
	type step struct {
		begin bool         // a write begins
		end   *batchv1.Job // the write in flight returns this Job
		fail  bool         // the write in flight fails
		show  *batchv1.Job // an update event shows this Job
	}
	type result struct {
		Ours    []bool // shown's answers, in order
		Foreign []bool // end's answers, in order
		Kept    string // the resourceVersion kept for ns/j
	}
	cases := map[string]struct {
		steps []step
		want  result
	}{
		"nothing written: every event is someone else's": {
			steps: []step{{show: at("5")}},
			want:  result{Ours: []bool{false}},
		},
		"the write shown after its response: ours, and the informer caught up": {
			steps: []step{{begin: true}, {end: at("7")}, {show: at("7")}},
			want:  result{Ours: []bool{true}, Foreign: []bool{false}},
		},
		"an earlier version (the sync's first write) after the response: ours, the write still kept": {
			steps: []step{{begin: true}, {end: at("7")}, {show: at("6")}},
			want:  result{Ours: []bool{true}, Foreign: []bool{false}, Kept: "7"},
		},
		"a later version after the response: someone else's": {
			steps: []step{{begin: true}, {end: at("7")}, {show: at("8")}},
			want:  result{Ours: []bool{false}, Foreign: []bool{false}},
		},
		"another job of the name: someone else's": {
			steps: []step{{begin: true}, {end: at("7")}, {show: other}},
			want:  result{Ours: []bool{false}, Foreign: []bool{false}},
		},
		"the write shown before its response: held, then ours": {
			steps: []step{{begin: true}, {show: at("7")}, {end: at("7")}},
			want:  result{Ours: []bool{true}, Foreign: []bool{false}},
		},
		"a later version shown during the write: held, then someone else's": {
			steps: []step{{begin: true}, {show: at("7")}, {show: at("9")}, {end: at("7")}},
			want:  result{Ours: []bool{true, true}, Foreign: []bool{true}},
		},
		"an earlier version shown during the write: ours, the write kept": {
			steps: []step{{begin: true}, {show: at("6")}, {end: at("7")}},
			want:  result{Ours: []bool{true}, Foreign: []bool{false}, Kept: "7"},
		},
		"another job shown during the write: someone else's": {
			steps: []step{{begin: true}, {show: other}, {end: at("7")}},
			want:  result{Ours: []bool{true}, Foreign: []bool{true}},
		},
		"a failed write: what it held is left to the retry, nothing kept": {
			steps: []step{{begin: true}, {show: at("9")}, {fail: true}},
			want:  result{Ours: []bool{true}, Foreign: []bool{false}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := newStatusWrites()
			var got result
			for _, s := range tc.steps {
				switch {
				case s.begin:
					w.begin("ns/j")
				case s.end != nil:
					got.Foreign = append(got.Foreign, w.end("ns/j", s.end))
				case s.fail:
					got.Foreign = append(got.Foreign, w.end("ns/j", nil))
				case s.show != nil:
					got.Ours = append(got.Ours, w.shown("ns/j", s.show))
				}
			}
			got.Kept = w.kept("ns/j")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}
