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

package v1_test

import (
	"math"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/install"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// jobWrapper builds Jobs for the tests.
type jobWrapper struct{ batchv1.Job }

// makeJob returns a Job as a user would write it: one container, restartPolicy
// Never, nothing else set.
func makeJob() *jobWrapper {
	return &jobWrapper{batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox:1.36"}},
			}},
		},
	}}
}

// makeDefaultedJob returns makeJob() as kube-apiserver answers it, written out
// field by field (not computed by the code under test).
func makeDefaultedJob() *jobWrapper {
	return &jobWrapper{batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"},
		Spec: batchv1.JobSpec{
			Parallelism:          ptr.To[int32](1),
			Completions:          ptr.To[int32](1),
			BackoffLimit:         ptr.To[int32](6),
			ManualSelector:       ptr.To(false),
			CompletionMode:       ptr.To(batchv1.NonIndexedCompletion),
			Suspend:              ptr.To(false),
			PodReplacementPolicy: ptr.To(batchv1.TerminatingOrFailed),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{
					Name:                     "c",
					Image:                    "busybox:1.36",
					ImagePullPolicy:          corev1.PullIfNotPresent,
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				}},
				TerminationGracePeriodSeconds: ptr.To[int64](30),
				DNSPolicy:                     corev1.DNSClusterFirst,
				SecurityContext:               &corev1.PodSecurityContext{},
				SchedulerName:                 "default-scheduler",
			}},
		},
	}}
}

func (w *jobWrapper) Labels(l map[string]string) *jobWrapper {
	w.Job.Labels = l
	return w
}

func (w *jobWrapper) TemplateLabels(l map[string]string) *jobWrapper {
	w.Spec.Template.Labels = l
	return w
}

func (w *jobWrapper) Completions(n *int32) *jobWrapper {
	w.Spec.Completions = n
	return w
}

func (w *jobWrapper) Parallelism(n *int32) *jobWrapper {
	w.Spec.Parallelism = n
	return w
}

func (w *jobWrapper) BackoffLimit(n int32) *jobWrapper {
	w.Spec.BackoffLimit = &n
	return w
}

func (w *jobWrapper) Indexed() *jobWrapper {
	w.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	return w
}

func (w *jobWrapper) BackoffLimitPerIndex(n int32) *jobWrapper {
	w.Spec.BackoffLimitPerIndex = &n
	return w
}

func (w *jobWrapper) Suspend(b bool) *jobWrapper {
	w.Spec.Suspend = &b
	return w
}

func (w *jobWrapper) ManualSelector(b bool) *jobWrapper {
	w.Spec.ManualSelector = &b
	return w
}

func (w *jobWrapper) PodReplacementPolicy(p batchv1.PodReplacementPolicy) *jobWrapper {
	w.Spec.PodReplacementPolicy = &p
	return w
}

func (w *jobWrapper) PodFailurePolicy(p *batchv1.PodFailurePolicy) *jobWrapper {
	w.Spec.PodFailurePolicy = p
	return w
}

func (w *jobWrapper) Template(change func(*corev1.PodSpec)) *jobWrapper {
	change(&w.Spec.Template.Spec)
	return w
}

func (w *jobWrapper) Obj() *batchv1.Job {
	return &w.Job
}

// onPodConditions returns a pod failure policy with one rule per condition status.
func onPodConditions(statuses ...corev1.ConditionStatus) *batchv1.PodFailurePolicy {
	p := &batchv1.PodFailurePolicy{}
	for _, s := range statuses {
		p.Rules = append(p.Rules, batchv1.PodFailurePolicyRule{
			Action:          batchv1.PodFailurePolicyActionIgnore,
			OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: s}},
		})
	}
	return p
}

func newScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	scheme := runtime.NewScheme()
	install.Install(scheme)
	return scheme
}

func TestSetObjectDefaultsJob(t *testing.T) {
	cases := []struct {
		name string
		in   *batchv1.Job
		want *batchv1.Job
	}{
		{
			name: "completions and parallelism unset default to 1 and 1",
			in:   makeJob().Obj(),
			want: makeDefaultedJob().Obj(),
		},
		{
			name: "only completions set: parallelism defaults to 1",
			in:   makeJob().Completions(ptr.To[int32](5)).Obj(),
			want: makeDefaultedJob().Completions(ptr.To[int32](5)).Obj(),
		},
		{
			name: "only parallelism set: completions stay unset",
			in:   makeJob().Parallelism(ptr.To[int32](3)).Obj(),
			want: makeDefaultedJob().Parallelism(ptr.To[int32](3)).Completions(nil).Obj(),
		},
		{
			name: "parallelism 0 is kept",
			in:   makeJob().Completions(ptr.To[int32](2)).Parallelism(ptr.To[int32](0)).Obj(),
			want: makeDefaultedJob().Completions(ptr.To[int32](2)).Parallelism(ptr.To[int32](0)).Obj(),
		},
		{
			name: "backoffLimit defaults to 6",
			in:   makeJob().Obj(),
			want: makeDefaultedJob().BackoffLimit(6).Obj(),
		},
		{
			name: "backoffLimit set is kept",
			in:   makeJob().BackoffLimit(0).Obj(),
			want: makeDefaultedJob().BackoffLimit(0).Obj(),
		},
		{
			name: "backoffLimit defaults to MaxInt32 with backoffLimitPerIndex",
			in:   makeJob().Indexed().BackoffLimitPerIndex(1).Obj(),
			want: makeDefaultedJob().Indexed().BackoffLimitPerIndex(1).BackoffLimit(math.MaxInt32).Obj(),
		},
		{
			name: "backoffLimit set is kept with backoffLimitPerIndex",
			in:   makeJob().Indexed().BackoffLimitPerIndex(1).BackoffLimit(3).Obj(),
			want: makeDefaultedJob().Indexed().BackoffLimitPerIndex(1).BackoffLimit(3).Obj(),
		},
		{
			name: "completionMode Indexed is kept",
			in:   makeJob().Indexed().Obj(),
			want: makeDefaultedJob().Indexed().Obj(),
		},
		{
			name: "suspend true is kept",
			in:   makeJob().Suspend(true).Obj(),
			want: makeDefaultedJob().Suspend(true).Obj(),
		},
		{
			name: "manualSelector true is kept",
			in:   makeJob().ManualSelector(true).Obj(),
			want: makeDefaultedJob().ManualSelector(true).Obj(),
		},
		{
			name: "podReplacementPolicy defaults to Failed with a podFailurePolicy",
			in:   makeJob().PodFailurePolicy(onPodConditions(corev1.ConditionTrue)).Obj(),
			want: makeDefaultedJob().PodFailurePolicy(onPodConditions(corev1.ConditionTrue)).PodReplacementPolicy(batchv1.Failed).Obj(),
		},
		{
			name: "podReplacementPolicy set is kept with a podFailurePolicy",
			in: makeJob().PodFailurePolicy(onPodConditions(corev1.ConditionTrue)).
				PodReplacementPolicy(batchv1.TerminatingOrFailed).Obj(),
			want: makeDefaultedJob().PodFailurePolicy(onPodConditions(corev1.ConditionTrue)).
				PodReplacementPolicy(batchv1.TerminatingOrFailed).Obj(),
		},
		{
			name: "podReplacementPolicy Failed is kept without a podFailurePolicy",
			in:   makeJob().PodReplacementPolicy(batchv1.Failed).Obj(),
			want: makeDefaultedJob().PodReplacementPolicy(batchv1.Failed).Obj(),
		},
		{
			name: "onPodConditions status defaults to True and a set one is kept",
			in:   makeJob().PodFailurePolicy(onPodConditions("", corev1.ConditionFalse)).Obj(),
			want: makeDefaultedJob().PodFailurePolicy(onPodConditions(corev1.ConditionTrue, corev1.ConditionFalse)).
				PodReplacementPolicy(batchv1.Failed).Obj(),
		},
		{
			name: "job labels are copied from the template when the job has none",
			in:   makeJob().TemplateLabels(map[string]string{"app": "a"}).Obj(),
			want: makeDefaultedJob().TemplateLabels(map[string]string{"app": "a"}).Labels(map[string]string{"app": "a"}).Obj(),
		},
		{
			name: "job labels are kept when the job has some",
			in:   makeJob().TemplateLabels(map[string]string{"app": "a"}).Labels(map[string]string{"team": "t"}).Obj(),
			want: makeDefaultedJob().TemplateLabels(map[string]string{"app": "a"}).Labels(map[string]string{"team": "t"}).Obj(),
		},
		{
			name: "job labels stay unset when the template has none",
			in:   makeJob().Obj(),
			want: makeDefaultedJob().Labels(nil).Obj(),
		},
		{
			name: "explicit values are kept",
			in: makeJob().Completions(ptr.To[int32](4)).Parallelism(ptr.To[int32](2)).BackoffLimit(1).Indexed().
				Suspend(true).ManualSelector(true).PodReplacementPolicy(batchv1.Failed).Obj(),
			want: makeDefaultedJob().Completions(ptr.To[int32](4)).Parallelism(ptr.To[int32](2)).BackoffLimit(1).Indexed().
				Suspend(true).ManualSelector(true).PodReplacementPolicy(batchv1.Failed).Obj(),
		},
		{
			// The hand-written template walk and the declarative defaults that
			// defaulter-gen inlines both run through the scheme.
			name: "pod template defaults are applied",
			in: makeJob().Template(func(s *corev1.PodSpec) {
				s.RestartPolicy = ""
				s.Containers[0].Image = "busybox"
				s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80}}
				s.Containers[0].ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)},
				}}
				s.Volumes = []corev1.Volume{{Name: "v"}}
			}).Obj(),
			want: makeDefaultedJob().Template(func(s *corev1.PodSpec) {
				s.RestartPolicy = corev1.RestartPolicyAlways
				s.Containers[0].Image = "busybox"
				s.Containers[0].ImagePullPolicy = corev1.PullAlways
				s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}}
				s.Containers[0].ReadinessProbe = &corev1.Probe{
					ProbeHandler: corev1.ProbeHandler{
						HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP},
					},
					TimeoutSeconds:   1,
					PeriodSeconds:    10,
					SuccessThreshold: 1,
					FailureThreshold: 3,
				}
				s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			}).Obj(),
		},
	}
	scheme := newScheme(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.in.DeepCopy()
			scheme.Default(got)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Default (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSetObjectDefaultsJobList(t *testing.T) {
	got := &batchv1.JobList{Items: []batchv1.Job{*makeJob().Obj(), *makeJob().Suspend(true).Obj()}}
	want := &batchv1.JobList{Items: []batchv1.Job{*makeDefaultedJob().Obj(), *makeDefaultedJob().Suspend(true).Obj()}}
	newScheme(t).Default(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Default (-want +got):\n%s", diff)
	}
}
