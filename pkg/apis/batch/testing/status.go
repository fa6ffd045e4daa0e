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

package batchtesting

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// StatusBuilder builds a v1 Job status, on its own (the status a test
// expects to be written) or through JobBuilder.Status.
type StatusBuilder struct{ status *batchv1.JobStatus }

// MakeStatus starts an empty status, as a new Job has.
func MakeStatus() *StatusBuilder { return &StatusBuilder{status: &batchv1.JobStatus{}} }

// Obj returns a copy of the status built so far.
func (b *StatusBuilder) Obj() *batchv1.JobStatus { return b.status.DeepCopy() }

// StartTime sets startTime.
func (b *StatusBuilder) StartTime(t time.Time) *StatusBuilder {
	b.status.StartTime = ptr.To(metav1.NewTime(t))
	return b
}

// CompletionTime sets completionTime.
func (b *StatusBuilder) CompletionTime(t time.Time) *StatusBuilder {
	b.status.CompletionTime = ptr.To(metav1.NewTime(t))
	return b
}

// Active sets active.
func (b *StatusBuilder) Active(n int32) *StatusBuilder { b.status.Active = n; return b }

// Ready sets ready.
func (b *StatusBuilder) Ready(n int32) *StatusBuilder { b.status.Ready = ptr.To(n); return b }

// Terminating sets terminating.
func (b *StatusBuilder) Terminating(n int32) *StatusBuilder {
	b.status.Terminating = ptr.To(n)
	return b
}

// Succeeded sets succeeded.
func (b *StatusBuilder) Succeeded(n int32) *StatusBuilder { b.status.Succeeded = n; return b }

// Failed sets failed.
func (b *StatusBuilder) Failed(n int32) *StatusBuilder { b.status.Failed = n; return b }

// CompletedIndexes sets completedIndexes.
func (b *StatusBuilder) CompletedIndexes(ix string) *StatusBuilder {
	b.status.CompletedIndexes = ix
	return b
}

// FailedIndexes sets failedIndexes.
func (b *StatusBuilder) FailedIndexes(ix string) *StatusBuilder {
	b.status.FailedIndexes = ptr.To(ix)
	return b
}

// Uncounted sets uncountedTerminatedPods to the UIDs; an empty list is
// left nil, as the controller leaves it.
func (b *StatusBuilder) Uncounted(succeeded, failed []types.UID) *StatusBuilder {
	u := &batchv1.UncountedTerminatedPods{}
	u.Succeeded = append(u.Succeeded, succeeded...)
	u.Failed = append(u.Failed, failed...)
	b.status.UncountedTerminatedPods = u
	return b
}

// Condition appends a condition.
func (b *StatusBuilder) Condition(c batchv1.JobCondition) *StatusBuilder {
	b.status.Conditions = append(b.status.Conditions, c)
	return b
}

// Conditions appends a True condition, with nothing else set, of each type.
func (b *StatusBuilder) Conditions(types ...batchv1.JobConditionType) *StatusBuilder {
	for _, t := range types {
		b.Condition(batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue})
	}
	return b
}
