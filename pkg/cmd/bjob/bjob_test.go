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

package bjob

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	upstreambatchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	kubefake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/kubectl/pkg/describe"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned/fake"
)

const testNS = "ns"

// jobBuilder builds the Jobs of these tests.
type jobBuilder struct{ job *batchv1.Job }

func makeJob(name string) jobBuilder {
	uid := types.UID(name + "-uid")
	labels := map[string]string{
		batch.ControllerUIDLabel: string(uid), batch.JobNameLabel: name,
		batch.LegacyControllerUIDLabel: string(uid), batch.LegacyJobNameLabel: name,
	}
	return jobBuilder{&batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: testNS, UID: uid, Labels: map[string]string{"app": name}},
		Spec: batchv1.JobSpec{
			Parallelism:  ptr.To[int32](1),
			Completions:  ptr.To[int32](1),
			BackoffLimit: ptr.To[int32](6),
			Suspend:      ptr.To(false),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{batch.ControllerUIDLabel: string(uid)}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"sh", "-c", "exit 0"}}},
				},
			},
		},
	}}
}

func (b jobBuilder) Indexed(completions int32) jobBuilder {
	b.job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	b.job.Spec.Completions = ptr.To(completions)
	b.job.Spec.Parallelism = ptr.To(completions)
	return b
}

func (b jobBuilder) BackoffLimitPerIndex(limit, maxFailed int32) jobBuilder {
	b.job.Spec.BackoffLimitPerIndex = ptr.To(limit)
	b.job.Spec.MaxFailedIndexes = ptr.To(maxFailed)
	return b
}

func (b jobBuilder) Condition(typ batchv1.JobConditionType, reason, message string) jobBuilder {
	b.job.Status.Conditions = append(b.job.Status.Conditions, batchv1.JobCondition{
		Type: typ, Status: corev1.ConditionTrue, Reason: reason, Message: message,
	})
	return b
}

func (b jobBuilder) Status(f func(*batchv1.JobStatus)) jobBuilder {
	f(&b.job.Status)
	return b
}

func (b jobBuilder) Spec(f func(*batchv1.JobSpec)) jobBuilder {
	f(&b.job.Spec)
	return b
}

func (b jobBuilder) Obj() *batchv1.Job { return b.job }

// makePod is a Pod of job with a completion index (negative: none),
// created at second created.
func makePod(job *batchv1.Job, name string, index int, created int64) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: job.Namespace,
			Labels:            map[string]string{batch.ControllerUIDLabel: string(job.UID)},
			CreationTimestamp: metav1.Unix(created, 0),
		},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	if index >= 0 {
		p.Labels[batch.JobCompletionIndexAnnotation] = string(rune('0' + index))
	}
	return p
}

// run runs the plugin with args on fake clientsets holding objs and
// returns stdout, stderr and the exit code.
func run(t *testing.T, jobs *fake.Clientset, kube *kubefake.Clientset, args ...string) (string, string, int) {
	t.Helper()
	var out, errOut bytes.Buffer
	streams := genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}
	cmd := newCommand(streams, func() (*Clients, error) {
		return &Clients{Jobs: jobs, Kube: kube, Namespace: testNS}, nil
	})
	cmd.SetArgs(args)
	err := cmd.ExecuteContext(context.Background())
	if err != nil {
		if _, ok := err.(*ExitError); !ok {
			errOut.WriteString("error: " + err.Error() + "\n")
		}
	}
	return out.String(), errOut.String(), ExitCode(err)
}

// asUpstream is the same Job as a batch/v1 Job, with batch/v1's label
// prefix.
func asUpstream(t *testing.T, job *batchv1.Job) *upstreambatchv1.Job {
	t.Helper()
	data, err := json.Marshal(job)
	if err != nil {
		t.Fatal(err)
	}
	var out upstreambatchv1.Job
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

// ourLines are the labels of the lines describe prints beyond kubectl's;
// a label ending in ":" without a value starts a block of indented lines.
var ourLines = []string{
	"Managed By:", "Backoff Limit Per Index:", "Max Failed Indexes:", "Pod Replacement Policy:",
	"Terminating:", "Failed Indexes:", "Pod Failure Policy:", "Success Policy:", "Conditions:",
}

// withoutOurLines drops our lines (and the indented lines of our blocks)
// and squeezes runs of spaces, which our longer labels widen.
func withoutOurLines(s string) []string {
	var out []string
	inBlock := false
	for _, line := range strings.Split(s, "\n") {
		if inBlock && strings.HasPrefix(line, " ") {
			continue
		}
		inBlock = false
		ours := false
		for _, l := range ourLines {
			if strings.HasPrefix(line, l) {
				ours = true
				inBlock = strings.TrimSpace(line) == l
			}
		}
		if !ours {
			out = append(out, strings.Join(strings.Fields(line), " "))
		}
	}
	return out
}

func fullJob() *batchv1.Job {
	start := metav1.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)
	end := metav1.Date(2026, 12, 5, 14, 1, 30, 0, time.UTC)
	return makeJob("sample").Indexed(4).BackoffLimitPerIndex(1, 2).
		Spec(func(s *batchv1.JobSpec) {
			s.ManagedBy = ptr.To("example.com/dispatcher")
			s.PodReplacementPolicy = ptr.To(batchv1.Failed)
			s.TTLSecondsAfterFinished = ptr.To[int32](100)
			s.ActiveDeadlineSeconds = ptr.To[int64](600)
			s.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					ContainerName: ptr.To("main"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42, 43}}},
				{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
					{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
			}}
			s.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
				{SucceededIndexes: ptr.To("0-2"), SucceededCount: ptr.To[int32](2)}}}
		}).
		Status(func(st *batchv1.JobStatus) {
			st.StartTime, st.CompletionTime = &start, &end
			st.Succeeded, st.Failed = 3, 2
			st.Ready, st.Terminating = ptr.To[int32](0), ptr.To[int32](0)
			st.CompletedIndexes = "0-2"
			st.FailedIndexes = ptr.To("3")
		}).
		Condition(batchv1.JobSuccessCriteriaMet, batch.JobReasonSuccessPolicy, "Matched rules at index 0").
		Condition(batchv1.JobComplete, batch.JobReasonSuccessPolicy, "Matched rules at index 0").Obj()
}

func TestDescribe(t *testing.T) {
	job := fullJob()
	events := []runtime.Object{&corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: "e1", Namespace: testNS},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", Name: job.Name, Namespace: testNS, UID: job.UID},
		Type:           corev1.EventTypeNormal, Reason: "SuccessfulCreate", Message: "Created pod: sample-0-abcde",
		Source: corev1.EventSource{Component: "job-controller"},
	}}
	out, errOut, code := run(t, fake.NewSimpleClientset(job), kubefake.NewSimpleClientset(events...), "describe", "sample")
	want := `Name:                        sample
Namespace:                   ns
Selector:                    batch.jobs.dev/controller-uid=sample-uid
Labels:                      app=sample
Annotations:                 <none>
Managed By:                  example.com/dispatcher (batch-apiserver's Job controller leaves this Job alone)
Parallelism:                 4
Completions:                 4
Completion Mode:             Indexed
Suspend:                     false
Backoff Limit:               6
Backoff Limit Per Index:     1
Max Failed Indexes:          2
Pod Replacement Policy:      Failed
TTL Seconds After Finished:  100
Start Time:                  Sat, 05 Dec 2026 14:00:00 +0000
Completed At:                Sat, 05 Dec 2026 14:01:30 +0000
Duration:                    90s
Active Deadline Seconds:     600s
Pods Statuses:               0 Active (0 Ready) / 3 Succeeded / 2 Failed
Terminating:                 0
Completed Indexes:           0-2
Failed Indexes:              3
Pod Failure Policy:
  FailJob:  exit code In [42,43] in container main
  Ignore:   pod condition DisruptionTarget=True
Success Policy:
  Rule 1:  succeeded indexes 0-2, succeeded count 2
Conditions:
  Type                Status  Reason         Message
  ----                ------  ------         -------
  SuccessCriteriaMet  True    SuccessPolicy  Matched rules at index 0
  Complete            True    SuccessPolicy  Matched rules at index 0
Pod Template:
  Labels:  batch.jobs.dev/controller-uid=sample-uid
           batch.jobs.dev/job-name=sample
           controller-uid=sample-uid
           job-name=sample
  Containers:
   main:
    Image:      busybox:1.36
    Port:       <none>
    Host Port:  <none>
    Command:
      sh
      -c
      exit 0
    Environment:   <none>
    Mounts:        <none>
  Volumes:         <none>
  Node-Selectors:  <none>
  Tolerations:     <none>
Events:
  Type    Reason            Age        From            Message
  ----    ------            ----       ----            -------
  Normal  SuccessfulCreate  <unknown>  job-controller  Created pod: sample-0-abcde
`
	if diff := cmp.Diff(want, out); diff != "" || code != 0 || errOut != "" {
		t.Errorf("describe (exit %d, stderr %q), -want +got:\n%s", code, errOut, diff)
	}
}

// TestDescribeHasKubectlLines checks describe against kubectl's own
// describer of the same Job as batch/v1: every line kubectl prints is
// there, with the same value, in the same order.
func TestDescribeHasKubectlLines(t *testing.T) {
	for name, job := range map[string]*batchv1.Job{
		"full":         fullJob(),
		"plain":        makeJob("plain").Obj(),
		"no ready":     makeJob("running").Status(func(s *batchv1.JobStatus) { s.Active = 2 }).Obj(),
		"indexed none": makeJob("idx").Indexed(3).Obj(),
		"annotations":  makeJob("ann").Spec(func(s *batchv1.JobSpec) { s.Completions = nil }).Status(func(s *batchv1.JobStatus) {}).Obj(),
	} {
		t.Run(name, func(t *testing.T) {
			if name == "annotations" {
				job.Annotations = map[string]string{"short": "v", "long": strings.Repeat("x", 200), "multi": "a\nb\n",
					corev1.LastAppliedConfigAnnotation: "{}"}
			}
			up := asUpstream(t, job)
			d := describe.JobDescriber{Interface: kubefake.NewSimpleClientset(up)}
			theirs, err := d.Describe(testNS, job.Name, describe.DescriberSettings{ShowEvents: true})
			if err != nil {
				t.Fatal(err)
			}
			ours, _, code := run(t, fake.NewSimpleClientset(job), kubefake.NewSimpleClientset(), "describe", job.Name)
			if code != 0 {
				t.Fatalf("exit %d", code)
			}
			if diff := cmp.Diff(withoutOurLines(theirs), withoutOurLines(ours)); diff != "" {
				t.Errorf("kubectl describe job's lines (-) vs ours (+):\n%s", diff)
			}
		})
	}
}

func TestDescribeErrors(t *testing.T) {
	_, errOut, code := run(t, fake.NewSimpleClientset(), kubefake.NewSimpleClientset(), "describe", "missing")
	want := "error: jobs.batch.jobs.dev \"missing\" not found\n"
	if diff := cmp.Diff(want, errOut); diff != "" || code != 1 {
		t.Errorf("exit %d, stderr -want +got:\n%s", code, diff)
	}
}

func TestDescribeAllNamespaces(t *testing.T) {
	a, b := makeJob("a").Obj(), makeJob("b").Obj()
	b.Namespace = "other"
	out, _, code := run(t, fake.NewSimpleClientset(a, b), kubefake.NewSimpleClientset(), "describe", "-A", "--show-events=false")
	var names []string
	for _, l := range strings.Split(out, "\n") {
		if strings.HasPrefix(l, "Name:") || strings.HasPrefix(l, "Namespace:") || strings.HasPrefix(l, "Events") {
			names = append(names, strings.Join(strings.Fields(l), " "))
		}
	}
	want := []string{"Name: a", "Namespace: ns", "Name: b", "Namespace: other"}
	if diff := cmp.Diff(want, names); diff != "" || code != 0 {
		t.Errorf("exit %d, -want +got:\n%s", code, diff)
	}
}

func TestLogs(t *testing.T) {
	job := makeJob("idx").Indexed(2).Obj()
	other := makeJob("other").Obj()
	pods := []runtime.Object{
		makePod(job, "idx-0-old", 0, 1), makePod(job, "idx-0-new", 0, 5),
		makePod(job, "idx-1-a", 1, 2), makePod(other, "other-x", -1, 1),
	}
	cases := map[string]struct {
		args     []string
		wantOut  string
		wantErr  string
		wantCode int
	}{
		"newest of each index": {
			args:    []string{"logs", "idx"},
			wantOut: "[pod/idx-0-new/main] fake logs\n[pod/idx-1-a/main] fake logs\n",
		},
		"one index": {
			args:    []string{"logs", "idx", "--index", "1"},
			wantOut: "[pod/idx-1-a/main] fake logs\n",
		},
		"all pods of an index": {
			args:    []string{"logs", "idx", "--index", "0", "--all-pods"},
			wantOut: "[pod/idx-0-old/main] fake logs\n[pod/idx-0-new/main] fake logs\n",
		},
		"no prefix": {
			args:    []string{"logs", "idx", "--index", "1", "--prefix=false"},
			wantOut: "fake logs\n",
		},
		"no such index": {
			args:     []string{"logs", "idx", "--index", "7"},
			wantErr:  "error: job idx has no Pods of index 7\n",
			wantCode: 1,
		},
		"no such container": {
			args:     []string{"logs", "idx", "--index", "1", "-c", "sidecar"},
			wantErr:  "error: container sidecar is not valid for pod idx-1-a out of: main\n",
			wantCode: 1,
		},
		"follow": {
			args:    []string{"logs", "idx", "--index", "1", "-f", "--previous"},
			wantOut: "[pod/idx-1-a/main] fake logs\n",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			kube := kubefake.NewSimpleClientset(pods...)
			out, errOut, code := run(t, fake.NewSimpleClientset(job, other), kube, tc.args...)
			if diff := cmp.Diff(tc.wantOut, out); diff != "" {
				t.Errorf("stdout -want +got:\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantErr, errOut); diff != "" || code != tc.wantCode {
				t.Errorf("exit %d (want %d), stderr -want +got:\n%s", code, tc.wantCode, diff)
			}
		})
	}
}

// TestLogsOptions checks what the plugin asks the API for.
func TestLogsOptions(t *testing.T) {
	job := makeJob("idx").Indexed(1).Obj()
	kube := kubefake.NewSimpleClientset(makePod(job, "idx-0-a", 0, 1))
	if _, errOut, code := run(t, fake.NewSimpleClientset(job), kube, "logs", "idx", "-f", "--previous", "-c", "main"); code != 0 {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got []corev1.PodLogOptions
	for _, a := range kube.Actions() {
		if a.GetSubresource() == "log" {
			got = append(got, *a.(interface{ GetValue() any }).GetValue().(*corev1.PodLogOptions))
		}
	}
	want := []corev1.PodLogOptions{{Container: "main", Follow: true, Previous: true}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("log options -want +got:\n%s", diff)
	}
}

func TestWait(t *testing.T) {
	complete := makeJob("done").Condition(batchv1.JobComplete, batch.JobReasonCompletionsReached, "Reached expected number of succeeded pods").Obj()
	failed := makeJob("bad").Condition(batchv1.JobFailureTarget, batch.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit").
		Condition(batchv1.JobFailed, batch.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit").Obj()
	running := makeJob("busy").Status(func(s *batchv1.JobStatus) { s.Active = 1 }).Obj()
	cases := map[string]struct {
		args     []string
		wantOut  string
		wantCode int
	}{
		"complete": {
			args:    []string{"wait", "done"},
			wantOut: "job.batch.jobs.dev/done Complete: CompletionsReached: Reached expected number of succeeded pods\n",
		},
		"failed": {
			args:     []string{"wait", "done", "bad"},
			wantOut:  "job.batch.jobs.dev/done Complete: CompletionsReached: Reached expected number of succeeded pods\njob.batch.jobs.dev/bad Failed: BackoffLimitExceeded: Job has reached the specified backoff limit\n",
			wantCode: 1,
		},
		"timeout, checked once": {
			args:     []string{"wait", "bad", "busy", "--timeout=0"},
			wantOut:  "job.batch.jobs.dev/bad Failed: BackoffLimitExceeded: Job has reached the specified backoff limit\njob.batch.jobs.dev/busy timed out after 0s: 1 Active / 0 Succeeded / 0 Failed\n",
			wantCode: 2,
		},
		"timeout, watching": {
			args:     []string{"wait", "busy", "--timeout=1ms"},
			wantOut:  "job.batch.jobs.dev/busy timed out after 1ms: 1 Active / 0 Succeeded / 0 Failed\n",
			wantCode: 2,
		},
		"missing": {
			args:     []string{"wait", "nope"},
			wantOut:  "job.batch.jobs.dev/nope: jobs.batch.jobs.dev \"nope\" not found\n",
			wantCode: 1,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			out, _, code := run(t, fake.NewSimpleClientset(complete, failed, running), kubefake.NewSimpleClientset(), tc.args...)
			if diff := cmp.Diff(tc.wantOut, out); diff != "" || code != tc.wantCode {
				t.Errorf("exit %d (want %d), stdout -want +got:\n%s", code, tc.wantCode, diff)
			}
		})
	}
}

// TestWaitSeesTheEnd: a Job that ends while wait watches it.
func TestWaitSeesTheEnd(t *testing.T) {
	running := makeJob("busy").Status(func(s *batchv1.JobStatus) { s.Active = 1 }).Obj()
	jobs := fake.NewSimpleClientset(running)
	// The watch wait opens sees another Job first, then the Job ending.
	jobs.PrependWatchReactor("jobs", func(clienttesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFake()
		go func() {
			w.Modify(makeJob("other").Condition(batchv1.JobFailed, "", "").Obj())
			w.Modify(makeJob("busy").Status(func(s *batchv1.JobStatus) { s.Active = 1; s.Ready = ptr.To[int32](1) }).Obj())
			w.Modify(makeJob("busy").Condition(batchv1.JobComplete, batch.JobReasonCompletionsReached, "Reached expected number of succeeded pods").Obj())
		}()
		return true, w, nil
	})
	out, _, code := run(t, jobs, kubefake.NewSimpleClientset(), "wait", "busy", "--timeout=-1s")
	want := "job.batch.jobs.dev/busy Complete: CompletionsReached: Reached expected number of succeeded pods\n"
	if diff := cmp.Diff(want, out); diff != "" || code != 0 {
		t.Errorf("exit %d, stdout -want +got:\n%s", code, diff)
	}
}

func TestSuspendResume(t *testing.T) {
	cases := map[string]struct {
		args        []string
		wantOut     string
		wantSuspend map[string]bool
	}{
		"suspend": {
			args:        []string{"suspend", "a", "b"},
			wantOut:     "job.batch.jobs.dev/a suspended\njob.batch.jobs.dev/b suspended\n",
			wantSuspend: map[string]bool{"a": true, "b": true},
		},
		"resume, -o name": {
			args:        []string{"resume", "a", "-o", "name"},
			wantOut:     "job.batch.jobs.dev/a\n",
			wantSuspend: map[string]bool{"a": false, "b": true},
		},
		"suspend, -o jsonpath": {
			args:        []string{"suspend", "a", "-o", "jsonpath={.spec.suspend}"},
			wantOut:     "true",
			wantSuspend: map[string]bool{"a": true, "b": true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := makeJob("a").Spec(func(s *batchv1.JobSpec) { s.Suspend = ptr.To(true) }).Obj()
			b := makeJob("b").Spec(func(s *batchv1.JobSpec) { s.Suspend = ptr.To(true) }).Obj()
			jobs := fake.NewSimpleClientset(a, b)
			out, errOut, code := run(t, jobs, kubefake.NewSimpleClientset(), tc.args...)
			if diff := cmp.Diff(tc.wantOut, out); diff != "" || code != 0 {
				t.Errorf("exit %d (%s), stdout -want +got:\n%s", code, errOut, diff)
			}
			got := map[string]bool{}
			for _, n := range []string{"a", "b"} {
				j, err := jobs.BatchV1().Jobs(testNS).Get(context.Background(), n, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				got[n] = *j.Spec.Suspend
			}
			if diff := cmp.Diff(tc.wantSuspend, got); diff != "" {
				t.Errorf("spec.suspend -want +got:\n%s", diff)
			}
		})
	}
}

func TestRetry(t *testing.T) {
	failed := makeJob("bad").Condition(batchv1.JobFailed, batch.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit").
		Status(func(s *batchv1.JobStatus) { s.Failed = 7 }).Obj()
	failed.Labels[batch.JobNameLabel] = "bad"
	failed.Annotations = map[string]string{"note": "x", corev1.LastAppliedConfigAnnotation: "{}"}
	jobs := fake.NewSimpleClientset(failed, makeJob("ok").Obj())
	out, errOut, code := run(t, jobs, kubefake.NewSimpleClientset(), "retry", "bad", "--name", "bad-2")
	if diff := cmp.Diff("job.batch.jobs.dev/bad-2 created\n", out); diff != "" || code != 0 {
		t.Fatalf("exit %d (%s), stdout -want +got:\n%s", code, errOut, diff)
	}
	got, err := jobs.BatchV1().Jobs(testNS).Get(context.Background(), "bad-2", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := makeJob("bad-2").Obj()
	want.UID = ""
	want.Labels = map[string]string{"app": "bad"}
	want.Annotations = map[string]string{"note": "x"}
	want.Spec.Selector = nil
	want.Spec.Template.Labels = nil
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("the retry -want +got:\n%s", diff)
	}

	_, errOut, code = run(t, jobs, kubefake.NewSimpleClientset(), "retry", "ok")
	if diff := cmp.Diff("error: job ok has not failed (--force retries it anyway)\n", errOut); diff != "" || code != 1 {
		t.Errorf("exit %d, stderr -want +got:\n%s", code, diff)
	}
}

func TestRetryKeepsManualSelector(t *testing.T) {
	job := makeJob("manual").Spec(func(s *batchv1.JobSpec) {
		s.ManualSelector = ptr.To(true)
		s.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "manual"}}
		s.Template.Labels = map[string]string{"app": "manual"}
	}).Obj()
	got := retryOf(job, "")
	want := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "manual-retry-", Namespace: testNS, Labels: map[string]string{"app": "manual"}},
		Spec:       job.Spec,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}

func TestCompletion(t *testing.T) {
	jobs := fake.NewSimpleClientset(makeJob("alpha").Obj(), makeJob("beta").Obj(), makeJob("alps").Obj())
	out, _, code := run(t, jobs, kubefake.NewSimpleClientset(), "__complete", "wait", "alpha", "al")
	want := "alps\n:4\n"
	if diff := cmp.Diff(want, out); diff != "" || code != 0 {
		t.Errorf("exit %d, -want +got:\n%s", code, diff)
	}
}
