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
	corev1 "k8s.io/api/core/v1"
)

// The states of a Pod that the decisions tell apart. A Pod is finished when
// its phase is Succeeded or Failed; until then it is terminating once it
// has a deletionTimestamp, and active before that.

func podFinished(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// podActive tells whether p occupies a slot of the Job's parallelism.
func podActive(p *corev1.Pod) bool {
	return !podFinished(p) && p.DeletionTimestamp == nil
}

// podTerminating tells whether p is going away without a final phase yet:
// its slot is neither free nor taken.
func podTerminating(p *corev1.Pod) bool {
	return !podFinished(p) && p.DeletionTimestamp != nil
}

// readyCondition returns the first Ready condition of p, as the kubelet
// writes only one.
func readyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

func podReady(p *corev1.Pod) bool {
	c := readyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

// podCensus is the head count of a Job's Pods before the sync acts.
type podCensus struct {
	active      []*corev1.Pod
	ready       int32 // among active
	terminating int32 // among all
}

func countPods(pods []*corev1.Pod) podCensus {
	var c podCensus
	for _, p := range pods {
		switch {
		case podActive(p):
			c.active = append(c.active, p)
			if podReady(p) {
				c.ready++
			}
		case podTerminating(p):
			c.terminating++
		}
	}
	return c
}
