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

package jobwatch

import (
	"testing"

	corev1 "k8s.io/api/core/v1"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestFinished(t *testing.T) {
	cond := func(typ batchv1.JobConditionType, status corev1.ConditionStatus) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: status}
	}
	cases := []struct {
		name       string
		conditions []batchv1.JobCondition
		want       batchv1.JobConditionType // "" for not finished
	}{
		{name: "no conditions"},
		{name: "success criteria met, pods still terminating", conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue)}},
		{name: "failure target, pods still terminating", conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue)}},
		{name: "suspended", conditions: []batchv1.JobCondition{cond(batchv1.JobSuspended, corev1.ConditionTrue)}},
		{name: "complete false", conditions: []batchv1.JobCondition{cond(batchv1.JobComplete, corev1.ConditionFalse)}},
		{name: "complete", conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue), cond(batchv1.JobComplete, corev1.ConditionTrue)}, want: batchv1.JobComplete},
		{name: "failed", conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue), cond(batchv1.JobFailed, corev1.ConditionTrue)}, want: batchv1.JobFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var got batchv1.JobConditionType
			if c := Finished(&batchv1.Job{Status: batchv1.JobStatus{Conditions: tc.conditions}}); c != nil {
				got = c.Type
			}
			if got != tc.want {
				t.Errorf("Finished = %q, want %q", got, tc.want)
			}
		})
	}
}
