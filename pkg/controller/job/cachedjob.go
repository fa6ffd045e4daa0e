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

package job

import (
	corev1 "k8s.io/api/core/v1"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// TrimForCache is the transform of the Job informer the controller reads.
// That cache holds every Job the server stores, in the same process as the
// watch cache, and on a busy cluster nearly all of them are finished (the
// history) or run by another controller. Of those Jobs the controller reads
// the metadata, the selector, spec.managedBy, the TTL and the status; it
// creates no Pod for them, so their Pod template, about half of a decoded
// Job, is dropped. Every Job also loses its managedFields, which the
// controller never reads (a status update sent without them keeps the
// stored ones).
//
// A Job kept without its template never needs it again: a finished Job
// cannot leave its terminal state, spec.managedBy cannot change, and any
// later version that is neither comes through the informer whole.
// Anything but a Job is returned as it is.
func TrimForCache(obj any) (any, error) {
	job, ok := obj.(*batchv1.Job)
	if !ok {
		return obj, nil
	}
	job.ManagedFields = nil
	if decide.IsFinished(job) || isExternal(job) {
		job.Spec.Template = corev1.PodTemplateSpec{}
	}
	return job, nil
}
