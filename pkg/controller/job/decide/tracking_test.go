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
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestCountReleased(t *testing.T) {
	cases := map[string]struct {
		status        *statusFx
		withFinalizer []types.UID
		want          *batchv1.JobStatus
		changed       bool
	}{
		"nothing uncounted": {status: status(), want: status().Obj()},
		"all still tracked: unchanged": {
			status: status().Uncounted([]types.UID{"a"}, []types.UID{"b"}), withFinalizer: []types.UID{"a", "b"},
			want: status().Uncounted([]types.UID{"a"}, []types.UID{"b"}).Obj(),
		},
		"released successes are counted": {
			status: status().Succeeded(2).Uncounted([]types.UID{"a", "b", "c"}, nil), withFinalizer: []types.UID{"b"},
			want: status().Succeeded(4).Uncounted([]types.UID{"b"}, nil).Obj(), changed: true,
		},
		"released failures are counted": {
			status: status().Failed(1).Uncounted(nil, []types.UID{"a", "b"}), withFinalizer: []types.UID{"a"},
			want: status().Failed(2).Uncounted(nil, []types.UID{"a"}).Obj(), changed: true,
		},
		"both lists at once": {
			status: status().Uncounted([]types.UID{"a"}, []types.UID{"b"}),
			want:   status().Succeeded(1).Failed(1).Obj(), changed: true,
		},
		"a UID of no Pod at all counts as released": {
			status: status().Uncounted(nil, []types.UID{"gone"}), withFinalizer: []types.UID{"a"},
			want: status().Failed(1).Obj(), changed: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := tc.status.Obj()
			changed := countReleased(st, sets.New(tc.withFinalizer...))
			if changed != tc.changed {
				t.Errorf("countReleased changed = %v, want %v", changed, tc.changed)
			}
			if diff := cmp.Diff(tc.want, st, syncCmp...); diff != "" {
				t.Errorf("status (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReleasable(t *testing.T) {
	held := pod("h").Index(0).Failed(t0).Obj()
	cases := map[string]struct {
		job    *batchv1.Job
		ending bool
		pod    *corev1.Pod
		want   bool
	}{
		"a running Pod of a running Job keeps it":        {job: job("j").Obj(), pod: pod("a").Running().Obj()},
		"a succeeded Pod lets it go":                     {job: job("j").Obj(), pod: pod("a").Succeeded(t0).Obj(), want: true},
		"a failed Pod lets it go":                        {job: job("j").Obj(), pod: pod("a").Failed(t0).Obj(), want: true},
		"a terminating Pod, TerminatingOrFailed":         {job: job("j").Obj(), pod: pod("a").Running().Deleted(t0).Obj(), want: true},
		"a terminating Pod, podReplacementPolicy Failed": {job: job("j").PodReplacementPolicy(batchv1.Failed).Obj(), pod: pod("a").Running().Deleted(t0).Obj()},
		"any Pod of a Job being deleted":                 {job: job("j").Deleting(t0).Obj(), pod: pod("a").Running().Obj(), want: true},
		"any Pod of an ending Job":                       {job: job("j").Obj(), ending: true, pod: pod("a").Running().Obj(), want: true},
		"the failed Pod held for its index keeps it":     {job: job("j").Indexed(2).BackoffLimitPerIndex(1).Obj(), pod: held},
		"another failed Pod of the held index lets it go": {
			job: job("j").Indexed(2).BackoffLimitPerIndex(1).Obj(), pod: pod("o").Index(0).Failed(t0).Obj(), want: true,
		},
		"a failed Pod without an index lets it go": {job: job("j").Indexed(2).BackoffLimitPerIndex(1).Obj(), pod: pod("x").Failed(t0).Obj(), want: true},
		"the held Pod of an ending Job lets it go": {job: job("j").Indexed(2).BackoffLimitPerIndex(1).Obj(), ending: true, pod: held, want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := &syncState{job: tc.job, perIndex: tc.job.Spec.BackoffLimitPerIndex, held: map[int]*corev1.Pod{0: held}}
			if tc.ending {
				st.ending = &batchv1.JobCondition{Type: batchv1.JobFailureTarget}
			}
			if got := st.releasable(tc.pod, podFailed(tc.job, tc.pod)); got != tc.want {
				t.Errorf("releasable = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStepsAreRepeatable(t *testing.T) {
	cases := map[string]Snapshot{
		"a Job completing": {
			Job: job("j").StartTime(hourAgo).Obj(), Pods: pods(pod("a").Succeeded(t0)), Now: t0, ExpectationsMet: true,
		},
		"a Job failing with running Pods": {
			Job: job("j").BackoffLimit(0).Parallelism(2).StartTime(hourAgo).Obj(), Pods: pods(pod("a").Failed(t0), pod("b").ReadySince(at(-time.Minute))),
			Now: t0, ExpectationsMet: true,
		},
		"a suspension": {
			Job: job("j").Suspend(true).StartTime(hourAgo).Obj(), Pods: pods(pod("a").Running()), Now: t0, ExpectationsMet: true,
		},
	}
	for name, snap := range cases {
		t.Run(name, func(t *testing.T) {
			plan := Decide(snap)
			ok := make([]bool, len(plan.Deletions))
			for i := range ok {
				ok[i] = true
			}
			out := PodOutcome{Deleted: ok, Created: len(plan.Creations)}
			first, second := plan.AfterPods(out), plan.AfterPods(out)
			if diff := cmp.Diff(first, second, cmp.AllowUnexported(Tracking{}, syncState{}, span{})); diff != "" {
				t.Errorf("AfterPods twice (-first +second):\n%s", diff)
			}
			removed := sets.New[types.UID]()
			for _, p := range first.RemoveFinalizers {
				removed.Insert(p.UID)
			}
			if diff := cmp.Diff(first.AfterFinalizers(removed, false), first.AfterFinalizers(removed, false)); diff != "" {
				t.Errorf("AfterFinalizers twice (-first +second):\n%s", diff)
			}
		})
	}
	t.Run("the steps of an empty Plan do nothing", func(t *testing.T) {
		tr := Plan{}.AfterPods(PodOutcome{})
		if diff := cmp.Diff(Final{}, tr.AfterFinalizers(nil, false)); diff != "" {
			t.Errorf("AfterFinalizers of an empty Plan (-want +got):\n%s", diff)
		}
	})
}
