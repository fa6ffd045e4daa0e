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
)

// Why the syncs a Pod event queues are spaced.
//
// Both controllers queue a Job one batch period after a Pod event. Under
// load, kube-controller-manager's workers spend seconds of each sync
// waiting for the client's rate limiter, a key waits as long in the queue,
// and the events of a Job arriving meanwhile are folded into one sync.
// This controller's syncs do not wait like that (see writeBudget), so when
// the Pods of one Job end a second or two apart on a busy cluster, each
// end was a sync and a status write of its own. A Pod event therefore
// queues its Job no sooner than SyncJobPodSpacing after the Job's last
// sync began. Events that change what the Job asks for (the Job added,
// its spec changed, a deadline) are not spaced, nor is a sync that left
// work undone to the next one.

// syncStarts remembers when the last sync of each running Job began.
type syncStarts struct {
	mu    sync.Mutex
	began map[string]time.Time
}

func newSyncStarts() *syncStarts {
	return &syncStarts{began: map[string]time.Time{}}
}

// note records that a sync of key began at t.
func (s *syncStarts) note(key string, t time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.began[key] = t
}

// forget drops key: its Job finished or is gone.
func (s *syncStarts) forget(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.began, key)
}

// delay returns how long a Pod event seen at now waits before it syncs
// key: at least least, and until spacing after the last sync began. A
// record older than spacing holds nothing back any more and is dropped.
func (s *syncStarts) delay(key string, now time.Time, least, spacing time.Duration) time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	began, ok := s.began[key]
	if !ok {
		return least
	}
	wait := began.Add(spacing).Sub(now)
	if wait <= 0 {
		delete(s.began, key)
	}
	return max(least, wait)
}

// last returns when the last sync of key began, if it is remembered.
func (s *syncStarts) last(key string) (time.Time, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	t, ok := s.began[key]
	return t, ok
}
