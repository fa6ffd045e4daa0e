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
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// The package's tests build their Jobs and Pods with the module's builders
// in pkg/apis/batch/testing: add methods there, never a second builder.
// makeJob and makePod state this package's defaults on top of them.

// Short names for the builders.
type (
	jobBuilder = batchtesting.JobBuilder
	podBuilder = batchtesting.PodBuilder
)

// podCreated is when every Pod makePod builds was created.
var podCreated = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// makeJob returns a NonIndexed Job in namespace "ns", resourceVersion 1,
// with one completion, parallelism 1, backoffLimit 6, a generated selector
// and one container.
func makeJob(name string) *jobBuilder {
	return batchtesting.MakeJob(name).Namespace("ns").ResourceVersion("1")
}

// makePod returns a pending Pod of job, with the job's template labels and
// spec, the tracking finalizer and UID "<name>-uid".
func makePod(name string, job *batchv1.Job) *podBuilder {
	return batchtesting.MakePod(name).Of(job).UID(types.UID(name + "-uid")).CreationTimestamp(podCreated)
}

// readyCondition is the Ready=True condition of a running Pod.
var readyCondition = corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
