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
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

// multiKueueOriginLabel is the label Kueue's MultiKueue puts on the copy of
// a manager cluster's Job it creates in a worker cluster.
const multiKueueOriginLabel = "kueue.x-k8s.io/multikueue-origin"

// forgetCopiedSelector lets a worker cluster accept the verbatim copy of a
// Job that MultiKueue's generic adapter makes: the copy still selects, and
// its template still carries, the controller-uid of the manager's Job, so
// batch/v1's rules would refuse it as a selector "not auto-generated".
// Only for a Job with MultiKueue's origin label, no manualSelector, and a
// selector that is exactly a generated one of another UID (one
// controller-uid label, which the template's controller-uid labels repeat),
// the stale selector and labels are dropped, and the Job gets its own as if
// it had been created without them. Every other Job is judged as batch/v1
// judges it (docs/deviations.md).
func forgetCopiedSelector(job *batch.Job) {
	if _, copied := job.Labels[multiKueueOriginLabel]; !copied || ptr.Deref(job.Spec.ManualSelector, false) {
		return
	}
	selector := job.Spec.Selector
	if selector == nil || len(selector.MatchExpressions) > 0 || len(selector.MatchLabels) != 1 {
		return
	}
	uid, found := selector.MatchLabels[batch.ControllerUIDLabel]
	if !found || uid == string(job.UID) {
		return
	}
	labels := job.Spec.Template.Labels
	if labels[batch.ControllerUIDLabel] != uid {
		return
	}
	if legacy, found := labels[batch.LegacyControllerUIDLabel]; found && legacy != uid {
		return
	}
	job.Spec.Selector = nil
	delete(labels, batch.ControllerUIDLabel)
	delete(labels, batch.LegacyControllerUIDLabel)
}
