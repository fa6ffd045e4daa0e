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
		"no annotation":                  {pod: pod("a").obj()},
		"a count":                        {pod: pod("a").failures(3).obj(), want: counts{3, 0}},
		"MaxInt32":                       {pod: pod("a").annotate(batch.JobIndexFailureCountAnnotation, "2147483647").obj(), want: counts{2147483647, 0}},
		"beyond int32 reads as 0":        {pod: pod("a").annotate(batch.JobIndexFailureCountAnnotation, "2147483648").obj()},
		"negative reads as 0":            {pod: pod("a").annotate(batch.JobIndexFailureCountAnnotation, "-1").obj()},
		"not a number reads as 0":        {pod: pod("a").annotate(batch.JobIndexFailureCountAnnotation, "many").obj()},
		"with ignored failures":          {pod: pod("a").failures(2).ignoredFailures(3).obj(), want: counts{2, 3}},
		"only ignored failures":          {pod: pod("a").ignoredFailures(4).obj(), want: counts{0, 4}},
		"a bad ignored count reads as 0": {pod: pod("a").failures(1).annotate(batch.JobIndexIgnoredFailureCountAnnotation, "x").obj(), want: counts{1, 0}},
		"upstream's key is not ours":     {pod: pod("a").annotate("batch.kubernetes.io/job-index-failure-count", "5").obj()},
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
	ignoreDisruption := job("j").indexed(2).backoffLimitPerIndex(3).failurePolicy(onCond(ignore, corev1.DisruptionTarget, corev1.ConditionTrue)).obj()
	cases := map[string]struct {
		job    *batchv1.Job
		failed *corev1.Pod
		want   counts
	}{
		"the first Pod of an index":                     {job: job("j").indexed(2).backoffLimitPerIndex(1).obj()},
		"replacing a Pod with no failures before":       {job: job("j").indexed(2).backoffLimitPerIndex(1).obj(), failed: pod("a").failures(0).failed().obj(), want: counts{1, 0}},
		"replacing a Pod with failures before":          {job: job("j").indexed(2).backoffLimitPerIndex(1).obj(), failed: pod("a").failures(2).failed().obj(), want: counts{3, 0}},
		"replacing a Pod without the annotation":        {job: job("j").indexed(2).backoffLimitPerIndex(1).obj(), failed: pod("a").failed().obj(), want: counts{1, 0}},
		"ignored failures carry over":                   {job: job("j").indexed(2).backoffLimitPerIndex(1).obj(), failed: pod("a").failures(1).ignoredFailures(2).failed().obj(), want: counts{2, 2}},
		"a failure matching Ignore adds to the ignored": {job: ignoreDisruption, failed: pod("a").failures(1).ignoredFailures(2).failed().disrupted().obj(), want: counts{1, 3}},
		"a failure matching no rule counts":             {job: ignoreDisruption, failed: pod("a").failures(1).failed().obj(), want: counts{2, 0}},
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
	plain := job("j").indexed(3).backoffLimitPerIndex(1).obj()
	withRules := job("j").indexed(3).backoffLimitPerIndex(1).
		failurePolicy(onExit(failIndex, in, 3), onCond(ignore, corev1.DisruptionTarget, corev1.ConditionTrue)).obj()
	cases := map[string]struct {
		job   *batchv1.Job
		limit int32
		pod   *corev1.Pod
		want  bool
	}{
		"first failure, limit 0":                 {job: plain, limit: 0, pod: pod("a").failed().obj(), want: true},
		"first failure, limit 1":                 {job: plain, limit: 1, pod: pod("a").failed().obj()},
		"second failure, limit 1":                {job: plain, limit: 1, pod: pod("a").failures(1).failed().obj(), want: true},
		"a running Pod beyond the limit":         {job: plain, limit: 1, pod: pod("a").failures(5).running().obj()},
		"a succeeded Pod beyond the limit":       {job: plain, limit: 1, pod: pod("a").failures(5).succeeded().obj()},
		"a terminating Pod counts as failed":     {job: plain, limit: 0, pod: pod("a").running().deleted().obj(), want: true},
		"not with podReplacementPolicy Failed":   {job: job("j").indexed(3).backoffLimitPerIndex(0).replaceFailedOnly().obj(), limit: 0, pod: pod("a").running().deleted().obj()},
		"FailIndex below the limit":              {job: withRules, limit: 1, pod: pod("a").failed().exit("main", 3).obj(), want: true},
		"Ignore beyond the limit":                {job: withRules, limit: 1, pod: pod("a").failures(4).failed().disrupted().obj()},
		"no rule matching, beyond the limit":     {job: withRules, limit: 1, pod: pod("a").failures(1).failed().exit("main", 9).obj(), want: true},
		"no rule matching, below the limit":      {job: withRules, limit: 1, pod: pod("a").failed().exit("main", 9).obj()},
		"ignored failures do not use the budget": {job: plain, limit: 1, pod: pod("a").ignoredFailures(5).failed().obj()},
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
		"one index":                               {completions: 3, pods: pods(pod("a").index(1).succeeded()), want: sets2{"", "1"}},
		"duplicates and failures":                 {completions: 5, pods: pods(pod("a").index(1).succeeded(), pod("b").index(1).succeeded(), pod("c").index(2).failed(), pod("d").index(3).succeeded()), want: sets2{"", "1,3"}},
		"active Pods do not count":                {completions: 3, pods: pods(pod("a").index(0).running()), want: sets2{"", ""}},
		"no valid index or out of range":          {completions: 3, pods: pods(pod("a").succeeded(), pod("b").index(3).succeeded()), want: sets2{"", ""}},
		"Pods without the finalizer were counted": {completions: 3, pods: pods(pod("a").index(1).succeeded().untracked()), want: sets2{"", ""}},
		"the status out of range is dropped":      {completed: "0,3-5", completions: 3, want: sets2{"0", "0"}},
		"new and before apart":                    {completed: "0", completions: 5, pods: pods(pod("a").index(3).succeeded()), want: sets2{"0", "0,3"}},
		"new joins before":                        {completed: "0-1", completions: 5, pods: pods(pod("a").index(2).succeeded()), want: sets2{"0,1", "0-2"}},
		"new within before":                       {completed: "0-2", completions: 5, pods: pods(pod("a").index(1).succeeded()), want: sets2{"0-2", "0-2"}},
		"a corrupted status":                      {completed: "0,x-1,2", completions: 5, pods: pods(pod("a").index(4).succeeded()), want: sets2{"0,2", "0,2,4"}},
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
	j := job("j").indexed(4).backoffLimitPerIndex(0).obj()
	str := func(s string) *string { return &s }
	cases := map[string]struct {
		failed *string
		pods   []*corev1.Pod
		want   string
	}{
		"nothing":              {},
		"one index failed now": {pods: pods(pod("a").index(1).failed()), want: "1"},
		"a Pod without the finalizer was counted": {pods: pods(pod("a").index(1).failed().untracked())},
		"an index out of range is ignored":        {pods: pods(pod("a").index(4).failed())},
		"a Pod without an index is ignored":       {pods: pods(pod("a").failed())},
		"extends the status":                      {failed: str("0,2"), pods: pods(pod("a").index(3).failed()), want: "0,2,3"},
		"the status empty":                        {failed: str(""), pods: pods(pod("a").index(0).failed()), want: "0"},
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
	j := job("j").indexed(4).backoffLimitPerIndex(3).obj()
	cases := map[string]struct {
		job       *batchv1.Job
		pods      []*corev1.Pod
		inFlight  []string
		succeeded string
		failed    string
		want      map[int]string
	}{
		"the failed Pods of open indexes are held": {
			pods: pods(pod("a").index(0).failed(), pod("b").index(1).failed(), pod("c").index(2).running()),
			want: map[int]string{0: "a", 1: "b"},
		},
		"a Pod without the finalizer is going already": {
			pods: pods(pod("a").index(0).failed().untracked()),
		},
		"a Pod whose finalizer removal is in flight is going already": {
			pods: pods(pod("a").index(0).failed()), inFlight: []string{"a"},
		},
		"an index out of range": {
			pods: pods(pod("a").index(4).failed()),
		},
		"an index with an active replacement": {
			pods: pods(pod("a").index(0).failed(), pod("b").index(0).running()),
		},
		"an index that succeeded": {
			pods: pods(pod("a").index(0).failed()), succeeded: "0",
		},
		"an index that failed for good": {
			pods: pods(pod("a").index(0).failed()), failed: "0",
		},
		"running and succeeded Pods are not held": {
			pods: pods(pod("a").index(0).running(), pod("b").index(1).succeeded()),
		},
		"a terminating Pod counts as failed": {
			pods: pods(pod("a").index(2).running().deleted()),
			want: map[int]string{2: "a"},
		},
		"of several failed Pods the one with most failures": {
			pods: pods(pod("a").index(0).failures(2).failed().endedAt(at(-time.Minute)), pod("b").index(0).failures(1).failed()),
			want: map[int]string{0: "a"},
		},
		"ignored failures count too": {
			pods: pods(pod("a").index(0).failures(1).failed(), pod("b").index(0).ignoredFailures(2).failed()),
			want: map[int]string{0: "b"},
		},
		"of equal counts the last to finish": {
			pods: pods(pod("a").index(0).failures(1).failed(), pod("b").index(0).failures(1).failed().endedAt(at(-time.Second))),
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
