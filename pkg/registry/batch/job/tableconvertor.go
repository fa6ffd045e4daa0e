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
	"context"
	"fmt"
	"slices"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/apiserver/pkg/registry/rest"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

// jobColumnDefinitions are the columns kube-apiserver 1.37 serves for
// batch/v1 Jobs (pkg/printers/internalversion AddHandlers), every one of type
// string, followed by our wide MANAGED-BY column. The descriptions come from
// the same swagger docs so that clients see the same text.
var jobColumnDefinitions = func() []metav1.TableColumnDefinition {
	metaDocs := metav1.ObjectMeta{}.SwaggerDoc()
	const wide = 1 // the priority of the columns `kubectl get -o wide` adds
	columns := []metav1.TableColumnDefinition{
		{Name: "Name", Format: "name", Description: metaDocs["name"]},
		{Name: "Status", Description: "Status of the job."},
		{Name: "Completions", Description: batchv1.JobStatus{}.SwaggerDoc()["succeeded"]},
		{Name: "Duration", Description: "Time required to complete the job."},
		{Name: "Age", Description: metaDocs["creationTimestamp"]},
		{Name: "Containers", Priority: wide, Description: "Names of each container in the template."},
		{Name: "Images", Priority: wide, Description: "Images referenced by each container in the template."},
		{Name: "Selector", Priority: wide, Description: batchv1.JobSpec{}.SwaggerDoc()["selector"]},
		// Ours alone (docs/deviations.md): which controller runs the Job, so
		// that a Job left to a controller the cluster does not run shows.
		{Name: "Managed-By", Priority: wide, Description: batchv1.JobSpec{}.SwaggerDoc()["managedBy"]},
	}
	for i := range columns {
		columns[i].Type = "string"
	}
	return columns
}()

// tableConvertor renders Jobs and JobLists as the metav1.Table that
// kube-apiserver returns for batch/v1 Jobs. Time comes from clock so that
// AGE and DURATION are deterministic in tests.
type tableConvertor struct {
	clock clock.PassiveClock
}

var _ rest.TableConvertor = tableConvertor{}

// newTableConvertor returns the TableConvertor used by the Job storage.
func newTableConvertor() rest.TableConvertor {
	return tableConvertor{clock: clock.RealClock{}}
}

// ConvertToTable implements rest.TableConvertor. Like kube-apiserver it
// always produces the wide cells (the client hides Priority 1 columns) and
// drops only the column definitions when the caller asks for no headers.
func (c tableConvertor) ConvertToTable(ctx context.Context, obj runtime.Object, tableOptions runtime.Object) (*metav1.Table, error) {
	noHeaders := false
	if tableOptions != nil {
		opts, ok := tableOptions.(*metav1.TableOptions)
		if !ok {
			return nil, fmt.Errorf("unrecognized type %T for table options, can't display tabular output", tableOptions)
		}
		if opts != nil {
			noHeaders = opts.NoHeaders
		}
	}

	table := &metav1.Table{}
	switch o := obj.(type) {
	case *batch.Job:
		table.ResourceVersion = o.ResourceVersion
		table.Rows = []metav1.TableRow{c.jobRow(o)}
	case *batch.JobList:
		table.ResourceVersion = o.ResourceVersion
		table.Continue = o.Continue
		table.RemainingItemCount = o.RemainingItemCount
		// Non-nil even when empty, so an empty list serializes "rows": [] as upstream does.
		table.Rows = make([]metav1.TableRow, 0, len(o.Items))
		for i := range o.Items {
			table.Rows = append(table.Rows, c.jobRow(&o.Items[i]))
		}
	default:
		return nil, fmt.Errorf("no table handler registered for this type %T", obj)
	}
	if !noHeaders {
		// A copy, so a caller that edits the table cannot change the columns of later tables.
		table.ColumnDefinitions = slices.Clone(jobColumnDefinitions)
	}
	return table, nil
}

// jobRow builds the cells NAME, STATUS, COMPLETIONS, DURATION, AGE,
// CONTAINERS, IMAGES, SELECTOR, MANAGED-BY for one Job. The row keeps the
// object so the API server can attach it (or its metadata) for -o wide and
// --show-labels.
func (c tableConvertor) jobRow(job *batch.Job) metav1.TableRow {
	names, images := containerCells(job.Spec.Template.Spec.Containers)
	return metav1.TableRow{
		Cells: []any{
			job.Name,
			jobStatus(job),
			jobCompletions(job),
			c.jobDuration(job),
			c.timestampSince(job.CreationTimestamp),
			names,
			images,
			metav1.FormatLabelSelector(job.Spec.Selector),
			// Shown as stored, the reserved kubernetes.io/job-controller
			// too; empty when unset.
			ptr.Deref(job.Spec.ManagedBy, ""),
		},
		Object: runtime.RawExtension{Object: job},
	}
}

// jobStatus is the STATUS cell. The order is kube-apiserver 1.37's printJob:
// the terminal conditions win over deletion, deletion over suspension, and
// the interim FailureTarget/SuccessCriteriaMet conditions come last.
func jobStatus(job *batch.Job) string {
	conds := job.Status.Conditions
	switch {
	case jobConditionTrue(conds, batch.JobComplete):
		return "Complete"
	case jobConditionTrue(conds, batch.JobFailed):
		return "Failed"
	case job.DeletionTimestamp != nil:
		return "Terminating"
	case jobConditionTrue(conds, batch.JobSuspended):
		return "Suspended"
	case jobConditionTrue(conds, batch.JobFailureTarget):
		return "FailureTarget"
	case jobConditionTrue(conds, batch.JobSuccessCriteriaMet):
		return "SuccessCriteriaMet"
	default:
		return "Running"
	}
}

// jobConditionTrue reports whether the first condition of type t is True.
// Upstream looks only at the first condition of a type, so a later duplicate
// must not change the answer.
func jobConditionTrue(conds []batch.JobCondition, t batch.JobConditionType) bool {
	for _, cond := range conds {
		if cond.Type == t {
			return cond.Status == corev1.ConditionTrue
		}
	}
	return false
}

// jobCompletions is the COMPLETIONS cell: succeeded out of completions, or,
// for a work-queue Job without completions, out of one success, naming the
// parallelism when more than one pod runs at a time. Indexed Jobs always have
// completions set, so they take the first form.
func jobCompletions(job *batch.Job) string {
	if job.Spec.Completions != nil {
		return fmt.Sprintf("%d/%d", job.Status.Succeeded, *job.Spec.Completions)
	}
	if job.Spec.Parallelism != nil && *job.Spec.Parallelism > 1 {
		return fmt.Sprintf("%d/1 of %d", job.Status.Succeeded, *job.Spec.Parallelism)
	}
	return fmt.Sprintf("%d/1", job.Status.Succeeded)
}

// jobDuration is the DURATION cell: empty before the Job starts, the time
// since it started while it runs, and the time it took once it completed.
func (c tableConvertor) jobDuration(job *batch.Job) string {
	switch {
	case job.Status.StartTime == nil:
		return ""
	case job.Status.CompletionTime == nil:
		return duration.HumanDuration(c.clock.Since(job.Status.StartTime.Time))
	default:
		return duration.HumanDuration(job.Status.CompletionTime.Sub(job.Status.StartTime.Time))
	}
}

// timestampSince is upstream's translateTimestampSince with an injected clock.
func (c tableConvertor) timestampSince(ts metav1.Time) string {
	if ts.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(c.clock.Since(ts.Time))
}

// containerCells joins the container names and images of the pod template
// with commas, in template order.
func containerCells(containers []corev1.Container) (names, images string) {
	n := make([]string, 0, len(containers))
	i := make([]string, 0, len(containers))
	for _, ctr := range containers {
		n = append(n, ctr.Name)
		i = append(i, ctr.Image)
	}
	return strings.Join(n, ","), strings.Join(i, ",")
}
