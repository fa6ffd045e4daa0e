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
		"nothing uncounted": {status: status(), want: status().obj()},
		"all still tracked: unchanged": {
			status: status().uncounted([]string{"a"}, []string{"b"}), withFinalizer: []types.UID{"a", "b"},
			want: status().uncounted([]string{"a"}, []string{"b"}).obj(),
		},
		"released successes are counted": {
			status: status().succeeded(2).uncounted([]string{"a", "b", "c"}, nil), withFinalizer: []types.UID{"b"},
			want: status().succeeded(4).uncounted([]string{"b"}, nil).obj(), changed: true,
		},
		"released failures are counted": {
			status: status().failed(1).uncounted(nil, []string{"a", "b"}), withFinalizer: []types.UID{"a"},
			want: status().failed(2).uncounted(nil, []string{"a"}).obj(), changed: true,
		},
		"both lists at once": {
			status: status().uncounted([]string{"a"}, []string{"b"}),
			want:   status().succeeded(1).failed(1).obj(), changed: true,
		},
		"a UID of no Pod at all counts as released": {
			status: status().uncounted(nil, []string{"gone"}), withFinalizer: []types.UID{"a"},
			want: status().failed(1).obj(), changed: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := tc.status.obj()
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
	held := pod("h").index(0).failed().obj()
	cases := map[string]struct {
		job    *batchv1.Job
		ending bool
		pod    *corev1.Pod
		want   bool
	}{
		"a running Pod of a running Job keeps it":        {job: job("j").obj(), pod: pod("a").running().obj()},
		"a succeeded Pod lets it go":                     {job: job("j").obj(), pod: pod("a").succeeded().obj(), want: true},
		"a failed Pod lets it go":                        {job: job("j").obj(), pod: pod("a").failed().obj(), want: true},
		"a terminating Pod, TerminatingOrFailed":         {job: job("j").obj(), pod: pod("a").running().deleted().obj(), want: true},
		"a terminating Pod, podReplacementPolicy Failed": {job: job("j").replaceFailedOnly().obj(), pod: pod("a").running().deleted().obj()},
		"any Pod of a Job being deleted":                 {job: job("j").deleting().obj(), pod: pod("a").running().obj(), want: true},
		"any Pod of an ending Job":                       {job: job("j").obj(), ending: true, pod: pod("a").running().obj(), want: true},
		"the failed Pod held for its index keeps it":     {job: job("j").indexed(2).backoffLimitPerIndex(1).obj(), pod: held},
		"another failed Pod of the held index lets it go": {
			job: job("j").indexed(2).backoffLimitPerIndex(1).obj(), pod: pod("o").index(0).failed().obj(), want: true,
		},
		"a failed Pod without an index lets it go": {job: job("j").indexed(2).backoffLimitPerIndex(1).obj(), pod: pod("x").failed().obj(), want: true},
		"the held Pod of an ending Job lets it go": {job: job("j").indexed(2).backoffLimitPerIndex(1).obj(), ending: true, pod: held, want: true},
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
			Job: job("j").started(hourAgo).obj(), Pods: pods(pod("a").succeeded()), Now: t0, ExpectationsMet: true,
		},
		"a Job failing with running Pods": {
			Job: job("j").backoffLimit(0).parallelism(2).started(hourAgo).obj(), Pods: pods(pod("a").failed(), pod("b").ready()),
			Now: t0, ExpectationsMet: true,
		},
		"a suspension": {
			Job: job("j").suspend().started(hourAgo).obj(), Pods: pods(pod("a").running()), Now: t0, ExpectationsMet: true,
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
