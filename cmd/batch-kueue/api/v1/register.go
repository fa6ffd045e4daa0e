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

package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// GroupName is the server's API group.
const GroupName = "batch.jobs.dev"

// SchemeGroupVersion is the version this package's types are served in.
var SchemeGroupVersion = schema.GroupVersion{Group: GroupName, Version: "v1"}

// GroupVersionKind is the Job's kind, as Kueue's configuration names it
// ("Job.v1.batch.jobs.dev").
var GroupVersionKind = SchemeGroupVersion.WithKind("Job")

// AddToScheme registers Job and JobList, and the meta types of the version.
func AddToScheme(scheme *runtime.Scheme) error {
	scheme.AddKnownTypes(SchemeGroupVersion, &Job{}, &JobList{})
	metav1.AddToGroupVersion(scheme, SchemeGroupVersion)
	return nil
}
