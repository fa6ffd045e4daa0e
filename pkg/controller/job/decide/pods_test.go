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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
)

func TestPodChangeMatters(t *testing.T) {
	job := batchtesting.MakeJob("j").Namespace("ns").Obj()
	pending := func() *batchtesting.PodBuilder { return batchtesting.MakePod("a").Of(job) }
	running := func() *batchtesting.PodBuilder { return pending().NodeName("n1").Running() }
	at := metav1.Now().Time

	cases := map[string]struct {
		before, after *corev1.Pod
		want          bool
	}{
		"nothing":                        {pending().Obj(), pending().Obj(), false},
		"bound to a node":                {pending().Obj(), pending().NodeName("n1").Obj(), false},
		"pending to running":             {pending().Obj(), running().Obj(), false},
		"running, ready condition false": {running().Obj(), running().Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}).Obj(), false},
		"scheduled and initialized":      {pending().Obj(), pending().Condition(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}).Condition(corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}).Obj(), false},
		"turned ready":                   {running().Obj(), running().ReadySince(at).Obj(), true},
		"no longer ready":                {running().ReadySince(at).Obj(), running().Obj(), true},
		"running to pending":             {running().Obj(), pending().NodeName("n1").Obj(), true},
		"to unknown":                     {running().Obj(), running().Phase(corev1.PodUnknown).Obj(), true},
		"succeeded":                      {running().Obj(), running().Succeeded(at).Obj(), true},
		"failed":                         {running().Obj(), running().Failed(at).Obj(), true},
		"deletion begun":                 {running().Obj(), running().Deleted(at).Obj(), true},
		"a container restarted":          {running().Restarts(0).Obj(), running().Restarts(1).Obj(), true},
		"a label":                        {running().Obj(), running().Label("x", "y").Obj(), true},
		"an annotation":                  {running().Obj(), running().Annotation("x", "y").Obj(), true},
		"the finalizer gone":             {running().Obj(), running().NoFinalizer().Obj(), true},
		"no controller any more":         {running().Obj(), running().Orphan().Obj(), true},
		"another controller": {running().Obj(), running().Do(func(p *corev1.Pod) {
			p.OwnerReferences[0].Controller = ptr.To(false)
		}).Obj(), true},
		"a disruption target": {running().Obj(), running().Disrupted().Obj(), true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := PodChangeMatters(tc.before, tc.after); got != tc.want {
				t.Errorf("PodChangeMatters = %v, want %v", got, tc.want)
			}
		})
	}
}
