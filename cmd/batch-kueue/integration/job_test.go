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
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/podset"

	jobsv1 "github.com/batch-apiserver/batch-apiserver/cmd/batch-kueue/api/v1"
)

var start = metav1.NewTime(metav1.Now().Rfc3339Copy().Time)

// testJob is a Job as the server stores it: selector labels on the
// template, parallelism 2 of 4 completions, and one more template label of
// the user's.
func testJob() *Job {
	return &Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: "batch.jobs.dev/v1", Kind: "Job"},
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", Labels: map[string]string{"kueue.x-k8s.io/queue-name": "q"}},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2),
			Completions: ptr.To[int32](4),
			Suspend:     ptr.To(true),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
					jobNameLabel: "j", legacyJobNameLabel: "j", controllerUIDLabel: "uid-1", legacyControllerUIDLabel: "uid-1", "app": "a",
				}},
				Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever, Containers: []corev1.Container{{Name: "main", Image: "img"}}},
			},
		},
	}
}

// flavor is what an admission to the kwok flavor gives the PodSet.
func flavor() podset.PodSetInfo {
	return podset.PodSetInfo{
		Name:         kueue.DefaultPodSetName,
		Count:        2,
		NodeSelector: map[string]string{"type": "kwok"},
		Tolerations:  []corev1.Toleration{{Key: "kwok.x-k8s.io/node", Operator: corev1.TolerationOpEqual, Value: "fake", Effect: corev1.TaintEffectNoSchedule}},
		Labels:       map[string]string{"kueue.x-k8s.io/podset": "main"},
	}
}

// admitted is testJob after RunWithPodSetsInfo with flavor.
func admitted() *Job {
	j := testJob()
	j.Spec.Suspend = ptr.To(false)
	j.Spec.Template.Spec.NodeSelector = map[string]string{"type": "kwok"}
	j.Spec.Template.Spec.Tolerations = flavor().Tolerations
	j.Spec.Template.Labels["kueue.x-k8s.io/podset"] = "main"
	return j
}

func TestPodSets(t *testing.T) {
	got, err := testJob().PodSets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	template := testJob().Spec.Template
	template.Labels = map[string]string{jobNameLabel: "j", "app": "a"}
	// Topology-aware scheduling (on by default) groups Pods by completion index.
	want := []kueue.PodSet{{Name: kueue.DefaultPodSetName, Template: template, Count: 2,
		TopologyRequest: &kueue.PodSetTopologyRequest{PodIndexLabel: ptr.To(completionIndexLabel)}}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("PodSets (-want,+got):\n%s", diff)
	}
}

func TestPodSetsCount(t *testing.T) {
	cases := map[string]struct {
		parallelism, completions *int32
		minAnnotation            string
		wantCount                int32
		wantMin                  *int32
	}{
		"parallelism below completions":  {parallelism: ptr.To[int32](3), completions: ptr.To[int32](5), wantCount: 3},
		"completions below parallelism":  {parallelism: ptr.To[int32](5), completions: ptr.To[int32](2), wantCount: 2},
		"no completions":                 {parallelism: ptr.To[int32](4), wantCount: 4},
		"no parallelism: the default 1":  {completions: ptr.To[int32](4), wantCount: 1},
		"partial admission":              {parallelism: ptr.To[int32](4), completions: ptr.To[int32](4), minAnnotation: "2", wantCount: 4, wantMin: ptr.To[int32](2)},
		"partial admission not a number": {parallelism: ptr.To[int32](4), completions: ptr.To[int32](4), minAnnotation: "two", wantCount: 4},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := testJob()
			j.Spec.Parallelism, j.Spec.Completions = tc.parallelism, tc.completions
			if tc.minAnnotation != "" {
				j.Annotations = map[string]string{minParallelismAnnotation: tc.minAnnotation}
			}
			sets, err := j.PodSets(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if sets[0].Count != tc.wantCount || !ptr.Equal(sets[0].MinCount, tc.wantMin) {
				t.Errorf("count %d min %v, want %d min %v", sets[0].Count, sets[0].MinCount, tc.wantCount, tc.wantMin)
			}
		})
	}
}

func TestRunAndRestore(t *testing.T) {
	j := testJob()
	if err := j.RunWithPodSetsInfo(context.Background(), []podset.PodSetInfo{flavor()}); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(admitted(), j); diff != "" {
		t.Errorf("after RunWithPodSetsInfo (-want,+got):\n%s", diff)
	}
	// The restore info is what the PodSet had before admission: the
	// template without the server's controller-uid labels.
	sets, err := testJob().PodSets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if !j.RestorePodSetsInfo([]podset.PodSetInfo{podset.FromPodSet(&sets[0])}) {
		t.Error("RestorePodSetsInfo reported no change")
	}
	want := testJob()
	want.Spec.Suspend = ptr.To(false)
	if diff := cmp.Diff(want, j); diff != "" {
		t.Errorf("after RestorePodSetsInfo (-want,+got):\n%s", diff)
	}
	if err := testJob().RunWithPodSetsInfo(context.Background(), []podset.PodSetInfo{flavor(), flavor()}); err == nil {
		t.Error("RunWithPodSetsInfo took two PodSet infos for one PodSet")
	}
}

func TestPartialAdmission(t *testing.T) {
	j := testJob()
	j.Annotations = map[string]string{minParallelismAnnotation: "1", completionsFollowParallelismAnnot: "true"}
	info := flavor()
	info.Count = 1
	if err := j.RunWithPodSetsInfo(context.Background(), []podset.PodSetInfo{info}); err != nil {
		t.Fatal(err)
	}
	if *j.Spec.Parallelism != 1 || *j.Spec.Completions != 1 {
		t.Errorf("admitted with 1: parallelism %d completions %d, want 1 and 1", *j.Spec.Parallelism, *j.Spec.Completions)
	}
	info.Count = 2
	j.RestorePodSetsInfo([]podset.PodSetInfo{info})
	if *j.Spec.Parallelism != 2 || *j.Spec.Completions != 2 {
		t.Errorf("restored to 2: parallelism %d completions %d, want 2 and 2", *j.Spec.Parallelism, *j.Spec.Completions)
	}
}

// TestStop stops an admitted, running Job: suspended, startTime cleared,
// template restored, no stopping annotation left; a second stop changes
// nothing and reports so.
func TestStop(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := jobsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	running := admitted()
	running.Status.StartTime = &start
	running.Status.Active = 2
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&jobsv1.Job{}).WithObjects(running.Object()).Build()
	sets, err := testJob().PodSets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	infos := []podset.PodSetInfo{podset.FromPodSet(&sets[0])}

	j := &Job{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(running.Object()), j.Object()); err != nil {
		t.Fatal(err)
	}
	stopped, err := j.Stop(context.Background(), c, infos, "", "")
	if err != nil || !stopped {
		t.Fatalf("Stop = %v, %v; want true, nil", stopped, err)
	}
	got := &jobsv1.Job{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(running.Object()), got); err != nil {
		t.Fatal(err)
	}
	want := (*jobsv1.Job)(testJob())
	want.Status.Active = 2
	ignore := cmp.FilterPath(func(p cmp.Path) bool {
		return p.String() == "ObjectMeta.ResourceVersion" || p.String() == "TypeMeta"
	}, cmp.Ignore())
	if diff := cmp.Diff(want, got, ignore); diff != "" {
		t.Errorf("stopped Job (-want,+got):\n%s", diff)
	}
	if !(*Job)(got).IsSuspended() {
		t.Error("stopped Job is not suspended")
	}
	again := (*Job)(got)
	if stopped, err := again.Stop(context.Background(), c, infos, "", ""); err != nil || stopped {
		t.Errorf("second Stop = %v, %v; want false, nil", stopped, err)
	}
}

// TestStopFinishedByARetry stops a running Job whose restore of the
// template the server refuses once (it still counts active Pods, as
// batch/v1's rules say): the refused call reports no stop, the retry that
// finishes it does, so the stop records one Stopped Event, once it has
// succeeded.
func TestStopFinishedByARetry(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := jobsv1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	running := admitted()
	running.Status.StartTime = &start
	running.Status.Active = 2
	refuseRestore := true
	c := fake.NewClientBuilder().WithScheme(scheme).WithStatusSubresource(&jobsv1.Job{}).WithObjects(running.Object()).
		WithInterceptorFuncs(interceptor.Funcs{Patch: func(ctx context.Context, cl client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
			// The restore is the patch that takes the stopping annotation off.
			if refuseRestore && obj.GetAnnotations()[stoppingAnnotation] == "" {
				return apierrors.NewInvalid(jobsv1.GroupVersionKind.GroupKind(), obj.GetName(), field.ErrorList{
					field.Invalid(field.NewPath("spec", "template"), nil, "the Job still counts active Pods")})
			}
			return cl.Patch(ctx, obj, patch, opts...)
		}}).Build()
	sets, err := testJob().PodSets(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	infos := []podset.PodSetInfo{podset.FromPodSet(&sets[0])}

	type call struct{ Stopped, Failed bool }
	var got []call
	for range 2 {
		j := &Job{}
		if err := c.Get(context.Background(), client.ObjectKeyFromObject(running.Object()), j.Object()); err != nil {
			t.Fatal(err)
		}
		stopped, err := j.Stop(context.Background(), c, infos, "", "")
		got = append(got, call{Stopped: stopped, Failed: err != nil})
		refuseRestore = false
	}
	if diff := cmp.Diff([]call{{Stopped: false, Failed: true}, {Stopped: true, Failed: false}}, got); diff != "" {
		t.Errorf("Stop calls (-want,+got):\n%s", diff)
	}
	final := &Job{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(running.Object()), final.Object()); err != nil {
		t.Fatal(err)
	}
	if !final.IsSuspended() {
		t.Error("the Job is not suspended after the retried stop")
	}
}

func TestIsSuspended(t *testing.T) {
	j := testJob()
	if !j.IsSuspended() {
		t.Error("suspended Job not suspended")
	}
	j.Annotations = map[string]string{stoppingAnnotation: "true"}
	if j.IsSuspended() {
		t.Error("a Job whose stop is half done counts as suspended")
	}
	j = admitted()
	if j.IsSuspended() {
		t.Error("resumed Job suspended")
	}
}

func TestFinished(t *testing.T) {
	cond := func(typ batchv1.JobConditionType, status corev1.ConditionStatus, msg string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: status, Message: msg}
	}
	cases := map[string]struct {
		conditions                []batchv1.JobCondition
		wantMsg                   string
		wantSuccess, wantFinished bool
	}{
		"running":                  {conditions: []batchv1.JobCondition{cond(batchv1.JobSuspended, corev1.ConditionFalse, "")}, wantSuccess: true},
		"complete":                 {conditions: []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, "met"), cond(batchv1.JobComplete, corev1.ConditionTrue, "done")}, wantMsg: "done", wantSuccess: true, wantFinished: true},
		"failed":                   {conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue, "target"), cond(batchv1.JobFailed, corev1.ConditionTrue, "bad")}, wantMsg: "bad", wantFinished: true},
		"failure target only":      {conditions: []batchv1.JobCondition{cond(batchv1.JobFailureTarget, corev1.ConditionTrue, "target")}, wantSuccess: true},
		"complete condition false": {conditions: []batchv1.JobCondition{cond(batchv1.JobComplete, corev1.ConditionFalse, "")}, wantSuccess: true},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := testJob()
			j.Status.Conditions = tc.conditions
			msg, success, finished := j.Finished(context.Background())
			if msg != tc.wantMsg || success != tc.wantSuccess || finished != tc.wantFinished {
				t.Errorf("Finished = %q, %v, %v; want %q, %v, %v", msg, success, finished, tc.wantMsg, tc.wantSuccess, tc.wantFinished)
			}
		})
	}
}

func TestReclaimablePods(t *testing.T) {
	cases := map[string]struct {
		parallelism, completions *int32
		succeeded                int32
		want                     []kueue.ReclaimablePod
	}{
		"nothing succeeded":            {parallelism: ptr.To[int32](2), completions: ptr.To[int32](4)},
		"more left than parallelism":   {parallelism: ptr.To[int32](2), completions: ptr.To[int32](5), succeeded: 2},
		"as many left as parallelism":  {parallelism: ptr.To[int32](2), completions: ptr.To[int32](4), succeeded: 2},
		"one left of two in parallel":  {parallelism: ptr.To[int32](2), completions: ptr.To[int32](4), succeeded: 3, want: []kueue.ReclaimablePod{{Name: kueue.DefaultPodSetName, Count: 1}}},
		"one Pod at a time":            {parallelism: ptr.To[int32](1), completions: ptr.To[int32](4), succeeded: 3},
		"no completions: one succeeds": {parallelism: ptr.To[int32](3), succeeded: 1, want: []kueue.ReclaimablePod{{Name: kueue.DefaultPodSetName, Count: 1}}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := testJob()
			j.Spec.Parallelism, j.Spec.Completions = tc.parallelism, tc.completions
			j.Status.Succeeded = tc.succeeded
			got, err := j.ReclaimablePods(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ReclaimablePods (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestPodsReady(t *testing.T) {
	j := testJob()
	j.Status.Ready = ptr.To[int32](1)
	if j.PodsReady(context.Background()) {
		t.Error("1 of 2 Pods ready counts as ready")
	}
	j.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"p"}}
	if !j.PodsReady(context.Background()) {
		t.Error("1 ready and 1 succeeded (not yet counted) does not count as ready")
	}
}

func TestManagedBy(t *testing.T) {
	cases := map[string]struct {
		managedBy *string
		want      bool
	}{
		"unset":              {want: true},
		"the server's":       {managedBy: ptr.To(jobControllerName), want: true},
		"MultiKueue already": {managedBy: ptr.To("kueue.x-k8s.io/multikueue")},
		"another controller": {managedBy: ptr.To("example.com/other")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			j := testJob()
			j.SetManagedBy(tc.managedBy)
			if got := j.CanDefaultManagedBy(); got != tc.want {
				t.Errorf("CanDefaultManagedBy = %v, want %v", got, tc.want)
			}
			if !ptr.Equal(j.ManagedBy(), tc.managedBy) {
				t.Errorf("ManagedBy = %v, want %v", j.ManagedBy(), tc.managedBy)
			}
		})
	}
}
