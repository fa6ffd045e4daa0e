package job

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-base/metrics/testutil"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
	jobfake "github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned/fake"
	jobinformers "github.com/batch-apiserver/batch-apiserver/pkg/generated/informers/externalversions"
)

// testNow is the fake clock's time in every controller test.
var testNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// testController is a controller on fake clients whose informers are fed
// straight through their indexers, with every status write captured.
type testController struct {
	*Controller
	kube     *k8sfake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder

	mu       sync.Mutex
	statuses []batchv1.JobStatus
}

func newTestController(t *testing.T, job *batchv1.Job, pods ...*corev1.Pod) *testController {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	kube := k8sfake.NewClientset()
	var generated int
	// The fake tracker does not generate names.
	kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		pod := action.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			generated++
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, generated)
		}
		return false, nil, nil
	})
	// The generated fake of our group has no apply schema: the simple one.
	jobClient := jobfake.NewSimpleClientset()
	podInformer := informers.NewSharedInformerFactory(kube, 0).Core().V1().Pods()
	jobInformer := jobinformers.NewSharedInformerFactory(jobClient, 0).Batch().V1().Jobs()
	clk := clocktesting.NewFakeClock(testNow)
	c, err := newControllerWithClock(ctx, podInformer, jobInformer, kube, jobClient, Config{}, clk)
	if err != nil {
		t.Fatalf("newControllerWithClock: %v", err)
	}
	tc := &testController{Controller: c, kube: kube, clock: clk, recorder: record.NewFakeRecorder(100)}
	c.recorder = tc.recorder
	c.podControl = newRealPodControl(kube, tc.recorder)
	c.podStoreSynced = func() bool { return true }
	c.jobStoreSynced = func() bool { return true }
	c.updateStatusHandler = func(_ context.Context, j *batchv1.Job) (*batchv1.Job, error) {
		tc.mu.Lock()
		defer tc.mu.Unlock()
		tc.statuses = append(tc.statuses, *j.Status.DeepCopy())
		return j, nil
	}
	t.Cleanup(func() {
		c.queue.ShutDown()
		c.orphanQueue.ShutDown()
		c.ttlQueue.ShutDown()
	})
	if job != nil {
		if err := jobInformer.Informer().GetIndexer().Add(job); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range pods {
		if err := podInformer.Informer().GetIndexer().Add(p); err != nil {
			t.Fatal(err)
		}
		if err := kube.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
	return tc
}

func (tc *testController) sync(t *testing.T, job *batchv1.Job) error {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	return tc.syncJob(ctx, job.Namespace+"/"+job.Name)
}

// lastStatus returns the last status written, or nil when none was.
func (tc *testController) lastStatus() *batchv1.JobStatus {
	tc.mu.Lock()
	defer tc.mu.Unlock()
	if len(tc.statuses) == 0 {
		return nil
	}
	return &tc.statuses[len(tc.statuses)-1]
}

// actionsOn lists "verb name" for the Pod writes the fake host received.
func (tc *testController) podWrites() []string {
	var out []string
	for _, a := range tc.kube.Actions() {
		if a.GetResource().Resource != "pods" || a.GetVerb() == "list" || a.GetVerb() == "watch" {
			continue
		}
		switch a := a.(type) {
		case clienttesting.CreateAction:
			out = append(out, "create "+a.GetObject().(*corev1.Pod).GenerateName)
		case clienttesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		case clienttesting.PatchAction:
			out = append(out, "patch "+a.GetName())
		default:
			out = append(out, a.GetVerb())
		}
	}
	sort.Strings(out)
	return out
}

func (tc *testController) events() []string {
	var out []string
	for {
		select {
		case e := <-tc.recorder.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func nowTime() *metav1.Time { return ptr.To(metav1.NewTime(testNow)) }

func cond(t batchv1.JobConditionType, reason, message string) batchv1.JobCondition {
	return batchv1.JobCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastProbeTime: metav1.NewTime(testNow), LastTransitionTime: metav1.NewTime(testNow),
	}
}

func TestSyncJobStatus(t *testing.T) {
	doneAt := testNow.Add(-time.Minute)
	exit42 := batchv1.PodFailurePolicyRule{
		Action:      batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
	}
	ignoreDisruption := batchv1.PodFailurePolicyRule{
		Action:          batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
	}
	failIndex := batchv1.PodFailurePolicyRule{
		Action:      batchv1.PodFailurePolicyActionFailIndex,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3}},
	}
	started := func(b *jobBuilder) *jobBuilder { return b.StartTime(testNow.Add(-time.Hour)) }

	cases := map[string]struct {
		job        *batchv1.Job
		pods       func(job *batchv1.Job) []*corev1.Pod
		wantStatus *batchv1.JobStatus
		wantWrites []string
		wantEvents []string
	}{
		"new job starts its pods": {
			job: makeJob("j").Parallelism(2).Completions(3).Obj(),
			wantStatus: &batchv1.JobStatus{
				StartTime: nowTime(), Active: 2, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
			},
			wantWrites: []string{"create j-", "create j-"},
			wantEvents: []string{"Normal SuccessfulCreate Created pod: j-1", "Normal SuccessfulCreate Created pod: j-2"},
		},
		"running pods are counted, ready ones too, nothing created": {
			job: started(makeJob("j").Parallelism(2).Completions(2)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{
					makePod("a", j).Phase(corev1.PodRunning).Ready().Obj(),
					makePod("b", j).Phase(corev1.PodPending).Obj(),
				}
			},
			wantStatus: &batchv1.JobStatus{
				StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))), Active: 2, Ready: ptr.To[int32](1), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
			},
		},
		"succeeded pod completes the job": {
			job: started(makeJob("j")).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Phase(corev1.PodSucceeded).ExitCode("main", 0, doneAt).Obj()}
			},
			wantStatus: &batchv1.JobStatus{
				StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))), CompletionTime: nowTime(),
				Succeeded: 1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
				Conditions: []batchv1.JobCondition{
					cond(batchv1.JobSuccessCriteriaMet, batch.JobReasonCompletionsReached, "Reached expected number of succeeded pods"),
					cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "Reached expected number of succeeded pods"),
				},
			},
			wantWrites: []string{"patch a"},
			wantEvents: []string{"Normal Completed Job completed"},
		},
		"failure past backoffLimit fails the job": {
			job: started(makeJob("j").BackoffLimit(0)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Phase(corev1.PodFailed).ExitCode("main", 1, doneAt).Obj()}
			},
			wantStatus: &batchv1.JobStatus{
				StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))),
				Failed:    1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
				Conditions: []batchv1.JobCondition{
					cond(batchv1.JobFailureTarget, batch.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"),
					cond(batchv1.JobFailed, batch.JobReasonBackoffLimitExceeded, "Job has reached the specified backoff limit"),
				},
			},
			wantWrites: []string{"patch a"},
			wantEvents: []string{"Warning BackoffLimitExceeded Job has reached the specified backoff limit"},
		},
		"failure within backoffLimit is counted and replaced after the backoff delay": {
			job: started(makeJob("j").BackoffLimit(3)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Phase(corev1.PodFailed).ExitCode("main", 1, testNow).Obj()}
			},
			wantStatus: &batchv1.JobStatus{
				StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))),
				Failed:    1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
			},
			wantWrites: []string{"patch a"},
		},
		"exit code 42 matching FailJob fails the job at once": {
			job: started(makeJob("j").BackoffLimit(6).PodFailurePolicy(exit42)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{
					makePod("a", j).Phase(corev1.PodFailed).ExitCode("main", 42, doneAt).Obj(),
				}
			},
			wantStatus: &batchv1.JobStatus{
				StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))),
				Failed:    1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
				Conditions: []batchv1.JobCondition{
					cond(batchv1.JobFailureTarget, batch.JobReasonPodFailurePolicy, "Container main for pod ns/a failed with exit code 42 matching FailJob rule at index 0"),
					cond(batchv1.JobFailed, batch.JobReasonPodFailurePolicy, "Container main for pod ns/a failed with exit code 42 matching FailJob rule at index 0"),
				},
			},
			wantWrites: []string{"patch a"},
			wantEvents: []string{"Warning PodFailurePolicy Container main for pod ns/a failed with exit code 42 matching FailJob rule at index 0"},
		},
		"disruption matching Ignore is not counted and the pod is replaced": {
			job: started(makeJob("j").BackoffLimit(0).PodFailurePolicy(ignoreDisruption)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{
					makePod("a", j).Phase(corev1.PodFailed).ExitCode("main", 137, doneAt).
						Condition(corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}).Obj(),
				}
			},
			wantStatus: &batchv1.JobStatus{
				StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))),
				Active:    1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
			},
			wantWrites: []string{"create j-", "patch a"},
			wantEvents: []string{"Normal SuccessfulCreate Created pod: j-1"},
		},
		"active deadline exceeded fails the job and deletes its pods": {
			job: started(makeJob("j").ActiveDeadlineSeconds(60)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Phase(corev1.PodRunning).Obj()}
			},
			wantStatus: &batchv1.JobStatus{
				StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))),
				Failed:    1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](1),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
				Conditions: []batchv1.JobCondition{
					cond(batchv1.JobFailureTarget, batch.JobReasonDeadlineExceeded, "Job was active longer than specified deadline"),
				},
			},
			wantWrites: []string{"delete a", "patch a"},
			wantEvents: []string{"Normal SuccessfulDelete Deleted pod: a"},
		},
		"suspending deletes the pods, sets Suspended and clears startTime": {
			job: started(makeJob("j").Suspend(true)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Phase(corev1.PodRunning).Ready().Obj()}
			},
			// The deleted Pod is still Running in the cache: not yet failed.
			wantStatus: &batchv1.JobStatus{
				Ready: ptr.To[int32](0), Terminating: ptr.To[int32](1),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
				Conditions:              []batchv1.JobCondition{cond(batchv1.JobSuspended, "JobSuspended", "Job suspended")},
			},
			wantWrites: []string{"delete a", "patch a"},
			wantEvents: []string{"Normal SuccessfulDelete Deleted pod: a", "Normal Suspended Job suspended"},
		},
		"resuming starts pods, Suspended False and a new startTime": {
			job: makeJob("j").Condition(cond(batchv1.JobSuspended, "JobSuspended", "Job suspended")).Obj(),
			wantStatus: &batchv1.JobStatus{
				StartTime: nowTime(), Active: 1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
				Conditions: []batchv1.JobCondition{{
					Type: batchv1.JobSuspended, Status: corev1.ConditionFalse, Reason: "JobResumed", Message: "Job resumed",
					LastProbeTime: metav1.NewTime(testNow), LastTransitionTime: metav1.NewTime(testNow),
				}},
			},
			wantWrites: []string{"create j-"},
			wantEvents: []string{"Normal Resumed Job resumed", "Normal SuccessfulCreate Created pod: j-1"},
		},
		"indexed job creates one pod per pending index": {
			job: makeJob("j").Indexed(3).Parallelism(2).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Index(0).Phase(corev1.PodSucceeded).Obj()}
			},
			wantStatus: &batchv1.JobStatus{
				StartTime: nowTime(), Active: 2, Succeeded: 1, CompletedIndexes: "0",
				Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
			},
			wantWrites: []string{"create j-1-", "create j-2-", "patch a"},
			wantEvents: []string{"Normal SuccessfulCreate Created pod: j-1-1", "Normal SuccessfulCreate Created pod: j-2-2"},
		},
		"successPolicy ends the job early and terminates the rest": {
			job: started(makeJob("j").Indexed(3).SuccessPolicy(batchv1.SuccessPolicyRule{SucceededIndexes: ptr.To("0")})).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{
					makePod("a", j).Index(0).Phase(corev1.PodSucceeded).Obj(),
					makePod("b", j).Index(1).Phase(corev1.PodRunning).Obj(),
				}
			},
			wantStatus: &batchv1.JobStatus{
				StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))),
				Succeeded: 1, CompletedIndexes: "0", Ready: ptr.To[int32](0), Terminating: ptr.To[int32](1),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
				Conditions: []batchv1.JobCondition{
					cond(batchv1.JobSuccessCriteriaMet, batch.JobReasonSuccessPolicy, "Matched rules at index 0"),
				},
			},
			wantWrites: []string{"delete b", "patch a", "patch b"},
			wantEvents: []string{"Normal SuccessfulDelete Deleted pod: b"},
		},
		"FailIndex marks the index failed; the others go on": {
			job: started(makeJob("j").Indexed(2).BackoffLimitPerIndex(1).PodFailurePolicy(failIndex)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{
					makePod("a", j).Index(0).Phase(corev1.PodFailed).ExitCode("main", 3, doneAt).Obj(),
					makePod("b", j).Index(1).Phase(corev1.PodRunning).Obj(),
				}
			},
			wantStatus: &batchv1.JobStatus{
				StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))),
				Active:    1, Failed: 1, FailedIndexes: ptr.To("0"), Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
			},
			wantWrites: []string{"patch a"},
		},
		"maxFailedIndexes exceeded fails the job": {
			job: started(makeJob("j").Indexed(3).BackoffLimitPerIndex(0).MaxFailedIndexes(0)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{makePod("a", j).Index(0).Phase(corev1.PodFailed).ExitCode("main", 1, doneAt).Obj()}
			},
			wantStatus: &batchv1.JobStatus{
				StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))),
				Failed:    1, FailedIndexes: ptr.To("0"), Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
				Conditions: []batchv1.JobCondition{
					cond(batchv1.JobFailureTarget, batch.JobReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes"),
					cond(batchv1.JobFailed, batch.JobReasonMaxFailedIndexesExceeded, "Job has exceeded the specified maximal number of failed indexes"),
				},
			},
			wantWrites: []string{"patch a"},
			wantEvents: []string{"Warning MaxFailedIndexesExceeded Job has exceeded the specified maximal number of failed indexes"},
		},
		"elastic indexed scale down deletes the pods of the indexes out of range": {
			job: started(makeJob("j").Indexed(1)).Obj(),
			pods: func(j *batchv1.Job) []*corev1.Pod {
				return []*corev1.Pod{
					makePod("a", j).Index(0).Phase(corev1.PodRunning).Obj(),
					makePod("b", j).Index(1).Phase(corev1.PodRunning).Obj(),
				}
			},
			wantStatus: &batchv1.JobStatus{
				StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))),
				Active:    1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](1),
				UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
			},
			wantWrites: []string{"delete b", "patch b"},
			wantEvents: []string{"Normal SuccessfulDelete Deleted pod: b"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var pods []*corev1.Pod
			if tc.pods != nil {
				pods = tc.pods(tc.job)
			}
			c := newTestController(t, tc.job, pods...)
			if err := c.sync(t, tc.job); err != nil {
				t.Fatalf("syncJob: %v", err)
			}
			if diff := cmp.Diff(tc.wantStatus, c.lastStatus(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("last status written (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantWrites, c.podWrites(), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("pod writes (-want +got):\n%s", diff)
			}
			events := c.events()
			sort.Strings(events)
			if diff := cmp.Diff(tc.wantEvents, events, cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
		})
	}
}

// TestSyncJobCreatesPodsAsUpstream diffs a created Pod whole: labels,
// annotation, finalizer, owner, hostname, subdomain and the index variable.
func TestSyncJobCreatesPodsAsUpstream(t *testing.T) {
	job := makeJob("j").Indexed(1).Obj()
	job.Spec.Template.Spec.Subdomain = "svc"
	c := newTestController(t, job)
	if err := c.sync(t, job); err != nil {
		t.Fatalf("syncJob: %v", err)
	}
	pods, err := c.kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("listing pods: %v, %d pods", err, len(pods.Items))
	}
	want := corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name:         "j-0-1",
			GenerateName: "j-0-",
			Namespace:    "ns",
			Labels: map[string]string{
				batch.ControllerUIDLabel:           "j-uid",
				batch.LegacyControllerUIDLabel:     "j-uid",
				batch.JobNameLabel:                 "j",
				batch.LegacyJobNameLabel:           "j",
				batch.JobCompletionIndexAnnotation: "0",
			},
			Annotations: map[string]string{batch.JobCompletionIndexAnnotation: "0"},
			Finalizers:  []string{batch.JobTrackingFinalizer},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "batch.jobs.dev/v1", Kind: "Job", Name: "j", UID: "j-uid",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true),
			}},
		},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Hostname:      "j-0",
			Subdomain:     "svc",
			Containers: []corev1.Container{{
				Name: "main", Image: "busybox",
				Env: []corev1.EnvVar{{Name: "JOB_COMPLETION_INDEX", ValueFrom: &corev1.EnvVarSource{
					FieldRef: &corev1.ObjectFieldSelector{FieldPath: fmt.Sprintf("metadata.labels['%s']", batch.JobCompletionIndexAnnotation)},
				}}},
			}},
		},
	}
	ignore := cmpopts.IgnoreFields(corev1.Pod{}, "TypeMeta", "ManagedFields")
	if diff := cmp.Diff(want, pods.Items[0], ignore); diff != "" {
		t.Errorf("created pod (-want +got):\n%s", diff)
	}
}

// TestExternallyManagedJob checks that a Job of another controller is never
// enqueued, gets no Pods and no status write, is counted once and gets one
// ExternallyManaged Event.
func TestExternallyManagedJob(t *testing.T) {
	const manager = "kueue.x-k8s.io/multikueue"
	job := makeJob("j").ManagedBy(manager).Obj()
	pod := makePod("a", job).Phase(corev1.PodSucceeded).Obj()
	c := newTestController(t, job, pod)
	logger, _ := ktesting.NewTestContext(t)
	metrics.JobByExternalControllerTotal.Reset()

	c.addJob(logger, job)
	c.updateJob(logger, job, job)
	c.addPod(logger, pod)
	if err := c.sync(t, job); err != nil {
		t.Fatalf("syncJob: %v", err)
	}
	if n := c.queue.Len(); n != 0 {
		t.Errorf("queue length = %d, want 0: an externally managed Job must never be enqueued", n)
	}
	if s := c.lastStatus(); s != nil {
		t.Errorf("status written for an externally managed Job: %+v", s)
	}
	if w := c.podWrites(); len(w) != 0 {
		t.Errorf("pod writes for an externally managed Job: %v", w)
	}
	wantEvents := []string{`Normal ExternallyManaged Job is managed by "kueue.x-k8s.io/multikueue", not by kubernetes.io/job-controller: the Job controller creates no Pods and writes no status for it`}
	if diff := cmp.Diff(wantEvents, c.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	got, err := testutil.GetCounterMetricValue(metrics.JobByExternalControllerTotal.WithLabelValues(manager))
	if err != nil {
		t.Fatal(err)
	}
	if got != 1 {
		t.Errorf("%s{controller_name=%q} = %v, want 1", "job_controller_jobs_by_external_controller_total", manager, got)
	}
}

// TestSyncJobFinishesInTwoWrites follows the tracking protocol: the first
// write records the finished Pod as uncounted (and the interim condition),
// the finalizer goes, the second write counts it and finishes the Job.
func TestSyncJobFinishesInTwoWrites(t *testing.T) {
	job := makeJob("j").StartTime(testNow.Add(-time.Hour)).Obj()
	pod := makePod("a", job).Phase(corev1.PodSucceeded).Obj()
	c := newTestController(t, job, pod)
	if err := c.sync(t, job); err != nil {
		t.Fatalf("syncJob: %v", err)
	}
	scm := cond(batchv1.JobSuccessCriteriaMet, batch.JobReasonCompletionsReached, "Reached expected number of succeeded pods")
	want := []batchv1.JobStatus{
		{
			StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))), Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
			UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{Succeeded: []types.UID{"a-uid"}},
			Conditions:              []batchv1.JobCondition{scm},
		},
		{
			StartTime: ptr.To(metav1.NewTime(testNow.Add(-time.Hour))), CompletionTime: nowTime(),
			Succeeded: 1, Ready: ptr.To[int32](0), Terminating: ptr.To[int32](0),
			UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
			Conditions:              []batchv1.JobCondition{scm, cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "Reached expected number of succeeded pods")},
		},
	}
	if diff := cmp.Diff(want, c.statuses, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("status writes (-want +got):\n%s", diff)
	}
}

// TestSyncJobBackoffDelaysReplacement steps through the pod-failure
// backoff: no replacement before 10 s, one after.
func TestSyncJobBackoffDelaysReplacement(t *testing.T) {
	job := makeJob("j").StartTime(testNow.Add(-time.Hour)).BackoffLimit(6).Obj()
	failed := makePod("a", job).Phase(corev1.PodFailed).ExitCode("main", 1, testNow).NoFinalizer().Obj()
	job.Status.Failed = 1
	job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
	c := newTestController(t, job, failed)
	c.podBackoffStore.updateBackoffRecord(backoffRecord{key: "ns/j", failuresAfterLastSuccess: 1, lastFailureTime: &testNow})

	if err := c.sync(t, job); err != nil {
		t.Fatalf("syncJob: %v", err)
	}
	if w := c.podWrites(); len(w) != 0 {
		t.Errorf("pod writes within the backoff delay: %v, want none", w)
	}
	c.clock.Step(10 * time.Second)
	if err := c.sync(t, job); err != nil {
		t.Fatalf("syncJob: %v", err)
	}
	if diff := cmp.Diff([]string{"create j-"}, c.podWrites()); diff != "" {
		t.Errorf("pod writes after the backoff delay (-want +got):\n%s", diff)
	}
}

// TestSyncJobPodCreateRefused turns a refused Pod create into a FailedCreate
// Event, an error (so the key is retried with backoff) and no more requests
// in that sync (slow start).
func TestSyncJobPodCreateRefused(t *testing.T) {
	job := makeJob("j").Parallelism(4).Completions(4).Obj()
	c := newTestController(t, job)
	c.kube.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, fmt.Errorf("exceeded quota: pods")
	})
	err := c.sync(t, job)
	if err == nil || !strings.Contains(err.Error(), "exceeded quota") {
		t.Fatalf("syncJob error = %v, want the create error", err)
	}
	if diff := cmp.Diff([]string{"create j-"}, c.podWrites()); diff != "" {
		t.Errorf("pod writes (-want +got): slow start must stop after the first failure\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Warning FailedCreate Error creating: exceeded quota: pods"}, c.events()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
	if s := c.lastStatus(); s == nil || s.Active != 0 {
		t.Errorf("status active = %v, want 0 after a refused create", s)
	}
}

// TestTTLAfterFinished deletes a finished Job once its TTL expired and not before.
func TestTTLAfterFinished(t *testing.T) {
	job := makeJob("j").TTLSecondsAfterFinished(60).
		Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "done")).Obj()
	job.Status.CompletionTime = nowTime()
	c := newTestController(t, job)
	if _, err := c.jobClient.BatchV1().Jobs("ns").Create(context.Background(), job, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, ctx := ktesting.NewTestContext(t)
	if err := c.processTTL(ctx, "ns/j"); err != nil {
		t.Fatalf("processTTL: %v", err)
	}
	if _, err := c.jobClient.BatchV1().Jobs("ns").Get(ctx, "j", metav1.GetOptions{}); err != nil {
		t.Fatalf("job deleted before its TTL: %v", err)
	}
	c.clock.Step(time.Minute)
	if err := c.processTTL(ctx, "ns/j"); err != nil {
		t.Fatalf("processTTL: %v", err)
	}
	if _, err := c.jobClient.BatchV1().Jobs("ns").Get(ctx, "j", metav1.GetOptions{}); err == nil {
		t.Fatalf("job still there after its TTL")
	}
}

// TestOrphanPodOfDeletedJob removes the finalizer of a Pod whose Job is
// gone, and deletes the Pod when the host cannot garbage-collect it.
func TestOrphanPodOfDeletedJob(t *testing.T) {
	for _, deletePods := range []bool{false, true} {
		t.Run(fmt.Sprintf("DeletePodsOfDeletedJobs=%v", deletePods), func(t *testing.T) {
			job := makeJob("j").Obj()
			pod := makePod("a", job).Phase(corev1.PodRunning).Obj()
			c := newTestController(t, nil, pod)
			c.cfg.DeletePodsOfDeletedJobs = deletePods
			_, ctx := ktesting.NewTestContext(t)
			if err := c.syncOrphanPod(ctx, orphanPodKey{namespace: "ns", name: "a"}); err != nil {
				t.Fatalf("syncOrphanPod: %v", err)
			}
			want := []string{"patch a"}
			if deletePods {
				want = []string{"delete a", "patch a"}
			}
			if diff := cmp.Diff(want, c.podWrites()); diff != "" {
				t.Errorf("pod writes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestPodOfHostJobIgnored: a Pod controlled by a batch/v1 Job of the host
// is not ours, even with the same name and UID.
func TestPodOfHostJobIgnored(t *testing.T) {
	job := makeJob("j").Obj()
	pod := makePod("a", job).Obj()
	pod.OwnerReferences[0].APIVersion = "batch/v1"
	if got, _ := indexByJobUID(pod); got != nil {
		t.Errorf("indexByJobUID = %v, want nil for a batch/v1 owner", got)
	}
	c := newTestController(t, job, pod)
	_, ctx := ktesting.NewTestContext(t)
	if err := c.syncOrphanPod(ctx, orphanPodKey{namespace: "ns", name: "a"}); err != nil {
		t.Fatalf("syncOrphanPod: %v", err)
	}
	if w := c.podWrites(); len(w) != 0 {
		t.Errorf("pod writes on a host Job's pod: %v", w)
	}
}

// TestNamespaceTerminatingReleasesDelayedPods: with backoffLimitPerIndex a
// failed Pod keeps its finalizer until its replacement exists; when the
// namespace is being deleted no replacement can be, so the finalizer must
// go or the namespace never finishes deleting.
func TestNamespaceTerminatingReleasesDelayedPods(t *testing.T) {
	job := makeJob("j").Indexed(1).BackoffLimitPerIndex(2).StartTime(testNow.Add(-time.Hour)).Obj()
	failed := makePod("a", job).Index(0).Phase(corev1.PodFailed).ExitCode("main", 1, testNow.Add(-time.Hour)).Obj()
	c := newTestController(t, job, failed)
	c.kube.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		err := apierrors.NewForbidden(corev1.Resource("pods"), "", fmt.Errorf("unable to create new content in namespace ns because it is being terminated"))
		err.ErrStatus.Details.Causes = []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}
		return true, nil, err
	})
	if err := c.sync(t, job); err != nil {
		t.Fatalf("first sync: %v", err)
	}
	if diff := cmp.Diff([]string{"create j-0-"}, c.podWrites()); diff != "" {
		t.Errorf("first sync pod writes (-want +got): the failed Pod waits for its replacement\n%s", diff)
	}
	if err := c.sync(t, job); err != nil {
		t.Fatalf("second sync: %v", err)
	}
	if diff := cmp.Diff([]string{"create j-0-", "patch a"}, c.podWrites()); diff != "" {
		t.Errorf("pod writes after the refusal (-want +got): the finalizer must be removed\n%s", diff)
	}
}
