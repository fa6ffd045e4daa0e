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

func TestClassifyPodChange(t *testing.T) {
	job := batchtesting.MakeJob("j").Namespace("ns").Obj()
	pending := func() *batchtesting.PodBuilder { return batchtesting.MakePod("a").Of(job) }
	running := func() *batchtesting.PodBuilder { return pending().NodeName("n1").Running() }
	at := metav1.Now().Time

	cases := map[string]struct {
		before, after *corev1.Pod
		want          PodChange
	}{
		"nothing":                        {pending().Obj(), pending().Obj(), PodChangeNone},
		"bound to a node":                {pending().Obj(), pending().NodeName("n1").Obj(), PodChangeNone},
		"pending to running":             {pending().Obj(), running().Obj(), PodChangeNone},
		"running, ready condition false": {running().Obj(), running().Condition(corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}).Obj(), PodChangeNone},
		"scheduled and initialized":      {pending().Obj(), pending().Condition(corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}).Condition(corev1.PodCondition{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}).Obj(), PodChangeNone},
		"turned ready":                   {running().Obj(), running().ReadySince(at).Obj(), PodChangeReadiness},
		"no longer ready":                {running().ReadySince(at).Obj(), running().Obj(), PodChangeReadiness},
		"running to pending":             {running().Obj(), pending().NodeName("n1").Obj(), PodChangeOther},
		"to unknown":                     {running().Obj(), running().Phase(corev1.PodUnknown).Obj(), PodChangeOther},
		"succeeded":                      {running().Obj(), running().Succeeded(at).Obj(), PodChangeOther},
		"failed":                         {running().Obj(), running().Failed(at).Obj(), PodChangeOther},
		"deletion begun":                 {running().Obj(), running().Deleted(at).Obj(), PodChangeOther},
		"a container restarted":          {running().Restarts(0).Obj(), running().Restarts(1).Obj(), PodChangeOther},
		"a label":                        {running().Obj(), running().Label("x", "y").Obj(), PodChangeOther},
		"an annotation":                  {running().Obj(), running().Annotation("x", "y").Obj(), PodChangeOther},
		"the finalizer gone":             {running().Obj(), running().NoFinalizer().Obj(), PodChangeOther},
		"no controller any more":         {running().Obj(), running().Orphan().Obj(), PodChangeOther},
		"another controller": {running().Obj(), running().Do(func(p *corev1.Pod) {
			p.OwnerReferences[0].Controller = ptr.To(false)
		}).Obj(), PodChangeOther},
		"a disruption target":        {running().Obj(), running().Disrupted().Obj(), PodChangeOther},
		"turned ready and restarted": {running().Obj(), running().ReadySince(at).Restarts(1).Obj(), PodChangeOther},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := ClassifyPodChange(tc.before, tc.after); got != tc.want {
				t.Errorf("ClassifyPodChange = %v, want %v", got, tc.want)
			}
		})
	}
}
