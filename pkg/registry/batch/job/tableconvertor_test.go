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
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// tableNow is the fake clock's time in every table test.
var tableNow = time.Date(2026, time.March, 4, 12, 0, 0, 0, time.UTC)

// tableJob starts a Job created three hours before tableNow that has not
// started yet, with an empty spec: the table shows only what a row sets.
func tableJob(name string) *batchtesting.JobBuilder {
	return batchtesting.JobFrom(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{
		Name:              name,
		Namespace:         "default",
		CreationTimestamp: metav1.NewTime(tableNow.Add(-3 * time.Hour)),
	}})
}

// withContainer adds a container of the given image to the template.
func withContainer(name, image string) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.Spec.Template.Spec.Containers = append(j.Spec.Template.Spec.Containers, corev1.Container{Name: name, Image: image})
	}
}

// took sets the completion time d after the start time, which must be set.
func took(d time.Duration) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Status.CompletionTime = ptr.To(metav1.NewTime(j.Status.StartTime.Add(d))) }
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
			job:  tableJob("j").Internal(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status Complete": {
			job:  tableJob("j").Condition(batchv1.JobCondition{Type: batchv1.JobComplete, Status: isTrue}).Internal(),
			want: []any{"j", "Complete", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status Failed": {
			job:  tableJob("j").Condition(batchv1.JobCondition{Type: batchv1.JobFailed, Status: isTrue}).Internal(),
			want: []any{"j", "Failed", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status Terminating": {
			job:  tableJob("j").Deleting(tableNow).Internal(),
			want: []any{"j", "Terminating", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status Suspended": {
			job:  tableJob("j").Condition(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: isTrue}).Internal(),
			want: []any{"j", "Suspended", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status FailureTarget": {
			job:  tableJob("j").Condition(batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: isTrue}).Internal(),
			want: []any{"j", "FailureTarget", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status SuccessCriteriaMet": {
			job:  tableJob("j").Condition(batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: isTrue}).Internal(),
			want: []any{"j", "SuccessCriteriaMet", "0/1", "", "3h", "", "", "<none>", ""},
		},

		// STATUS precedence and condition status.
		"status Running when every condition is False": {
			job: tableJob("j").
				Condition(batchv1.JobCondition{Type: batchv1.JobComplete, Status: isFalse}).
				Condition(batchv1.JobCondition{Type: batchv1.JobFailed, Status: isFalse}).
				Condition(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: isFalse}).
				Condition(batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: isFalse}).
				Condition(batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: isFalse}).Internal(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"status Running when Suspended is Unknown": {
			job:  tableJob("j").Condition(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: corev1.ConditionUnknown}).Internal(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"Complete wins over Failed, deletion and SuccessCriteriaMet": {
			job: tableJob("j").Deleting(tableNow).
				Condition(batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: isTrue}).
				Condition(batchv1.JobCondition{Type: batchv1.JobFailed, Status: isTrue}).
				Condition(batchv1.JobCondition{Type: batchv1.JobComplete, Status: isTrue}).Internal(),
			want: []any{"j", "Complete", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"Failed wins over deletion and FailureTarget": {
			job: tableJob("j").Deleting(tableNow).
				Condition(batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: isTrue}).
				Condition(batchv1.JobCondition{Type: batchv1.JobFailed, Status: isTrue}).Internal(),
			want: []any{"j", "Failed", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"deletion wins over Suspended": {
			job:  tableJob("j").Deleting(tableNow).Condition(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: isTrue}).Internal(),
			want: []any{"j", "Terminating", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"Suspended wins over FailureTarget": {
			job: tableJob("j").
				Condition(batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: isTrue}).
				Condition(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: isTrue}).Internal(),
			want: []any{"j", "Suspended", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"FailureTarget wins over SuccessCriteriaMet": {
			job: tableJob("j").
				Condition(batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: isTrue}).
				Condition(batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: isTrue}).Internal(),
			want: []any{"j", "FailureTarget", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"only the first condition of a type counts": {
			job: tableJob("j").
				Condition(batchv1.JobCondition{Type: batchv1.JobComplete, Status: isFalse}).
				Condition(batchv1.JobCondition{Type: batchv1.JobComplete, Status: isTrue}).Internal(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},

		// COMPLETIONS.
		"completions set": {
			job:  tableJob("j").Completions(5).Parallelism(2).Succeeded(3).Internal(),
			want: []any{"j", "Running", "3/5", "", "3h", "", "", "<none>", ""},
		},
		"completions zero": {
			job:  tableJob("j").Completions(0).Internal(),
			want: []any{"j", "Running", "0/0", "", "3h", "", "", "<none>", ""},
		},
		"no completions, no parallelism": {
			job:  tableJob("j").Succeeded(1).Internal(),
			want: []any{"j", "Running", "1/1", "", "3h", "", "", "<none>", ""},
		},
		"no completions, parallelism 1": {
			job:  tableJob("j").Parallelism(1).Internal(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"no completions, parallelism 0": {
			job:  tableJob("j").Parallelism(0).Internal(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"no completions, parallelism 4": {
			job:  tableJob("j").Parallelism(4).Succeeded(2).Internal(),
			want: []any{"j", "Running", "2/1 of 4", "", "3h", "", "", "<none>", ""},
		},
		"indexed": {
			job:  tableJob("j").Indexed(3).Parallelism(3).Succeeded(2).Internal(),
			want: []any{"j", "Running", "2/3", "", "3h", "", "", "<none>", ""},
		},

		// DURATION and AGE.
		"duration running counts to now": {
			job:  tableJob("j").StartTime(tableNow.Add(-90 * time.Second)).Internal(),
			want: []any{"j", "Running", "0/1", "90s", "3h", "", "", "<none>", ""},
		},
		"duration running for minutes": {
			job:  tableJob("j").StartTime(tableNow.Add(-(7*time.Minute + 5*time.Second))).Internal(),
			want: []any{"j", "Running", "0/1", "7m5s", "3h", "", "", "<none>", ""},
		},
		"duration finished counts to completion, not now": {
			job: tableJob("j").StartTime(tableNow.Add(-2 * time.Hour)).Do(took(5 * time.Minute)).
				Completions(1).Succeeded(1).Condition(batchv1.JobCondition{Type: batchv1.JobComplete, Status: isTrue}).Internal(),
			want: []any{"j", "Complete", "1/1", "5m", "3h", "", "", "<none>", ""},
		},
		"duration not started is empty even with a completion time": {
			job: func() *batch.Job {
				j := tableJob("j").Internal()
				j.Status.CompletionTime = ptr.To(metav1.NewTime(tableNow))
				return j
			}(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"age in days": {
			job:  tableJob("j").CreationTimestamp(tableNow.Add(-50 * time.Hour)).Internal(),
			want: []any{"j", "Running", "0/1", "", "2d2h", "", "", "<none>", ""},
		},
		"age unknown without creation timestamp": {
			job:  tableJob("j").CreationTimestamp(time.Time{}).Internal(),
			want: []any{"j", "Running", "0/1", "", "<unknown>", "", "", "<none>", ""},
		},

		// Wide columns.
		"wide one container": {
			job: tableJob("j").Do(withContainer("main", "busybox:1.36")).
				Selector(&metav1.LabelSelector{MatchLabels: map[string]string{"batch.kubernetes.io/controller-uid": "0a1b"}}).Internal(),
			want: []any{"j", "Running", "0/1", "", "3h", "main", "busybox:1.36", "batch.kubernetes.io/controller-uid=0a1b", ""},
		},
		"wide several containers and a selector with expressions": {
			job: tableJob("j").Do(withContainer("main", "busybox")).Do(withContainer("sidecar", "envoy:v1")).
				Selector(&metav1.LabelSelector{
					MatchLabels: map[string]string{"job-name": "j", "app": "x"},
					MatchExpressions: []metav1.LabelSelectorRequirement{
						{Key: "tier", Operator: metav1.LabelSelectorOpIn, Values: []string{"b", "a"}},
					},
				}).Internal(),
			want: []any{"j", "Running", "0/1", "", "3h", "main,sidecar", "busybox,envoy:v1", "app=x,job-name=j,tier in (a,b)", ""},
		},
		"wide empty selector": {
			job:  tableJob("j").Selector(&metav1.LabelSelector{}).Internal(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", ""},
		},
		"wide invalid selector": {
			job: tableJob("j").Selector(&metav1.LabelSelector{
				MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}},
			}).Internal(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<error>", ""},
		},

		// MANAGED-BY shows spec.managedBy as it is stored.
		"managed-by unset is empty": {
			job:  tableJob("j").Do(withContainer("main", "busybox")).Internal(),
			want: []any{"j", "Running", "0/1", "", "3h", "main", "busybox", "<none>", ""},
		},
		"managed-by the reserved built-in controller": {
			job:  tableJob("j").ManagedBy("kubernetes.io/job-controller").Internal(),
			want: []any{"j", "Running", "0/1", "", "3h", "", "", "<none>", "kubernetes.io/job-controller"},
		},
		"managed-by an external controller": {
			job:  tableJob("j").ManagedBy("kueue.x-k8s.io/multikueue").Condition(batchv1.JobCondition{Type: batchv1.JobSuspended, Status: isTrue}).Internal(),
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
	running := tableJob("running").ResourceVersion("11").Do(withContainer("c", "img")).StartTime(tableNow.Add(-time.Minute)).Internal()
	done := tableJob("done").ResourceVersion("12").ManagedBy("example.com/runner").Completions(2).Succeeded(2).
		StartTime(tableNow.Add(-time.Hour)).Do(took(10 * time.Minute)).Condition(batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}).Internal()
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
			obj:     tableJob("j").Internal(),
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
	first, err := c.ConvertToTable(context.Background(), tableJob("a").Internal(), nil)
	if err != nil {
		t.Fatalf("ConvertToTable: %v", err)
	}
	first.ColumnDefinitions[0].Name = "changed"
	second, err := c.ConvertToTable(context.Background(), tableJob("b").Internal(), nil)
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
