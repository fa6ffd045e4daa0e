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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/clock"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

// tableNow is the fake clock's time in every table test.
var tableNow = time.Date(2026, time.March, 4, 12, 0, 0, 0, time.UTC)

// tableJobBuilder builds Jobs for the table tests. It is separate from other
// fixture builders in this package so the tests need no shared helpers.
type tableJobBuilder struct{ job batch.Job }

// tableJob starts a Job created three hours before tableNow that has not
// started yet.
func tableJob(name string) *tableJobBuilder {
	return &tableJobBuilder{job: batch.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:              name,
			Namespace:         "default",
			CreationTimestamp: metav1.NewTime(tableNow.Add(-3 * time.Hour)),
		},
	}}
}

func (b *tableJobBuilder) Obj() *batch.Job { return &b.job }

func (b *tableJobBuilder) ResourceVersion(rv string) *tableJobBuilder {
	b.job.ResourceVersion = rv
	return b
}

func (b *tableJobBuilder) CreatedAgo(d time.Duration) *tableJobBuilder {
	b.job.CreationTimestamp = metav1.NewTime(tableNow.Add(-d))
	return b
}

func (b *tableJobBuilder) NoCreationTimestamp() *tableJobBuilder {
	b.job.CreationTimestamp = metav1.Time{}
	return b
}

func (b *tableJobBuilder) Deleting() *tableJobBuilder {
	b.job.DeletionTimestamp = ptr.To(metav1.NewTime(tableNow))
	return b
}

func (b *tableJobBuilder) Completions(n int32) *tableJobBuilder {
	b.job.Spec.Completions = &n
	return b
}

func (b *tableJobBuilder) Parallelism(n int32) *tableJobBuilder {
	b.job.Spec.Parallelism = &n
	return b
}

func (b *tableJobBuilder) Indexed(completions int32) *tableJobBuilder {
	b.job.Spec.CompletionMode = ptr.To(batch.IndexedCompletion)
	return b.Completions(completions)
}

func (b *tableJobBuilder) Selector(s *metav1.LabelSelector) *tableJobBuilder {
	b.job.Spec.Selector = s
	return b
}

func (b *tableJobBuilder) ManagedBy(controller string) *tableJobBuilder {
	b.job.Spec.ManagedBy = &controller
	return b
}

func (b *tableJobBuilder) Container(name, image string) *tableJobBuilder {
	b.job.Spec.Template.Spec.Containers = append(b.job.Spec.Template.Spec.Containers, corev1.Container{Name: name, Image: image})
	return b
}

func (b *tableJobBuilder) Succeeded(n int32) *tableJobBuilder {
	b.job.Status.Succeeded = n
	return b
}

func (b *tableJobBuilder) StartedAgo(d time.Duration) *tableJobBuilder {
	b.job.Status.StartTime = ptr.To(metav1.NewTime(tableNow.Add(-d)))
	return b
}

// Took sets the completion time d after the start time; call StartedAgo first.
func (b *tableJobBuilder) Took(d time.Duration) *tableJobBuilder {
	b.job.Status.CompletionTime = ptr.To(metav1.NewTime(b.job.Status.StartTime.Add(d)))
	return b
}

func (b *tableJobBuilder) Condition(t batch.JobConditionType, s corev1.ConditionStatus) *tableJobBuilder {
	b.job.Status.Conditions = append(b.job.Status.Conditions, batch.JobCondition{Type: t, Status: s})
	return b
}

func newTestTableConvertor() tableConvertor {
	return tableConvertor{clock: clocktesting.NewFakePassiveClock(tableNow)}
}

// wantColumns are the column definitions of kube-apiserver 1.37 for
// batch/v1 Jobs and our own MANAGED-BY, written out so a drift in the
// swagger docs we borrow shows up.
var wantColumns = []metav1.TableColumnDefinition{
	{Name: "Name", Type: "string", Format: "name", Description: "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names"},
	{Name: "Status", Type: "string", Description: "Status of the job."},
	{Name: "Completions", Type: "string", Description: "The number of pods which reached phase Succeeded. The value increases monotonically for a given spec. However, it may decrease in reaction to scale down of elastic indexed jobs."},
	{Name: "Duration", Type: "string", Description: "Time required to complete the job."},
	{Name: "Age", Type: "string", Description: "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"},
	{Name: "Containers", Type: "string", Priority: 1, Description: "Names of each container in the template."},
	{Name: "Images", Type: "string", Priority: 1, Description: "Images referenced by each container in the template."},
	{Name: "Selector", Type: "string", Priority: 1, Description: "A label query over pods that should match the pod count. Normally, the system sets this field for you. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/labels/#label-selectors"},
	{Name: "Managed-By", Type: "string", Priority: 1, Description: "ManagedBy field indicates the controller that manages a Job. The k8s Job controller reconciles jobs which don't have this field at all or the field value is the reserved string `kubernetes.io/job-controller`, but skips reconciling Jobs with a custom value for this field. The value must be a valid domain-prefixed path (e.g. acme.io/foo) - all characters before the first \"/\" must be a valid subdomain as defined by RFC 1123. All characters trailing the first \"/\" must be valid HTTP Path characters as defined by RFC 3986. The value cannot exceed 63 characters. This field is immutable."},
}

func TestConvertToTableJobRow(t *testing.T) {
	const (
		isTrue  = corev1.ConditionTrue
		isFalse = corev1.ConditionFalse
	)
	cases := map[string]struct {
		job *batch.Job
		// NAME, STATUS, COMPLETIONS, DURATION, AGE, CONTAINERS, IMAGES, SELECTOR, MANAGED-BY
		want []any
	}{
		// STATUS, one case per value.
		"status Running without conditions": {
			job:  tableJob("j").Obj(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status Complete": {
			job:  tableJob("j").Condition(batch.JobComplete, isTrue).Obj(),
			want: []any{"j", "Complete", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status Failed": {
			job:  tableJob("j").Condition(batch.JobFailed, isTrue).Obj(),
			want: []any{"j", "Failed", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status Terminating": {
			job:  tableJob("j").Deleting().Obj(),
			want: []any{"j", "Terminating", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status Suspended": {
			job:  tableJob("j").Condition(batch.JobSuspended, isTrue).Obj(),
			want: []any{"j", "Suspended", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status FailureTarget": {
			job:  tableJob("j").Condition(batch.JobFailureTarget, isTrue).Obj(),
			want: []any{"j", "FailureTarget", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status SuccessCriteriaMet": {
			job:  tableJob("j").Condition(batch.JobSuccessCriteriaMet, isTrue).Obj(),
			want: []any{"j", "SuccessCriteriaMet", "0/1", "", "3h", "", "", "<none>", ""},
		},

		// STATUS precedence and condition status.
		"status Running when every condition is False": {
			job: tableJob("j").
				Condition(batch.JobComplete, isFalse).
				Condition(batch.JobFailed, isFalse).
				Condition(batch.JobSuspended, isFalse).
				Condition(batch.JobFailureTarget, isFalse).
				Condition(batch.JobSuccessCriteriaMet, isFalse).Obj(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status Running when Suspended is Unknown": {
			job:  tableJob("j").Condition(batch.JobSuspended, corev1.ConditionUnknown).Obj(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"Complete wins over Failed, deletion and SuccessCriteriaMet": {
			job: tableJob("j").Deleting().
				Condition(batch.JobSuccessCriteriaMet, isTrue).
				Condition(batch.JobFailed, isTrue).
				Condition(batch.JobComplete, isTrue).Obj(),
			want: []any{"j", "Complete", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"Failed wins over deletion and FailureTarget": {
			job: tableJob("j").Deleting().
				Condition(batch.JobFailureTarget, isTrue).
				Condition(batch.JobFailed, isTrue).Obj(),
			want: []any{"j", "Failed", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"deletion wins over Suspended": {
			job:  tableJob("j").Deleting().Condition(batch.JobSuspended, isTrue).Obj(),
			want: []any{"j", "Terminating", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"Suspended wins over FailureTarget": {
			job: tableJob("j").
				Condition(batch.JobFailureTarget, isTrue).
				Condition(batch.JobSuspended, isTrue).Obj(),
			want: []any{"j", "Suspended", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"FailureTarget wins over SuccessCriteriaMet": {
			job: tableJob("j").
				Condition(batch.JobSuccessCriteriaMet, isTrue).
				Condition(batch.JobFailureTarget, isTrue).Obj(),
			want: []any{"j", "FailureTarget", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"only the first condition of a type counts": {
			job: tableJob("j").
				Condition(batch.JobComplete, isFalse).
				Condition(batch.JobComplete, isTrue).Obj(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},

		// COMPLETIONS.
		"completions set": {
			job:  tableJob("j").Completions(5).Parallelism(2).Succeeded(3).Obj(),
			want: []any{"j", "Running", "3/5", "", "3h", "", "", "<none>", ""},
		},
		"completions zero": {
			job:  tableJob("j").Completions(0).Obj(),
			want: []any{"j", "Running", "0/0", "", "3h", "", "", "<none>", ""},
		},
		"no completions, no parallelism": {
			job:  tableJob("j").Succeeded(1).Obj(),
			want: []any{"j", "Running", "1/1", "", "3h", "", "", "<none>", ""},
		},
		"no completions, parallelism 1": {
			job:  tableJob("j").Parallelism(1).Obj(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"no completions, parallelism 0": {
			job:  tableJob("j").Parallelism(0).Obj(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"no completions, parallelism 4": {
			job:  tableJob("j").Parallelism(4).Succeeded(2).Obj(),
			want: []any{"j", "Running", "2/1 of 4", "", "3h", "", "", "<none>", ""},
		},
		"indexed": {
			job:  tableJob("j").Indexed(3).Parallelism(3).Succeeded(2).Obj(),
			want: []any{"j", "Running", "2/3", "", "3h", "", "", "<none>", ""},
		},

		// DURATION and AGE.
		"duration running counts to now": {
			job:  tableJob("j").StartedAgo(90 * time.Second).Obj(),
			want: []any{"j", "Running", "0/1", "90s", "3h", "", "", "<none>", ""},
		},
		"duration running for minutes": {
			job:  tableJob("j").StartedAgo(7*time.Minute + 5*time.Second).Obj(),
			want: []any{"j", "Running", "0/1", "7m5s", "3h", "", "", "<none>", ""},
		},
		"duration finished counts to completion, not now": {
			job: tableJob("j").StartedAgo(2*time.Hour).Took(5*time.Minute).
				Completions(1).Succeeded(1).Condition(batch.JobComplete, isTrue).Obj(),
			want: []any{"j", "Complete", "1/1", "5m", "3h", "", "", "<none>", ""},
		},
		"duration not started is empty even with a completion time": {
			job: func() *batch.Job {
				j := tableJob("j").Obj()
				j.Status.CompletionTime = ptr.To(metav1.NewTime(tableNow))
				return j
			}(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"age in days": {
			job:  tableJob("j").CreatedAgo(50 * time.Hour).Obj(),
			want: []any{"j", "Running", "0/1", "", "2d2h", "", "", "<none>", ""},
		},
		"age unknown without creation timestamp": {
			job:  tableJob("j").NoCreationTimestamp().Obj(),
			want: []any{"j", "Running", "0/1", "", "<unknown>", "", "", "<none>", ""},
		},

		// Wide columns.
		"wide one container": {
			job: tableJob("j").Container("main", "busybox:1.36").
				Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "0a1b"}}).Obj(),
			want: []any{"j", "Running", "0/1", "", "3h", "main", "busybox:1.36", "batch.kubernetes.io/controller-uid=0a1b", ""},
		},
		"wide several containers and a selector with expressions": {
			job: tableJob("j").Container("main", "busybox").Container("sidecar", "envoy:v1").
				Selector(&metav1.LabelSelector{
					MatchLabels: map[string]string{"job-name": "j", "app": "x"},
					MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"b", "a"}},
					},
				}).Obj(),
			want: []any{"j", "Running", "0/1", "", "3h", "main,sidecar", "busybox,envoy:v1", "app=x,job-name=j,tier in (a,b)", ""},
		},
		"wide empty selector": {
			job:  tableJob("j").Selector(&metav1.LabelSelector{}).Obj(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"wide invalid selector": {
			job: tableJob("j").Selector(&metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}},
			}).Obj(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<error>", ""},
		},

		// MANAGED-BY shows spec.managedBy as it is stored.
		"managed-by unset is empty": {
			job:  tableJob("j").Container("main", "busybox").Obj(),
			want: []any{"j", "Running", "0/1", "", "3h", "main", "busybox", "<none>", ""},
		},
		"managed-by the reserved built-in controller": {
			job:  tableJob("j").ManagedBy("kubernetes.io/job-controller").Obj(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", "kubernetes.io/job-controller"},
		},
		"managed-by an external controller": {
			job:  tableJob("j").ManagedBy("kueue.x-k8s.io/multikueue").Condition(batch.JobSuspended, isTrue).Obj(),
			want: []any{"j", "Suspended", "0/1", "", "3h", "", "", "<none>", "kueue.x-k8s.io/multikueue"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := newTestTableConvertor().ConvertToTable(context.Background(), tc.job, nil)
			if err != nil {
				t.Fatalf("ConvertToTable: %v", err)
			}
			want := []metav1.TableRow{{Cells: tc.want, Object: runtime.RawExtension{Object: tc.job}}}
			if diff := cmp.Diff(want, got.Rows); diff != "" {
				t.Errorf("rows (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConvertToTable(t *testing.T) {
	running := tableJob("running").ResourceVersion("11").Container("c", "img").StartedAgo(time.Minute).Obj()
	done := tableJob("done").ResourceVersion("12").ManagedBy("example.com/runner").Completions(2).Succeeded(2).
		StartedAgo(time.Hour).Took(10*time.Minute).Condition(batch.JobComplete, corev1.ConditionTrue).Obj()
	list := &batch.JobList{
		ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "token", RemainingItemCount: ptr.To[int64](7)},
		Items:    []batch.Job{*running, *done},
	}
	listRows := []metav1.TableRow{
		{Cells: []any{"running", "Running", "0/1", "60s", "3h", "c", "img", "<none>", ""}, Object: runtime.RawExtension{Object: &list.Items[0]}},
		{Cells: []any{"done", "Complete", "2/2", "10m", "3h", "", "", "<none>", "example.com/runner"}, Object: runtime.RawExtension{Object: &list.Items[1]}},
	}

	cases := map[string]struct {
		obj     runtime.Object
		options runtime.Object
		want    *metav1.Table
	}{
		"job": {
			obj: running,
			want: &metav1.Table{
				ListMeta:          metav1.ListMeta{ResourceVersion: "11"},
				ColumnDefinitions: wantColumns,
				Rows:              []metav1.TableRow{{Cells: []any{"running", "Running", "0/1", "60s", "3h", "c", "img", "<none>", ""}, Object: runtime.RawExtension{Object: running}}},
			},
		},
		"job with headers requested": {
			obj:     running,
			options: &metav1.TableOptions{NoHeaders: false},
			want: &metav1.Table{
				ListMeta:          metav1.ListMeta{ResourceVersion: "11"},
				ColumnDefinitions: wantColumns,
				Rows:              []metav1.TableRow{{Cells: []any{"running", "Running", "0/1", "60s", "3h", "c", "img", "<none>", ""}, Object: runtime.RawExtension{Object: running}}},
			},
		},
		"job with nil table options pointer": {
			obj:     running,
			options: (*metav1.TableOptions)(nil),
			want: &metav1.Table{
				ListMeta:          metav1.ListMeta{ResourceVersion: "11"},
				ColumnDefinitions: wantColumns,
				Rows:              []metav1.TableRow{{Cells: []any{"running", "Running", "0/1", "60s", "3h", "c", "img", "<none>", ""}, Object: runtime.RawExtension{Object: running}}},
			},
		},
		"job without headers": {
			obj:     running,
			options: &metav1.TableOptions{NoHeaders: true},
			want: &metav1.Table{
				ListMeta: metav1.ListMeta{ResourceVersion: "11"},
				Rows:     []metav1.TableRow{{Cells: []any{"running", "Running", "0/1", "60s", "3h", "c", "img", "<none>", ""}, Object: runtime.RawExtension{Object: running}}},
			},
		},
		"list copies list metadata": {
			obj: list,
			want: &metav1.Table{
				ListMeta:          metav1.ListMeta{ResourceVersion: "42", Continue: "token", RemainingItemCount: ptr.To[int64](7)},
				ColumnDefinitions: wantColumns,
				Rows:              listRows,
			},
		},
		"list without headers": {
			obj:     list,
			options: &metav1.TableOptions{NoHeaders: true},
			want: &metav1.Table{
				ListMeta: metav1.ListMeta{ResourceVersion: "42", Continue: "token", RemainingItemCount: ptr.To[int64](7)},
				Rows:     listRows,
			},
		},
		"empty list has empty, not nil, rows": {
			obj: &batch.JobList{ListMeta: metav1.ListMeta{ResourceVersion: "5"}},
			want: &metav1.Table{
				ListMeta:          metav1.ListMeta{ResourceVersion: "5"},
				ColumnDefinitions: wantColumns,
				Rows:              []metav1.TableRow{},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := newTestTableConvertor().ConvertToTable(context.Background(), tc.obj, tc.options)
			if err != nil {
				t.Fatalf("ConvertToTable: %v", err)
			}
			// Nil and empty rows serialize differently, so tell them apart.
			if (got.Rows == nil) != (tc.want.Rows == nil) {
				t.Errorf("rows nil = %v, want %v", got.Rows == nil, tc.want.Rows == nil)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("table (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConvertToTableRejects(t *testing.T) {
	cases := map[string]struct {
		obj     runtime.Object
		options runtime.Object
	}{
		"object that is not a job": {
			obj: &corev1.Pod{},
		},
		"table options of another type": {
			obj:     tableJob("j").Obj(),
			options: &metav1.ListOptions{},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := newTestTableConvertor().ConvertToTable(context.Background(), tc.obj, tc.options)
			if err == nil {
				t.Fatalf("ConvertToTable returned no error and table %v", got)
			}
			if got != nil {
				t.Errorf("ConvertToTable returned a table with its error: %v", got)
			}
		})
	}
}

func TestConvertToTableDoesNotShareColumns(t *testing.T) {
	c := newTestTableConvertor()
	first, err := c.ConvertToTable(context.Background(), tableJob("a").Obj(), nil)
	if err != nil {
		t.Fatalf("ConvertToTable: %v", err)
	}
	first.ColumnDefinitions[0].Name = "changed"
	second, err := c.ConvertToTable(context.Background(), tableJob("b").Obj(), nil)
	if err != nil {
		t.Fatalf("ConvertToTable: %v", err)
	}
	if diff := cmp.Diff(wantColumns, second.ColumnDefinitions); diff != "" {
		t.Errorf("columns after a caller edited an earlier table (-want +got):\n%s", diff)
	}
}

func TestNewTableConvertorUsesRealClock(t *testing.T) {
	tc, ok := newTableConvertor().(tableConvertor)
	if !ok {
		t.Fatalf("newTableConvertor returned %T, want tableConvertor", newTableConvertor())
	}
	if diff := cmp.Diff(clock.PassiveClock(clock.RealClock{}), tc.clock); diff != "" {
		t.Errorf("clock (-want +got):\n%s", diff)
	}
}
