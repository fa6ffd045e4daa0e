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
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestCreations(t *testing.T) {
	indexEnv := corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
		FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.labels['batch.jobs.dev/job-completion-index']"}}}
	own := corev1.EnvVar{Name: "JOB_COMPLETION_INDEX", Value: "mine"}
	template := func(labels, annotations map[string]string, finalizers []string, hostname string, initEnv, env []corev1.EnvVar, withInit bool) *corev1.PodTemplateSpec {
		t := &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations, Finalizers: finalizers},
			Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Hostname: hostname,
				Containers: []corev1.Container{{Name: "main", Image: "busybox", Env: env}}},
		}
		if withInit {
			t.Spec.InitContainers = []corev1.Container{{Name: "init", Env: initEnv}}
		}
		return t
	}
	base := func(extra map[string]string) map[string]string {
		m := map[string]string{batch.ControllerUIDLabel: "j-uid", batch.JobNameLabel: "j"}
		for k, v := range extra {
			m[k] = v
		}
		return m
	}
	tracking := []string{batch.JobTrackingFinalizer}
	inGroup := func(t *corev1.PodTemplateSpec, pg string) *corev1.PodTemplateSpec {
		t.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(pg)}
		return t
	}
	withInit := func(b *jobFx) *jobFx { return b.InitContainers(corev1.Container{Name: "init"}) }
	cases := map[string]struct {
		job     *batchv1.Job
		n       int
		indexes []int
		held    map[int]*corev1.Pod
		group   *corev1.PodSchedulingGroup
		want    []PodCreation
	}{
		"NonIndexed: n Pods of the template with the finalizer": {
			job: job("j").Obj(), n: 2,
			want: []PodCreation{
				{Index: -1, GenerateName: "j-", Template: template(base(nil), nil, tracking, "", nil, nil, false)},
				{Index: -1, GenerateName: "j-", Template: template(base(nil), nil, tracking, "", nil, nil, false)},
			},
		},
		"a finalizer already in the template is not added twice": {
			job: func() *batchv1.Job {
				j := job("j").Obj()
				j.Spec.Template.Finalizers = []string{"x", batch.JobTrackingFinalizer}
				return j
			}(), n: 1,
			want: []PodCreation{{Index: -1, GenerateName: "j-", Template: template(base(nil), nil, []string{"x", batch.JobTrackingFinalizer}, "", nil, nil, false)}},
		},
		"Indexed: index annotation and label, hostname, name prefix and the variable": {
			job: withInit(job("j").Indexed(3)).Obj(), indexes: []int{0, 2},
			want: []PodCreation{
				{Index: 0, GenerateName: "j-0-", Template: template(base(map[string]string{batch.JobCompletionIndexAnnotation: "0"}),
					map[string]string{batch.JobCompletionIndexAnnotation: "0"}, tracking, "j-0", []corev1.EnvVar{indexEnv}, []corev1.EnvVar{indexEnv}, true)},
				{Index: 2, GenerateName: "j-2-", Template: template(base(map[string]string{batch.JobCompletionIndexAnnotation: "2"}),
					map[string]string{batch.JobCompletionIndexAnnotation: "2"}, tracking, "j-2", []corev1.EnvVar{indexEnv}, []corev1.EnvVar{indexEnv}, true)},
			},
		},
		"Indexed: a variable of the container's own is kept": {
			job: func() *batchv1.Job {
				j := job("j").Indexed(1).Obj()
				j.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{own}
				return j
			}(), indexes: []int{0},
			want: []PodCreation{{Index: 0, GenerateName: "j-0-", Template: template(base(map[string]string{batch.JobCompletionIndexAnnotation: "0"}),
				map[string]string{batch.JobCompletionIndexAnnotation: "0"}, tracking, "j-0", nil, []corev1.EnvVar{own}, false)}},
		},
		"Indexed: a stale index in the template is replaced": {
			job: func() *batchv1.Job {
				j := job("j").Indexed(2).Obj()
				j.Spec.Template.Annotations = map[string]string{batch.JobCompletionIndexAnnotation: "7", "keep": "me"}
				return j
			}(), indexes: []int{1},
			want: []PodCreation{{Index: 1, GenerateName: "j-1-", Template: template(base(map[string]string{batch.JobCompletionIndexAnnotation: "1"}),
				map[string]string{batch.JobCompletionIndexAnnotation: "1", "keep": "me"}, tracking, "j-1", nil, []corev1.EnvVar{indexEnv}, false)}},
		},
		"backoffLimitPerIndex: the first Pod of an index counts no failure": {
			job: job("j").Indexed(1).BackoffLimitPerIndex(1).Obj(), indexes: []int{0},
			want: []PodCreation{{Index: 0, GenerateName: "j-0-", Template: template(base(map[string]string{batch.JobCompletionIndexAnnotation: "0"}),
				map[string]string{batch.JobCompletionIndexAnnotation: "0", batch.JobIndexFailureCountAnnotation: "0"}, tracking, "j-0", nil, []corev1.EnvVar{indexEnv}, false)}},
		},
		"backoffLimitPerIndex: a replacement inherits the counts": {
			job: job("j").Indexed(1).BackoffLimitPerIndex(5).Obj(), indexes: []int{0},
			held: map[int]*corev1.Pod{0: pod("a").Index(0).IndexFailureCount(2).IgnoredFailureCount(1).Failed(t0).Obj()},
			want: []PodCreation{{Index: 0, GenerateName: "j-0-", Template: template(base(map[string]string{batch.JobCompletionIndexAnnotation: "0"}),
				map[string]string{batch.JobCompletionIndexAnnotation: "0", batch.JobIndexFailureCountAnnotation: "3", batch.JobIndexIgnoredFailureCountAnnotation: "1"},
				tracking, "j-0", nil, []corev1.EnvVar{indexEnv}, false)}},
		},
		"Indexed without indexes: nothing": {job: job("j").Indexed(2).Obj(), n: 2},
		"NonIndexed with a PodGroup: every Pod joins it": {
			job: job("j").Obj(), n: 1, group: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("pg")},
			want: []PodCreation{{Index: -1, GenerateName: "j-", Template: inGroup(template(base(nil), nil, tracking, "", nil, nil, false), "pg")}},
		},
		"Indexed with a PodGroup: every index joins it": {
			job: job("j").Indexed(2).Obj(), indexes: []int{1}, group: &corev1.PodSchedulingGroup{PodGroupName: ptr.To("pg")},
			want: []PodCreation{{Index: 1, GenerateName: "j-1-", Template: inGroup(template(base(map[string]string{batch.JobCompletionIndexAnnotation: "1"}),
				map[string]string{batch.JobCompletionIndexAnnotation: "1"}, tracking, "j-1", nil, []corev1.EnvVar{indexEnv}, false), "pg")}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.job.DeepCopy()
			got := creations(tc.job, tc.n, tc.indexes, tc.held, tc.group)
			if diff := cmp.Diff(tc.want, got, syncCmp...); diff != "" {
				t.Errorf("creations (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(before, tc.job); diff != "" {
				t.Errorf("the Job changed (-before +after):\n%s", diff)
			}
		})
	}
}

func TestNamePrefixes(t *testing.T) {
	long := strings.Repeat("a", 63)
	cases := map[string]struct {
		job   string
		index int
		want  string
	}{
		"NonIndexed: the name and a dash":                 {job: "j", index: noIndex, want: "j-"},
		"NonIndexed: the longest name keeps its dash":     {job: strings.Repeat("a", 253), index: noIndex, want: strings.Repeat("a", 253) + "-"},
		"NonIndexed: no dash where it would not be valid": {job: strings.Repeat("a", 254), index: noIndex, want: strings.Repeat("a", 254)},
		"Indexed: a short name":                           {job: "j", index: 4, want: "j-4-"},
		"Indexed: a prefix that just fits":                {job: long[:55], index: 1, want: long[:55] + "-1-"},
		"Indexed: one character too long is cut":          {job: long[:56], index: 1, want: long[:55] + "-1-"},
		"Indexed: a name beyond the limit is cut":         {job: long, index: 7, want: long[:55] + "-7-"},
		"Indexed: a long index survives whole":            {job: long, index: 123456, want: long[:50] + "-123456-"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := namePrefix(tc.job)
			if tc.index != noIndex {
				got = indexedNamePrefix(tc.job, tc.index)
			}
			if got != tc.want {
				t.Errorf("prefix = %q, want %q", got, tc.want)
			}
		})
	}
}
