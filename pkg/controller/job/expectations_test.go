package job

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	testingclock "k8s.io/utils/clock/testing"
)

func TestControllerExpectations(t *testing.T) {
	const key = "ns/job"
	type state struct {
		Exists    bool
		Add, Del  int64
		Satisfied bool
	}
	cases := []struct {
		name string
		ops  func(l klog.Logger, e *controllerExpectations, clk *testingclock.FakeClock)
		want state
	}{
		{
			name: "no expectations",
			ops:  func(klog.Logger, *controllerExpectations, *testingclock.FakeClock) {},
			want: state{Satisfied: true},
		},
		{
			name: "creations pending",
			ops: func(l klog.Logger, e *controllerExpectations, _ *testingclock.FakeClock) {
				e.expectCreations(l, key, 2)
				e.creationObserved(l, key)
			},
			want: state{Exists: true, Add: 1},
		},
		{
			name: "creations all observed",
			ops: func(l klog.Logger, e *controllerExpectations, _ *testingclock.FakeClock) {
				e.expectCreations(l, key, 2)
				e.creationObserved(l, key)
				e.creationObserved(l, key)
			},
			want: state{Exists: true, Satisfied: true},
		},
		{
			name: "more observed than expected is satisfied",
			ops: func(l klog.Logger, e *controllerExpectations, _ *testingclock.FakeClock) {
				e.expectCreations(l, key, 1)
				e.creationObserved(l, key)
				e.creationObserved(l, key)
			},
			want: state{Exists: true, Add: -1, Satisfied: true},
		},
		{
			name: "deletions pending",
			ops: func(l klog.Logger, e *controllerExpectations, _ *testingclock.FakeClock) {
				e.expectDeletions(l, key, 3)
				e.deletionObserved(l, key)
			},
			want: state{Exists: true, Del: 2},
		},
		{
			name: "expect creations forgets pending deletions",
			ops: func(l klog.Logger, e *controllerExpectations, _ *testingclock.FakeClock) {
				e.expectDeletions(l, key, 3)
				e.expectCreations(l, key, 1)
			},
			want: state{Exists: true, Add: 1},
		},
		{
			name: "deletions left after lowering both",
			ops: func(l klog.Logger, e *controllerExpectations, _ *testingclock.FakeClock) {
				e.setExpectations(l, key, 2, 3)
				e.lowerExpectations(l, key, 2, 1)
			},
			want: state{Exists: true, Del: 2},
		},
		{
			name: "raised after fulfilled",
			ops: func(l klog.Logger, e *controllerExpectations, _ *testingclock.FakeClock) {
				e.expectCreations(l, key, 1)
				e.creationObserved(l, key)
				e.raiseExpectations(l, key, 1, 2)
			},
			want: state{Exists: true, Add: 1, Del: 2},
		},
		{
			name: "lower and raise without expectations do nothing",
			ops: func(l klog.Logger, e *controllerExpectations, _ *testingclock.FakeClock) {
				e.raiseExpectations(l, key, 1, 1)
				e.lowerExpectations(l, key, 1, 0)
				e.creationObserved(l, key)
				e.deletionObserved(l, key)
			},
			want: state{Satisfied: true},
		},
		{
			name: "pending at exactly the timeout",
			ops: func(l klog.Logger, e *controllerExpectations, clk *testingclock.FakeClock) {
				e.expectCreations(l, key, 1)
				clk.Step(expectationsTimeout)
			},
			want: state{Exists: true, Add: 1},
		},
		{
			name: "expired just after the timeout",
			ops: func(l klog.Logger, e *controllerExpectations, clk *testingclock.FakeClock) {
				e.expectCreations(l, key, 1)
				clk.Step(expectationsTimeout + time.Nanosecond)
			},
			want: state{Exists: true, Add: 1, Satisfied: true},
		},
		{
			name: "raising does not extend the timeout",
			ops: func(l klog.Logger, e *controllerExpectations, clk *testingclock.FakeClock) {
				e.expectCreations(l, key, 1)
				clk.Step(4 * time.Minute)
				e.raiseExpectations(l, key, 1, 0)
				clk.Step(2 * time.Minute)
			},
			want: state{Exists: true, Add: 2, Satisfied: true},
		},
		{
			name: "setting again restarts the timeout",
			ops: func(l klog.Logger, e *controllerExpectations, clk *testingclock.FakeClock) {
				e.expectCreations(l, key, 1)
				clk.Step(4 * time.Minute)
				e.expectCreations(l, key, 1)
				clk.Step(2 * time.Minute)
			},
			want: state{Exists: true, Add: 1},
		},
		{
			name: "deleted",
			ops: func(l klog.Logger, e *controllerExpectations, _ *testingclock.FakeClock) {
				e.expectCreations(l, key, 1)
				e.deleteExpectations(l, key)
			},
			want: state{Satisfied: true},
		},
		{
			name: "other keys are independent",
			ops: func(l klog.Logger, e *controllerExpectations, _ *testingclock.FakeClock) {
				e.expectCreations(l, "ns/other", 1)
				e.expectDeletions(l, "other-ns/job", 1)
			},
			want: state{Satisfied: true},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			clk := testingclock.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			e := newControllerExpectations(clk)
			tc.ops(logger, e, clk)
			var got state
			got.Add, got.Del, got.Exists = e.getExpectations(key)
			got.Satisfied = e.satisfiedExpectations(logger, key)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unexpected expectations (-want,+got):\n%s", diff)
			}
		})
	}
}
