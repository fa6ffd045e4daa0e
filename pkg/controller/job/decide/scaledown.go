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
	"cmp"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

// When a Job runs more Pods than it wants, the Pods to delete are chosen
// so as to lose the least work. In an Indexed Job the Pods that should not
// exist go first whatever their progress: those with no valid index, with
// an index at or above completions (an elastic Job scaled down) and all but
// one Pod of an index held by several.

// podsToDelete returns the active Pods to delete so that at least atLeast
// go: for an Indexed Job every surplus Pod, even beyond atLeast, then the
// least advanced of the others.
func podsToDelete(active []*corev1.Pod, indexed bool, completions int, atLeast int) []*corev1.Pod {
	var doomed, kept []*corev1.Pod
	if indexed {
		doomed, kept = surplusIndexPods(active, completions)
	} else {
		kept = slices.Clone(active)
	}
	if missing := atLeast - len(doomed); missing > 0 {
		slices.SortStableFunc(kept, cheaperToLose)
		doomed = append(doomed, kept[:missing]...)
	}
	return doomed
}

// surplusIndexPods splits the active Pods of an Indexed Job into those
// that should not exist and one Pod per valid index, the most advanced one
// of its index. Both lists are in index order.
func surplusIndexPods(active []*corev1.Pod, completions int) (surplus, kept []*corev1.Pod) {
	sorted := sortByIndex(active)
	for start := 0; start < len(sorted); {
		ix := podIndex(sorted[start])
		end := start + 1
		for end < len(sorted) && podIndex(sorted[end]) == ix {
			end++
		}
		group := sorted[start:end]
		start = end
		if ix == noIndex || ix >= completions {
			surplus = append(surplus, group...)
			continue
		}
		slices.SortStableFunc(group, cheaperToLose)
		surplus = append(surplus, group[:len(group)-1]...)
		kept = append(kept, group[len(group)-1])
	}
	return surplus, kept
}

// phaseRank orders the phases of active Pods from the least to the most
// advanced.
var phaseRank = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// cheaperToLose orders Pods so that the one whose deletion loses less work
// comes first, deciding on the first of these that differs: not scheduled
// before scheduled; Pending, Unknown, Running; not ready before ready;
// ready for less time before ready for longer; more container restarts
// (then more sidecar restarts) before fewer; newer before older.
func cheaperToLose(a, b *corev1.Pod) int {
	if (a.Spec.NodeName == "") != (b.Spec.NodeName == "") {
		return boolFirst(a.Spec.NodeName == "")
	}
	if c := cmp.Compare(phaseRank[a.Status.Phase], phaseRank[b.Status.Phase]); c != 0 {
		return c
	}
	ra, rb := podReady(a), podReady(b)
	if ra != rb {
		return boolFirst(!ra)
	}
	if ra {
		if c := newerFirst(readySince(a), readySince(b)); c != 0 {
			return c
		}
	}
	ca, sa := restarts(a)
	cb, sb := restarts(b)
	if ca != cb {
		return cmp.Compare(cb, ca)
	}
	if sa != sb {
		return cmp.Compare(sb, sa)
	}
	return newerFirst(a.CreationTimestamp, b.CreationTimestamp)
}

// boolFirst puts the element for which the test held first.
func boolFirst(aFirst bool) int {
	if aFirst {
		return -1
	}
	return 1
}

// newerFirst orders two times latest first, an unknown (zero) time before
// any known one.
func newerFirst(a, b metav1.Time) int {
	switch {
	case a.Equal(&b):
		return 0
	case a.IsZero():
		return -1
	case b.IsZero():
		return 1
	case a.After(b.Time):
		return -1
	default:
		return 1
	}
}

func readySince(p *corev1.Pod) metav1.Time {
	if c := readyCondition(p); c != nil {
		return c.LastTransitionTime
	}
	return metav1.Time{}
}

// restarts returns the most restarts of one of the Pod's containers, and
// of one of its sidecars (init containers that restart Always).
func restarts(p *corev1.Pod) (containers, sidecars int32) {
	for _, cs := range p.Status.ContainerStatuses {
		containers = max(containers, cs.RestartCount)
	}
	names := sets.New[string]()
	for _, c := range p.Spec.InitContainers {
		if ptr.Deref(c.RestartPolicy, "") == corev1.ContainerRestartPolicyAlways {
			names.Insert(c.Name)
		}
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if names.Has(cs.Name) {
			sidecars = max(sidecars, cs.RestartCount)
		}
	}
	return containers, sidecars
}
