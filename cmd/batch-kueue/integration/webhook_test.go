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

package integration

import (
	"context"
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	kueuejob "sigs.k8s.io/kueue/pkg/controller/jobs/job"

	jobsv1 "github.com/batch-apiserver/batch-apiserver/cmd/batch-kueue/api/v1"
)

const queueLabel = "kueue.x-k8s.io/queue-name"

func webhookScheme(t *testing.T) *runtime.Scheme {
	t.Helper()
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{corev1.AddToScheme, kueue.AddToScheme, jobsv1.AddToScheme} {
		if err := add(s); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// cluster is what the webhook reads: two namespaces ("ns", labeled
// team=a, and "other"), a LocalQueue "plain" on a ClusterQueue without
// checks, "mk" on one with MultiKueue's check and a provisioning one,
// "prov" on one with only the provisioning check, "dangling" on a
// ClusterQueue that does not exist, and "lost-check" on one whose check
// does not exist.
func cluster() []client.Object {
	ns := func(name string, l map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: l}}
	}
	lq := func(name, cq string) *kueue.LocalQueue {
		return &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: kueue.LocalQueueSpec{ClusterQueue: kueue.ClusterQueueReference(cq)}}
	}
	cq := func(name string, checks ...string) *kueue.ClusterQueue {
		c := &kueue.ClusterQueue{ObjectMeta: metav1.ObjectMeta{Name: name}}
		if len(checks) > 0 {
			c.Spec.AdmissionChecksStrategy = &kueue.AdmissionChecksStrategy{}
			for _, ac := range checks {
				c.Spec.AdmissionChecksStrategy.AdmissionChecks = append(c.Spec.AdmissionChecksStrategy.AdmissionChecks, kueue.AdmissionCheckStrategyRule{Name: kueue.AdmissionCheckReference(ac)})
			}
		}
		return c
	}
	ac := func(name, controller string) *kueue.AdmissionCheck {
		return &kueue.AdmissionCheck{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: kueue.AdmissionCheckSpec{ControllerName: controller}}
	}
	return []client.Object{
		ns("ns", map[string]string{"team": "a"}), ns("other", nil),
		lq("plain", "cq-plain"), lq("mk", "cq-mk"), lq("prov", "cq-prov"), lq("dangling", "cq-none"), lq("lost-check", "cq-lost"),
		cq("cq-plain"), cq("cq-mk", "prov", "mk"), cq("cq-prov", "prov"), cq("cq-lost", "gone"),
		ac("mk", kueue.MultiKueueControllerName), ac("prov", "kueue.x-k8s.io/provisioning-request"),
	}
}

// newJob is a Job as the server hands it to the webhook on create: defaulted,
// not suspended, no managedBy.
func newJob(namespace string, queue string) *jobsv1.Job {
	j := &jobsv1.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch.jobs.dev/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: namespace},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2), Completions: ptr.To[int32](2), Suspend: ptr.To(false),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "c", Image: "i"}}}},
		},
	}
	if queue != "" {
		j.Labels = map[string]string{queueLabel: queue}
	}
	return j
}

func TestDefault(t *testing.T) {
	defaultQueue := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default"}, Spec: kueue.LocalQueueSpec{ClusterQueue: "cq-plain"}}
	teamA := labels.SelectorFromSet(labels.Set{"team": "a"})
	suspended := func(j *jobsv1.Job) *jobsv1.Job { j.Spec.Suspend = ptr.To(true); return j }
	managedBy := func(j *jobsv1.Job, m string) *jobsv1.Job { j.Spec.ManagedBy = ptr.To(m); return j }
	cases := map[string]struct {
		extra     []client.Object
		manageAll bool
		selector  labels.Selector
		job       *jobsv1.Job
		want      *jobsv1.Job
	}{
		"a queue name: suspended": {
			job: newJob("ns", "plain"), want: suspended(newJob("ns", "plain")),
		},
		"no queue name: untouched": {
			job: newJob("ns", ""), want: newJob("ns", ""),
		},
		"no queue name, a default LocalQueue: queued there and suspended": {
			extra: []client.Object{defaultQueue},
			job:   newJob("ns", ""), want: suspended(newJob("ns", "default")),
		},
		"a queue name and a default LocalQueue: the name kept": {
			extra: []client.Object{defaultQueue},
			job:   newJob("ns", "plain"), want: suspended(newJob("ns", "plain")),
		},
		"no queue name, every Job managed, no selector: suspended": {
			manageAll: true,
			job:       newJob("other", ""), want: suspended(newJob("other", "")),
		},
		"no queue name, every Job managed, a selected namespace: suspended": {
			manageAll: true, selector: teamA,
			job: newJob("ns", ""), want: suspended(newJob("ns", "")),
		},
		"no queue name, every Job managed, a namespace not selected: untouched": {
			manageAll: true, selector: teamA,
			job: newJob("other", ""), want: newJob("other", ""),
		},
		"a selector without manageJobsWithoutQueueName: untouched": {
			selector: teamA,
			job:      newJob("ns", ""), want: newJob("ns", ""),
		},
		"a MultiKueue queue: managedBy MultiKueue": {
			job: newJob("ns", "mk"), want: managedBy(suspended(newJob("ns", "mk")), kueue.MultiKueueControllerName),
		},
		"a MultiKueue queue, managedBy the job controller: MultiKueue": {
			job:  managedBy(newJob("ns", "mk"), jobControllerName),
			want: managedBy(suspended(newJob("ns", "mk")), kueue.MultiKueueControllerName),
		},
		"a MultiKueue queue, managedBy another controller: kept": {
			job:  managedBy(newJob("ns", "mk"), "example.com/other"),
			want: managedBy(suspended(newJob("ns", "mk")), "example.com/other"),
		},
		"a queue whose checks are not MultiKueue: no managedBy": {
			job: newJob("ns", "prov"), want: suspended(newJob("ns", "prov")),
		},
		"a LocalQueue that does not exist: no managedBy": {
			job: newJob("ns", "missing"), want: suspended(newJob("ns", "missing")),
		},
		"a ClusterQueue that does not exist: no managedBy": {
			job: newJob("ns", "dangling"), want: suspended(newJob("ns", "dangling")),
		},
		"an AdmissionCheck that does not exist: no managedBy": {
			job: newJob("ns", "lost-check"), want: suspended(newJob("ns", "lost-check")),
		},
		"already suspended: kept so": {
			job: suspended(newJob("ns", "plain")), want: suspended(newJob("ns", "plain")),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(webhookScheme(t)).WithObjects(append(cluster(), tc.extra...)...).Build()
			w := &Webhook{Client: c, ManageJobsWithoutQueueName: tc.manageAll, ManagedJobsNamespaceSelector: tc.selector}
			got := tc.job.DeepCopy()
			if err := w.Default(context.Background(), got); err != nil {
				t.Fatalf("Default: %v", err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Default (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestDefaultReadError: a LocalQueue the webhook cannot read is an error
// (the server refuses the create, failurePolicy Fail), not a guess.
func TestDefaultReadError(t *testing.T) {
	c := fake.NewClientBuilder().WithScheme(webhookScheme(t)).WithObjects(cluster()...).
		WithInterceptorFuncs(interceptor.Funcs{Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if _, ok := obj.(*kueue.LocalQueue); ok {
				return errors.New("cache not synced")
			}
			return c.Get(ctx, key, obj, opts...)
		}}).Build()
	w := &Webhook{Client: c}
	if err := w.Default(context.Background(), newJob("ns", "mk")); err == nil {
		t.Fatal("Default: no error on an unreadable LocalQueue")
	}
}

func annotated(j *jobsv1.Job, kv ...string) *jobsv1.Job {
	if j.Annotations == nil {
		j.Annotations = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		j.Annotations[kv[i]] = kv[i+1]
	}
	return j
}

func labeled(j *jobsv1.Job, kv ...string) *jobsv1.Job {
	if j.Labels == nil {
		j.Labels = map[string]string{}
	}
	for i := 0; i+1 < len(kv); i += 2 {
		j.Labels[kv[i]] = kv[i+1]
	}
	return j
}

func TestValidateCreate(t *testing.T) {
	indexed := func(j *jobsv1.Job) *jobsv1.Job { j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion); return j }
	labels := field.NewPath("metadata", "labels")
	cases := map[string]struct {
		job  *jobsv1.Job
		want field.ErrorList
	}{
		"a queue name": {job: newJob("ns", "q")},
		"a queue name that is no object name": {
			job: newJob("ns", "Q_1"), want: field.ErrorList{field.Invalid(labels.Key(queueLabel), nil, "")},
		},
		// Allowed as for batch/v1 (MultiKueue's worker copies carry it),
		// where jobframework forbids it on kinds outside Kueue's list.
		"a prebuilt workload name": {
			job: labeled(newJob("ns", "q"), "kueue.x-k8s.io/prebuilt-workload-name", "job-j-1a2b3"),
		},
		"a prebuilt workload name that is no object name": {
			job:  labeled(newJob("ns", "q"), "kueue.x-k8s.io/prebuilt-workload-name", "W!"),
			want: field.ErrorList{field.Invalid(labels.Key("kueue.x-k8s.io/prebuilt-workload-name"), nil, "")},
		},
		"min parallelism just inside (1 of 2)": {job: annotated(newJob("ns", "q"), minParallelismAnnotation, "1")},
		"min parallelism equal to the Pods": {
			job: annotated(newJob("ns", "q"), minParallelismAnnotation, "2"), want: field.ErrorList{field.Invalid(minParallelismPath, nil, "")},
		},
		"min parallelism 0": {
			job: annotated(newJob("ns", "q"), minParallelismAnnotation, "0"), want: field.ErrorList{field.Invalid(minParallelismPath, nil, "")},
		},
		"min parallelism not a number": {
			job: annotated(newJob("ns", "q"), minParallelismAnnotation, "one"), want: field.ErrorList{field.Invalid(minParallelismPath, nil, "")},
		},
		"completions follow parallelism, Indexed, equal": {job: indexed(annotated(newJob("ns", "q"), completionsFollowParallelismAnnot, "true"))},
		"completions follow parallelism, NonIndexed": {
			job: annotated(newJob("ns", "q"), completionsFollowParallelismAnnot, "true"), want: field.ErrorList{field.Invalid(completionsFollowPath, nil, "")},
		},
		"completions follow parallelism, completions differ": {
			job: func() *jobsv1.Job {
				j := indexed(annotated(newJob("ns", "q"), completionsFollowParallelismAnnot, "true"))
				j.Spec.Completions = ptr.To[int32](4)
				return j
			}(),
			want: field.ErrorList{field.Invalid(field.NewPath("spec", "completions"), nil, "")},
		},
		"completions follow parallelism, not a boolean": {
			job: annotated(newJob("ns", "q"), completionsFollowParallelismAnnot, "yes"), want: field.ErrorList{field.Invalid(completionsFollowPath, nil, "")},
		},
		"a required and a preferred topology": {
			job: func() *jobsv1.Job {
				j := newJob("ns", "q")
				j.Spec.Template.Annotations = map[string]string{kueue.PodSetRequiredTopologyAnnotation: "rack", kueue.PodSetPreferredTopologyAnnotation: "block"}
				return j
			}(),
			want: field.ErrorList{field.Invalid(templateMetadataPath.Child("annotations"), nil, "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := validateCreate(context.Background(), (*Job)(tc.job))
			if err != nil {
				t.Fatal(err)
			}
			field.ErrorMatcher{}.ByType().ByField().Test(t, tc.want, got)
		})
	}
}

func TestValidateUpdate(t *testing.T) {
	defaultQueue := &kueue.LocalQueue{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "default"}}
	running := func(j *jobsv1.Job) *jobsv1.Job { j.Spec.Suspend = ptr.To(false); return j }
	suspended := func(j *jobsv1.Job) *jobsv1.Job { j.Spec.Suspend = ptr.To(true); return j }
	parallelism := func(j *jobsv1.Job, n int32) *jobsv1.Job { j.Spec.Parallelism = ptr.To(n); return j }
	queuePath := field.NewPath("metadata", "labels").Key(queueLabel)
	priorityPath := field.NewPath("metadata", "labels").Key("kueue.x-k8s.io/priority-class")
	cases := map[string]struct {
		extra    []client.Object
		old, new *jobsv1.Job
		want     field.ErrorList
	}{
		"a running Job's queue name changed": {
			old: running(newJob("ns", "a")), new: running(newJob("ns", "b")),
			want: field.ErrorList{field.Invalid(queuePath, nil, "")},
		},
		"a suspended Job's queue name changed": {
			old: suspended(newJob("ns", "a")), new: suspended(newJob("ns", "b")),
		},
		"a suspended Job's queue name removed, no default LocalQueue": {
			old: suspended(newJob("ns", "a")), new: suspended(newJob("ns", "")),
		},
		"a suspended Job's queue name removed, a default LocalQueue": {
			extra: []client.Object{defaultQueue},
			old:   suspended(newJob("ns", "a")), new: suspended(newJob("ns", "")),
			want: field.ErrorList{field.Invalid(queuePath, nil, "")},
		},
		"a running Job's priority class changed": {
			old: labeled(running(newJob("ns", "a")), "kueue.x-k8s.io/priority-class", "low"),
			new: labeled(running(newJob("ns", "a")), "kueue.x-k8s.io/priority-class", "high"),
		},
		"a running Job's priority class removed": {
			old:  labeled(running(newJob("ns", "a")), "kueue.x-k8s.io/priority-class", "low"),
			new:  running(newJob("ns", "a")),
			want: field.ErrorList{field.Invalid(priorityPath, nil, "")},
		},
		"a running Job's parallelism under partial admission": {
			old:  annotated(running(parallelism(newJob("ns", "a"), 4)), minParallelismAnnotation, "1"),
			new:  annotated(running(parallelism(newJob("ns", "a"), 3)), minParallelismAnnotation, "1"),
			want: field.ErrorList{field.Forbidden(field.NewPath("spec", "parallelism"), "")},
		},
		"a suspended Job's parallelism under partial admission": {
			old: annotated(suspended(parallelism(newJob("ns", "a"), 4)), minParallelismAnnotation, "1"),
			new: annotated(suspended(parallelism(newJob("ns", "a"), 3)), minParallelismAnnotation, "1"),
		},
		"the partial admission annotation changed to a bad value": {
			old:  annotated(suspended(newJob("ns", "a")), minParallelismAnnotation, "1"),
			new:  annotated(suspended(newJob("ns", "a")), minParallelismAnnotation, "5"),
			want: field.ErrorList{field.Invalid(minParallelismPath, nil, "")},
		},
		"a running Job's completions-follow annotation added": {
			old: running(newJob("ns", "a")),
			new: func() *jobsv1.Job {
				j := annotated(running(newJob("ns", "a")), completionsFollowParallelismAnnot, "true")
				j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
				return j
			}(),
			want: field.ErrorList{field.Forbidden(completionsFollowPath, "")},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithScheme(webhookScheme(t)).WithObjects(append(cluster(), tc.extra...)...).Build()
			w := &Webhook{Client: c}
			got, err := w.validateUpdate(context.Background(), (*Job)(tc.old), (*Job)(tc.new))
			if err != nil {
				t.Fatal(err)
			}
			field.ErrorMatcher{}.ByType().ByField().Test(t, tc.want, got)
		})
	}
}

// TestMessagesAsBatchV1: for the jobframework rules, the message a
// batch.jobs.dev Job gets is the one Kueue's batch/v1 integration gives
// the same batch/v1 Job.
func TestMessagesAsBatchV1(t *testing.T) {
	old, changed := newJob("ns", "a"), newJob("ns", "b")
	asBatchV1 := func(j *jobsv1.Job) *kueuejob.Job {
		return (*kueuejob.Job)(&batchv1.Job{ObjectMeta: j.ObjectMeta, Spec: j.Spec})
	}
	want := jobframework.ValidateJobOnUpdate(asBatchV1(old), asBatchV1(changed), func(string) bool { return false }).ToAggregate()
	_, got := (&Webhook{Client: fake.NewClientBuilder().WithScheme(webhookScheme(t)).Build()}).ValidateUpdate(context.Background(), old, changed)
	if want == nil || got == nil || got.Error() != want.Error() {
		t.Errorf("ValidateUpdate: %v, want Kueue's batch/v1 %v", got, want)
	}
}
