package job

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

const (
	testDefaultBackoff = 10 * time.Second
	testMaxBackoff     = 10 * time.Minute
)

var backoffT0 = time.Date(2026, 1, 1, 0, 10, 0, 0, time.UTC)

// finishedPods returns one Pod per time, its container terminated then.
func finishedPods(phase corev1.PodPhase, times ...time.Time) []*corev1.Pod {
	job := makeJob("j").Obj()
	pods := make([]*corev1.Pod, 0, len(times))
	for i, t := range times {
		code := int32(0)
		if phase == corev1.PodFailed {
			code = 1
		}
		pods = append(pods, makePod(string(phase)+"-"+string(rune('a'+i)), job).Phase(phase).ExitCode("main", code, t).Obj())
	}
	return pods
}

func TestNewBackoffRecord(t *testing.T) {
	cases := map[string]struct {
		stored    *backoffRecord
		succeeded []time.Time
		failed    []time.Time
		want      backoffRecord
	}{
		"nothing stored, nothing finished": {
			want: backoffRecord{key: "ns/j"},
		},
		"nothing stored, one failure": {
			failed: []time.Time{backoffT0},
			want:   backoffRecord{key: "ns/j", failuresAfterLastSuccess: 1, lastFailureTime: ptr.To(backoffT0)},
		},
		"nothing stored, two failures out of order: the latest is the last failure": {
			failed: []time.Time{backoffT0, backoffT0.Add(-time.Millisecond)},
			want:   backoffRecord{key: "ns/j", failuresAfterLastSuccess: 2, lastFailureTime: ptr.To(backoffT0)},
		},
		"nothing stored, one success": {
			succeeded: []time.Time{backoffT0},
			want:      backoffRecord{key: "ns/j"},
		},
		"two failures then a success: the success resets the count": {
			failed:    []time.Time{backoffT0.Add(-2 * time.Millisecond), backoffT0.Add(-time.Millisecond)},
			succeeded: []time.Time{backoffT0},
			want:      backoffRecord{key: "ns/j"},
		},
		"two failures, a success, two more failures: only the failures after the success count": {
			failed: []time.Time{
				backoffT0.Add(-2 * time.Millisecond), backoffT0.Add(-time.Millisecond),
				backoffT0.Add(time.Millisecond), backoffT0.Add(2 * time.Millisecond),
			},
			succeeded: []time.Time{backoffT0},
			want: backoffRecord{key: "ns/j", failuresAfterLastSuccess: 2,
				lastFailureTime: ptr.To(backoffT0.Add(2 * time.Millisecond))},
		},
		"a failure at the time of the success does not count": {
			failed:    []time.Time{backoffT0},
			succeeded: []time.Time{backoffT0},
			want:      backoffRecord{key: "ns/j"},
		},
		"stored failures and no new Pod: the stored record is kept": {
			stored: &backoffRecord{key: "ns/j", failuresAfterLastSuccess: 2, lastFailureTime: ptr.To(backoffT0)},
			want:   backoffRecord{key: "ns/j", failuresAfterLastSuccess: 2, lastFailureTime: ptr.To(backoffT0)},
		},
		"stored failures and a new failure add up": {
			stored: &backoffRecord{key: "ns/j", failuresAfterLastSuccess: 2, lastFailureTime: ptr.To(backoffT0)},
			failed: []time.Time{backoffT0.Add(time.Second)},
			want:   backoffRecord{key: "ns/j", failuresAfterLastSuccess: 3, lastFailureTime: ptr.To(backoffT0.Add(time.Second))},
		},
		"stored failures and a new success reset the count": {
			stored:    &backoffRecord{key: "ns/j", failuresAfterLastSuccess: 2, lastFailureTime: ptr.To(backoffT0)},
			succeeded: []time.Time{backoffT0.Add(time.Second)},
			want:      backoffRecord{key: "ns/j"},
		},
		"another Job's record is not used": {
			stored: &backoffRecord{key: "ns/other", failuresAfterLastSuccess: 2, lastFailureTime: ptr.To(backoffT0)},
			failed: []time.Time{backoffT0.Add(time.Second)},
			want:   backoffRecord{key: "ns/j", failuresAfterLastSuccess: 1, lastFailureTime: ptr.To(backoffT0.Add(time.Second))},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			store := newBackoffStore()
			if tc.stored != nil {
				if err := store.updateBackoffRecord(*tc.stored); err != nil {
					t.Fatalf("updateBackoffRecord: %v", err)
				}
			}
			got := store.newBackoffRecord("ns/j", finishedPods(corev1.PodSucceeded, tc.succeeded...), finishedPods(corev1.PodFailed, tc.failed...))
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(backoffRecord{})); diff != "" {
				t.Errorf("unexpected record (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestBackoffStore checks that records are kept per key, replaced by
// updateBackoffRecord, forgotten by removeBackoffRecord, and that
// newBackoffRecord only computes.
func TestBackoffStore(t *testing.T) {
	store := newBackoffStore()
	key := "ns/j"
	stored := func() backoffRecord { return store.newBackoffRecord(key, nil, nil) }
	opt := cmp.AllowUnexported(backoffRecord{})

	first := backoffRecord{key: key, failuresAfterLastSuccess: 1, lastFailureTime: ptr.To(backoffT0)}
	if err := store.updateBackoffRecord(first); err != nil {
		t.Fatalf("updateBackoffRecord: %v", err)
	}
	if diff := cmp.Diff(first, stored(), opt); diff != "" {
		t.Errorf("after the first update (-want,+got):\n%s", diff)
	}

	_ = store.newBackoffRecord(key, nil, finishedPods(corev1.PodFailed, backoffT0.Add(time.Second)))
	if diff := cmp.Diff(first, stored(), opt); diff != "" {
		t.Errorf("newBackoffRecord changed the store (-want,+got):\n%s", diff)
	}

	second := backoffRecord{key: key, failuresAfterLastSuccess: 2, lastFailureTime: ptr.To(backoffT0.Add(time.Second))}
	if err := store.updateBackoffRecord(second); err != nil {
		t.Fatalf("updateBackoffRecord: %v", err)
	}
	if diff := cmp.Diff(second, stored(), opt); diff != "" {
		t.Errorf("after the second update (-want,+got):\n%s", diff)
	}

	if err := store.removeBackoffRecord(key); err != nil {
		t.Fatalf("removeBackoffRecord: %v", err)
	}
	if diff := cmp.Diff(backoffRecord{key: key}, stored(), opt); diff != "" {
		t.Errorf("after removal (-want,+got):\n%s", diff)
	}
	if err := store.removeBackoffRecord(key); err != nil {
		t.Errorf("removeBackoffRecord of a missing record: %v", err)
	}
}

func TestSortByFinishedTime(t *testing.T) {
	job := makeJob("j").Obj()
	pods := []*corev1.Pod{
		makePod("c", job).ExitCode("main", 1, backoffT0.Add(2*time.Second)).Obj(),
		makePod("a", job).ExitCode("main", 1, backoffT0).Obj(),
		makePod("b", job).Deleted(backoffT0.Add(time.Second)).Obj(),
	}
	sortByFinishedTime(pods)
	var got []string
	for _, p := range pods {
		got = append(got, p.Name)
	}
	if diff := cmp.Diff([]string{"a", "b", "c"}, got); diff != "" {
		t.Errorf("unexpected order (-want,+got):\n%s", diff)
	}
}

// Sidecar adds a restartable init container to the Pod's spec.
func (b *podBuilder) Sidecar(name string) *podBuilder {
	b.pod.Spec.InitContainers = append(b.pod.Spec.InitContainers, corev1.Container{
		Name: name, Image: "busybox", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
	})
	return b
}

// ReadyFalse adds a Ready=False condition that changed at t.
func (b *podBuilder) ReadyFalse(t time.Time) *podBuilder {
	return b.Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: metav1.NewTime(t)})
}

func TestGetFinishedTime(t *testing.T) {
	job := makeJob("j").Obj()
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC) // makePod's creation time
	t1, t2, t3 := backoffT0.Add(time.Second), backoffT0.Add(2*time.Second), backoffT0.Add(3*time.Second)

	cases := map[string]struct {
		pod  *corev1.Pod
		want time.Time
	}{
		"all containers terminated: the latest FinishedAt": {
			pod:  makePod("p", job).ExitCode("main", 1, t2).ExitCode("helper", 0, t1).ReadyFalse(t3).Obj(),
			want: t2,
		},
		"a container still running: Ready=False is used": {
			pod:  makePod("p", job).ExitCode("main", 1, t1).RunningContainer("helper").ReadyFalse(t2).Deleted(t3).Obj(),
			want: t2,
		},
		"a terminated container without FinishedAt: Ready=False is used": {
			pod:  makePod("p", job).ExitCode("main", 1, time.Time{}).ReadyFalse(t2).Obj(),
			want: t2,
		},
		"Ready=True is not a finish time: deletionTimestamp is used": {
			pod: makePod("p", job).RunningContainer("main").
				Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(t1)}).
				Deleted(t3).Obj(),
			want: t3,
		},
		"Ready=False without a transition time: deletionTimestamp is used": {
			pod:  makePod("p", job).ReadyFalse(time.Time{}).Deleted(t3).Obj(),
			want: t3,
		},
		"deletionTimestamp less the grace period": {
			pod: func() *corev1.Pod {
				p := makePod("p", job).Deleted(t3).Obj()
				p.DeletionGracePeriodSeconds = ptr.To[int64](2)
				return p
			}(),
			want: t1,
		},
		"nothing else: the creation time": {
			pod:  makePod("p", job).RunningContainer("main").Obj(),
			want: created,
		},
		"a sidecar that stopped after the main container: the sidecar's FinishedAt": {
			pod: func() *corev1.Pod {
				p := makePod("p", job).Sidecar("proxy").ExitCode("main", 1, t1).Obj()
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, FinishedAt: metav1.NewTime(t2)}}}}
				return p
			}(),
			want: t2,
		},
		"a sidecar still running: Ready=False is used": {
			pod: func() *corev1.Pod {
				p := makePod("p", job).Sidecar("proxy").ExitCode("main", 1, t1).ReadyFalse(t3).Obj()
				p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "proxy",
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
				return p
			}(),
			want: t3,
		},
		"a plain init container does not count": {
			pod:  makePod("p", job).InitExitCode("setup", 0, t3).ExitCode("main", 1, t1).Obj(),
			want: t1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := getFinishedTime(tc.pod)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unexpected finish time (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestGetRemainingTimeBackoffSteps checks the delay right after each
// consecutive failure: 10s doubling up to the 10min cap.
func TestGetRemainingTimeBackoffSteps(t *testing.T) {
	cases := []struct {
		failures int32
		want     time.Duration
	}{
		{failures: 0, want: 0},
		{failures: 1, want: 10 * time.Second},
		{failures: 2, want: 20 * time.Second},
		{failures: 3, want: 40 * time.Second},
		{failures: 4, want: 80 * time.Second},
		{failures: 5, want: 160 * time.Second},
		{failures: 6, want: 320 * time.Second},
		{failures: 7, want: 10 * time.Minute},
		{failures: 8, want: 10 * time.Minute},
		{failures: 100, want: 10 * time.Minute},
	}
	for _, tc := range cases {
		t.Run(fmt.Sprintf("%d failures", tc.failures), func(t *testing.T) {
			clk := clocktesting.NewFakeClock(backoffT0)
			record := backoffRecord{key: "ns/j", failuresAfterLastSuccess: tc.failures, lastFailureTime: ptr.To(backoffT0)}
			got := record.getRemainingTime(clk, testDefaultBackoff, testMaxBackoff)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("after %d failures (-want,+got):\n%s", tc.failures, diff)
			}
		})
	}
}

func TestGetRemainingTime(t *testing.T) {
	cases := map[string]struct {
		record  backoffRecord
		elapsed time.Duration
		want    time.Duration
	}{
		"no failures": {
			record: backoffRecord{key: "ns/j"},
			want:   0,
		},
		"one failure, 1s ago": {
			record:  backoffRecord{failuresAfterLastSuccess: 1, lastFailureTime: ptr.To(backoffT0)},
			elapsed: time.Second,
			want:    9 * time.Second,
		},
		"one failure, exactly the delay ago": {
			record:  backoffRecord{failuresAfterLastSuccess: 1, lastFailureTime: ptr.To(backoffT0)},
			elapsed: 10 * time.Second,
			want:    0,
		},
		"one failure, longer than the delay ago": {
			record:  backoffRecord{failuresAfterLastSuccess: 1, lastFailureTime: ptr.To(backoffT0)},
			elapsed: 11 * time.Second,
			want:    0,
		},
		"capped delay, 1min ago": {
			record:  backoffRecord{failuresAfterLastSuccess: 9, lastFailureTime: ptr.To(backoffT0)},
			elapsed: time.Minute,
			want:    9 * time.Minute,
		},
		"failures without a time": {
			record: backoffRecord{failuresAfterLastSuccess: 1},
			want:   0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(backoffT0)
			clk.Step(tc.elapsed)
			got := tc.record.getRemainingTime(clk, testDefaultBackoff, testMaxBackoff)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unexpected remaining time (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestGetRemainingTimePerIndex(t *testing.T) {
	job := makeJob("j").Indexed(2).BackoffLimitPerIndex(3).Obj()
	failedPod := func() *podBuilder {
		return makePod("p", job).Index(0).Phase(corev1.PodFailed).ExitCode("main", 1, backoffT0)
	}
	cases := map[string]struct {
		lastFailedPod *corev1.Pod
		elapsed       time.Duration
		want          time.Duration
	}{
		"the index never failed": {
			want: 0,
		},
		"first failure of the index": {
			lastFailedPod: failedPod().IndexFailureCount(0).Obj(),
			want:          10 * time.Second,
		},
		"no failure count annotation counts as none before": {
			lastFailedPod: failedPod().Obj(),
			want:          10 * time.Second,
		},
		"two failures before, 5s ago": {
			lastFailedPod: failedPod().IndexFailureCount(2).Obj(),
			elapsed:       5 * time.Second,
			want:          35 * time.Second,
		},
		"one counted and one ignored failure before": {
			lastFailedPod: failedPod().IndexFailureCount(1).Annotation(batch.JobIndexIgnoredFailureCountAnnotation, "1").Obj(),
			want:          40 * time.Second,
		},
		"many failures before: capped": {
			lastFailedPod: failedPod().IndexFailureCount(20).Obj(),
			want:          10 * time.Minute,
		},
		"the delay is over": {
			lastFailedPod: failedPod().IndexFailureCount(1).Obj(),
			elapsed:       time.Minute,
			want:          0,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			clk := clocktesting.NewFakeClock(backoffT0)
			clk.Step(tc.elapsed)
			got := getRemainingTimePerIndex(logger, clk, testDefaultBackoff, testMaxBackoff, tc.lastFailedPod)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unexpected remaining time (-want,+got):\n%s", diff)
			}
		})
	}
}
