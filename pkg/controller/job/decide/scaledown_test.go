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

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestCheaperToLose(t *testing.T) {
	withRestarts := func(b *podFx, regular, sidecar int32) *podFx {
		b.p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}, {Name: "init"}}
		b.p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: regular}}
		b.p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "side", RestartCount: sidecar}, {Name: "init", RestartCount: 9}}
		return b
	}
	// Each row: first is cheaper to lose than second.
	cases := map[string]struct {
		first, second *corev1.Pod
	}{
		"not scheduled before scheduled": {
			first: pod("a").obj(), second: pod("b").scheduled("n").obj(),
		},
		"scheduling decides before the phase": {
			first: pod("a").running().obj(), second: pod("b").scheduled("n").obj(),
		},
		"Pending before Unknown": {
			first: pod("a").scheduled("n").obj(), second: pod("b").scheduled("n").phase(corev1.PodUnknown).obj(),
		},
		"Unknown before Running": {
			first: pod("a").scheduled("n").phase(corev1.PodUnknown).obj(), second: pod("b").scheduled("n").running().obj(),
		},
		"not ready before ready": {
			first: pod("a").scheduled("n").running().obj(), second: pod("b").scheduled("n").ready().obj(),
		},
		"the phase decides before readiness": {
			first: pod("a").scheduled("n").ready().phase(corev1.PodPending).obj(), second: pod("b").scheduled("n").running().obj(),
		},
		"ready more recently before ready longer": {
			first: pod("a").readySince(at(-time.Minute)).obj(), second: pod("b").readySince(at(-time.Hour)).obj(),
		},
		"an unknown ready time before a known one": {
			first: pod("a").readySince(time.Time{}).obj(), second: pod("b").readySince(at(-time.Hour)).obj(),
		},
		"the ready time decides before restarts": {
			first: withRestarts(pod("a").readySince(at(-time.Minute)), 0, 0).obj(), second: withRestarts(pod("b").readySince(at(-time.Hour)), 5, 0).obj(),
		},
		"more restarts before fewer": {
			first: withRestarts(pod("a").running(), 3, 0).obj(), second: withRestarts(pod("b").running(), 1, 0).obj(),
		},
		"more sidecar restarts when the containers tie": {
			first: withRestarts(pod("a").running(), 1, 4).obj(), second: withRestarts(pod("b").running(), 1, 2).obj(),
		},
		"container restarts decide before sidecar restarts": {
			first: withRestarts(pod("a").running(), 2, 0).obj(), second: withRestarts(pod("b").running(), 1, 9).obj(),
		},
		"restarts of plain init containers do not count": {
			first: pod("a").running().created(at(-time.Minute)).obj(), second: withRestarts(pod("b").running(), 0, 0).created(at(-time.Hour)).obj(),
		},
		"the restarts decide before the age": {
			first: withRestarts(pod("a").running(), 1, 0).created(at(-time.Hour)).obj(), second: withRestarts(pod("b").running(), 0, 0).created(at(-time.Minute)).obj(),
		},
		"newer before older": {
			first: pod("a").running().created(at(-time.Minute)).obj(), second: pod("b").running().created(at(-time.Hour)).obj(),
		},
		"no creation time before any": {
			first: pod("a").running().created(time.Time{}).obj(), second: pod("b").running().created(at(-time.Minute)).obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := cheaperToLose(tc.first, tc.second); got >= 0 {
				t.Errorf("cheaperToLose(first, second) = %d, want < 0", got)
			}
			if got := cheaperToLose(tc.second, tc.first); got <= 0 {
				t.Errorf("cheaperToLose(second, first) = %d, want > 0", got)
			}
		})
	}
	t.Run("equal Pods tie", func(t *testing.T) {
		if got := cheaperToLose(pod("a").running().obj(), pod("b").running().obj()); got != 0 {
			t.Errorf("cheaperToLose = %d, want 0", got)
		}
	})
}

func TestPodsToDelete(t *testing.T) {
	cases := map[string]struct {
		active      []*corev1.Pod
		indexed     bool
		completions int
		atLeast     int
		want        []string
	}{
		"nothing to delete": {active: pods(pod("a").running()), atLeast: 0},
		"the least advanced first": {
			active: pods(pod("a").ready(), pod("b"), pod("c").running()), atLeast: 2, want: []string{"b", "c"},
		},
		"all of them": {
			active: pods(pod("a").ready(), pod("b")), atLeast: 2, want: []string{"b", "a"},
		},
		"indexed, all unique and in range: only the least advanced": {
			active: pods(pod("a").index(0).ready(), pod("b").index(1)), indexed: true, completions: 2, atLeast: 1, want: []string{"b"},
		},
		"indexed: an index just inside completions is kept": {
			active: pods(pod("a").index(1).running()), indexed: true, completions: 2, atLeast: 0,
		},
		"indexed: a duplicated index loses its less advanced Pod, even beyond the count": {
			active:  pods(pod("a").index(0).ready(), pod("b").index(0), pod("c").index(1), pod("d").index(1).running()),
			indexed: true, completions: 2, atLeast: 0, want: []string{"b", "c"},
		},
		"indexed: a ready Pod is kept over one not ready": {
			active: pods(pod("a").index(0).running(), pod("b").index(0).ready()), indexed: true, completions: 1, want: []string{"a"},
		},
		"indexed: Pods without an index and out of range go first": {
			active:  pods(pod("a").index(0).running(), pod("b").index(5).ready(), pod("c").running(), pod("d").index(3)),
			indexed: true, completions: 2, atLeast: 4, want: []string{"c", "d", "b", "a"},
		},
		"indexed: surplus first, then the least advanced of the rest": {
			active:  pods(pod("a").index(0).ready(), pod("b").index(1), pod("c").index(2).ready(), pod("d").index(2)),
			indexed: true, completions: 3, atLeast: 2, want: []string{"d", "b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := podNames(podsToDelete(tc.active, tc.indexed, tc.completions, tc.atLeast))
			if diff := cmpDiff(tc.want, got); diff != "" {
				t.Errorf("podsToDelete (-want +got):\n%s", diff)
			}
		})
	}
}
