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

	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestFinishTime(t *testing.T) {
	sidecar := func(b *podFx) *podFx {
		return b.Do(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}, {Name: "init"}}
		})
	}
	withInitStatus := func(b *podFx, cs corev1.ContainerStatus) *podFx {
		return b.Do(func(p *corev1.Pod) { p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, cs) })
	}
	cases := map[string]struct {
		pod  *corev1.Pod
		want time.Time
	}{
		"all containers terminated: the latest FinishedAt": {
			pod: func() *corev1.Pod {
				b := pod("a").Failed(t0).EndedAt(at(-time.Hour))
				b.Do(func(p *corev1.Pod) {
					p.Status.ContainerStatuses = []corev1.ContainerStatus{batchtesting.TerminatedContainer("x", 1, at(-3*time.Second)), batchtesting.TerminatedContainer("y", 1, at(-2*time.Second))}
				})
				return b.Obj()
			}(),
			want: at(-2 * time.Second),
		},
		"a container still running: Ready=False is used": {
			pod: func() *corev1.Pod {
				b := pod("a").Failed(t0).EndedAt(at(-time.Minute))
				b.Do(func(p *corev1.Pod) {
					p.Status.ContainerStatuses = []corev1.ContainerStatus{batchtesting.TerminatedContainer("x", 1, at(-3*time.Second)), {Name: "y"}}
				})
				return b.Obj()
			}(),
			want: at(-time.Minute),
		},
		"a terminated container without FinishedAt: Ready=False is used": {
			pod: func() *corev1.Pod {
				b := pod("a").Failed(t0).EndedAt(at(-time.Minute))
				b.Do(func(p *corev1.Pod) {
					p.Status.ContainerStatuses = []corev1.ContainerStatus{batchtesting.TerminatedContainer("x", 1, time.Time{})}
				})
				return b.Obj()
			}(),
			want: at(-time.Minute),
		},
		"Ready=True is no end: the deletion is used": {
			pod:  pod("a").ReadySince(at(-time.Minute)).Deleted(t0).Obj(),
			want: t0,
		},
		"Ready=False without a time: the deletion is used": {
			pod:  pod("a").Phase(corev1.PodFailed).Deleted(t0).Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}).Obj(),
			want: t0,
		},
		"the deletion less its grace period": {
			pod: func() *corev1.Pod {
				p := pod("a").Phase(corev1.PodFailed).Deleted(t0).Obj()
				p.DeletionGracePeriodSeconds = ptr.To[int64](30)
				return p
			}(),
			want: at(-30 * time.Second),
		},
		"nothing else: the creation": {
			pod:  pod("a").Phase(corev1.PodFailed).CreationTimestamp(at(-2 * time.Hour)).Obj(),
			want: at(-2 * time.Hour),
		},
		"a sidecar that stopped after the main container: the sidecar's end": {
			pod: func() *corev1.Pod {
				b := sidecar(pod("a").Succeeded(t0).EndedAt(at(-time.Hour)).ExitCode("main", 0, t0))
				return withInitStatus(b, batchtesting.TerminatedContainer("side", 0, at(time.Second))).Obj()
			}(),
			want: at(time.Second),
		},
		"a sidecar still running: Ready=False is used": {
			pod: func() *corev1.Pod {
				b := sidecar(pod("a").Succeeded(t0).EndedAt(at(-time.Hour)).ExitCode("main", 0, t0))
				return withInitStatus(b, corev1.ContainerStatus{Name: "side"}).Obj()
			}(),
			want: at(-time.Hour),
		},
		"a plain init container does not count": {
			pod: func() *corev1.Pod {
				b := sidecar(pod("a").Succeeded(t0).EndedAt(at(-time.Hour)).ExitCode("main", 0, t0))
				return withInitStatus(b, batchtesting.TerminatedContainer("init", 0, at(time.Hour))).Obj()
			}(),
			want: t0,
		},
		"only the first Ready condition counts": {
			pod: pod("a").Phase(corev1.PodFailed).CreationTimestamp(at(-time.Hour)).
				Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: mt(at(-time.Minute))}).
				Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: mt(at(-time.Second))}).Obj(),
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
			return pod(name).Succeeded(t0).EndedAt(at(d)).Obj()
		}
		return pod(name).Failed(t0).EndedAt(at(d)).Obj()
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
		"first failure, just now":                     {last: pod("a").Failed(t0).Obj(), want: 10 * time.Second},
		"no count annotation reads as no failure":     {last: pod("a").Failed(t0).EndedAt(at(-4 * time.Second)).Obj(), want: 6 * time.Second},
		"two failures before, 5s ago":                 {last: pod("a").IndexFailureCount(2).Failed(t0).EndedAt(at(-5 * time.Second)).Obj(), want: 35 * time.Second},
		"ignored failures count as failures in a row": {last: pod("a").IndexFailureCount(1).IgnoredFailureCount(1).Failed(t0).Obj(), want: 40 * time.Second},
		"many failures: capped":                       {last: pod("a").IndexFailureCount(50).Failed(t0).Obj(), want: 10 * time.Minute},
		"the delay is over":                           {last: pod("a").IndexFailureCount(1).Failed(t0).EndedAt(at(-time.Minute)).Obj()},
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
		p := pod("a").Phase(phase).Obj()
		p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "i", RestartCount: init}}
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "m", RestartCount: regular}}
		return p
	}
	onFailure := func(limit int32) *batchv1.Job {
		return job("j").RestartPolicy(corev1.RestartPolicyOnFailure).BackoffLimit(limit).Obj()
	}
	cases := map[string]struct {
		job  *batchv1.Job
		pods []*corev1.Pod
		want bool
	}{
		"restartPolicy Never: restarts do not count": {job: job("j").BackoffLimit(1).Obj(), pods: []*corev1.Pod{restartsIn(corev1.PodRunning, 0, 5)}},
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
