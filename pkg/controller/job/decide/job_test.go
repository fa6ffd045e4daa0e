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

func TestFinished(t *testing.T) {
	cases := map[string]struct {
		conds []batchv1.JobCondition
		want  batchv1.JobConditionType
	}{
		"no condition": {},
		"Complete":     {conds: []batchv1.JobCondition{reachedSCM(), reachedComplete()}, want: batchv1.JobComplete},
		"Failed":       {conds: []batchv1.JobCondition{backoffFT(), backoffFailed()}, want: batchv1.JobFailed},
		"a False Failed condition is no end": {
			conds: []batchv1.JobCondition{condAt(batchv1.JobFailed, corev1.ConditionFalse, "", "", t0)},
		},
		"interim conditions are no end": {conds: []batchv1.JobCondition{backoffFT(), reachedSCM()}},
		"suspension is no end":          {conds: []batchv1.JobCondition{suspendedCond(t0)}},
		"an Unknown Complete is no end": {conds: []batchv1.JobCondition{condAt(batchv1.JobComplete, corev1.ConditionUnknown, "", "", t0)}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := job("j").Obj()
			j.Status.Conditions = tc.conds
			c, ok := Finished(j)
			var got batchv1.JobConditionType
			if c != nil {
				got = c.Type
			}
			if got != tc.want || ok != (tc.want != "") || IsFinished(j) != ok {
				t.Errorf("Finished = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}

func TestExternalManager(t *testing.T) {
	type manager struct {
		Name     string
		External bool
	}
	cases := map[string]struct {
		job  *batchv1.Job
		want manager
	}{
		"unset":                  {job: job("j").Obj()},
		"this controller":        {job: job("j").ManagedBy("kubernetes.io/job-controller").Obj()},
		"another controller":     {job: job("j").ManagedBy("kueue.x-k8s.io/multikueue").Obj(), want: manager{"kueue.x-k8s.io/multikueue", true}},
		"a near miss is another": {job: job("j").ManagedBy("kubernetes.io/job-controller2").Obj(), want: manager{"kubernetes.io/job-controller2", true}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			n, ok := ExternalManager(tc.job)
			if diff := cmp.Diff(tc.want, manager{n, ok}); diff != "" {
				t.Errorf("ExternalManager (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPodFinalizerHelpers(t *testing.T) {
	type facts struct {
		Tracked, FinishedTracked bool
		Patch                    string
	}
	withOther := func(b *podFx) *podFx {
		return b.Do(func(p *corev1.Pod) { p.Finalizers = append([]string{"example.com/keep"}, p.Finalizers...) })
	}
	const patch = `{"metadata":{"$deleteFromPrimitiveList/finalizers":["batch.jobs.dev/job-tracking"]}}`
	cases := map[string]struct {
		pod  *corev1.Pod
		want facts
	}{
		"no Pod":                                    {},
		"a running tracked Pod":                     {pod: pod("a").Running().Obj(), want: facts{true, false, patch}},
		"a succeeded tracked Pod":                   {pod: pod("a").Succeeded(t0).Obj(), want: facts{true, true, patch}},
		"a failed tracked Pod":                      {pod: pod("a").Failed(t0).Obj(), want: facts{true, true, patch}},
		"a failed Pod counted already":              {pod: pod("a").Failed(t0).NoFinalizer().Obj()},
		"other finalizers stay":                     {pod: withOther(pod("a").Failed(t0)).Obj(), want: facts{true, true, patch}},
		"only other finalizers":                     {pod: withOther(pod("a").Failed(t0).NoFinalizer()).Obj()},
		"a terminating tracked Pod is not finished": {pod: pod("a").Running().Deleted(t0).Obj(), want: facts{true, false, patch}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := facts{FinishedTracked: FinishedWithFinalizer(tc.pod)}
			if tc.pod != nil {
				got.Tracked = HasTrackingFinalizer(tc.pod)
				got.Patch = string(RemoveFinalizerPatch(tc.pod))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("finalizer facts (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLabelsAndModes(t *testing.T) {
	type labels struct {
		Mode, Backoff string
		Known         bool
	}
	cases := map[string]struct {
		job  *batchv1.Job
		want labels
	}{
		"NonIndexed":               {job: job("j").Obj(), want: labels{"NonIndexed", "global", true}},
		"mode unset is NonIndexed": {job: func() *batchv1.Job { j := job("j").Obj(); j.Spec.CompletionMode = nil; return j }(), want: labels{"NonIndexed", "global", true}},
		"Indexed":                  {job: job("j").Indexed(2).Obj(), want: labels{"Indexed", "global", true}},
		"Indexed per index":        {job: job("j").Indexed(2).BackoffLimitPerIndex(1).Obj(), want: labels{"Indexed", "perIndex", true}},
		"an unknown mode":          {job: job("j").CompletionMode("Sparse").Obj(), want: labels{"Sparse", "global", false}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := labels{CompletionModeLabel(tc.job), BackoffLimitLabel(tc.job), knownMode(tc.job)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("labels (-want +got):\n%s", diff)
			}
		})
	}
}

func TestOptionsWithDefaults(t *testing.T) {
	cases := map[string]struct {
		in, want Options
	}{
		"zero: upstream's": {want: DefaultOptions()},
		"set fields are kept": {
			in:   Options{MaxUncountedPods: 2, PodBackoff: time.Second},
			want: Options{MaxUncountedPods: 2, MaxPodChangesPerSync: 500, PodBackoff: time.Second, MaxPodBackoff: 10 * time.Minute, BatchPeriod: time.Second},
		},
		"negative fields take the default": {in: Options{MaxPodChangesPerSync: -1, BatchPeriod: -time.Second}, want: DefaultOptions()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.in.withDefaults()); diff != "" {
				t.Errorf("withDefaults (-want +got):\n%s", diff)
			}
		})
	}
}
