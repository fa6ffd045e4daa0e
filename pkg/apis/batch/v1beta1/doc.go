// +k8s:deepcopy-gen=package
// +k8s:conversion-gen=github.com/batch-apiserver/batch-apiserver/pkg/apis/batch
// +k8s:defaulter-gen=TypeMeta
// +k8s:openapi-gen=true
// +k8s:prerelease-lifecycle-gen=true
// +k8s:openapi-model-package=dev.jobs.batch.v1beta1
// +groupName=batch.jobs.dev

// Package v1beta1 is the v1beta1 version of the batch.jobs.dev API.
package v1beta1
