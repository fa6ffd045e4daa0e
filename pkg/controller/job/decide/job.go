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
	"encoding/json"
	"slices"

	corev1 "k8s.io/api/core/v1"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// Facts about a Job or a Pod that the event handlers and the orphan and
// TTL workers need as well as the sync.

// Finished returns the Job's terminal condition, Complete or Failed with
// status True, and whether it has one. A finished Job is never synced
// again: only its leftover finalizers and its TTL are looked after.
func Finished(job *batchv1.Job) (*batchv1.JobCondition, bool) {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return c, true
		}
	}
	return nil, false
}

// IsFinished tells whether the Job has a terminal condition (see Finished).
func IsFinished(job *batchv1.Job) bool {
	_, ok := Finished(job)
	return ok
}

// ExternalManager returns the controller named by the Job's spec.managedBy
// when that is not this one (kubernetes.io/job-controller), and false for a
// Job this controller runs: managedBy unset or naming it.
func ExternalManager(job *batchv1.Job) (string, bool) {
	return OtherManager(job.Spec.ManagedBy)
}

// OtherManager is ExternalManager of a Job whose spec.managedBy is
// managedBy.
func OtherManager(managedBy *string) (string, bool) {
	if managedBy != nil && *managedBy != batch.JobControllerName {
		return *managedBy, true
	}
	return "", false
}

// HasTrackingFinalizer tells whether the Pod carries the Job tracking
// finalizer: its end has not been counted in its Job's status yet.
func HasTrackingFinalizer(p *corev1.Pod) bool {
	return slices.Contains(p.Finalizers, batch.JobTrackingFinalizer)
}

// FinishedWithFinalizer tells whether the Pod (nil: no Pod) has finished,
// Succeeded or Failed, and still carries the tracking finalizer, that is,
// waits to be counted: the state job_controller_terminated_pods_tracking_finalizer_total
// counts Pods entering and leaving.
func FinishedWithFinalizer(p *corev1.Pod) bool {
	return p != nil && podFinished(p) && HasTrackingFinalizer(p)
}

// RemoveFinalizerPatch returns the body of a strategic merge patch that
// removes the tracking finalizer from the Pod, leaving its other
// finalizers, or nil when the Pod does not carry it.
func RemoveFinalizerPatch(p *corev1.Pod) []byte {
	if !HasTrackingFinalizer(p) {
		return nil
	}
	body, err := json.Marshal(finalizerRemoval{Metadata: finalizerRemovalMeta{Finalizers: []string{batch.JobTrackingFinalizer}}})
	if err != nil {
		// Two fixed strings always marshal.
		panic(err)
	}
	return body
}

type finalizerRemoval struct {
	Metadata finalizerRemovalMeta `json:"metadata"`
}

type finalizerRemovalMeta struct {
	Finalizers []string `json:"$deleteFromPrimitiveList/finalizers"`
}

// CompletionModeLabel returns the completion_mode label of the Job's
// metrics: Indexed or NonIndexed (also when the field is unset).
func CompletionModeLabel(job *batchv1.Job) string {
	if job.Spec.CompletionMode != nil {
		return string(*job.Spec.CompletionMode)
	}
	return string(batchv1.NonIndexedCompletion)
}

// BackoffLimitLabel returns the backoffLimit label of the finished-indexes
// metric: perIndex for a Job with backoffLimitPerIndex, global otherwise.
func BackoffLimitLabel(job *batchv1.Job) string {
	if job.Spec.BackoffLimitPerIndex != nil {
		return "perIndex"
	}
	return "global"
}

func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

// knownMode tells whether this controller knows how to run the Job's
// completion mode.
func knownMode(job *batchv1.Job) bool {
	m := job.Spec.CompletionMode
	return m == nil || *m == batchv1.NonIndexedCompletion || *m == batchv1.IndexedCompletion
}
