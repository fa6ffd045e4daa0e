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
		"no deadline":           {job: job("j").obj(), start: ago(time.Hour)},
		"not started":           {job: job("j").deadline(60).obj()},
		"suspended":             {job: job("j").deadline(60).suspend().obj(), start: ago(time.Hour)},
		"ahead":                 {job: job("j").deadline(60).obj(), start: ago(20 * time.Second), want: left{40 * time.Second, true}},
		"exactly now":           {job: job("j").deadline(60).obj(), start: ago(time.Minute), want: left{0, true}},
		"passed":                {job: job("j").deadline(60).obj(), start: ago(2 * time.Minute), want: left{-time.Minute, true}},
		"started in the future": {job: job("j").deadline(60).obj(), start: ptrTime(at(10 * time.Second)), want: left{70 * time.Second, true}},
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
			old: job("j").started(at(-20 * time.Second)).obj(), cur: job("j").deadline(60).started(at(-20 * time.Second)).obj(),
			want: resync{40 * time.Second, true},
		},
		"a deadline shortened into the past: now": {
			old: job("j").deadline(600).started(at(-time.Minute)).obj(), cur: job("j").deadline(30).started(at(-time.Minute)).obj(),
			want: resync{-30 * time.Second, true},
		},
		"the deadline unchanged": {old: job("j").deadline(60).started(hourAgo).obj(), cur: job("j").deadline(60).started(hourAgo).obj()},
		"the deadline removed":   {old: job("j").deadline(60).started(hourAgo).obj(), cur: job("j").started(hourAgo).obj()},
		"a Job not started":      {old: job("j").obj(), cur: job("j").deadline(60).obj()},
		"a deadline extended ahead": {
			old: job("j").deadline(60).started(at(-50 * time.Second)).obj(), cur: job("j").deadline(120).started(at(-50 * time.Second)).obj(),
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
