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
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestValidateJobUpdateStatus(t *testing.T) {
	const (
		complete      = batchv1.JobComplete
		failed        = batchv1.JobFailed
		failureTarget = batchv1.JobFailureTarget
		scm           = batchv1.JobSuccessCriteriaMet
		suspended     = batchv1.JobSuspended
	)
	running := func() *batchtesting.JobBuilder { return makeJob("j").StartTime(t0.Time).Active(1) }
	indexed := func() *batchtesting.JobBuilder { return makeJob("j").Indexed(6).StartTime(t0.Time) }
	perIndex := func() *batchtesting.JobBuilder {
		return makeJob("j").Indexed(6).BackoffLimitPerIndex(1).StartTime(t0.Time)
	}
	all := AllStatusRules()

	cases := map[string]struct {
		old, job *batch.Job
		opts     JobStatusValidationOptions
		want     field.ErrorList
	}{
		// Always-on rules.
		"progress":                  {old: running().Internal(), job: running().Active(2).Ready(1).Terminating(0).Succeeded(1).Failed(1).Internal(), opts: all},
		"negative active":           {old: running().Internal(), job: running().Active(-1).Internal(), want: errs(invalid, "status.active")},
		"negative succeeded":        {old: running().Internal(), job: running().Succeeded(-1).Internal(), want: errs(invalid, "status.succeeded")},
		"negative failed":           {old: running().Internal(), job: running().Failed(-1).Internal(), want: errs(invalid, "status.failed")},
		"negative ready":            {old: running().Internal(), job: running().Ready(-1).Internal(), want: errs(invalid, "status.ready")},
		"negative terminating":      {old: running().Internal(), job: running().Terminating(-1).Internal(), want: errs(invalid, "status.terminating")},
		"uncounted pod UID empty":   {old: running().Internal(), job: running().Uncounted([]types.UID{""}, nil).Internal(), want: errs(invalid, "status.uncountedTerminatedPods.succeeded[0]")},
		"uncounted pod UID twice":   {old: running().Internal(), job: running().Uncounted([]types.UID{"a"}, []types.UID{"b", "a"}).Internal(), want: errs(duplicate, "status.uncountedTerminatedPods.failed[1]")},
		"uncounted pod UIDs unique": {old: running().Internal(), job: running().Uncounted([]types.UID{"a"}, []types.UID{"b"}).Internal()},
		"metadata name changes":     {old: running().Internal(), job: running().Do(func(j *batchv1.Job) { j.Name = "k" }).Internal(), want: errs(invalid, "metadata.name")},
		"SuccessCriteriaMet with Failed": {old: indexed().Internal(), job: indexed().Conditions(failureTarget, scm, failed).Internal(),
			want: errs(invalid, "status.conditions", invalid, "status.conditions")},
		"SuccessCriteriaMet with FailureTarget": {old: indexed().Internal(), job: indexed().Conditions(failureTarget, scm).Internal(),
			want: errs(invalid, "status.conditions")},
		"Complete without SuccessCriteriaMet under a successPolicy": {old: indexed().SuccessPolicy(successRules(1)...).Internal(),
			job: indexed().SuccessPolicy(successRules(1)...).CompletionTime(t1.Time).Conditions(complete).Internal(), want: errs(invalid, "status.conditions")},
		"SuccessCriteriaMet disabled": {old: indexed().Conditions(scm).Internal(), job: indexed().Condition(batchv1.JobCondition{Type: scm, Status: corev1.ConditionFalse}).Internal(),
			want: errs(invalid, "status.conditions")},
		"SuccessCriteriaMet added after Complete": {old: indexed().CompletionTime(t1.Time).Conditions(complete).Internal(), job: indexed().CompletionTime(t1.Time).Conditions(complete, scm).Internal(),
			want: errs(invalid, "status.conditions")},

		// Counters.
		"succeeded decreases": {old: running().Succeeded(2).Internal(), job: running().Succeeded(1).Internal(), opts: JobStatusValidationOptions{RejectDecreasingSucceededCounter: true},
			want: errs(invalid, "status.succeeded")},
		"succeeded decreases in a scaled-down elastic Indexed Job": {old: indexed().Succeeded(4).Internal(), job: indexed().Succeeded(3).Internal(), opts: all},
		"succeeded decreases when not rejected":                    {old: running().Succeeded(2).Internal(), job: running().Succeeded(1).Internal()},
		"failed decreases": {old: running().Failed(2).Internal(), job: running().Failed(1).Internal(), opts: JobStatusValidationOptions{RejectDecreasingFailedCounter: true},
			want: errs(invalid, "status.failed")},

		// Terminal conditions.
		"Failed disabled": {old: makeJob("j").StartTime(t0.Time).Conditions(batchv1.JobFailureTarget, batchv1.JobFailed).Internal(), job: makeJob("j").StartTime(t0.Time).Conditions(failureTarget).Internal(),
			opts: JobStatusValidationOptions{RejectDisablingTerminalCondition: true}, want: errs(invalid, "status.conditions")},
		"Complete disabled": {old: makeJob("j").StartTime(t0.Time).CompletionTime(t1.Time).Conditions(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete).Internal(), job: makeJob("j").StartTime(t0.Time).CompletionTime(t1.Time).Conditions(scm).Condition(batchv1.JobCondition{Type: complete, Status: corev1.ConditionFalse}).Internal(),
			opts: JobStatusValidationOptions{RejectDisablingTerminalCondition: true}, want: errs(invalid, "status.conditions")},
		"FailureTarget disabled": {old: running().Conditions(failureTarget).Internal(), job: running().Internal(),
			opts: JobStatusValidationOptions{RejectDisablingTerminalCondition: true}, want: errs(invalid, "status.conditions")},
		"Failed without FailureTarget": {old: running().Internal(), job: makeJob("j").StartTime(t0.Time).Conditions(failed).Internal(),
			opts: JobStatusValidationOptions{RejectFailedJobWithoutFailureTarget: true}, want: errs(invalid, "status.conditions")},
		"Complete without SuccessCriteriaMet": {old: running().Internal(), job: makeJob("j").StartTime(t0.Time).CompletionTime(t1.Time).Conditions(complete).Internal(),
			opts: JobStatusValidationOptions{RejectCompleteJobWithoutSuccessCriteriaMet: true}, want: errs(invalid, "status.conditions")},
		"Complete with Failed": {old: running().Internal(), job: makeJob("j").StartTime(t0.Time).CompletionTime(t1.Time).Conditions(complete, failureTarget, failed).Internal(),
			opts: JobStatusValidationOptions{RejectCompleteJobWithFailedCondition: true}, want: errs(invalid, "status.conditions")},
		"Complete with FailureTarget": {old: running().Internal(), job: makeJob("j").StartTime(t0.Time).CompletionTime(t1.Time).Conditions(complete, failureTarget).Internal(),
			opts: JobStatusValidationOptions{RejectCompleteJobWithFailureTargetCondition: true}, want: errs(invalid, "status.conditions")},
		"finished with active pods": {old: running().Internal(), job: makeJob("j").StartTime(t0.Time).Conditions(batchv1.JobFailureTarget, batchv1.JobFailed).Active(1).Internal(),
			opts: JobStatusValidationOptions{RejectFinishedJobWithActivePods: true}, want: errs(invalid, "status.active")},
		"finished with terminating pods": {old: running().Internal(), job: makeJob("j").StartTime(t0.Time).Conditions(batchv1.JobFailureTarget, batchv1.JobFailed).Terminating(1).Internal(),
			opts: JobStatusValidationOptions{RejectFinishedJobWithTerminatingPods: true}, want: errs(invalid, "status.terminating")},
		"finished with no terminating pods": {old: running().Internal(), job: makeJob("j").StartTime(t0.Time).Conditions(batchv1.JobFailureTarget, batchv1.JobFailed).Terminating(0).Internal(), opts: all},
		"finished with uncounted pods": {old: running().Internal(), job: makeJob("j").StartTime(t0.Time).Conditions(batchv1.JobFailureTarget, batchv1.JobFailed).Uncounted(nil, []types.UID{"a"}).Internal(),
			opts: JobStatusValidationOptions{RejectFinishedJobWithUncountedTerminatedPods: true}, want: errs(invalid, "status.uncountedTerminatedPods")},
		"finished without startTime": {old: makeJob("j").Internal(), job: makeJob("j").Conditions(failureTarget, failed).Internal(),
			opts: JobStatusValidationOptions{RejectFinishedJobWithoutStartTime: true}, want: errs(required, "status.startTime")},
		"suspended Job with zero completions finished without startTime": {old: makeJob("j").Completions(0).Suspend(true).Internal(),
			job: makeJob("j").Completions(0).Suspend(true).CompletionTime(t1.Time).Conditions(scm, complete).Internal(), opts: all},
		"more ready than active": {old: running().Internal(), job: running().Ready(2).Internal(),
			opts: JobStatusValidationOptions{RejectMoreReadyThanActivePods: true}, want: errs(invalid, "status.ready")},
		"as many ready as active": {old: running().Internal(), job: running().Ready(1).Internal(), opts: all},

		// Times.
		"completionTime without Complete": {old: running().Internal(), job: running().CompletionTime(t1.Time).Internal(),
			opts: JobStatusValidationOptions{RejectNotCompleteJobWithCompletionTime: true}, want: errs(invalid, "status.completionTime")},
		"Complete without completionTime": {old: running().Internal(), job: makeJob("j").StartTime(t0.Time).Conditions(scm, complete).Internal(),
			opts: JobStatusValidationOptions{RejectCompleteJobWithoutCompletionTime: true}, want: errs(required, "status.completionTime")},
		"completionTime before startTime": {old: running().Internal(), job: makeJob("j").StartTime(t1.Time).CompletionTime(t0.Time).Conditions(scm, complete).Internal(),
			opts: JobStatusValidationOptions{RejectCompletionTimeBeforeStartTime: true}, want: errs(invalid, "status.completionTime")},
		"completionTime equal to startTime": {old: running().Internal(), job: makeJob("j").StartTime(t0.Time).CompletionTime(t0.Time).Conditions(scm, complete).Internal(), opts: all},
		"completionTime changes": {old: makeJob("j").StartTime(t0.Time).CompletionTime(t1.Time).Conditions(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete).Internal(), job: makeJob("j").StartTime(t0.Time).CompletionTime(t1.Time).Conditions(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete).CompletionTime(t2.Time).Internal(),
			opts: JobStatusValidationOptions{RejectMutatingCompletionTime: true}, want: errs(invalid, "status.completionTime")},
		"completionTime cleared on a Job that is not Complete": {old: running().CompletionTime(t1.Time).Internal(), job: running().Internal(),
			opts: JobStatusValidationOptions{RejectMutatingCompletionTime: true}},
		"startTime changes on a running Job": {old: running().Internal(), job: running().StartTime(t1.Time).Internal(),
			opts: JobStatusValidationOptions{RejectStartTimeUpdateForUnsuspendedJob: true}, want: errs(invalid, "status.startTime")},
		"startTime removed from a running Job": {old: running().Internal(), job: makeJob("j").Active(1).Internal(),
			opts: JobStatusValidationOptions{RejectStartTimeUpdateForUnsuspendedJob: true}, want: errs(invalid, "status.startTime")},
		"startTime set the first time":         {old: makeJob("j").Internal(), job: running().Internal(), opts: all},
		"startTime cleared on a suspended Job": {old: makeJob("j").Suspend(true).StartTime(t0.Time).Internal(), job: makeJob("j").Suspend(true).Conditions(suspended).Internal(), opts: all},
		"startTime reset when the Job resumes": {old: makeJob("j").StartTime(t0.Time).Conditions(suspended).Internal(),
			job: makeJob("j").StartTime(t1.Time).Condition(batchv1.JobCondition{Type: suspended, Status: corev1.ConditionFalse}).Internal(), opts: all},

		// Indexes.
		"completedIndexes well formed": {old: indexed().Internal(), job: indexed().Succeeded(3).CompletedIndexes("0,2-3").Internal(), opts: all},
		"completedIndexes malformed": {old: indexed().Internal(), job: indexed().CompletedIndexes("0,a").Internal(),
			opts: JobStatusValidationOptions{RejectInvalidCompletedIndexes: true}, want: errs(invalid, "status.completedIndexes")},
		"completedIndexes not below completions": {old: indexed().Internal(), job: indexed().CompletedIndexes("5-6").Internal(),
			opts: JobStatusValidationOptions{RejectInvalidCompletedIndexes: true}, want: errs(invalid, "status.completedIndexes")},
		"completedIndexes last index": {old: indexed().Internal(), job: indexed().CompletedIndexes("5").Internal(), opts: all},
		"completedIndexes not increasing": {old: indexed().Internal(), job: indexed().CompletedIndexes("2-3,3").Internal(),
			opts: JobStatusValidationOptions{RejectInvalidCompletedIndexes: true}, want: errs(invalid, "status.completedIndexes")},
		"completedIndexes on a NonIndexed Job": {old: running().Internal(), job: running().CompletedIndexes("0").Internal(),
			opts: JobStatusValidationOptions{RejectCompletedIndexesForNonIndexedJob: true}, want: errs(invalid, "status.completedIndexes")},
		"failedIndexes malformed": {old: perIndex().Internal(), job: perIndex().FailedIndexes("1-").Internal(),
			opts: JobStatusValidationOptions{RejectInvalidFailedIndexes: true}, want: errs(invalid, "status.failedIndexes")},
		"failedIndexes without backoffLimitPerIndex": {old: indexed().Internal(), job: indexed().FailedIndexes("1").Internal(),
			opts: JobStatusValidationOptions{RejectFailedIndexesForNoBackoffLimitPerIndex: true}, want: errs(invalid, "status.failedIndexes")},
		"failedIndexes overlap completedIndexes": {old: perIndex().Internal(), job: perIndex().CompletedIndexes("0-2").FailedIndexes("2,4").Internal(),
			opts: JobStatusValidationOptions{RejectFailedIndexesOverlappingCompleted: true}, want: errs(invalid, "status.failedIndexes")},
		"failedIndexes disjoint from completedIndexes": {old: perIndex().Internal(), job: perIndex().CompletedIndexes("0-2,5").FailedIndexes("3-4").Internal(), opts: all},
		"failedIndexes empty":                          {old: perIndex().Internal(), job: perIndex().FailedIndexes("").Internal(), opts: all},

		// Ratcheting: a rule that is not switched on lets a bad status through.
		"bad status kept when its rule is off": {old: running().Ready(5).Internal(), job: running().Ready(5).Failed(1).Internal()},
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
	base := func() *batchtesting.JobBuilder {
		return makeJob("j").Indexed(4).Parallelism(2).ManagedBy("kueue.x-k8s.io/multikueue")
	}
	withSP := func() *batchtesting.JobBuilder { return base().SuccessPolicy(successRules(1)...) }
	lives := map[string]struct {
		start *batch.Job
		steps []step
	}{
		"failure": {start: base().Internal(), steps: []step{
			{name: "start", next: base().StartTime(t0.Time).Active(4).Ready(2).Internal()},
			{name: "progress", next: base().StartTime(t0.Time).Active(3).Ready(3).Succeeded(1).CompletedIndexes("0").Internal()},
			{name: "ready above active", next: base().StartTime(t0.Time).Active(3).Ready(4).Succeeded(1).CompletedIndexes("0").Internal(), want: errs(invalid, "status.ready")},
			{name: "succeeded lowered", next: base().StartTime(t0.Time).Active(3).Ready(3).CompletedIndexes("0").Internal(), want: errs(invalid, "status.succeeded")},
			{name: "startTime moved", next: base().StartTime(t1.Time).Active(3).Ready(3).Succeeded(1).CompletedIndexes("0").Internal(), want: errs(invalid, "status.startTime")},
			{name: "Failed without FailureTarget", next: base().StartTime(t0.Time).Succeeded(1).Failed(1).CompletedIndexes("0").Conditions(batchv1.JobFailed).Internal(), want: errs(invalid, "status.conditions")},
			{name: "FailureTarget", next: base().StartTime(t0.Time).Active(3).Terminating(3).Succeeded(1).Failed(1).CompletedIndexes("0").Conditions(batchv1.JobFailureTarget).Internal()},
			{name: "Failed with pods terminating", next: base().StartTime(t0.Time).Terminating(3).Succeeded(1).Failed(1).CompletedIndexes("0").Conditions(batchv1.JobFailureTarget, batchv1.JobFailed).Internal(), want: errs(invalid, "status.terminating")},
			{name: "Failed", next: base().StartTime(t0.Time).Terminating(0).Succeeded(1).Failed(1).CompletedIndexes("0").Conditions(batchv1.JobFailureTarget, batchv1.JobFailed).Internal()},
			{name: "back to running", next: base().StartTime(t0.Time).Terminating(0).Succeeded(1).Failed(1).CompletedIndexes("0").Conditions(batchv1.JobFailureTarget).Internal(), want: errs(invalid, "status.conditions")},
			{name: "Complete after Failed", next: base().StartTime(t0.Time).CompletionTime(t1.Time).Terminating(0).Succeeded(1).Failed(1).CompletedIndexes("0").Conditions(batchv1.JobFailureTarget, batchv1.JobFailed, batchv1.JobComplete).Internal(),
				want: errs(invalid, "status.conditions", invalid, "status.conditions", invalid, "status.conditions")},
		}},
		"success": {start: withSP().Internal(), steps: []step{
			{name: "start", next: withSP().StartTime(t0.Time).Active(4).Internal()},
			{name: "Complete without SuccessCriteriaMet", next: withSP().StartTime(t0.Time).CompletionTime(t1.Time).Succeeded(1).CompletedIndexes("0").Conditions(batchv1.JobComplete).Internal(),
				want: errs(invalid, "status.conditions", invalid, "status.conditions")},
			{name: "SuccessCriteriaMet", next: withSP().StartTime(t0.Time).Active(3).Succeeded(1).CompletedIndexes("0").Conditions(batchv1.JobSuccessCriteriaMet).Internal()},
			{name: "Complete with active pods", next: withSP().StartTime(t0.Time).CompletionTime(t1.Time).Active(3).Succeeded(1).CompletedIndexes("0").Conditions(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete).Internal(), want: errs(invalid, "status.active")},
			{name: "Complete without completionTime", next: withSP().StartTime(t0.Time).Succeeded(1).CompletedIndexes("0").Conditions(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete).Internal(), want: errs(required, "status.completionTime")},
			{name: "Complete before start", next: withSP().StartTime(t1.Time).CompletionTime(t0.Time).Succeeded(1).CompletedIndexes("0").Conditions(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete).Internal(),
				want: errs(invalid, "status.startTime", invalid, "status.completionTime")},
			{name: "Complete", next: withSP().StartTime(t0.Time).CompletionTime(t1.Time).Succeeded(1).CompletedIndexes("0").Conditions(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete).Internal()},
			{name: "completionTime moved", next: withSP().StartTime(t0.Time).CompletionTime(t2.Time).Succeeded(1).CompletedIndexes("0").Conditions(batchv1.JobSuccessCriteriaMet, batchv1.JobComplete).Internal(), want: errs(invalid, "status.completionTime")},
			{name: "SuccessCriteriaMet removed", next: withSP().StartTime(t0.Time).CompletionTime(t1.Time).Succeeded(1).CompletedIndexes("0").Conditions(batchv1.JobComplete).Internal(),
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
