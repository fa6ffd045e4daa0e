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
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

// span is the closed range of completion indexes lo..hi.
type span struct{ lo, hi int }

// indexSet is a set of completion indexes as ascending spans that neither
// overlap nor touch: the in-memory form of status.completedIndexes and
// status.failedIndexes ("1,3-5,7,8"). The zero value is the empty set.
type indexSet []span

// parseIndexSet reads an index list of the status, keeping only the
// indexes below limit (an elastic Job may have had more completions). A
// piece that is not a number or a range is skipped rather than failing the
// sync: the Pods still tell which indexes finished.
func parseIndexSet(text string, limit int) indexSet {
	var set indexSet
	if text == "" {
		return set
	}
	for _, piece := range strings.Split(text, ",") {
		loText, hiText, isRange := strings.Cut(piece, "-")
		lo, err := strconv.Atoi(loText)
		if err != nil || lo < 0 {
			continue
		}
		if lo >= limit {
			// The list is ascending: nothing further is in range.
			break
		}
		hi := lo
		if isRange {
			if hi, err = strconv.Atoi(hiText); err != nil || hi < lo {
				continue
			}
		}
		set = set.add(span{lo, min(hi, limit-1)})
	}
	return set
}

// IndexCount returns how many indexes below completions an index list of
// the status (completedIndexes, failedIndexes) holds; the metrics of
// finished indexes count the difference between two writes.
func IndexCount(indexes string, completions int32) int {
	return parseIndexSet(indexes, int(completions)).count()
}

// add appends sp, which must not start before the last span, joining it
// with the last span when they overlap or touch.
func (s indexSet) add(sp span) indexSet {
	if n := len(s); n > 0 && sp.lo <= s[n-1].hi+1 {
		s[n-1].hi = max(s[n-1].hi, sp.hi)
		return s
	}
	return append(s, sp)
}

// String writes the set as the status does. A span of two indexes is
// written as two indexes, "3,4", not "3-4".
func (s indexSet) String() string {
	var b strings.Builder
	for _, sp := range s {
		if b.Len() > 0 {
			b.WriteByte(',')
		}
		b.WriteString(strconv.Itoa(sp.lo))
		switch sp.hi - sp.lo {
		case 0:
		case 1:
			b.WriteByte(',')
			b.WriteString(strconv.Itoa(sp.hi))
		default:
			b.WriteByte('-')
			b.WriteString(strconv.Itoa(sp.hi))
		}
	}
	return b.String()
}

// count returns the number of indexes in the set.
func (s indexSet) count() int {
	n := 0
	for _, sp := range s {
		n += sp.hi - sp.lo + 1
	}
	return n
}

// contains tells whether ix is in the set.
func (s indexSet) contains(ix int) bool {
	i, _ := slices.BinarySearchFunc(s, ix, func(sp span, ix int) int { return sp.hi - ix })
	return i < len(s) && s[i].lo <= ix
}

// union returns a new set with the indexes of both sets.
func (s indexSet) union(o indexSet) indexSet {
	out := make(indexSet, 0, len(s)+len(o))
	i, j := 0, 0
	for i < len(s) || j < len(o) {
		if j == len(o) || (i < len(s) && s[i].lo < o[j].lo) {
			out = out.add(s[i])
			i++
		} else {
			out = out.add(o[j])
			j++
		}
	}
	return out
}

// with returns a new set with the indexes of s and ixs, in any order.
func (s indexSet) with(ixs ...int) indexSet {
	sorted := slices.Clone(ixs)
	slices.Sort(sorted)
	var extra indexSet
	for _, ix := range sorted {
		extra = extra.add(span{ix, ix})
	}
	return s.union(extra)
}

// overlap counts the indexes the two sets have in common.
func (s indexSet) overlap(o indexSet) int {
	n, i, j := 0, 0, 0
	for i < len(s) && j < len(o) {
		if common := min(s[i].hi, o[j].hi) - max(s[i].lo, o[j].lo) + 1; common > 0 {
			n += common
		}
		if s[i].hi <= o[j].hi {
			i++
		} else {
			j++
		}
	}
	return n
}

// firstMissing returns, in ascending order, up to n indexes below limit
// that are not in the set. It walks the gaps between spans, so its cost
// follows the set and n, not limit.
func (s indexSet) firstMissing(n, limit int) []int {
	var out []int
	next := 0
	take := func(upTo int) {
		for ; next < upTo && next < limit && len(out) < n; next++ {
			out = append(out, next)
		}
	}
	for _, sp := range s {
		take(sp.lo)
		next = max(next, sp.hi+1)
	}
	take(limit)
	return out
}

// noIndex stands for a Pod whose completion index is missing or invalid.
const noIndex = -1

// podIndex returns the completion index of a Pod of an Indexed Job, or
// noIndex when its annotation is missing, not a number or negative.
func podIndex(p *corev1.Pod) int {
	v, ok := p.Annotations[batch.JobCompletionIndexAnnotation]
	if !ok {
		return noIndex
	}
	ix, err := strconv.Atoi(v)
	if err != nil || ix < 0 {
		return noIndex
	}
	return ix
}

// indexesOf returns the valid indexes of pods.
func indexesOf(pods []*corev1.Pod) []int {
	var out []int
	for _, p := range pods {
		if ix := podIndex(p); ix != noIndex {
			out = append(out, ix)
		}
	}
	return out
}

// sortByIndex returns pods ordered by completion index, those without one
// first, keeping the given order among equal indexes.
func sortByIndex(pods []*corev1.Pod) []*corev1.Pod {
	out := slices.Clone(pods)
	slices.SortStableFunc(out, func(a, b *corev1.Pod) int { return podIndex(a) - podIndex(b) })
	return out
}
