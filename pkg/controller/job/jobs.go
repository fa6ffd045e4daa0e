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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// jobKind is the kind a Pod's controller reference names for our Jobs.
var jobKind = batchv1.SchemeGroupVersion.WithKind("Job")

// keyOf is the queue key of a Job.
func keyOf(job *batchv1.Job) string {
	return cache.MetaObjectToName(job).String()
}

// refersToOurJob tells whether an owner reference names a batch.jobs.dev
// Job (of any version), as opposed to a batch/v1 Job of the host cluster.
func refersToOurJob(ref *metav1.OwnerReference) bool {
	if ref == nil || ref.Kind != jobKind.Kind {
		return false
	}
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == jobKind.Group
}

// isExternal tells whether another controller manages the Job.
func isExternal(job *batchv1.Job) bool {
	_, external := decide.ExternalManager(job)
	return external
}
