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

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestPodFailed(t *testing.T) {
	cases := map[string]struct {
		job  *batchv1.Job
		pod  *corev1.Pod
		want bool
	}{
		"Failed":                              {job: job("j").Obj(), pod: pod("a").Failed(t0).Obj(), want: true},
		"Failed, podReplacementPolicy Failed": {job: job("j").PodReplacementPolicy(batchv1.Failed).Obj(), pod: pod("a").Failed(t0).Obj(), want: true},
		"running":                             {job: job("j").Obj(), pod: pod("a").Running().Obj()},
		"succeeded":                           {job: job("j").Obj(), pod: pod("a").Succeeded(t0).Obj()},
		"terminating counts as failed":        {job: job("j").Obj(), pod: pod("a").Running().Deleted(t0).Obj(), want: true},
		"terminating while pending counts as failed":    {job: job("j").Obj(), pod: pod("a").Deleted(t0).Obj(), want: true},
		"terminating, podReplacementPolicy Failed: not": {job: job("j").PodReplacementPolicy(batchv1.Failed).Obj(), pod: pod("a").Running().Deleted(t0).Obj()},
		"deleted after it succeeded: not":               {job: job("j").Obj(), pod: pod("a").Succeeded(t0).Deleted(t0).Obj()},
		"no policy set behaves as TerminatingOrFailed": {
			job: func() *batchv1.Job { j := job("j").Obj(); j.Spec.PodReplacementPolicy = nil; return j }(), pod: pod("a").Running().Deleted(t0).Obj(), want: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := podFailed(tc.job, tc.pod); got != tc.want {
				t.Errorf("podFailed = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestCreationReasonAndSlots(t *testing.T) {
	cases := map[string]struct {
		job                 *batchv1.Job
		failed, terminating int32
		reason              string
		held                int32
	}{
		"nothing failed or terminating: new":                {job: job("j").Obj(), reason: newPods},
		"failures: replacements":                            {job: job("j").Obj(), failed: 1, reason: replacement},
		"terminating Pods: replacements, no slot held":      {job: job("j").Obj(), terminating: 2, reason: replacement},
		"podReplacementPolicy Failed with failures":         {job: job("j").PodReplacementPolicy(batchv1.Failed).Obj(), failed: 1, terminating: 1, reason: failedAgain, held: 1},
		"podReplacementPolicy Failed with terminating only": {job: job("j").PodReplacementPolicy(batchv1.Failed).Obj(), terminating: 3, reason: replacement, held: 3},
		"podReplacementPolicy Failed with nothing: new":     {job: job("j").PodReplacementPolicy(batchv1.Failed).Obj(), reason: newPods},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := creationReason(tc.job, tc.failed, tc.terminating); got != tc.reason {
				t.Errorf("creationReason = %q, want %q", got, tc.reason)
			}
			if got := slotsHeldByTerminating(tc.job, tc.terminating); got != tc.held {
				t.Errorf("slotsHeldByTerminating = %d, want %d", got, tc.held)
			}
		})
	}
}

func TestCountPods(t *testing.T) {
	type census struct {
		Active             []string
		Ready, Terminating int32
	}
	cases := map[string]struct {
		pods []*corev1.Pod
		want census
	}{
		"none": {},
		"pending, running and ready are active": {
			pods: pods(pod("a"), pod("b").Running(), pod("c").ReadySince(at(-time.Minute))),
			want: census{Active: []string{"a", "b", "c"}, Ready: 1},
		},
		"finished Pods are neither": {
			pods: pods(pod("a").Succeeded(t0), pod("b").Failed(t0), pod("c").Failed(t0).Deleted(t0)),
		},
		"a deleted unfinished Pod is terminating, not ready": {
			pods: pods(pod("a").ReadySince(at(-time.Minute)).Deleted(t0)),
			want: census{Terminating: 1},
		},
		"Unknown phase is active": {
			pods: pods(pod("a").Phase(corev1.PodUnknown)),
			want: census{Active: []string{"a"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := countPods(tc.pods)
			got := census{Active: podNames(c.active), Ready: c.ready, Terminating: c.terminating}
			if diff := cmpDiff(tc.want, got); diff != "" {
				t.Errorf("countPods (-want +got):\n%s", diff)
			}
		})
	}
}
