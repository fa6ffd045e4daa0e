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

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestDeadlineLeft(t *testing.T) {
	type left struct {
		Left    time.Duration
		Running bool
	}
	cases := map[string]struct {
		job   *batchv1.Job
		start *time.Time
		want  left
	}{
		"no deadline":           {job: job("j").Obj(), start: ago(time.Hour)},
		"not started":           {job: job("j").ActiveDeadlineSeconds(60).Obj()},
		"suspended":             {job: job("j").ActiveDeadlineSeconds(60).Suspend(true).Obj(), start: ago(time.Hour)},
		"ahead":                 {job: job("j").ActiveDeadlineSeconds(60).Obj(), start: ago(20 * time.Second), want: left{40 * time.Second, true}},
		"exactly now":           {job: job("j").ActiveDeadlineSeconds(60).Obj(), start: ago(time.Minute), want: left{0, true}},
		"passed":                {job: job("j").ActiveDeadlineSeconds(60).Obj(), start: ago(2 * time.Minute), want: left{-time.Minute, true}},
		"started in the future": {job: job("j").ActiveDeadlineSeconds(60).Obj(), start: ptrTime(at(10 * time.Second)), want: left{70 * time.Second, true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, ok := deadlineLeft(tc.job, tc.start, t0)
			if diff := cmp.Diff(tc.want, left{d, ok}); diff != "" {
				t.Errorf("deadlineLeft (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDeadlineResync(t *testing.T) {
	type resync struct {
		In   time.Duration
		Sync bool
	}
	cases := map[string]struct {
		old, cur *batchv1.Job
		want     resync
	}{
		"a deadline added to a started Job": {
			old: job("j").StartTime(at(-20 * time.Second)).Obj(), cur: job("j").ActiveDeadlineSeconds(60).StartTime(at(-20 * time.Second)).Obj(),
			want: resync{40 * time.Second, true},
		},
		"a deadline shortened into the past: now": {
			old: job("j").ActiveDeadlineSeconds(600).StartTime(at(-time.Minute)).Obj(), cur: job("j").ActiveDeadlineSeconds(30).StartTime(at(-time.Minute)).Obj(),
			want: resync{-30 * time.Second, true},
		},
		"the deadline unchanged": {old: job("j").ActiveDeadlineSeconds(60).StartTime(hourAgo).Obj(), cur: job("j").ActiveDeadlineSeconds(60).StartTime(hourAgo).Obj()},
		"the deadline removed":   {old: job("j").ActiveDeadlineSeconds(60).StartTime(hourAgo).Obj(), cur: job("j").StartTime(hourAgo).Obj()},
		"a Job not started":      {old: job("j").Obj(), cur: job("j").ActiveDeadlineSeconds(60).Obj()},
		"a deadline extended ahead": {
			old: job("j").ActiveDeadlineSeconds(60).StartTime(at(-50 * time.Second)).Obj(), cur: job("j").ActiveDeadlineSeconds(120).StartTime(at(-50 * time.Second)).Obj(),
			want: resync{70 * time.Second, true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			d, ok := DeadlineResync(tc.old, tc.cur, t0)
			if diff := cmp.Diff(tc.want, resync{d, ok}); diff != "" {
				t.Errorf("DeadlineResync (-want +got):\n%s", diff)
			}
		})
	}
}

func ptrTime(t time.Time) *time.Time { return &t }
