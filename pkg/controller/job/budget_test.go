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
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
	clocktesting "k8s.io/utils/clock/testing"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/decide"
)

// TestWriteBudgetForEach: calls run in order, never more than
// podWriteConcurrency at once, and stop once the budget is spent, after at
// least one.
func TestWriteBudgetForEach(t *testing.T) {
	cases := map[string]struct {
		// spendAt is the call after which the clock passes the deadline;
		// 0 for never.
		spendAt int
		// startedBefore is what the sync started before this call.
		startedBefore int
		wantRan       int
	}{
		"budget never spent: all run":                     {wantRan: 100},
		"spent after the 25th call: later ones left":      {spendAt: 25, wantRan: 25},
		"spent before the call, sync started nothing yet": {spendAt: -1, wantRan: 1},
		"spent before the call, sync started some":        {spendAt: -1, startedBefore: 3, wantRan: 0},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(testNow)
			b := newWriteBudget(clk, testNow)
			b.started = tc.startedBefore
			if tc.spendAt < 0 {
				clk.Step(SyncPodWriteBudget)
			}
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
				mu.Unlock()
				// Let the others pile up, if the bound let them.
				time.Sleep(time.Millisecond)
				mu.Lock()
				defer mu.Unlock()
				running--
				did++
				if did == tc.spendAt {
					clk.Step(SyncPodWriteBudget)
				}
			})
			// Calls already started when the budget ran out still end;
			// those started after it, up to the bound, are allowed too.
			if tc.spendAt > 0 {
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
// once, and expects only the Pods it created.
func TestSyncJobWriteBudgetCreations(t *testing.T) {
	job := makeJob("j").Parallelism(20).Completions(20).Obj()
	f := newFixture(t, fixtureOptions{})
	f.addJobs(t, job)
	f.kube.PrependReactor("create", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
		f.clock.Step(SyncPodWriteBudget)
		return false, nil, nil
	})
	if err := f.syncJob(t, job); err != nil {
		t.Fatalf("syncJob: %v", err)
	}
	if got := countActions(f.kube.Actions(), "create", "pods"); got != 1 {
		t.Errorf("creation requests = %d, want 1", got)
	}
	if c, _, _ := f.podExpect.counts("ns/j"); c != 1 {
		t.Errorf("expected creations = %d, want 1", c)
	}
	if w := f.written(); len(w) != 1 || w[0].Active != 1 {
		t.Errorf("status writes = %+v, want one with active 1", w)
	}
	if got := f.queue.Len(); got != 1 {
		t.Errorf("queue holds %d keys, want the Job queued again at once", got)
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
			// Every removal spends the budget: the requests already
			// started end, no other starts in that sync.
			f.kube.PrependReactor("patch", "pods", func(clienttesting.Action) (bool, runtime.Object, error) {
				f.clock.Step(SyncPodWriteBudget)
				return false, nil, nil
			})
			var got []progress
			for range 3 {
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
