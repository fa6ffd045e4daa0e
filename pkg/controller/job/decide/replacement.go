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
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
)

// podReplacementPolicy decides two things: whether a Pod that is being
// deleted already counts as failed (TerminatingOrFailed, the default), or
// only once it reaches the Failed phase (Failed); and, with Failed, that a
// terminating Pod still holds its slot, so that its replacement waits.

// waitsForFailure tells whether the Job replaces a Pod only once it failed.
func waitsForFailure(job *batchv1.Job) bool {
	return ptr.Deref(job.Spec.PodReplacementPolicy, batchv1.TerminatingOrFailed) == batchv1.Failed
}

// podFailed tells whether the Job counts p as failed. A deleted Pod that did
// not succeed counts under TerminatingOrFailed: an orphaned Pod removed by
// the Pod garbage collector may never be given the Failed phase.
func podFailed(job *batchv1.Job, p *corev1.Pod) bool {
	switch {
	case p.Status.Phase == corev1.PodFailed:
		return true
	case waitsForFailure(job):
		return false
	default:
		return p.DeletionTimestamp != nil && p.Status.Phase != corev1.PodSucceeded
	}
}

// slotsHeldByTerminating is how many of the Job's slots the terminating
// Pods still hold.
func slotsHeldByTerminating(job *batchv1.Job, terminating int32) int32 {
	if waitsForFailure(job) {
		return terminating
	}
	return 0
}

// creationReason is the job_pods_creation_total "reason" label of the Pods
// one sync creates, from the Job's failed count and terminating Pods at
// the start of the sync.
func creationReason(job *batchv1.Job, failed, terminating int32) string {
	switch {
	case waitsForFailure(job) && failed > 0:
		return metrics.PodRecreateFailed
	case failed > 0 || terminating > 0:
		return metrics.PodRecreateTerminatingOrFailed
	default:
		return metrics.PodCreateNew
	}
}
