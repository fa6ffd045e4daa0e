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

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/clock"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// The informer shows the controller's own Pod writes late. Without a memory
// of what it asked for, a sync right after a create would see too few Pods
// and create again. These records bridge the gap until the informer
// catches up.

// expectationsTimeout is how long a Job waits for the Pod creations and
// deletions it asked for: after that the controller assumes a watch event
// was lost and acts on what it sees (kube-controller-manager's value).
const expectationsTimeout = 5 * time.Minute

// pending is what one Job still waits to see.
type pending struct {
	creations int
	deletions int
	// since is when the wait began; lowering the counts keeps it.
	since time.Time
	// held is set when a sync found the wait not over and left what it
	// could not do to the event that ends it.
	held bool
}

// podExpectations counts, per Job key, the Pod creations and deletions the
// controller requested and the informer has not shown yet.
type podExpectations struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	byJob map[string]*pending
}

func newPodExpectations(clk clock.PassiveClock) *podExpectations {
	return &podExpectations{clock: clk, byJob: map[string]*pending{}}
}

// expect replaces what key waits for, and restarts its timeout.
func (e *podExpectations) expect(key string, creations, deletions int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byJob[key] = &pending{creations: creations, deletions: deletions, since: e.clock.Now()}
}

// observe lowers what key waits for: the informer showed the changes, or
// the requests failed and the informer never will.
func (e *podExpectations) observe(key string, creations, deletions int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if p, ok := e.byJob[key]; ok {
		p.creations -= creations
		p.deletions -= deletions
	}
}

// observeCreation is observe of one creation, for the informer's add of a
// Pod of key. It tells whether a creation was awaited, and whether this
// one ends a wait a sync was held on (see metOrHold): then the Job must be
// synced, the sync that created the Pod having left work undone.
func (e *podExpectations) observeCreation(key string) (awaited, wake bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.byJob[key]
	if !ok {
		return false, false
	}
	awaited = p.creations > 0
	p.creations--
	if p.held && p.creations <= 0 && p.deletions <= 0 {
		p.held, wake = false, true
	}
	return awaited, wake
}

// met tells whether key may act on the Pods the informer shows.
func (e *podExpectations) met(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.metLocked(key)
}

// metOrHold is met for a sync: when the wait is not over, the sync is held
// on it, and the add event that ends it will queue the Job again.
func (e *podExpectations) metOrHold(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.metLocked(key) {
		return true
	}
	e.byJob[key].held = true
	return false
}

func (e *podExpectations) metLocked(key string) bool {
	p, ok := e.byJob[key]
	if !ok || (p.creations <= 0 && p.deletions <= 0) {
		return true
	}
	return e.clock.Since(p.since) > expectationsTimeout
}

// counts returns what key waits for.
func (e *podExpectations) counts(key string) (creations, deletions int, ok bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := e.byJob[key]
	if !ok {
		return 0, 0, false
	}
	return p.creations, p.deletions, true
}

// forget drops key, whose Job is gone.
func (e *podExpectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byJob, key)
}

// finalizerExpectations holds, per Job key, the Pods whose tracking
// finalizer the controller removed while the informer still shows it. A
// sync must not count such a Pod again.
type finalizerExpectations struct {
	mu    sync.Mutex
	byJob map[string]sets.Set[types.UID]
}

func newFinalizerExpectations() *finalizerExpectations {
	return &finalizerExpectations{byJob: map[string]sets.Set[types.UID]{}}
}

// expect adds uids to the removals key waits to see.
func (e *finalizerExpectations) expect(key string, uids ...types.UID) {
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.byJob[key]
	if !ok {
		s = sets.New[types.UID]()
		e.byJob[key] = s
	}
	s.Insert(uids...)
}

// observe drops uid from what key waits for: the informer showed the Pod
// without the finalizer (or gone), or the removal failed.
func (e *finalizerExpectations) observe(key string, uid types.UID) (awaited bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.byJob[key]; ok && s.Has(uid) {
		s.Delete(uid)
		return true
	}
	return false
}

// inFlight returns a copy of what key waits for.
func (e *finalizerExpectations) inFlight(key string) sets.Set[types.UID] {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byJob[key].Clone()
}

// removed tells whether key waits to see the removal from uid.
func (e *finalizerExpectations) removed(key string, uid types.UID) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.byJob[key].Has(uid)
}

// forget drops key, whose Job is gone.
func (e *finalizerExpectations) forget(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byJob, key)
}

// uidSet is a set of UIDs safe for concurrent use.
type uidSet struct {
	mu   sync.Mutex
	uids sets.Set[types.UID]
}

func newUIDSet() *uidSet { return &uidSet{uids: sets.New[types.UID]()} }

// add inserts uid and tells whether it was new.
func (s *uidSet) add(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.uids.Has(uid) {
		return false
	}
	s.uids.Insert(uid)
	return true
}

func (s *uidSet) has(uid types.UID) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.uids.Has(uid)
}

func (s *uidSet) remove(uid types.UID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.uids.Delete(uid)
}

// statusWrites remembers, by Job key, the Job as the controller's last
// status write of it returned it, until the informer holds that version or
// a later one. It is safe for concurrent use. The Jobs it holds are never
// written to.
//
// Entries are keyed by queue key rather than UID so that the sync that
// finds a Job gone can drop its entry: a deletion event handled between a
// write and its recording would otherwise leave the entry behind for good.
// The UID of the Job kept tells a new Job of the same name from the old one.
//
// The informer may show a write before the write's response is back (the
// API runs in this process). While a write of a key is in flight, the
// update events of that key are held in writing; when the response comes,
// they are judged against the version written.
type statusWrites struct {
	mu      sync.Mutex
	byJob   map[string]*batchv1.Job
	writing map[string]*shownDuringWrite
}

// shownDuringWrite is the newest Job an update event showed while a status
// write of its key was in flight; nil when none did.
type shownDuringWrite struct {
	job *batchv1.Job
}

func newStatusWrites() *statusWrites {
	return &statusWrites{byJob: map[string]*batchv1.Job{}, writing: map[string]*shownDuringWrite{}}
}

// begin marks a status write of key as in flight. Only the sync of key
// writes its status, so writes of one key never overlap.
func (w *statusWrites) begin(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.writing[key] = &shownDuringWrite{}
}

// end ends the write begun for key: written is the Job the write returned,
// nil when it failed. It returns true when an update event shown during
// the write was not the write's and may need a sync: it was newer than the
// version written, of another Job of the name, or the write failed (then
// the failed sync is retried anyway, and false is returned).
func (w *statusWrites) end(key string, written *batchv1.Job) (foreign bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	held := w.writing[key]
	delete(w.writing, key)
	if written == nil {
		return false
	}
	w.byJob[key] = written
	if held == nil || held.job == nil {
		return false
	}
	return !w.judge(key, held.job)
}

// shown is told of the Job of key as an update event shows it. It returns
// true when that Job is no newer than the controller's last status write
// of it: the write itself, or an earlier version the writing sync had read
// (a write is based on the version it read, and would have been refused
// had anything been written in between), so the event brings the
// controller nothing it has not acted on. During a write of key it holds
// the event for end and returns true. The entry ends once the informer
// shows the write or a later version, or another Job of the name.
func (w *statusWrites) shown(key string, job *batchv1.Job) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if held, ok := w.writing[key]; ok {
		if held.job == nil || job.UID != held.job.UID {
			held.job = job
		} else if order, err := resourceversion.CompareResourceVersion(job.ResourceVersion, held.job.ResourceVersion); err != nil || order > 0 {
			held.job = job
		}
		return true
	}
	return w.judge(key, job)
}

// judge is shown without a write in flight; w.mu is held.
func (w *statusWrites) judge(key string, job *batchv1.Job) bool {
	last, ok := w.byJob[key]
	if !ok {
		return false
	}
	order, err := resourceversion.CompareResourceVersion(job.ResourceVersion, last.ResourceVersion)
	known := last.UID == job.UID && err == nil
	if !known || order >= 0 {
		delete(w.byJob, key)
	}
	return known && order <= 0
}

// newer returns the Job of key as the controller last wrote it when that
// is newer than cached, the informer's copy. Any other answer ends the
// entry: the informer caught up, the Job is another one, or the versions
// cannot be compared (they are etcd revisions, but a version that is not
// one must not stand in for the informer's copy).
func (w *statusWrites) newer(key string, cached *batchv1.Job) *batchv1.Job {
	w.mu.Lock()
	defer w.mu.Unlock()
	last, ok := w.byJob[key]
	if !ok {
		return nil
	}
	if last.UID == cached.UID {
		order, err := resourceversion.CompareResourceVersion(cached.ResourceVersion, last.ResourceVersion)
		if err == nil && order < 0 {
			return last
		}
	}
	delete(w.byJob, key)
	return nil
}

// forget drops the entry of key if it belongs to the Job uid; an empty uid
// drops it whichever Job it belongs to.
func (w *statusWrites) forget(key string, uid types.UID) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if last, ok := w.byJob[key]; ok && (uid == "" || last.UID == uid) {
		delete(w.byJob, key)
	}
}
