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

package decide

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestFollowSuspend(t *testing.T) {
	resumedCond := condAt(batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", t0)
	type outcome struct {
		Status *batchv1.JobStatus
		Event  *Event
	}
	cases := map[string]struct {
		job    *batchv1.Job
		status *statusFx
		want   outcome
	}{
		"suspending: Suspended True, startTime cleared, an Event": {
			job: job("j").Suspend(true).Obj(), status: bare().StartTime(hourAgo),
			want: outcome{bare().Condition(suspendedCond(t0)).Obj(), &Event{corev1.EventTypeNormal, "Suspended", "Job suspended"}},
		},
		"still suspended: nothing": {
			job: job("j").Suspend(true).Obj(), status: bare().Condition(suspendedCond(hourAgo)),
			want: outcome{bare().Condition(suspendedCond(hourAgo)).Obj(), nil},
		},
		"resuming: Suspended False, a new startTime, an Event": {
			job: job("j").Obj(), status: bare().Condition(suspendedCond(hourAgo)),
			want: outcome{bare().StartTime(t0).Condition(resumedCond).Obj(), &Event{corev1.EventTypeNormal, "Resumed", "Job resumed"}},
		},
		"resumed before: nothing": {
			job: job("j").Obj(), status: bare().StartTime(hourAgo).Condition(resumedCond),
			want: outcome{bare().StartTime(hourAgo).Condition(resumedCond).Obj(), nil},
		},
		"never suspended: no condition": {
			job: job("j").Obj(), status: bare().StartTime(hourAgo),
			want: outcome{bare().StartTime(hourAgo).Obj(), nil},
		},
		"suspended again after a resumption: the condition turns True": {
			job: job("j").Suspend(true).Obj(), status: bare().StartTime(hourAgo).Condition(condAt(batchv1.JobSuspended, corev1.ConditionFalse, "JobResumed", "Job resumed", at(-time.Minute))),
			want: outcome{bare().Condition(suspendedCond(t0)).Obj(), &Event{corev1.EventTypeNormal, "Suspended", "Job suspended"}},
		},
		"a Suspended condition with another message is rewritten": {
			job: job("j").Suspend(true).Obj(), status: bare().Condition(condAt(batchv1.JobSuspended, corev1.ConditionTrue, "JobSuspended", "by hand", hourAgo)),
			want: outcome{bare().Condition(suspendedCond(t0)).Obj(), &Event{corev1.EventTypeNormal, "Suspended", "Job suspended"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := tc.status.Obj()
			ev := followSuspend(tc.job, st, t0)
			if diff := cmp.Diff(tc.want, outcome{st, ev}); diff != "" {
				t.Errorf("followSuspend (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetCondition(t *testing.T) {
	other := cond(batchv1.JobFailureTarget, "R", "m")
	cases := map[string]struct {
		before  []batchv1.JobCondition
		t       batchv1.JobConditionType
		status  corev1.ConditionStatus
		want    []batchv1.JobCondition
		changed bool
	}{
		"a new True condition is added": {
			t: batchv1.JobComplete, status: corev1.ConditionTrue,
			want: []batchv1.JobCondition{condAt(batchv1.JobComplete, corev1.ConditionTrue, "R", "m", t0)}, changed: true,
		},
		"a new False condition is not added": {t: batchv1.JobComplete, status: corev1.ConditionFalse},
		"the same condition: unchanged, times kept": {
			before: []batchv1.JobCondition{condAt(batchv1.JobComplete, corev1.ConditionTrue, "R", "m", hourAgo)},
			t:      batchv1.JobComplete, status: corev1.ConditionTrue,
			want: []batchv1.JobCondition{condAt(batchv1.JobComplete, corev1.ConditionTrue, "R", "m", hourAgo)},
		},
		"another status replaces it in place": {
			before: []batchv1.JobCondition{other, condAt(batchv1.JobComplete, corev1.ConditionFalse, "R", "m", hourAgo)},
			t:      batchv1.JobComplete, status: corev1.ConditionTrue,
			want: []batchv1.JobCondition{other, condAt(batchv1.JobComplete, corev1.ConditionTrue, "R", "m", t0)}, changed: true,
		},
		"an existing condition can turn False": {
			before: []batchv1.JobCondition{condAt(batchv1.JobComplete, corev1.ConditionTrue, "R", "m", hourAgo)},
			t:      batchv1.JobComplete, status: corev1.ConditionFalse,
			want: []batchv1.JobCondition{condAt(batchv1.JobComplete, corev1.ConditionFalse, "R", "m", t0)}, changed: true,
		},
		"other conditions are kept": {
			before: []batchv1.JobCondition{other}, t: batchv1.JobFailed, status: corev1.ConditionTrue,
			want: []batchv1.JobCondition{other, condAt(batchv1.JobFailed, corev1.ConditionTrue, "R", "m", t0)}, changed: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			st := &batchv1.JobStatus{Conditions: tc.before}
			changed := setCondition(st, tc.t, tc.status, "R", "m", t0)
			if changed != tc.changed {
				t.Errorf("setCondition changed = %v, want %v", changed, tc.changed)
			}
			if diff := cmp.Diff(tc.want, st.Conditions, syncCmp...); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
		})
	}
}
