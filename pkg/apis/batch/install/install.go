// Package install registers the batch.jobs.dev API group into a scheme.
package install

import (
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	v1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1beta1"
)

// Install registers the internal and every served version of the API group
// into the scheme, with v1 preferred.
func Install(scheme *runtime.Scheme) {
	utilruntime.Must(batch.AddToScheme(scheme))
	utilruntime.Must(v1beta1.AddToScheme(scheme))
	utilruntime.Must(v1.AddToScheme(scheme))
	utilruntime.Must(scheme.SetVersionPriority(v1.SchemeGroupVersion, v1beta1.SchemeGroupVersion))
}
