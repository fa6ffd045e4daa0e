package job

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"

	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
)

func TestUIDTrackingExpectations(t *testing.T) {
	const key = "ns/job"
	cases := []struct {
		name string
		ops  func(l klog.Logger, u *uidTrackingExpectations)
		want sets.Set[types.UID]
	}{
		{
			name: "nothing expected",
			ops:  func(klog.Logger, *uidTrackingExpectations) {},
		},
		{
			name: "expected in two rounds",
			ops: func(l klog.Logger, u *uidTrackingExpectations) {
				u.expectFinalizersRemoved(l, key, []types.UID{"a", "b"})
				u.expectFinalizersRemoved(l, key, []types.UID{"b", "c"})
			},
			want: sets.New[types.UID]("a", "b", "c"),
		},
		{
			name: "some observed",
			ops: func(l klog.Logger, u *uidTrackingExpectations) {
				u.expectFinalizersRemoved(l, key, []types.UID{"a", "b"})
				u.finalizerRemovalObserved(l, key, "a")
				u.finalizerRemovalObserved(l, key, "unexpected")
			},
			want: sets.New[types.UID]("b"),
		},
		{
			name: "all observed leaves an empty set",
			ops: func(l klog.Logger, u *uidTrackingExpectations) {
				u.expectFinalizersRemoved(l, key, []types.UID{"a"})
				u.finalizerRemovalObserved(l, key, "a")
			},
			want: sets.New[types.UID](),
		},
		{
			name: "observed without expectations",
			ops: func(l klog.Logger, u *uidTrackingExpectations) {
				u.finalizerRemovalObserved(l, key, "a")
			},
		},
		{
			name: "deleted",
			ops: func(l klog.Logger, u *uidTrackingExpectations) {
				u.expectFinalizersRemoved(l, key, []types.UID{"a"})
				u.deleteExpectations(l, key)
			},
		},
		{
			name: "other keys are independent",
			ops: func(l klog.Logger, u *uidTrackingExpectations) {
				u.expectFinalizersRemoved(l, key, []types.UID{"a"})
				u.expectFinalizersRemoved(l, "ns/other", []types.UID{"b"})
				u.deleteExpectations(l, "ns/other")
			},
			want: sets.New[types.UID]("a"),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			u := newUIDTrackingExpectations()
			tc.ops(logger, u)
			got := u.getExpectedUIDs(key)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unexpected UIDs (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestGetExpectedUIDsReturnsACopy(t *testing.T) {
	logger, _ := ktesting.NewTestContext(t)
	u := newUIDTrackingExpectations()
	u.expectFinalizersRemoved(logger, "ns/job", []types.UID{"a"})
	u.getExpectedUIDs("ns/job").Insert("b")
	if diff := cmp.Diff(sets.New[types.UID]("a"), u.getExpectedUIDs("ns/job")); diff != "" {
		t.Errorf("changing the returned set changed the expectations (-want,+got):\n%s", diff)
	}
}

func TestIsFinishedPodWithTrackingFinalizer(t *testing.T) {
	job := makeJob("job").Obj()
	cases := []struct {
		name           string
		pod            *corev1.Pod
		wantFinalizer  bool
		wantFinishedWF bool
	}{
		{name: "nil pod"},
		{
			name:          "running with finalizer",
			pod:           makePod("p", job).Phase(corev1.PodRunning).Obj(),
			wantFinalizer: true,
		},
		{
			name:           "succeeded with finalizer",
			pod:            makePod("p", job).Phase(corev1.PodSucceeded).Obj(),
			wantFinalizer:  true,
			wantFinishedWF: true,
		},
		{
			name:           "failed with finalizer",
			pod:            makePod("p", job).Phase(corev1.PodFailed).Obj(),
			wantFinalizer:  true,
			wantFinishedWF: true,
		},
		{
			name: "failed without finalizer",
			pod:  makePod("p", job).Phase(corev1.PodFailed).NoFinalizer().Obj(),
		},
		{
			name: "other finalizers only",
			pod: func() *corev1.Pod {
				p := makePod("p", job).Phase(corev1.PodSucceeded).Obj()
				p.Finalizers = []string{"example.com/keep", "batch.kubernetes.io/job-tracking"}
				return p
			}(),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if tc.pod != nil {
				if got := hasJobTrackingFinalizer(tc.pod); got != tc.wantFinalizer {
					t.Errorf("hasJobTrackingFinalizer() = %v, want %v", got, tc.wantFinalizer)
				}
			}
			if got := isFinishedPodWithTrackingFinalizer(tc.pod); got != tc.wantFinishedWF {
				t.Errorf("isFinishedPodWithTrackingFinalizer() = %v, want %v", got, tc.wantFinishedWF)
			}
		})
	}
}

func TestRecordFinishedPodWithTrackingFinalizer(t *testing.T) {
	// component-base metrics count nothing until registered.
	metrics.Register()
	job := makeJob("job").Obj()
	running := makePod("p", job).Phase(corev1.PodRunning).Obj()
	succeeded := makePod("p", job).Phase(corev1.PodSucceeded).Obj()
	counted := makePod("p", job).Phase(corev1.PodSucceeded).NoFinalizer().Obj()
	deleting := makePod("p", job).Phase(corev1.PodSucceeded).Deleted(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)).Obj()
	type counts struct{ Add, Delete float64 }
	cases := []struct {
		name           string
		oldPod, newPod *corev1.Pod
		want           counts
	}{
		{name: "created running", newPod: running},
		{name: "created finished", newPod: succeeded, want: counts{Add: 1}},
		{name: "finishes", oldPod: running, newPod: succeeded, want: counts{Add: 1}},
		{name: "stays finished", oldPod: succeeded, newPod: deleting},
		{name: "finalizer removed", oldPod: succeeded, newPod: counted, want: counts{Delete: 1}},
		{name: "deleted finished", oldPod: succeeded, want: counts{Delete: 1}},
		{name: "deleted counted", oldPod: counted},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			metrics.TerminatedPodsTrackingFinalizerTotal.Reset()
			recordFinishedPodWithTrackingFinalizer(tc.oldPod, tc.newPod)
			var got counts
			var err error
			if got.Add, err = testutil.GetCounterMetricValue(metrics.TerminatedPodsTrackingFinalizerTotal.WithLabelValues(metrics.Add)); err != nil {
				t.Fatal(err)
			}
			if got.Delete, err = testutil.GetCounterMetricValue(metrics.TerminatedPodsTrackingFinalizerTotal.WithLabelValues(metrics.Delete)); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unexpected metric increments (-want,+got):\n%s", diff)
			}
		})
	}
}
