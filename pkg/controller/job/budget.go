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
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Why a sync has a budget for its Pod requests.
//
// Every Pod request of the controller waits for a token of one rate
// limiter, shared by all workers. kube-controller-manager starts all the
// requests of a slow-start batch at once: a sync creating 256 Pods books
// the next 2.5 s of a 100-QPS limiter, and the five-Pod Job synced next to
// it waits behind them. Syncs of large Jobs then take many seconds, and so
// do the small syncs queued behind them. Here a sync has at most
// podWriteConcurrency requests waiting or in flight, so the workers share
// the limiter request by request. A sync also stops starting requests
// after SyncPodWriteBudget if another Job waits for a worker, and after
// SyncPodWriteBudgetAlone in any case: a worker held by one large Job
// comes back to the others within seconds, and a Job alone in the queue
// is not cut into more syncs (each with its status write) than its work
// needs. What is left goes to a sync queued at once. Creations left
// undone are taken off the expectations, as after a failed slow-start
// batch; finalizers left on stay counted in uncountedTerminatedPods;
// deletions left undone are Pods still there. The next sync sees all
// three and carries on, so the outcome is kube-controller-manager's.

// podWriteConcurrency bounds the Pod requests one sync has waiting for the
// rate limiter or in flight.
const podWriteConcurrency = 10

// writeBudget is one sync's allowance of Pod requests. It is used from the
// sync's goroutine only.
type writeBudget struct {
	clock clock.PassiveClock
	// began is when the sync began.
	began time.Time
	// othersWaiting tells whether another Job waits for a worker; nil
	// for never.
	othersWaiting func() bool
	// started counts the requests started by the sync.
	started int
	// cut is set once a request was left for the next sync.
	cut bool
}

// newWriteBudget returns the budget of a sync that began at began.
func newWriteBudget(clk clock.PassiveClock, began time.Time, othersWaiting func() bool) *writeBudget {
	return &writeBudget{clock: clk, began: began, othersWaiting: othersWaiting}
}

// forEach calls write(i) for i from 0 to n-1, with at most
// podWriteConcurrency calls running, and returns once they are done. It
// stops starting calls when the budget is spent and returns how many it
// started: always a prefix, and never none when the sync started nothing
// before, so that every sync makes progress.
func (b *writeBudget) forEach(n int, write func(i int)) int {
	slots := make(chan struct{}, podWriteConcurrency)
	var wg sync.WaitGroup
	ran := 0
	for i := range n {
		slots <- struct{}{}
		if b.spent() {
			b.cut = true
			break
		}
		b.started++
		ran++
		wg.Go(func() {
			defer func() { <-slots }()
			write(i)
		})
	}
	wg.Wait()
	return ran
}

// spent tells whether the sync may start no more requests: it started
// some, and it has run for SyncPodWriteBudgetAlone, or for
// SyncPodWriteBudget while another Job waits.
func (b *writeBudget) spent() bool {
	if b.started == 0 || SyncPodWriteBudget <= 0 {
		return false
	}
	ran := b.clock.Since(b.began)
	switch {
	case ran >= max(SyncPodWriteBudgetAlone, SyncPodWriteBudget):
		return true
	case ran >= SyncPodWriteBudget:
		return b.othersWaiting != nil && b.othersWaiting()
	}
	return false
}
