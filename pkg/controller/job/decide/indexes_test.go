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
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
)

// setCmp compares index sets, an empty one equal to nil.
var setCmp = []cmp.Option{cmp.AllowUnexported(span{}), cmpopts.EquateEmpty()}

func TestParseIndexSet(t *testing.T) {
	cases := map[string]struct {
		text  string
		limit int
		want  indexSet
	}{
		"empty":                                 {text: "", limit: 5},
		"one index":                             {text: "3", limit: 5, want: indexSet{{3, 3}}},
		"ranges and indexes":                    {text: "0,2-4,7", limit: 10, want: indexSet{{0, 0}, {2, 4}, {7, 7}}},
		"touching pieces are joined":            {text: "1,2,3-5,6", limit: 10, want: indexSet{{1, 6}}},
		"two indexes written apart are joined":  {text: "3,4", limit: 10, want: indexSet{{3, 4}}},
		"the last index just inside the limit":  {text: "4", limit: 5, want: indexSet{{4, 4}}},
		"an index at the limit is dropped":      {text: "1,5", limit: 5, want: indexSet{{1, 1}}},
		"a range is cut at the limit":           {text: "2-9", limit: 5, want: indexSet{{2, 4}}},
		"everything after the limit is dropped": {text: "1,6-7,9", limit: 5, want: indexSet{{1, 1}}},
		"a limit of zero keeps nothing":         {text: "0-3", limit: 0},
		"a piece that is no number is skipped":  {text: "x,2", limit: 5, want: indexSet{{2, 2}}},
		"a range with a bad end is skipped":     {text: "1-y,3", limit: 5, want: indexSet{{3, 3}}},
		"a negative index is skipped":           {text: "-1,2", limit: 5, want: indexSet{{2, 2}}},
		"a reversed range is skipped":           {text: "4-2,0", limit: 5, want: indexSet{{0, 0}}},
		"overlapping pieces are merged":         {text: "1-3,2-5", limit: 10, want: indexSet{{1, 5}}},
		"corrupted first and last pieces":       {text: "a,1-2,b", limit: 5, want: indexSet{{1, 2}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, parseIndexSet(tc.text, tc.limit), setCmp...); diff != "" {
				t.Errorf("parseIndexSet(%q, %d) (-want +got):\n%s", tc.text, tc.limit, diff)
			}
		})
	}
}

func TestIndexSetString(t *testing.T) {
	cases := map[string]struct {
		set  indexSet
		want string
	}{
		"empty":                          {},
		"one index":                      {set: indexSet{{7, 7}}, want: "7"},
		"a span of two is two indexes":   {set: indexSet{{3, 4}}, want: "3,4"},
		"a span of three is a range":     {set: indexSet{{3, 5}}, want: "3-5"},
		"mixed":                          {set: indexSet{{0, 0}, {2, 3}, {5, 9}}, want: "0,2,3,5-9"},
		"round trip of the status form":  {set: parseIndexSet("1,3-5,7,8", 100), want: "1,3-5,7,8"},
		"a large index is written whole": {set: indexSet{{99999, 99999}}, want: "99999"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.set.String(); got != tc.want {
				t.Errorf("String() = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestIndexSetCountAndContains(t *testing.T) {
	set := indexSet{{0, 0}, {2, 4}, {10, 10}}
	cases := map[string]struct {
		set      indexSet
		ix       int
		count    int
		contains bool
	}{
		"empty set":                 {ix: 0, count: 0},
		"one big span":              {set: indexSet{{0, 99999}}, ix: 5000, count: 100000, contains: true},
		"the first index":           {set: set, ix: 0, count: 5, contains: true},
		"in a gap":                  {set: set, ix: 1, count: 5},
		"the start of a span":       {set: set, ix: 2, count: 5, contains: true},
		"the end of a span":         {set: set, ix: 4, count: 5, contains: true},
		"after the end of a span":   {set: set, ix: 5, count: 5},
		"a span of one index":       {set: set, ix: 10, count: 5, contains: true},
		"beyond the last span":      {set: set, ix: 11, count: 5},
		"a negative index is never": {set: set, ix: -1, count: 5},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.set.count(); got != tc.count {
				t.Errorf("count() = %d, want %d", got, tc.count)
			}
			if got := tc.set.contains(tc.ix); got != tc.contains {
				t.Errorf("contains(%d) = %v, want %v", tc.ix, got, tc.contains)
			}
		})
	}
}

func TestIndexSetUnionAndWith(t *testing.T) {
	cases := map[string]struct {
		a, b indexSet
		ixs  []int
		want indexSet
	}{
		"both empty":               {},
		"only the first":           {a: indexSet{{1, 2}}, want: indexSet{{1, 2}}},
		"only the second":          {b: indexSet{{1, 2}}, want: indexSet{{1, 2}}},
		"disjoint, interleaved":    {a: indexSet{{0, 0}, {6, 7}}, b: indexSet{{3, 4}, {9, 9}}, want: indexSet{{0, 0}, {3, 4}, {6, 7}, {9, 9}}},
		"touching spans join":      {a: indexSet{{0, 2}}, b: indexSet{{3, 5}}, want: indexSet{{0, 5}}},
		"overlapping spans join":   {a: indexSet{{0, 4}}, b: indexSet{{2, 7}}, want: indexSet{{0, 7}}},
		"a span inside another":    {a: indexSet{{0, 9}}, b: indexSet{{2, 3}}, want: indexSet{{0, 9}}},
		"same start":               {a: indexSet{{2, 3}}, b: indexSet{{2, 6}}, want: indexSet{{2, 6}}},
		"indexes only":             {ixs: []int{4, 1, 2}, want: indexSet{{1, 2}, {4, 4}}},
		"indexes fill a gap":       {a: indexSet{{0, 1}, {3, 4}}, ixs: []int{2}, want: indexSet{{0, 4}}},
		"indexes already in":       {a: indexSet{{0, 4}}, ixs: []int{1, 3}, want: indexSet{{0, 4}}},
		"repeated indexes":         {ixs: []int{5, 5, 5}, want: indexSet{{5, 5}}},
		"indexes around the spans": {a: indexSet{{3, 4}}, ixs: []int{0, 9}, want: indexSet{{0, 0}, {3, 4}, {9, 9}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			aBefore := append(indexSet(nil), tc.a...)
			got := tc.a.union(tc.b).with(tc.ixs...)
			if diff := cmp.Diff(tc.want, got, setCmp...); diff != "" {
				t.Errorf("union/with (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(aBefore, tc.a, setCmp...); diff != "" {
				t.Errorf("the receiver changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestIndexSetOverlap(t *testing.T) {
	cases := map[string]struct {
		a, b indexSet
		want int
	}{
		"nothing in common":                  {a: indexSet{{0, 1}}, b: indexSet{{3, 4}}},
		"a proper subset":                    {a: indexSet{{2, 3}}, b: indexSet{{0, 9}}, want: 2},
		"equal":                              {a: indexSet{{1, 5}}, b: indexSet{{1, 5}}, want: 5},
		"overlap at the start":               {a: indexSet{{0, 4}}, b: indexSet{{3, 8}}, want: 2},
		"one span over several with gaps":    {a: indexSet{{0, 9}}, b: indexSet{{1, 2}, {5, 5}, {8, 12}}, want: 5},
		"several spans against several":      {a: indexSet{{0, 2}, {6, 8}}, b: indexSet{{2, 6}}, want: 2},
		"an empty set has nothing in common": {a: indexSet{{0, 9}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := tc.a.overlap(tc.b); got != tc.want {
				t.Errorf("overlap = %d, want %d", got, tc.want)
			}
			if got := tc.b.overlap(tc.a); got != tc.want {
				t.Errorf("reversed overlap = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestIndexSetFirstMissing(t *testing.T) {
	cases := map[string]struct {
		set      indexSet
		n, limit int
		want     []int
	}{
		"none wanted":                    {n: 0, limit: 5},
		"more wanted than there are":     {n: 10, limit: 3, want: []int{0, 1, 2}},
		"fewer wanted than there are":    {n: 2, limit: 5, want: []int{0, 1}},
		"the first indexes are taken":    {set: indexSet{{0, 1}}, n: 5, limit: 4, want: []int{2, 3}},
		"the last indexes are taken":     {set: indexSet{{2, 3}}, n: 5, limit: 4, want: []int{0, 1}},
		"all taken":                      {set: indexSet{{0, 4}}, n: 3, limit: 5},
		"gaps between spans":             {set: indexSet{{1, 1}, {3, 4}, {6, 6}}, n: 10, limit: 8, want: []int{0, 2, 5, 7}},
		"taken indexes beyond the limit": {set: indexSet{{0, 0}, {8, 9}}, n: 10, limit: 4, want: []int{1, 2, 3}},
		"a huge limit costs only n":      {set: indexSet{{0, 0}}, n: 2, limit: 1 << 30, want: []int{1, 2}},
		"a limit of zero has nothing":    {n: 3, limit: 0},
		"the count stops inside a gap":   {set: indexSet{{5, 5}}, n: 3, limit: 10, want: []int{0, 1, 2}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.set.firstMissing(tc.n, tc.limit)); diff != "" {
				t.Errorf("firstMissing (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodIndex(t *testing.T) {
	cases := map[string]struct {
		pod  *corev1.Pod
		want int
	}{
		"no annotations":             {pod: pod("a").Obj(), want: noIndex},
		"an index":                   {pod: pod("a").Index(3).Obj(), want: 3},
		"index zero":                 {pod: pod("a").Index(0).Obj(), want: 0},
		"not a number":               {pod: pod("a").Annotation("batch.jobs.dev/job-completion-index", "x").Obj(), want: noIndex},
		"negative":                   {pod: pod("a").Annotation("batch.jobs.dev/job-completion-index", "-2").Obj(), want: noIndex},
		"empty":                      {pod: pod("a").Annotation("batch.jobs.dev/job-completion-index", "").Obj(), want: noIndex},
		"upstream's key is not ours": {pod: pod("a").Annotation("batch.kubernetes.io/job-completion-index", "1").Obj(), want: noIndex},
		"the label alone does not count": {pod: func() *corev1.Pod {
			p := pod("a").Obj()
			p.Labels = map[string]string{"batch.jobs.dev/job-completion-index": "1"}
			return p
		}(), want: noIndex},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := podIndex(tc.pod); got != tc.want {
				t.Errorf("podIndex = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestIndexCountAndOrder(t *testing.T) {
	cases := map[string]struct {
		indexes     string
		completions int32
		want        int
	}{
		"empty":                        {indexes: "", completions: 3},
		"in range":                     {indexes: "0,2-4", completions: 5, want: 4},
		"out of range is not counted":  {indexes: "0,2-4", completions: 3, want: 2},
		"corrupted pieces not counted": {indexes: "0,x,2", completions: 3, want: 2},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := IndexCount(tc.indexes, tc.completions); got != tc.want {
				t.Errorf("IndexCount(%q, %d) = %d, want %d", tc.indexes, tc.completions, got, tc.want)
			}
		})
	}
	t.Run("sortByIndex puts Pods without an index first and keeps ties in order", func(t *testing.T) {
		in := pods(pod("c").Index(2), pod("x"), pod("a1").Index(0), pod("b").Index(1), pod("a2").Index(0))
		got := podNames(sortByIndex(in))
		if diff := cmp.Diff([]string{"x", "a1", "a2", "b", "c"}, got); diff != "" {
			t.Errorf("sortByIndex (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{"c", "x", "a1", "b", "a2"}, podNames(in)); diff != "" {
			t.Errorf("the input was reordered (-want +got):\n%s", diff)
		}
	})
}
