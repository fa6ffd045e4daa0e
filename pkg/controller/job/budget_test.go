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
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// TestWriteBudgetForEach: calls run in order, never more than
// podWriteConcurrency at once, and stop once the budget is spent, after at
// least one: SyncPodWriteBudget after the sync began while another Job
// waits, SyncPodWriteBudgetAlone after it otherwise.
func TestWriteBudgetForEach(t *testing.T) {
	cases := map[string]struct {
		// alone: no other Job waits for a worker.
		alone bool
		// step is how far the clock moves (SyncPodWriteBudget if zero).
		step time.Duration
		// spendAt is the call after which the clock moves by step; -1 for
		// before the first call, 0 for never.
		spendAt int
		// startedBefore is what the sync started before this call.
		startedBefore int
		wantRan       int
	}{
		"budget never spent: all run":                     {wantRan: 100},
		"spent after the 25th call: later ones left":      {spendAt: 25, wantRan: 25},
		"spent before the call, sync started nothing yet": {spendAt: -1, wantRan: 1},
		"spent before the call, sync started some":        {spendAt: -1, startedBefore: 3, wantRan: 0},
		"alone: the short budget does not stop it":        {alone: true, spendAt: -1, startedBefore: 3, wantRan: 100},
		"alone: the short budget passed during the calls": {alone: true, spendAt: 25, wantRan: 100},
		"alone: stopped by the long budget":               {alone: true, step: SyncPodWriteBudgetAlone, spendAt: 25, wantRan: 25},
		"alone: long budget spent before the call":        {alone: true, step: SyncPodWriteBudgetAlone, spendAt: -1, startedBefore: 3, wantRan: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(testNow)
			b := newWriteBudget(clk, testNow, func() bool { return !tc.alone })
			b.started = tc.startedBefore
			step := tc.step
			if step == 0 {
				step = SyncPodWriteBudget
			}
			if tc.spendAt < 0 {
				clk.Step(step)
			}
			// The first calls meet at a barrier: none goes on until as many
			// run at once as the bound allows (or as the case runs, if
			// fewer), so the bound is reached on every run, whatever the
			// scheduler does (a bound below that would hang here until go
			// test's timeout).
			fullAt := min(podWriteConcurrency, tc.wantRan)
			if tc.spendAt > 0 {
				fullAt = min(podWriteConcurrency, tc.spendAt)
			}
			full := make(chan struct{})
			var closeFull sync.Once
			var (
				mu                 sync.Mutex
				running, most, did int
				called             []int
			)
			ran := b.forEach(100, func(i int) {
				mu.Lock()
				running++
				most = max(most, running)
				called = append(called, i)
				if running == fullAt {
					closeFull.Do(func() { close(full) })
				}
				mu.Unlock()
				if i < fullAt {
					<-full
				}
				mu.Lock()
				defer mu.Unlock()
				running--
				did++
				if did == tc.spendAt {
					clk.Step(step)
				}
			})
			// Calls already started when the budget ran out still end;
			// those started after it, up to the bound, are allowed too.
			if tc.spendAt > 0 && tc.wantRan < 100 {
				if ran < tc.spendAt || ran > tc.spendAt+podWriteConcurrency {
					t.Errorf("ran %d calls, want %d to %d", ran, tc.spendAt, tc.spendAt+podWriteConcurrency)
				}
			} else if ran != tc.wantRan {
				t.Errorf("ran %d calls, want %d", ran, tc.wantRan)
			}
			if len(called) != ran {
				t.Errorf("%d calls made, forEach says %d", len(called), ran)
			}
			seen := map[int]bool{}
			for _, i := range called {
				seen[i] = true
			}
			for i := range ran {
				if !seen[i] {
					t.Errorf("call %d missing: the calls made are not a prefix", i)
				}
			}
			if most > podWriteConcurrency {
				t.Errorf("%d calls ran at once, want at most %d", most, podWriteConcurrency)
			}
			if wantCut := ran < 100; b.cut != wantCut {
				t.Errorf("cut = %v, want %v", b.cut, wantCut)
			}
		})
	}
}

// TestSyncJobWriteBudgetCreations: a sync whose budget runs out after the
// first slow-start batch leaves the other creations to a sync queued at
// once, and expects only the Pods it created. The short budget stops it
// only while another Job waits for a worker.
func TestSyncJobWriteBudgetCreations(t *testing.T) {
	cases := map[string]struct {
		otherQueued bool
		step        time.Duration
		// wantCreated is what the sync created, counted in its status
		// write and in the expectations.
		wantCreated int
		// wantQueued: the keys queued after the sync.
		wantQueued int
	}{
		"another Job waits: the short budget stops it": {otherQueued: true, step: SyncPodWriteBudget, wantCreated: 1, wantQueued: 2},
		"alone: the short budget does not":             {step: SyncPodWriteBudget, wantCreated: 20},
		"alone: the long budget stops it":              {step: SyncPodWriteBudgetAlone, wantCreated: 1, wantQueued: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := makeJob("j").Parallelism(20).Completions(20).Obj()
			f := newFixture(t, fixtureOptions{})
			f.addJobs(t, job)
			if tc.otherQueued {
				f.queue.Add("ns/other")
			}
			// The first creation, a slow-start batch of one, takes the
			// time.
			var once sync.Once
			f.kube.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				once.Do(func() { f.clock.Step(tc.step) })
				return false, nil, nil
			})
			if err := f.syncJob(t, job); err != nil {
				t.Fatalf("syncJob: %v", err)
			}
			if got := countActions(f.kube.Actions(), "create", "pods"); got != tc.wantCreated {
				t.Errorf("creation requests = %d, want %d", got, tc.wantCreated)
			}
			if c, _, _ := f.podExpect.counts("ns/j"); c != tc.wantCreated {
				t.Errorf("expected creations = %d, want %d", c, tc.wantCreated)
			}
			if w := f.written(); len(w) != 1 || w[0].Active != int32(tc.wantCreated) {
				t.Errorf("status writes = %+v, want one with active %d", w, tc.wantCreated)
			}
			if got := f.queue.Len(); got != tc.wantQueued {
				t.Errorf("queue holds %d keys, want %d", got, tc.wantQueued)
			}
		})
	}
}

// TestSyncJobWriteBudgetFinalizers: a sync whose budget runs out while its
// finalizer removals wait for a slot leaves the rest on and queues the next
// sync at once. The Job does not finish while a Pod of it still carries the
// finalizer: a NonIndexed Job keeps those Pods in uncountedTerminatedPods,
// an Indexed one, whose completedIndexes counted them already, waits with
// its Complete condition.
func TestSyncJobWriteBudgetFinalizers(t *testing.T) {
	n := podWriteConcurrency + 2
	type progress struct {
		Succeeded, Uncounted int
		Finished             bool
		Patched, Queued      int
	}
	cases := map[string]struct {
		job     *batchv1.Job
		indexed bool
		want    []progress
	}{
		"NonIndexed": {
			job: started(makeJob("j").Parallelism(int32(n)).Completions(int32(n))).Obj(),
			want: []progress{
				{Succeeded: podWriteConcurrency, Uncounted: 2, Patched: podWriteConcurrency, Queued: 1},
				{Succeeded: n, Finished: true, Patched: n},
				{Succeeded: n, Finished: true, Patched: n},
			},
		},
		"Indexed": {
			job:     started(makeJob("j").Indexed(int32(n))).Obj(),
			indexed: true,
			want: []progress{
				{Succeeded: n, Patched: podWriteConcurrency, Queued: 1},
				{Succeeded: n, Finished: true, Patched: n},
				{Succeeded: n, Finished: true, Patched: n},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := tc.job
			f := newFixture(t, fixtureOptions{})
			f.addJobs(t, job)
			for i := range n {
				pod := makePod(fmt.Sprintf("p%d", i), job).Phase(corev1.PodSucceeded).ExitCode("main", 0, testNow.Add(-time.Minute))
				if tc.indexed {
					pod.Index(i)
				}
				f.addPods(t, pod.Obj())
			}
			// The budget runs out while a sync's removals are in flight:
			// the writers meet at a gate, the last one to arrive spends
			// the budget, and only then do they all go on. The requests
			// started end; no other starts in that sync. The gate makes
			// the sequence the test's: without it, whether the other
			// writers had started before the clock moved would be up to
			// the scheduler. It stands in front of the fake host, which
			// serves one request at a time.
			gate := newWriterGate(t, f.clock)
			f.Controller.kubeClient = gatedHost{Interface: f.kube, gate: gate}
			var got []progress
			for range 3 {
				// A sync has as many removals in flight at once as
				// its bound lets, of the Pods still carrying the
				// finalizer.
				gate.reset(min(podWriteConcurrency, n-countActions(f.kube.Actions(), "patch", "pods")))
				latest := f.syncAndCatchUp(t, job)
				job = latest
				queued := f.queue.Len()
				for range queued {
					key, _ := f.queue.Get()
					f.queue.Done(key)
				}
				got = append(got, progress{
					Succeeded: int(latest.Status.Succeeded), Uncounted: len(latest.Status.UncountedTerminatedPods.Succeeded),
					Finished: decide.IsFinished(latest), Patched: countActions(f.kube.Actions(), "patch", "pods"), Queued: queued,
				})
				f.finishing.remove(latest.UID)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("progress sync by sync (-want +got):\n%s", diff)
			}
		})
	}
}

// writerGate holds the Pod writers of a sync until want of them are in
// flight, then spends the sync's budget and lets them all go on.
type writerGate struct {
	t     *testing.T
	clock *clocktesting.FakeClock

	mu      sync.Mutex
	want    int
	arrived int
	open    chan struct{}
}

func newWriterGate(t *testing.T, clk *clocktesting.FakeClock) *writerGate {
	return &writerGate{t: t, clock: clk, open: make(chan struct{})}
}

// reset readies the gate for a sync that will have want writers in flight.
func (g *writerGate) reset(want int) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.want, g.arrived, g.open = want, 0, make(chan struct{})
}

// arrive is called by each writer; it returns once want writers arrived.
// Writers arriving after the gate opened pass at once: the test's
// progress rows tell whether any should have started.
func (g *writerGate) arrive() {
	g.mu.Lock()
	g.arrived++
	open := g.open
	if g.arrived == g.want {
		// No other Job is queued in these tests: the long budget.
		g.clock.Step(SyncPodWriteBudgetAlone)
		close(open)
	}
	g.mu.Unlock()
	select {
	case <-open:
	case <-time.After(wait.ForeverTestTimeout):
		// Only a controller that no longer starts its writers
		// together gets here; fail rather than hang.
		g.mu.Lock()
		defer g.mu.Unlock()
		g.t.Errorf("%d Pod writers in flight at once, want %d", g.arrived, g.want)
	}
}

// gatedHost is a host whose Pod patches pass a writerGate first.
type gatedHost struct {
	kubernetes.Interface
	gate *writerGate
}

func (h gatedHost) CoreV1() corev1client.CoreV1Interface {
	return gatedCore{CoreV1Interface: h.Interface.CoreV1(), gate: h.gate}
}

type gatedCore struct {
	corev1client.CoreV1Interface
	gate *writerGate
}

func (c gatedCore) Pods(namespace string) corev1client.PodInterface {
	return gatedPods{PodInterface: c.CoreV1Interface.Pods(namespace), gate: c.gate}
}

type gatedPods struct {
	corev1client.PodInterface
	gate *writerGate
}

func (p gatedPods) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error) {
	p.gate.arrive()
	return p.PodInterface.Patch(ctx, name, pt, data, opts, subresources...)
}
