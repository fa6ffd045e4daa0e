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

package job

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/klog/v2"
	"k8s.io/klog/v2/ktesting"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	jobfake "github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned/fake"
	jobinformers "github.com/batch-apiserver/batch-apiserver/pkg/generated/informers/externalversions"
)

// testNow is the fake clock's time when a test begins.
var testNow = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

// fixture is a controller on fake clients. Objects reach its informers
// straight through their indexers (and the fake servers' trackers, so that
// writes find them); status writes are captured in order.
type fixture struct {
	*Controller
	kube     *k8sfake.Clientset
	jobs     *jobfake.Clientset
	clock    *clocktesting.FakeClock
	recorder *record.FakeRecorder
	podStore cache.Indexer
	jobStore cache.Indexer
	// workloadStore and podGroupStore are set with fixtureOptions.scheduling.
	workloadStore, podGroupStore cache.Indexer
	ctx                          context.Context

	mu       sync.Mutex
	statuses []batchv1.JobStatus
}

// fixtureOptions change a fixture from its defaults.
type fixtureOptions struct {
	cfg Config
	// kube is a fake host shared with another fixture.
	kube *k8sfake.Clientset
	// scheduling: the controller keeps Workloads and PodGroups
	// (ManageWorkloads).
	scheduling bool
}

func newFixture(t *testing.T, opts fixtureOptions) *fixture {
	t.Helper()
	_, ctx := ktesting.NewTestContext(t)
	kube := opts.kube
	if kube == nil {
		kube = newFakeHost()
	}
	// The generated fake of our group has no apply configurations: the
	// simple constructor.
	jobs := jobfake.NewSimpleClientset()
	hostInformers := informers.NewSharedInformerFactory(kube, 0)
	podInformer := hostInformers.Core().V1().Pods()
	jobInformer := jobinformers.NewSharedInformerFactory(jobs, 0).Batch().V1().Jobs()
	clk := clocktesting.NewFakeClock(testNow)
	c, err := newController(ctx, podInformer, jobInformer, kube, jobs, opts.cfg, clk)
	if err != nil {
		t.Fatalf("newController: %v", err)
	}
	f := &fixture{
		Controller: c, kube: kube, jobs: jobs, clock: clk, ctx: ctx,
		recorder: record.NewFakeRecorder(1000),
		podStore: podInformer.Informer().GetIndexer(),
		jobStore: jobInformer.Informer().GetIndexer(),
	}
	if opts.scheduling {
		workloads, podGroups := hostInformers.Scheduling().V1beta1().Workloads(), hostInformers.Scheduling().V1beta1().PodGroups()
		if err := c.ManageWorkloads(workloads, podGroups); err != nil {
			t.Fatalf("ManageWorkloads: %v", err)
		}
		f.workloadStore, f.podGroupStore = workloads.Informer().GetIndexer(), podGroups.Informer().GetIndexer()
	}
	c.recorder = f.recorder
	jobs.PrependReactor("update", "jobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
		if action.GetSubresource() == "status" {
			job := action.(clienttesting.UpdateAction).GetObject().(*batchv1.Job)
			f.mu.Lock()
			f.statuses = append(f.statuses, *job.Status.DeepCopy())
			f.mu.Unlock()
		}
		return false, nil, nil
	})
	t.Cleanup(c.shutDownQueues)
	return f
}

// newFakeHost is a fake host cluster that names the Pods created with
// generateName, as the real one does and the fake tracker does not.
func newFakeHost() *k8sfake.Clientset {
	kube := k8sfake.NewClientset()
	var mu sync.Mutex
	generated := 0
	kube.PrependReactor("create", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
		pod := action.(clienttesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			mu.Lock()
			generated++
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, generated)
			mu.Unlock()
		}
		return false, nil, nil
	})
	return kube
}

// cacheJob puts a copy of job into the informer's cache as the informer's
// transform leaves it (a finished or external Job as a doneJob).
func (f *fixture) cacheJob(t *testing.T, job *batchv1.Job) {
	t.Helper()
	obj, err := TrimForCache(job.DeepCopy())
	if err != nil {
		t.Fatal(err)
	}
	if err := f.jobStore.Update(obj); err != nil {
		t.Fatal(err)
	}
}

// addJobs puts Jobs in the informer's cache, as the informer's transform
// leaves them, and in the fake server.
func (f *fixture) addJobs(t *testing.T, jobs ...*batchv1.Job) {
	t.Helper()
	for _, j := range jobs {
		f.cacheJob(t, j)
		if err := f.jobs.Tracker().Add(j); err != nil {
			t.Fatal(err)
		}
	}
}

// addPods puts Pods in the informer's cache and the fake host.
func (f *fixture) addPods(t *testing.T, pods ...*corev1.Pod) {
	t.Helper()
	for _, p := range pods {
		if err := f.podStore.Add(p); err != nil {
			t.Fatal(err)
		}
		if err := f.kube.Tracker().Add(p); err != nil {
			t.Fatal(err)
		}
	}
}

func (f *fixture) syncJob(t *testing.T, job *batchv1.Job) error {
	t.Helper()
	return f.Controller.syncJob(f.ctx, keyOf(job))
}

// written returns the statuses written so far.
func (f *fixture) written() []batchv1.JobStatus {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]batchv1.JobStatus(nil), f.statuses...)
}

// podWrites lists, sorted, "verb name" of every Pod write the fake host
// received ("create <generateName>" for creations).
func podWrites(kube *k8sfake.Clientset) []string {
	var out []string
	for _, a := range kube.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		switch a := a.(type) {
		case clienttesting.CreateAction:
			out = append(out, "create "+a.GetObject().(*corev1.Pod).GenerateName)
		case clienttesting.DeleteAction:
			out = append(out, "delete "+a.GetName())
		case clienttesting.PatchAction:
			out = append(out, "patch "+a.GetName())
		}
	}
	sort.Strings(out)
	return out
}

// events drains the recorded Events, sorted.
func (f *fixture) events() []string {
	var out []string
	for {
		select {
		case e := <-f.recorder.Events:
			out = append(out, e)
		default:
			sort.Strings(out)
			return out
		}
	}
}

// countActions counts the actions of a verb on a resource.
func countActions(actions []clienttesting.Action, verb, resource string) int {
	n := 0
	for _, a := range actions {
		if a.GetVerb() == verb && a.GetResource().Resource == resource {
			n++
		}
	}
	return n
}

func started(b *jobBuilder) *jobBuilder { return b.StartTime(testNow.Add(-time.Hour)) }

func cond(t batchv1.JobConditionType, reason, message string) batchv1.JobCondition {
	return batchv1.JobCondition{
		Type: t, Status: corev1.ConditionTrue, Reason: reason, Message: message,
		LastProbeTime: metav1.NewTime(testNow), LastTransitionTime: metav1.NewTime(testNow),
	}
}

func timeAt(t time.Time) *metav1.Time { return ptr.To(metav1.NewTime(t)) }

// queued is one item a handler put in a queue, and after how long.
type queued[T comparable] struct {
	Key   T
	Delay time.Duration
}

// recordingQueue stands in for a controller queue in the handler tests:
// it keeps what was added, and how, instead of scheduling it.
type recordingQueue[T comparable] struct {
	workqueue.TypedRateLimitingInterface[T]
	mu    sync.Mutex
	added []queued[T]
}

func newRecordingQueue[T comparable]() *recordingQueue[T] {
	return &recordingQueue[T]{TypedRateLimitingInterface: workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[T]())}
}

func (q *recordingQueue[T]) Add(item T) { q.AddAfter(item, 0) }

func (q *recordingQueue[T]) AddAfter(item T, d time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.added = append(q.added, queued[T]{Key: item, Delay: d})
}

func (q *recordingQueue[T]) AddRateLimited(item T) { q.AddAfter(item, -1) }

func (q *recordingQueue[T]) items() []queued[T] {
	q.mu.Lock()
	defer q.mu.Unlock()
	return append([]queued[T](nil), q.added...)
}

func (f *fixture) logger() klog.Logger { return klog.FromContext(f.ctx) }

// runTerm runs a whole term of a second controller with cfg, on started
// informers of the fixture's fake servers, until the test ends, and
// returns the term's context. setup, if given, hands the controller more
// informers of the host's factory before it starts.
func (f *fixture) runTerm(t *testing.T, cfg Config, setup func(*Controller, informers.SharedInformerFactory) error) context.Context {
	t.Helper()
	ctx, cancel := context.WithCancel(f.ctx)
	hostFactory := informers.NewSharedInformerFactory(f.kube, 0)
	jobFactory := jobinformers.NewSharedInformerFactory(f.jobs, 0)
	c, err := newController(ctx, hostFactory.Core().V1().Pods(), jobFactory.Batch().V1().Jobs(), f.kube, f.jobs, cfg, f.clock)
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	if setup != nil {
		if err := setup(c, hostFactory); err != nil {
			cancel()
			t.Fatal(err)
		}
	}
	hostFactory.Start(ctx.Done())
	jobFactory.Start(ctx.Done())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.Run(ctx, 1)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
		hostFactory.Shutdown()
		jobFactory.Shutdown()
	})
	return ctx
}
