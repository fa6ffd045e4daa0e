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

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestFailureCounts(t *testing.T) {
	type counts struct{ Counted, Ignored int32 }
	cases := map[string]struct {
		pod  *corev1.Pod
		want counts
	}{
		"no annotation":                  {pod: pod("a").Obj()},
		"a count":                        {pod: pod("a").IndexFailureCount(3).Obj(), want: counts{3, 0}},
		"MaxInt32":                       {pod: pod("a").Annotation(batch.JobIndexFailureCountAnnotation, "2147483647").Obj(), want: counts{2147483647, 0}},
		"beyond int32 reads as 0":        {pod: pod("a").Annotation(batch.JobIndexFailureCountAnnotation, "2147483648").Obj()},
		"negative reads as 0":            {pod: pod("a").Annotation(batch.JobIndexFailureCountAnnotation, "-1").Obj()},
		"not a number reads as 0":        {pod: pod("a").Annotation(batch.JobIndexFailureCountAnnotation, "many").Obj()},
		"with ignored failures":          {pod: pod("a").IndexFailureCount(2).IgnoredFailureCount(3).Obj(), want: counts{2, 3}},
		"only ignored failures":          {pod: pod("a").IgnoredFailureCount(4).Obj(), want: counts{0, 4}},
		"a bad ignored count reads as 0": {pod: pod("a").IndexFailureCount(1).Annotation(batch.JobIndexIgnoredFailureCountAnnotation, "x").Obj(), want: counts{1, 0}},
		"upstream's key is not ours":     {pod: pod("a").Annotation("batch.kubernetes.io/job-index-failure-count", "5").Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, i := failureCounts(tc.pod)
			if diff := cmp.Diff(tc.want, counts{c, i}); diff != "" {
				t.Errorf("failureCounts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReplacementCounts(t *testing.T) {
	type counts struct{ Counted, Ignored int32 }
	ignoreDisruption := job("j").Indexed(2).BackoffLimitPerIndex(3).PodFailurePolicy(onCond(ignore, corev1.DisruptionTarget, corev1.ConditionTrue)).Obj()
	cases := map[string]struct {
		job    *batchv1.Job
		failed *corev1.Pod
		want   counts
	}{
		"the first Pod of an index":                     {job: job("j").Indexed(2).BackoffLimitPerIndex(1).Obj()},
		"replacing a Pod with no failures before":       {job: job("j").Indexed(2).BackoffLimitPerIndex(1).Obj(), failed: pod("a").IndexFailureCount(0).Failed(t0).Obj(), want: counts{1, 0}},
		"replacing a Pod with failures before":          {job: job("j").Indexed(2).BackoffLimitPerIndex(1).Obj(), failed: pod("a").IndexFailureCount(2).Failed(t0).Obj(), want: counts{3, 0}},
		"replacing a Pod without the annotation":        {job: job("j").Indexed(2).BackoffLimitPerIndex(1).Obj(), failed: pod("a").Failed(t0).Obj(), want: counts{1, 0}},
		"ignored failures carry over":                   {job: job("j").Indexed(2).BackoffLimitPerIndex(1).Obj(), failed: pod("a").IndexFailureCount(1).IgnoredFailureCount(2).Failed(t0).Obj(), want: counts{2, 2}},
		"a failure matching Ignore adds to the ignored": {job: ignoreDisruption, failed: pod("a").IndexFailureCount(1).IgnoredFailureCount(2).Failed(t0).Disrupted().Obj(), want: counts{1, 3}},
		"a failure matching no rule counts":             {job: ignoreDisruption, failed: pod("a").IndexFailureCount(1).Failed(t0).Obj(), want: counts{2, 0}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c, i := replacementCounts(tc.job, tc.failed)
			if diff := cmp.Diff(tc.want, counts{c, i}); diff != "" {
				t.Errorf("replacementCounts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFailsIndex(t *testing.T) {
	plain := job("j").Indexed(3).BackoffLimitPerIndex(1).Obj()
	withRules := job("j").Indexed(3).BackoffLimitPerIndex(1).
		PodFailurePolicy(onExit(failIndex, in, 3), onCond(ignore, corev1.DisruptionTarget, corev1.ConditionTrue)).Obj()
	cases := map[string]struct {
		job   *batchv1.Job
		limit int32
		pod   *corev1.Pod
		want  bool
	}{
		"first failure, limit 0":                 {job: plain, limit: 0, pod: pod("a").Failed(t0).Obj(), want: true},
		"first failure, limit 1":                 {job: plain, limit: 1, pod: pod("a").Failed(t0).Obj()},
		"second failure, limit 1":                {job: plain, limit: 1, pod: pod("a").IndexFailureCount(1).Failed(t0).Obj(), want: true},
		"a running Pod beyond the limit":         {job: plain, limit: 1, pod: pod("a").IndexFailureCount(5).Running().Obj()},
		"a succeeded Pod beyond the limit":       {job: plain, limit: 1, pod: pod("a").IndexFailureCount(5).Succeeded(t0).Obj()},
		"a terminating Pod counts as failed":     {job: plain, limit: 0, pod: pod("a").Running().Deleted(t0).Obj(), want: true},
		"not with podReplacementPolicy Failed":   {job: job("j").Indexed(3).BackoffLimitPerIndex(0).PodReplacementPolicy(batchv1.Failed).Obj(), limit: 0, pod: pod("a").Running().Deleted(t0).Obj()},
		"FailIndex below the limit":              {job: withRules, limit: 1, pod: pod("a").Failed(t0).ExitCode("main", 3, t0).Obj(), want: true},
		"Ignore beyond the limit":                {job: withRules, limit: 1, pod: pod("a").IndexFailureCount(4).Failed(t0).Disrupted().Obj()},
		"no rule matching, beyond the limit":     {job: withRules, limit: 1, pod: pod("a").IndexFailureCount(1).Failed(t0).ExitCode("main", 9, t0).Obj(), want: true},
		"no rule matching, below the limit":      {job: withRules, limit: 1, pod: pod("a").Failed(t0).ExitCode("main", 9, t0).Obj()},
		"ignored failures do not use the budget": {job: plain, limit: 1, pod: pod("a").IgnoredFailureCount(5).Failed(t0).Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := failsIndex(tc.job, tc.limit, tc.pod); got != tc.want {
				t.Errorf("failsIndex = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestFinishedIndexes(t *testing.T) {
	type sets2 struct{ Before, Now string }
	cases := map[string]struct {
		completed   string
		pods        []*corev1.Pod
		completions int
		want        sets2
	}{
		"nothing":                                 {completions: 3},
		"one index":                               {completions: 3, pods: pods(pod("a").Index(1).Succeeded(t0)), want: sets2{"", "1"}},
		"duplicates and failures":                 {completions: 5, pods: pods(pod("a").Index(1).Succeeded(t0), pod("b").Index(1).Succeeded(t0), pod("c").Index(2).Failed(t0), pod("d").Index(3).Succeeded(t0)), want: sets2{"", "1,3"}},
		"active Pods do not count":                {completions: 3, pods: pods(pod("a").Index(0).Running()), want: sets2{"", ""}},
		"no valid index or out of range":          {completions: 3, pods: pods(pod("a").Succeeded(t0), pod("b").Index(3).Succeeded(t0)), want: sets2{"", ""}},
		"Pods without the finalizer were counted": {completions: 3, pods: pods(pod("a").Index(1).Succeeded(t0).NoFinalizer()), want: sets2{"", ""}},
		"the status out of range is dropped":      {completed: "0,3-5", completions: 3, want: sets2{"0", "0"}},
		"new and before apart":                    {completed: "0", completions: 5, pods: pods(pod("a").Index(3).Succeeded(t0)), want: sets2{"0", "0,3"}},
		"new joins before":                        {completed: "0-1", completions: 5, pods: pods(pod("a").Index(2).Succeeded(t0)), want: sets2{"0,1", "0-2"}},
		"new within before":                       {completed: "0-2", completions: 5, pods: pods(pod("a").Index(1).Succeeded(t0)), want: sets2{"0-2", "0-2"}},
		"a corrupted status":                      {completed: "0,x-1,2", completions: 5, pods: pods(pod("a").Index(4).Succeeded(t0)), want: sets2{"0,2", "0,2,4"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before, now := finishedIndexes(&batchv1.JobStatus{CompletedIndexes: tc.completed}, tc.pods, tc.completions)
			if diff := cmp.Diff(tc.want, sets2{before.String(), now.String()}); diff != "" {
				t.Errorf("finishedIndexes (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFailedIndexes(t *testing.T) {
	j := job("j").Indexed(4).BackoffLimitPerIndex(0).Obj()
	str := func(s string) *string { return &s }
	cases := map[string]struct {
		failed *string
		pods   []*corev1.Pod
		want   string
	}{
		"nothing":              {},
		"one index failed now": {pods: pods(pod("a").Index(1).Failed(t0)), want: "1"},
		"a Pod without the finalizer was counted": {pods: pods(pod("a").Index(1).Failed(t0).NoFinalizer())},
		"an index out of range is ignored":        {pods: pods(pod("a").Index(4).Failed(t0))},
		"a Pod without an index is ignored":       {pods: pods(pod("a").Failed(t0))},
		"extends the status":                      {failed: str("0,2"), pods: pods(pod("a").Index(3).Failed(t0)), want: "0,2,3"},
		"the status empty":                        {failed: str(""), pods: pods(pod("a").Index(0).Failed(t0)), want: "0"},
		"the status out of range is dropped":      {failed: str("1,5-7"), want: "1"},
		"the status is kept without Pods":         {failed: str("1"), want: "1"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := failedIndexes(j, &batchv1.JobStatus{FailedIndexes: tc.failed}, tc.pods, 0, 4)
			if got.String() != tc.want {
				t.Errorf("failedIndexes = %q, want %q", got.String(), tc.want)
			}
		})
	}
}

func TestHeldForReplacement(t *testing.T) {
	j := job("j").Indexed(4).BackoffLimitPerIndex(3).Obj()
	cases := map[string]struct {
		job       *batchv1.Job
		pods      []*corev1.Pod
		inFlight  []string
		succeeded string
		failed    string
		want      map[int]string
	}{
		"the failed Pods of open indexes are held": {
			pods: pods(pod("a").Index(0).Failed(t0), pod("b").Index(1).Failed(t0), pod("c").Index(2).Running()),
			want: map[int]string{0: "a", 1: "b"},
		},
		"a Pod without the finalizer is going already": {
			pods: pods(pod("a").Index(0).Failed(t0).NoFinalizer()),
		},
		"a Pod whose finalizer removal is in flight is going already": {
			pods: pods(pod("a").Index(0).Failed(t0)), inFlight: []string{"a"},
		},
		"an index out of range": {
			pods: pods(pod("a").Index(4).Failed(t0)),
		},
		"an index with an active replacement": {
			pods: pods(pod("a").Index(0).Failed(t0), pod("b").Index(0).Running()),
		},
		"an index that succeeded": {
			pods: pods(pod("a").Index(0).Failed(t0)), succeeded: "0",
		},
		"an index that failed for good": {
			pods: pods(pod("a").Index(0).Failed(t0)), failed: "0",
		},
		"running and succeeded Pods are not held": {
			pods: pods(pod("a").Index(0).Running(), pod("b").Index(1).Succeeded(t0)),
		},
		"a terminating Pod counts as failed": {
			pods: pods(pod("a").Index(2).Running().Deleted(t0)),
			want: map[int]string{2: "a"},
		},
		"of several failed Pods the one with most failures": {
			pods: pods(pod("a").Index(0).IndexFailureCount(2).Failed(t0).EndedAt(at(-time.Minute)), pod("b").Index(0).IndexFailureCount(1).Failed(t0)),
			want: map[int]string{0: "a"},
		},
		"ignored failures count too": {
			pods: pods(pod("a").Index(0).IndexFailureCount(1).Failed(t0), pod("b").Index(0).IgnoredFailureCount(2).Failed(t0)),
			want: map[int]string{0: "b"},
		},
		"of equal counts the last to finish": {
			pods: pods(pod("a").Index(0).IndexFailureCount(1).Failed(t0), pod("b").Index(0).IndexFailureCount(1).Failed(t0).EndedAt(at(-time.Second))),
			want: map[int]string{0: "a"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			jb := tc.job
			if jb == nil {
				jb = j
			}
			inFlight := sets.New[types.UID]()
			for _, n := range tc.inFlight {
				inFlight.Insert(types.UID(n))
			}
			census := countPods(tc.pods)
			held := heldForReplacement(jb, tc.pods, inFlight, census.active, parseIndexSet(tc.succeeded, 4), parseIndexSet(tc.failed, 4), 4)
			got := map[int]string{}
			for ix, p := range held {
				got[ix] = p.Name
			}
			if diff := cmp.Diff(tc.want, got, syncCmp...); diff != "" {
				t.Errorf("heldForReplacement (-want +got):\n%s", diff)
			}
		})
	}
}
