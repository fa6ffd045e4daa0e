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

package validation

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

func TestValidateJobUpdateStatus(t *testing.T) {
	const (
		complete      = batch.JobComplete
		failed        = batch.JobFailed
		failureTarget = batch.JobFailureTarget
		scm           = batch.JobSuccessCriteriaMet
		suspended     = batch.JobSuspended
	)
	running := func() *jobBuilder { return makeJob("j").StartTime(t0).Active(1) }
	indexed := func() *jobBuilder { return makeJob("j").Indexed(6).StartTime(t0) }
	perIndex := func() *jobBuilder { return makeJob("j").Indexed(6).BackoffLimitPerIndex(1).StartTime(t0) }
	all := AllStatusRules()

	cases := map[string]struct {
		old, job *batch.Job
		opts     JobStatusValidationOptions
		want     field.ErrorList
	}{
		// Always-on rules.
		"progress":                  {old: running().Obj(), job: running().Active(2).Ready(1).Terminating(0).Succeeded(1).Failed(1).Obj(), opts: all},
		"negative active":           {old: running().Obj(), job: running().Active(-1).Obj(), want: errs(invalid, "status.active")},
		"negative succeeded":        {old: running().Obj(), job: running().Succeeded(-1).Obj(), want: errs(invalid, "status.succeeded")},
		"negative failed":           {old: running().Obj(), job: running().Failed(-1).Obj(), want: errs(invalid, "status.failed")},
		"negative ready":            {old: running().Obj(), job: running().Ready(-1).Obj(), want: errs(invalid, "status.ready")},
		"negative terminating":      {old: running().Obj(), job: running().Terminating(-1).Obj(), want: errs(invalid, "status.terminating")},
		"uncounted pod UID empty":   {old: running().Obj(), job: running().Uncounted([]types.UID{""}, nil).Obj(), want: errs(invalid, "status.uncountedTerminatedPods.succeeded[0]")},
		"uncounted pod UID twice":   {old: running().Obj(), job: running().Uncounted([]types.UID{"a"}, []types.UID{"b", "a"}).Obj(), want: errs(duplicate, "status.uncountedTerminatedPods.failed[1]")},
		"uncounted pod UIDs unique": {old: running().Obj(), job: running().Uncounted([]types.UID{"a"}, []types.UID{"b"}).Obj()},
		"metadata name changes":     {old: running().Obj(), job: running().Do(func(j *batch.Job) { j.Name = "k" }).Obj(), want: errs(invalid, "metadata.name")},
		"SuccessCriteriaMet with Failed": {old: indexed().Obj(), job: indexed().Conditions(failureTarget, scm, failed).Obj(),
			want: errs(invalid, "status.conditions", invalid, "status.conditions")},
		"SuccessCriteriaMet with FailureTarget": {old: indexed().Obj(), job: indexed().Conditions(failureTarget, scm).Obj(),
			want: errs(invalid, "status.conditions")},
		"Complete without SuccessCriteriaMet under a successPolicy": {old: indexed().SuccessPolicy(successRules(1)...).Obj(),
			job: indexed().SuccessPolicy(successRules(1)...).CompletionTime(t1).Conditions(complete).Obj(), want: errs(invalid, "status.conditions")},
		"SuccessCriteriaMet disabled": {old: indexed().Conditions(scm).Obj(), job: indexed().Condition(scm, corev1.ConditionFalse).Obj(),
			want: errs(invalid, "status.conditions")},
		"SuccessCriteriaMet added after Complete": {old: indexed().CompletionTime(t1).Conditions(complete).Obj(), job: indexed().CompletionTime(t1).Conditions(complete, scm).Obj(),
			want: errs(invalid, "status.conditions")},

		// Counters.
		"succeeded decreases": {old: running().Succeeded(2).Obj(), job: running().Succeeded(1).Obj(), opts: JobStatusValidationOptions{RejectDecreasingSucceededCounter: true},
			want: errs(invalid, "status.succeeded")},
		"succeeded decreases in a scaled-down elastic Indexed Job": {old: indexed().Succeeded(4).Obj(), job: indexed().Succeeded(3).Obj(), opts: all},
		"succeeded decreases when not rejected":                    {old: running().Succeeded(2).Obj(), job: running().Succeeded(1).Obj()},
		"failed decreases": {old: running().Failed(2).Obj(), job: running().Failed(1).Obj(), opts: JobStatusValidationOptions{RejectDecreasingFailedCounter: true},
			want: errs(invalid, "status.failed")},

		// Terminal conditions.
		"Failed disabled": {old: makeJob("j").FailedJob().Obj(), job: makeJob("j").StartTime(t0).Conditions(failureTarget).Obj(),
			opts: JobStatusValidationOptions{RejectDisablingTerminalCondition: true}, want: errs(invalid, "status.conditions")},
		"Complete disabled": {old: makeJob("j").Complete().Obj(), job: makeJob("j").StartTime(t0).CompletionTime(t1).Conditions(scm).Condition(complete, corev1.ConditionFalse).Obj(),
			opts: JobStatusValidationOptions{RejectDisablingTerminalCondition: true}, want: errs(invalid, "status.conditions")},
		"FailureTarget disabled": {old: running().Conditions(failureTarget).Obj(), job: running().Obj(),
			opts: JobStatusValidationOptions{RejectDisablingTerminalCondition: true}, want: errs(invalid, "status.conditions")},
		"Failed without FailureTarget": {old: running().Obj(), job: makeJob("j").StartTime(t0).Conditions(failed).Obj(),
			opts: JobStatusValidationOptions{RejectFailedJobWithoutFailureTarget: true}, want: errs(invalid, "status.conditions")},
		"Complete without SuccessCriteriaMet": {old: running().Obj(), job: makeJob("j").StartTime(t0).CompletionTime(t1).Conditions(complete).Obj(),
			opts: JobStatusValidationOptions{RejectCompleteJobWithoutSuccessCriteriaMet: true}, want: errs(invalid, "status.conditions")},
		"Complete with Failed": {old: running().Obj(), job: makeJob("j").StartTime(t0).CompletionTime(t1).Conditions(complete, failureTarget, failed).Obj(),
			opts: JobStatusValidationOptions{RejectCompleteJobWithFailedCondition: true}, want: errs(invalid, "status.conditions")},
		"Complete with FailureTarget": {old: running().Obj(), job: makeJob("j").StartTime(t0).CompletionTime(t1).Conditions(complete, failureTarget).Obj(),
			opts: JobStatusValidationOptions{RejectCompleteJobWithFailureTargetCondition: true}, want: errs(invalid, "status.conditions")},
		"finished with active pods": {old: running().Obj(), job: makeJob("j").FailedJob().Active(1).Obj(),
			opts: JobStatusValidationOptions{RejectFinishedJobWithActivePods: true}, want: errs(invalid, "status.active")},
		"finished with terminating pods": {old: running().Obj(), job: makeJob("j").FailedJob().Terminating(1).Obj(),
			opts: JobStatusValidationOptions{RejectFinishedJobWithTerminatingPods: true}, want: errs(invalid, "status.terminating")},
		"finished with no terminating pods": {old: running().Obj(), job: makeJob("j").FailedJob().Terminating(0).Obj(), opts: all},
		"finished with uncounted pods": {old: running().Obj(), job: makeJob("j").FailedJob().Uncounted(nil, []types.UID{"a"}).Obj(),
			opts: JobStatusValidationOptions{RejectFinishedJobWithUncountedTerminatedPods: true}, want: errs(invalid, "status.uncountedTerminatedPods")},
		"finished without startTime": {old: makeJob("j").Obj(), job: makeJob("j").Conditions(failureTarget, failed).Obj(),
			opts: JobStatusValidationOptions{RejectFinishedJobWithoutStartTime: true}, want: errs(required, "status.startTime")},
		"suspended Job with zero completions finished without startTime": {old: makeJob("j").Completions(0).Suspend(true).Obj(),
			job: makeJob("j").Completions(0).Suspend(true).CompletionTime(t1).Conditions(scm, complete).Obj(), opts: all},
		"more ready than active": {old: running().Obj(), job: running().Ready(2).Obj(),
			opts: JobStatusValidationOptions{RejectMoreReadyThanActivePods: true}, want: errs(invalid, "status.ready")},
		"as many ready as active": {old: running().Obj(), job: running().Ready(1).Obj(), opts: all},

		// Times.
		"completionTime without Complete": {old: running().Obj(), job: running().CompletionTime(t1).Obj(),
			opts: JobStatusValidationOptions{RejectNotCompleteJobWithCompletionTime: true}, want: errs(invalid, "status.completionTime")},
		"Complete without completionTime": {old: running().Obj(), job: makeJob("j").StartTime(t0).Conditions(scm, complete).Obj(),
			opts: JobStatusValidationOptions{RejectCompleteJobWithoutCompletionTime: true}, want: errs(required, "status.completionTime")},
		"completionTime before startTime": {old: running().Obj(), job: makeJob("j").StartTime(t1).CompletionTime(t0).Conditions(scm, complete).Obj(),
			opts: JobStatusValidationOptions{RejectCompletionTimeBeforeStartTime: true}, want: errs(invalid, "status.completionTime")},
		"completionTime equal to startTime": {old: running().Obj(), job: makeJob("j").StartTime(t0).CompletionTime(t0).Conditions(scm, complete).Obj(), opts: all},
		"completionTime changes": {old: makeJob("j").Complete().Obj(), job: makeJob("j").Complete().CompletionTime(t2).Obj(),
			opts: JobStatusValidationOptions{RejectMutatingCompletionTime: true}, want: errs(invalid, "status.completionTime")},
		"completionTime cleared on a Job that is not Complete": {old: running().CompletionTime(t1).Obj(), job: running().Obj(),
			opts: JobStatusValidationOptions{RejectMutatingCompletionTime: true}},
		"startTime changes on a running Job": {old: running().Obj(), job: running().StartTime(t1).Obj(),
			opts: JobStatusValidationOptions{RejectStartTimeUpdateForUnsuspendedJob: true}, want: errs(invalid, "status.startTime")},
		"startTime removed from a running Job": {old: running().Obj(), job: makeJob("j").Active(1).Obj(),
			opts: JobStatusValidationOptions{RejectStartTimeUpdateForUnsuspendedJob: true}, want: errs(invalid, "status.startTime")},
		"startTime set the first time":         {old: makeJob("j").Obj(), job: running().Obj(), opts: all},
		"startTime cleared on a suspended Job": {old: makeJob("j").Suspend(true).StartTime(t0).Obj(), job: makeJob("j").Suspend(true).Conditions(suspended).Obj(), opts: all},
		"startTime reset when the Job resumes": {old: makeJob("j").StartTime(t0).Conditions(suspended).Obj(),
			job: makeJob("j").StartTime(t1).Condition(suspended, corev1.ConditionFalse).Obj(), opts: all},

		// Indexes.
		"completedIndexes well formed": {old: indexed().Obj(), job: indexed().Succeeded(3).CompletedIndexes("0,2-3").Obj(), opts: all},
		"completedIndexes malformed": {old: indexed().Obj(), job: indexed().CompletedIndexes("0,a").Obj(),
			opts: JobStatusValidationOptions{RejectInvalidCompletedIndexes: true}, want: errs(invalid, "status.completedIndexes")},
		"completedIndexes not below completions": {old: indexed().Obj(), job: indexed().CompletedIndexes("5-6").Obj(),
			opts: JobStatusValidationOptions{RejectInvalidCompletedIndexes: true}, want: errs(invalid, "status.completedIndexes")},
		"completedIndexes last index": {old: indexed().Obj(), job: indexed().CompletedIndexes("5").Obj(), opts: all},
		"completedIndexes not increasing": {old: indexed().Obj(), job: indexed().CompletedIndexes("2-3,3").Obj(),
			opts: JobStatusValidationOptions{RejectInvalidCompletedIndexes: true}, want: errs(invalid, "status.completedIndexes")},
		"completedIndexes on a NonIndexed Job": {old: running().Obj(), job: running().CompletedIndexes("0").Obj(),
			opts: JobStatusValidationOptions{RejectCompletedIndexesForNonIndexedJob: true}, want: errs(invalid, "status.completedIndexes")},
		"failedIndexes malformed": {old: perIndex().Obj(), job: perIndex().FailedIndexes("1-").Obj(),
			opts: JobStatusValidationOptions{RejectInvalidFailedIndexes: true}, want: errs(invalid, "status.failedIndexes")},
		"failedIndexes without backoffLimitPerIndex": {old: indexed().Obj(), job: indexed().FailedIndexes("1").Obj(),
			opts: JobStatusValidationOptions{RejectFailedIndexesForNoBackoffLimitPerIndex: true}, want: errs(invalid, "status.failedIndexes")},
		"failedIndexes overlap completedIndexes": {old: perIndex().Obj(), job: perIndex().CompletedIndexes("0-2").FailedIndexes("2,4").Obj(),
			opts: JobStatusValidationOptions{RejectFailedIndexesOverlappingCompleted: true}, want: errs(invalid, "status.failedIndexes")},
		"failedIndexes disjoint from completedIndexes": {old: perIndex().Obj(), job: perIndex().CompletedIndexes("0-2,5").FailedIndexes("3-4").Obj(), opts: all},
		"failedIndexes empty":                          {old: perIndex().Obj(), job: perIndex().FailedIndexes("").Obj(), opts: all},

		// Ratcheting: a rule that is not switched on lets a bad status through.
		"bad status kept when its rule is off": {old: running().Ready(5).Obj(), job: running().Ready(5).Failed(1).Obj()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			assertErrors(t, tc.want, ValidateJobUpdateStatus(tc.job, tc.old, tc.opts))
		})
	}
}

func TestValidateIndexesFormat(t *testing.T) {
	cases := map[string]struct {
		indexes     string
		completions int32
		wantTotal   int32
		wantErr     bool
	}{
		"empty":              {indexes: "", completions: 3},
		"single":             {indexes: "2", completions: 3, wantTotal: 1},
		"intervals":          {indexes: "0,2-4,7", completions: 8, wantTotal: 5},
		"three parts":        {indexes: "1-2-3", completions: 8, wantErr: true},
		"not a number":       {indexes: "x", completions: 8, wantErr: true},
		"negative":           {indexes: "-1", completions: 8, wantErr: true},
		"at completions":     {indexes: "8", completions: 8, wantErr: true},
		"interval too large": {indexes: "1-8", completions: 8, wantErr: true},
		"interval reversed":  {indexes: "3-1", completions: 8, wantErr: true},
		"interval of one":    {indexes: "3-3", completions: 8, wantErr: true},
		"not increasing":     {indexes: "1-3,3", completions: 8, wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			total, err := validateIndexesFormat(tc.indexes, tc.completions)
			if (err != nil) != tc.wantErr || total != tc.wantTotal {
				t.Errorf("validateIndexesFormat(%q, %d) = %d, %v; want %d, error %v", tc.indexes, tc.completions, total, err, tc.wantTotal, tc.wantErr)
			}
		})
	}
}

func TestValidateFailedIndexesNotOverlapCompleted(t *testing.T) {
	cases := map[string]struct {
		completed, failed string
		wantErr           bool
	}{
		"both empty":                 {},
		"disjoint":                   {completed: "0,2-3", failed: "1,4-5"},
		"same index":                 {completed: "0,3", failed: "3", wantErr: true},
		"interval overlap":           {completed: "0-3", failed: "3-5", wantErr: true},
		"overlap after a bad part":   {completed: "x,4", failed: "4", wantErr: true},
		"bad parts only":             {completed: "x", failed: "y"},
		"failed inside completed":    {completed: "0-9", failed: "5", wantErr: true},
		"completed inside of failed": {completed: "5", failed: "0-9", wantErr: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			err := validateFailedIndexesNotOverlapCompleted(tc.completed, tc.failed, 10)
			if (err != nil) != tc.wantErr {
				t.Errorf("got error %v, want error %v", err, tc.wantErr)
			}
		})
	}
}

// TestStatusLifeOfAnExternalController walks the status writes of a
// controller that owns a Job through managedBy: every legal step passes and
// every illegal one is refused even with every rule on, so the strict gate
// never blocks a well-behaved controller. Each refused step touches the field
// it breaks, so the ratcheted options refuse it too.
func TestStatusLifeOfAnExternalController(t *testing.T) {
	type step struct {
		name string
		next *batch.Job
		want field.ErrorList
	}
	base := func() *jobBuilder {
		return makeJob("j").Indexed(4).Parallelism(2).ManagedBy("kueue.x-k8s.io/multikueue")
	}
	withSP := func() *jobBuilder { return base().SuccessPolicy(successRules(1)...) }
	lives := map[string]struct {
		start *batch.Job
		steps []step
	}{
		"failure": {start: base().Obj(), steps: []step{
			{name: "start", next: base().StartTime(t0).Active(4).Ready(2).Obj()},
			{name: "progress", next: base().StartTime(t0).Active(3).Ready(3).Succeeded(1).CompletedIndexes("0").Obj()},
			{name: "ready above active", next: base().StartTime(t0).Active(3).Ready(4).Succeeded(1).CompletedIndexes("0").Obj(), want: errs(invalid, "status.ready")},
			{name: "succeeded lowered", next: base().StartTime(t0).Active(3).Ready(3).CompletedIndexes("0").Obj(), want: errs(invalid, "status.succeeded")},
			{name: "startTime moved", next: base().StartTime(t1).Active(3).Ready(3).Succeeded(1).CompletedIndexes("0").Obj(), want: errs(invalid, "status.startTime")},
			{name: "Failed without FailureTarget", next: base().StartTime(t0).Succeeded(1).Failed(1).CompletedIndexes("0").Conditions(batch.JobFailed).Obj(), want: errs(invalid, "status.conditions")},
			{name: "FailureTarget", next: base().StartTime(t0).Active(3).Terminating(3).Succeeded(1).Failed(1).CompletedIndexes("0").Conditions(batch.JobFailureTarget).Obj()},
			{name: "Failed with pods terminating", next: base().StartTime(t0).Terminating(3).Succeeded(1).Failed(1).CompletedIndexes("0").Conditions(batch.JobFailureTarget, batch.JobFailed).Obj(), want: errs(invalid, "status.terminating")},
			{name: "Failed", next: base().StartTime(t0).Terminating(0).Succeeded(1).Failed(1).CompletedIndexes("0").Conditions(batch.JobFailureTarget, batch.JobFailed).Obj()},
			{name: "back to running", next: base().StartTime(t0).Terminating(0).Succeeded(1).Failed(1).CompletedIndexes("0").Conditions(batch.JobFailureTarget).Obj(), want: errs(invalid, "status.conditions")},
			{name: "Complete after Failed", next: base().StartTime(t0).CompletionTime(t1).Terminating(0).Succeeded(1).Failed(1).CompletedIndexes("0").Conditions(batch.JobFailureTarget, batch.JobFailed, batch.JobComplete).Obj(),
				want: errs(invalid, "status.conditions", invalid, "status.conditions", invalid, "status.conditions")},
		}},
		"success": {start: withSP().Obj(), steps: []step{
			{name: "start", next: withSP().StartTime(t0).Active(4).Obj()},
			{name: "Complete without SuccessCriteriaMet", next: withSP().StartTime(t0).CompletionTime(t1).Succeeded(1).CompletedIndexes("0").Conditions(batch.JobComplete).Obj(),
				want: errs(invalid, "status.conditions", invalid, "status.conditions")},
			{name: "SuccessCriteriaMet", next: withSP().StartTime(t0).Active(3).Succeeded(1).CompletedIndexes("0").Conditions(batch.JobSuccessCriteriaMet).Obj()},
			{name: "Complete with active pods", next: withSP().StartTime(t0).CompletionTime(t1).Active(3).Succeeded(1).CompletedIndexes("0").Conditions(batch.JobSuccessCriteriaMet, batch.JobComplete).Obj(), want: errs(invalid, "status.active")},
			{name: "Complete without completionTime", next: withSP().StartTime(t0).Succeeded(1).CompletedIndexes("0").Conditions(batch.JobSuccessCriteriaMet, batch.JobComplete).Obj(), want: errs(required, "status.completionTime")},
			{name: "Complete before start", next: withSP().StartTime(t1).CompletionTime(t0).Succeeded(1).CompletedIndexes("0").Conditions(batch.JobSuccessCriteriaMet, batch.JobComplete).Obj(),
				want: errs(invalid, "status.startTime", invalid, "status.completionTime")},
			{name: "Complete", next: withSP().StartTime(t0).CompletionTime(t1).Succeeded(1).CompletedIndexes("0").Conditions(batch.JobSuccessCriteriaMet, batch.JobComplete).Obj()},
			{name: "completionTime moved", next: withSP().StartTime(t0).CompletionTime(t2).Succeeded(1).CompletedIndexes("0").Conditions(batch.JobSuccessCriteriaMet, batch.JobComplete).Obj(), want: errs(invalid, "status.completionTime")},
			{name: "SuccessCriteriaMet removed", next: withSP().StartTime(t0).CompletionTime(t1).Succeeded(1).CompletedIndexes("0").Conditions(batch.JobComplete).Obj(),
				want: errs(invalid, "status.conditions", invalid, "status.conditions", invalid, "status.conditions")},
		}},
	}
	for name, life := range lives {
		t.Run(name, func(t *testing.T) {
			current := life.start
			for _, s := range life.steps {
				t.Run(s.name, func(t *testing.T) {
					assertErrors(t, s.want, ValidateJobUpdateStatus(s.next, current, AllStatusRules()))
				})
				if len(s.want) == 0 {
					current = s.next
				}
			}
		})
	}
}
