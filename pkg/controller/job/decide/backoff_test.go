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

package decide

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestFinishTime(t *testing.T) {
	sidecar := func(b *podFx) *podFx {
		b.p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}, {Name: "init"}}
		return b
	}
	withStatus := func(b *podFx, list *[]corev1.ContainerStatus, cs corev1.ContainerStatus) *podFx {
		*list = append(*list, cs)
		return b
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want time.Time
	}{
		"all containers terminated: the latest FinishedAt": {
			pod: func() *corev1.Pod {
				b := pod("a").failed().endedAt(at(-time.Hour))
				b.p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("x", 1, at(-3*time.Second)), terminated("y", 1, at(-2*time.Second))}
				return b.obj()
			}(),
			want: at(-2 * time.Second),
		},
		"a container still running: Ready=False is used": {
			pod: func() *corev1.Pod {
				b := pod("a").failed().endedAt(at(-time.Minute))
				b.p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("x", 1, at(-3*time.Second)), {Name: "y"}}
				return b.obj()
			}(),
			want: at(-time.Minute),
		},
		"a terminated container without FinishedAt: Ready=False is used": {
			pod: func() *corev1.Pod {
				b := pod("a").failed().endedAt(at(-time.Minute))
				b.p.Status.ContainerStatuses = []corev1.ContainerStatus{terminated("x", 1, time.Time{})}
				return b.obj()
			}(),
			want: at(-time.Minute),
		},
		"Ready=True is no end: the deletion is used": {
			pod:  pod("a").ready().deleted().obj(),
			want: t0,
		},
		"Ready=False without a time: the deletion is used": {
			pod:  pod("a").phase(corev1.PodFailed).deleted().podCond(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}).obj(),
			want: t0,
		},
		"the deletion less its grace period": {
			pod: func() *corev1.Pod {
				p := pod("a").phase(corev1.PodFailed).deleted().obj()
				p.DeletionGracePeriodSeconds = ptr.To[int64](30)
				return p
			}(),
			want: at(-30 * time.Second),
		},
		"nothing else: the creation": {
			pod:  pod("a").phase(corev1.PodFailed).created(at(-2 * time.Hour)).obj(),
			want: at(-2 * time.Hour),
		},
		"a sidecar that stopped after the main container: the sidecar's end": {
			pod: func() *corev1.Pod {
				b := sidecar(pod("a").succeeded().endedAt(at(-time.Hour)).exit("main", 0))
				return withStatus(b, &b.p.Status.InitContainerStatuses, terminated("side", 0, at(time.Second))).obj()
			}(),
			want: at(time.Second),
		},
		"a sidecar still running: Ready=False is used": {
			pod: func() *corev1.Pod {
				b := sidecar(pod("a").succeeded().endedAt(at(-time.Hour)).exit("main", 0))
				return withStatus(b, &b.p.Status.InitContainerStatuses, corev1.ContainerStatus{Name: "side"}).obj()
			}(),
			want: at(-time.Hour),
		},
		"a plain init container does not count": {
			pod: func() *corev1.Pod {
				b := sidecar(pod("a").succeeded().endedAt(at(-time.Hour)).exit("main", 0))
				return withStatus(b, &b.p.Status.InitContainerStatuses, terminated("init", 0, at(time.Hour))).obj()
			}(),
			want: t0,
		},
		"only the first Ready condition counts": {
			pod: pod("a").phase(corev1.PodFailed).created(at(-time.Hour)).
				podCond(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt(at(-time.Minute))}).
				podCond(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: mt(at(-time.Second))}).obj(),
			want: at(-time.Hour),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := finishTime(tc.pod); !got.Equal(tc.want) {
				t.Errorf("finishTime = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNextFailureRecord(t *testing.T) {
	ended := func(name string, ok bool, d time.Duration) *corev1.Pod {
		if ok {
			return pod(name).succeeded().endedAt(at(d)).obj()
		}
		return pod(name).failed().endedAt(at(d)).obj()
	}
	cases := map[string]struct {
		prev              FailureRecord
		succeeded, failed []*corev1.Pod
		want              FailureRecord
	}{
		"nothing before, nothing new": {},
		"one failure": {
			failed: []*corev1.Pod{ended("a", false, -5*time.Second)},
			want:   FailureRecord{1, ago(5 * time.Second)},
		},
		"two failures out of order: the latest is the last": {
			failed: []*corev1.Pod{ended("a", false, -time.Second), ended("b", false, -9*time.Second)},
			want:   FailureRecord{2, ago(time.Second)},
		},
		"one success": {
			succeeded: []*corev1.Pod{ended("a", true, -time.Second)},
		},
		"failures then a success: the count starts over": {
			succeeded: []*corev1.Pod{ended("s", true, -time.Second)},
			failed:    []*corev1.Pod{ended("a", false, -3*time.Second), ended("b", false, -2*time.Second)},
		},
		"failures around a success: only those after it stay": {
			succeeded: []*corev1.Pod{ended("s", true, -5*time.Second)},
			failed:    []*corev1.Pod{ended("a", false, -7*time.Second), ended("b", false, -3*time.Second), ended("c", false, -4*time.Second)},
			want:      FailureRecord{2, ago(3 * time.Second)},
		},
		"a failure at the moment of the success does not stay": {
			succeeded: []*corev1.Pod{ended("s", true, -5*time.Second)},
			failed:    []*corev1.Pod{ended("a", false, -5*time.Second)},
		},
		"the last of several successes counts": {
			succeeded: []*corev1.Pod{ended("s", true, -2*time.Second), ended("t", true, -8*time.Second)},
			failed:    []*corev1.Pod{ended("a", false, -5*time.Second)},
		},
		"earlier failures and nothing new: kept": {
			prev: FailureRecord{3, ago(time.Minute)},
			want: FailureRecord{3, ago(time.Minute)},
		},
		"earlier failures and a new one add up": {
			prev:   FailureRecord{3, ago(time.Minute)},
			failed: []*corev1.Pod{ended("a", false, -time.Second)},
			want:   FailureRecord{4, ago(time.Second)},
		},
		"earlier failures and a new success: the count starts over": {
			prev:      FailureRecord{3, ago(time.Minute)},
			succeeded: []*corev1.Pod{ended("s", true, -time.Second)},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, nextFailureRecord(tc.prev, tc.succeeded, tc.failed)); diff != "" {
				t.Errorf("nextFailureRecord (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBackoffLeft(t *testing.T) {
	opts := DefaultOptions()
	cases := map[string]struct {
		opts     Options
		failures int32
		last     *time.Time
		want     time.Duration
	}{
		"no failure":                              {opts: opts, last: ago(time.Second)},
		"failures without a time":                 {opts: opts, failures: 2},
		"one failure a second ago":                {opts: opts, failures: 1, last: ago(time.Second), want: 9 * time.Second},
		"one failure exactly the delay ago":       {opts: opts, failures: 1, last: ago(10 * time.Second)},
		"one failure longer ago than the delay":   {opts: opts, failures: 1, last: ago(time.Minute)},
		"two failures: twice the delay":           {opts: opts, failures: 2, last: t0p, want: 20 * time.Second},
		"seven failures: 640s capped at 10m":      {opts: opts, failures: 7, last: ago(time.Minute), want: 9 * time.Minute},
		"many failures: the cap":                  {opts: opts, failures: 100, last: t0p, want: 10 * time.Minute},
		"a failure in the future waits longer":    {opts: opts, failures: 1, last: ptr.To(at(time.Second)), want: 11 * time.Second},
		"a first delay above the cap is not cut":  {opts: Options{PodBackoff: time.Minute, MaxPodBackoff: 30 * time.Second}, failures: 1, last: t0p, want: time.Minute},
		"the cap applies from the second failure": {opts: Options{PodBackoff: time.Minute, MaxPodBackoff: 30 * time.Second}, failures: 2, last: t0p, want: 30 * time.Second},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := backoffLeft(tc.opts, tc.failures, tc.last, t0); got != tc.want {
				t.Errorf("backoffLeft = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIndexBackoffLeft(t *testing.T) {
	cases := map[string]struct {
		last *corev1.Pod
		want time.Duration
	}{
		"the index never failed":                      {},
		"first failure, just now":                     {last: pod("a").failed().obj(), want: 10 * time.Second},
		"no count annotation reads as no failure":     {last: pod("a").failed().endedAt(at(-4 * time.Second)).obj(), want: 6 * time.Second},
		"two failures before, 5s ago":                 {last: pod("a").failures(2).failed().endedAt(at(-5 * time.Second)).obj(), want: 35 * time.Second},
		"ignored failures count as failures in a row": {last: pod("a").failures(1).ignoredFailures(1).failed().obj(), want: 40 * time.Second},
		"many failures: capped":                       {last: pod("a").failures(50).failed().obj(), want: 10 * time.Minute},
		"the delay is over":                           {last: pod("a").failures(1).failed().endedAt(at(-time.Minute)).obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := indexBackoffLeft(DefaultOptions(), tc.last, t0); got != tc.want {
				t.Errorf("indexBackoffLeft = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRestartsExhausted(t *testing.T) {
	restartsIn := func(phase corev1.PodPhase, init, regular int32) *corev1.Pod {
		p := pod("a").phase(phase).obj()
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i", RestartCount: init}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "m", RestartCount: regular}}
		return p
	}
	onFailure := func(limit int32) *batchv1.Job { return job("j").restartOnFailure().backoffLimit(limit).obj() }
	cases := map[string]struct {
		job  *batchv1.Job
		pods []*corev1.Pod
		want bool
	}{
		"restartPolicy Never: restarts do not count": {job: job("j").backoffLimit(1).obj(), pods: []*corev1.Pod{restartsIn(corev1.PodRunning, 0, 5)}},
		"below the limit":                {job: onFailure(3), pods: []*corev1.Pod{restartsIn(corev1.PodRunning, 0, 2)}},
		"at the limit":                   {job: onFailure(3), pods: []*corev1.Pod{restartsIn(corev1.PodRunning, 1, 2)}, want: true},
		"summed over Pods":               {job: onFailure(3), pods: []*corev1.Pod{restartsIn(corev1.PodRunning, 0, 2), restartsIn(corev1.PodPending, 0, 1)}, want: true},
		"finished Pods do not count":     {job: onFailure(3), pods: []*corev1.Pod{restartsIn(corev1.PodFailed, 0, 5), restartsIn(corev1.PodSucceeded, 0, 5)}},
		"a limit of 0 allows no restart": {job: onFailure(0), pods: []*corev1.Pod{restartsIn(corev1.PodPending, 1, 0)}, want: true},
		"a limit of 0 without restarts":  {job: onFailure(0), pods: []*corev1.Pod{restartsIn(corev1.PodRunning, 0, 0)}},
		"Unknown phase does not count":   {job: onFailure(1), pods: []*corev1.Pod{restartsIn(corev1.PodUnknown, 0, 4)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := restartsExhausted(tc.job, tc.pods); got != tc.want {
				t.Errorf("restartsExhausted = %v, want %v", got, tc.want)
			}
		})
	}
}
