package v1beta1

import (
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

func addConversionFuncs(scheme *runtime.Scheme) error {
	return scheme.AddFieldLabelConversionFunc(SchemeGroupVersion.WithKind("Job"), batch.JobFieldLabelConversion)
}
