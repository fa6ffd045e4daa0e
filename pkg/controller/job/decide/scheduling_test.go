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
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestSchedulingModeOf(t *testing.T) {
	ownGroup := func(j *batchv1.Job) {
		j.Spec.Template.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To("mine")}
	}
	cases := map[string]struct {
		job      *batchv1.Job
		disabled bool
		want     SchedulingMode
	}{
		"a Job without owner: its Workload and PodGroup": {
			job: job("j").Obj(), want: OwnWorkload,
		},
		"spec.scheduling does not matter to the mode": {
			job: job("j").Do(scheduled(gangPolicy(nil))).Obj(), want: OwnWorkload,
		},
		"disabled (gate off, or a host without the APIs): none": {
			job: job("j").Obj(), disabled: true, want: PodByPod,
		},
		"a template naming its own PodGroup: none": {
			job: job("j").Do(ownGroup).Obj(), want: PodByPod,
		},
		"an owner that keeps both: none": {
			job: job("j").Do(ownedBy("jobset.x-k8s.io/v1alpha2", "JobSet", nil)).Obj(), want: PodByPod,
		},
		"an owner that delegated the PodGroup": {
			job: job("j").Do(ownedBy("jobset.x-k8s.io/v1alpha2", "JobSet", ptr.To("workers"))).Obj(), want: DelegatedPodGroup,
		},
		"the annotation alone, empty, delegates": {
			job: job("j").Do(ownedBy("jobset.x-k8s.io/v1alpha2", "JobSet", ptr.To(""))).Obj(), want: DelegatedPodGroup,
		},
		"a delegating owner, but the template names a PodGroup: none": {
			job: job("j").Do(ownedBy("jobset.x-k8s.io/v1alpha2", "JobSet", ptr.To("workers"))).Do(ownGroup).Obj(), want: PodByPod,
		},
		"the annotation on a Job without owner: its own objects": {
			job: job("j").Do(func(j *batchv1.Job) { j.Annotations = map[string]string{GroupTemplateNameAnnotation: "x"} }).Obj(), want: OwnWorkload,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := SchedulingModeOf(tc.job, !tc.disabled); got != tc.want {
				t.Errorf("SchedulingModeOf = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestNeverStarted(t *testing.T) {
	cases := map[string]struct {
		job  *batchv1.Job
		pods []*podFx
		want bool
	}{
		"a new Job":                             {job: job("j").Obj(), want: true},
		"a Pod":                                 {job: job("j").Obj(), pods: []*podFx{pod("a")}, want: false},
		"a start time":                          {job: job("j").StartTime(t0).Obj(), want: false},
		"a success counted (its Pods are gone)": {job: job("j").Succeeded(1).Obj(), want: false},
		"a failure counted":                     {job: job("j").Failed(1).Obj(), want: false},
		"suspended at creation":                 {job: job("j").Condition(cond(batchv1.JobSuspended, "JobSuspended", "")).Obj(), want: false},
		"resumed (Suspended False) still counts as having run": {
			job:  job("j").Condition(condAt(batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "", t0)).Obj(),
			want: false,
		},
		"another condition alone": {job: job("j").Condition(cond(batchv1.JobFailureTarget, "x", "")).Obj(), want: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if got := NeverStarted(tc.job, pods(tc.pods...)); got != tc.want {
				t.Errorf("NeverStarted = %v, want %v", got, tc.want)
			}
		})
	}
}
