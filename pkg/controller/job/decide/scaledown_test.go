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
		return b.Do(func(p *corev1.Pod) {
			p.Spec.InitContainers = []corev1.Container{{Name: "side", RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways)}, {Name: "init"}}
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", RestartCount: regular}}
			p.Status.InitContainerStatuses = []corev1.ContainerStatus{{Name: "side", RestartCount: sidecar}, {Name: "init", RestartCount: 9}}
		})
	}
	// Each row: first is cheaper to lose than second.
	cases := map[string]struct {
		first, second *corev1.Pod
	}{
		"not scheduled before scheduled": {
			first: pod("a").Obj(), second: pod("b").NodeName("n").Obj(),
		},
		"scheduling decides before the phase": {
			first: pod("a").Running().Obj(), second: pod("b").NodeName("n").Obj(),
		},
		"Pending before Unknown": {
			first: pod("a").NodeName("n").Obj(), second: pod("b").NodeName("n").Phase(corev1.PodUnknown).Obj(),
		},
		"Unknown before Running": {
			first: pod("a").NodeName("n").Phase(corev1.PodUnknown).Obj(), second: pod("b").NodeName("n").Running().Obj(),
		},
		"not ready before ready": {
			first: pod("a").NodeName("n").Running().Obj(), second: pod("b").NodeName("n").ReadySince(at(-time.Minute)).Obj(),
		},
		"the phase decides before readiness": {
			first: pod("a").NodeName("n").ReadySince(at(-time.Minute)).Phase(corev1.PodPending).Obj(), second: pod("b").NodeName("n").Running().Obj(),
		},
		"ready more recently before ready longer": {
			first: pod("a").ReadySince(at(-time.Minute)).Obj(), second: pod("b").ReadySince(at(-time.Hour)).Obj(),
		},
		"an unknown ready time before a known one": {
			first: pod("a").ReadySince(time.Time{}).Obj(), second: pod("b").ReadySince(at(-time.Hour)).Obj(),
		},
		"the ready time decides before restarts": {
			first: withRestarts(pod("a").ReadySince(at(-time.Minute)), 0, 0).Obj(), second: withRestarts(pod("b").ReadySince(at(-time.Hour)), 5, 0).Obj(),
		},
		"more restarts before fewer": {
			first: withRestarts(pod("a").Running(), 3, 0).Obj(), second: withRestarts(pod("b").Running(), 1, 0).Obj(),
		},
		"more sidecar restarts when the containers tie": {
			first: withRestarts(pod("a").Running(), 1, 4).Obj(), second: withRestarts(pod("b").Running(), 1, 2).Obj(),
		},
		"container restarts decide before sidecar restarts": {
			first: withRestarts(pod("a").Running(), 2, 0).Obj(), second: withRestarts(pod("b").Running(), 1, 9).Obj(),
		},
		"restarts of plain init containers do not count": {
			first: pod("a").Running().CreationTimestamp(at(-time.Minute)).Obj(), second: withRestarts(pod("b").Running(), 0, 0).CreationTimestamp(at(-time.Hour)).Obj(),
		},
		"the restarts decide before the age": {
			first: withRestarts(pod("a").Running(), 1, 0).CreationTimestamp(at(-time.Hour)).Obj(), second: withRestarts(pod("b").Running(), 0, 0).CreationTimestamp(at(-time.Minute)).Obj(),
		},
		"newer before older": {
			first: pod("a").Running().CreationTimestamp(at(-time.Minute)).Obj(), second: pod("b").Running().CreationTimestamp(at(-time.Hour)).Obj(),
		},
		"no creation time before any": {
			first: pod("a").Running().CreationTimestamp(time.Time{}).Obj(), second: pod("b").Running().CreationTimestamp(at(-time.Minute)).Obj(),
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
		if got := cheaperToLose(pod("a").Running().Obj(), pod("b").Running().Obj()); got != 0 {
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
		"nothing to delete": {active: pods(pod("a").Running()), atLeast: 0},
		"the least advanced first": {
			active: pods(pod("a").ReadySince(at(-time.Minute)), pod("b"), pod("c").Running()), atLeast: 2, want: []string{"b", "c"},
		},
		"all of them": {
			active: pods(pod("a").ReadySince(at(-time.Minute)), pod("b")), atLeast: 2, want: []string{"b", "a"},
		},
		"indexed, all unique and in range: only the least advanced": {
			active: pods(pod("a").Index(0).ReadySince(at(-time.Minute)), pod("b").Index(1)), indexed: true, completions: 2, atLeast: 1, want: []string{"b"},
		},
		"indexed: an index just inside completions is kept": {
			active: pods(pod("a").Index(1).Running()), indexed: true, completions: 2, atLeast: 0,
		},
		"indexed: a duplicated index loses its less advanced Pod, even beyond the count": {
			active:  pods(pod("a").Index(0).ReadySince(at(-time.Minute)), pod("b").Index(0), pod("c").Index(1), pod("d").Index(1).Running()),
			indexed: true, completions: 2, atLeast: 0, want: []string{"b", "c"},
		},
		"indexed: a ready Pod is kept over one not ready": {
			active: pods(pod("a").Index(0).Running(), pod("b").Index(0).ReadySince(at(-time.Minute))), indexed: true, completions: 1, want: []string{"a"},
		},
		"indexed: Pods without an index and out of range go first": {
			active:  pods(pod("a").Index(0).Running(), pod("b").Index(5).ReadySince(at(-time.Minute)), pod("c").Running(), pod("d").Index(3)),
			indexed: true, completions: 2, atLeast: 4, want: []string{"c", "d", "b", "a"},
		},
		"indexed: surplus first, then the least advanced of the rest": {
			active:  pods(pod("a").Index(0).ReadySince(at(-time.Minute)), pod("b").Index(1), pod("c").Index(2).ReadySince(at(-time.Minute)), pod("d").Index(2)),
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
