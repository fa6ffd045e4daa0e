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
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// A suspended Job runs no Pod. The Suspended condition follows spec.suspend,
// but only in a sync that managed the Job's Pods (so after the Pods of a
// suspension were deleted), and an Event tells of each change. A Job that
// was never suspended gets no Suspended=False condition.

func suspended(job *batchv1.Job) bool { return ptr.Deref(job.Spec.Suspend, false) }

// followSuspend brings the Suspended condition of status in line with the
// Job's spec and returns the Event of the change, if there was one. It
// clears startTime on suspension and restarts it on resumption, because the
// active deadline counts continuous activity.
func followSuspend(job *batchv1.Job, status *batchv1.JobStatus, now time.Time) *Event {
	if suspended(job) {
		if !setCondition(status, batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "Job suspended", now) {
			return nil
		}
		status.StartTime = nil
		return &Event{Type: corev1.EventTypeNormal, Reason: "Suspended", Message: "Job suspended"}
	}
	if !setCondition(status, batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", now) {
		return nil
	}
	status.StartTime = ptr.To(metav1.NewTime(now))
	return &Event{Type: corev1.EventTypeNormal, Reason: "Resumed", Message: "Job resumed"}
}

// setCondition makes the condition of type t say status, reason and
// message, stamping both of its times with now when it changes. A False
// condition the list does not have is not added: its absence says as much.
// It returns whether the list changed.
func setCondition(st *batchv1.JobStatus, t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) bool {
	c := findCondition(st.Conditions, t)
	if c == nil && status == corev1.ConditionFalse {
		return false
	}
	if c != nil && c.Status == status && c.Reason == reason && c.Message == message {
		return false
	}
	fresh := condition(t, status, reason, message, now)
	if c == nil {
		st.Conditions = append(st.Conditions, fresh)
	} else {
		*c = fresh
	}
	return true
}

// condition is a Job condition that changed at now.
func condition(t batchv1.JobConditionType, status corev1.ConditionStatus, reason, message string, now time.Time) batchv1.JobCondition {
	at := metav1.NewTime(now)
	return batchv1.JobCondition{Type: t, Status: status, Reason: reason, Message: message, LastProbeTime: at, LastTransitionTime: at}
}
