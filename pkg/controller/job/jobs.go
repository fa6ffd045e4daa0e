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
