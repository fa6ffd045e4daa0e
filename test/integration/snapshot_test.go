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
	"fmt"
	"net/http"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/snapshot"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// Where an acknowledged create stands relative to the snapshot call.
const (
	// ackedBeforeSave: acknowledged before Save was called; the snapshot
	// must hold it.
	ackedBeforeSave int32 = iota
	// ackedDuringSave: acknowledged while Save ran; either way is right.
	ackedDuringSave
	// ackedAfterSave: acknowledged after Save returned.
	ackedAfterSave
)

// snapshotLoad is the creates of a few writers and when each was
// acknowledged.
type snapshotLoad struct {
	phase atomic.Int32
	// stop ends the writers after their create in flight, so that no
	// request is cut off.
	stop atomic.Bool

	mu        sync.Mutex
	attempted map[string]bool
	acked     map[int32]map[string]types.UID
	maxRV     int64
	minRV     int64
	errs      []error
}

func newSnapshotLoad() *snapshotLoad {
	return &snapshotLoad{attempted: map[string]bool{}, acked: map[int32]map[string]types.UID{
		ackedBeforeSave: {}, ackedDuringSave: {}, ackedAfterSave: {},
	}}
}

func (l *snapshotLoad) count(phase int32) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.acked[phase])
}

// run starts writers that create Jobs until stop is set or each has made
// perWriter; it returns a wait for them.
func (l *snapshotLoad) run(ctx context.Context, t *testing.T, client versioned.Interface, ns string, writers, perWriter int) func() {
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for n := 0; n < perWriter && !l.stop.Load(); n++ {
				name := fmt.Sprintf("w%d-%d", w, n)
				l.mu.Lock()
				l.attempted[name] = true
				l.mu.Unlock()
				created, err := client.BatchV1().Jobs(ns).Create(ctx, newTestJob(ns, name).Obj(), metav1.CreateOptions{})
				// Read after the answer: ackedBeforeSave means the answer
				// came before Save was called.
				phase := l.phase.Load()
				l.mu.Lock()
				if err != nil {
					l.errs = append(l.errs, fmt.Errorf("creating %s: %w", name, err))
					l.mu.Unlock()
					continue
				}
				l.acked[phase][name] = created.UID
				rv := parseRV(t, created.ResourceVersion)
				l.maxRV = max(l.maxRV, rv)
				if l.minRV == 0 {
					l.minRV = rv
				}
				l.mu.Unlock()
			}
		})
	}
	return wg.Wait
}

func parseRV(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Errorf("resourceVersion %q: %v", rv, err)
	}
	return n
}

// waitAcked waits until at least n creates were acknowledged in phase.
func (l *snapshotLoad) waitAcked(ctx context.Context, t *testing.T, phase int32, n int) {
	t.Helper()
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return l.count(phase) >= n, nil
	}); err != nil {
		t.Fatalf("waiting for %d creates acknowledged in phase %d (have %d): %v", n, phase, l.count(phase), err)
	}
}

// TestSnapshotUnderWriteLoad saves a snapshot of a running server while
// writers create Jobs, restores it into a new data dir and starts a server
// on it: every create acknowledged before the save began is there with its
// UID, nothing is there that was never written, the new server's
// resourceVersions are above every one the old server gave out, and a
// watch from an old resourceVersion gets 410 Gone (Expired), so that a
// client relists rather than misses changes.
func TestSnapshotUnderWriteLoad(t *testing.T) {
	ctx := testContext(t)
	ns := testNamespace(t)
	old := framework.StartServer(t)
	client := newTestClient(t, old)

	load := newSnapshotLoad()
	waitLoad := load.run(ctx, t, client, ns, 4, 400)
	defer waitLoad()
	defer load.stop.Store(true)

	// Barriers, not sleeps: the save starts once creates were
	// acknowledged, and the load stops once creates were acknowledged
	// after it, so that it ran under writes throughout.
	load.waitAcked(ctx, t, ackedBeforeSave, 40)
	file := filepath.Join(t.TempDir(), "backup.db")
	load.phase.Store(ackedDuringSave)
	saved, err := snapshot.Save(ctx, snapshot.SaveOptions{DataDir: old.DataDir, File: file})
	load.phase.Store(ackedAfterSave)
	if err != nil {
		t.Fatalf("Save under load: %v", err)
	}
	load.waitAcked(ctx, t, ackedAfterSave, 20)
	load.stop.Store(true)
	waitLoad()
	if len(load.errs) > 0 {
		t.Fatalf("creates failed under the save: %v", load.errs)
	}
	list, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	lastOldRV := max(load.maxRV, parseRV(t, list.ResourceVersion))
	old.Stop()

	restored := filepath.Join(t.TempDir(), "restored")
	res, err := snapshot.Restore(snapshot.RestoreOptions{File: file, DataDir: restored, RevisionBump: snapshot.DefaultRevisionBump})
	if err != nil {
		t.Fatalf("Restore: %v", err)
	}
	if res.Revision != saved.Revision+snapshot.DefaultRevisionBump {
		t.Errorf("restored revision %d, want the snapshot's %d + %d", res.Revision, saved.Revision, snapshot.DefaultRevisionBump)
	}
	ts := framework.StartServerOnDataDir(t, restored)
	client = newTestClient(t, ts)

	after, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]types.UID{}
	var phantoms []string
	for _, j := range after.Items {
		if !load.attempted[j.Name] {
			phantoms = append(phantoms, j.Name)
		}
		got[j.Name] = j.UID
	}
	if len(phantoms) > 0 {
		t.Errorf("the restored server has Jobs nobody created: %v", phantoms)
	}
	// Every create acknowledged before the save is there, with its UID;
	// of those acknowledged during the save, the ones there are intact.
	want := load.acked[ackedBeforeSave]
	restoredBefore := map[string]types.UID{}
	duringFound := 0
	for name, uid := range got {
		if _, ok := want[name]; ok {
			restoredBefore[name] = uid
		}
		if wantUID, ok := load.acked[ackedDuringSave][name]; ok {
			duringFound++
			if uid != wantUID {
				t.Errorf("job %s acknowledged during the save: UID %s after the restore, %s before", name, uid, wantUID)
			}
		}
	}
	if diff := cmp.Diff(want, restoredBefore); diff != "" {
		t.Errorf("creates acknowledged before the save, after the restore (-acknowledged +restored):\n%s", diff)
	}

	// resourceVersions move forward only.
	if rv := parseRV(t, after.ResourceVersion); rv <= lastOldRV {
		t.Errorf("list resourceVersion %d after the restore, want above %d, the last of the old server", rv, lastOldRV)
	}
	fresh, err := client.BatchV1().Jobs(ns).Create(ctx, newTestJob(ns, "after-restore").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv := parseRV(t, fresh.ResourceVersion); rv <= lastOldRV {
		t.Errorf("a create after the restore got resourceVersion %d, want above %d, the last of the old server", rv, lastOldRV)
	}

	// Watches from before the restore end with 410 Gone: from the first
	// resourceVersion of the load, and from the last the old server gave.
	for _, rv := range []int64{load.minRV, lastOldRV} {
		w, err := client.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(rv, 10)})
		if err != nil {
			t.Fatalf("watch from %d: %v", rv, err)
		}
		ev := nextTestWatchEvent(ctx, t, w)
		w.Stop()
		code, reason := int32(0), metav1.StatusReason("")
		if status, ok := ev.Object.(*metav1.Status); ok {
			code, reason = status.Code, status.Reason
		}
		if diff := cmp.Diff([]any{watch.Error, int32(http.StatusGone), metav1.StatusReasonExpired}, []any{ev.Type, code, reason}); diff != "" {
			t.Errorf("watch from resourceVersion %d of the old server (-want +got):\n%s", rv, diff)
		}
	}
	t.Logf("snapshot under load: %d creates acknowledged before the save (all %d found), %d during (%d found), %d after; snapshot revision %d, %d keys, %d bytes, saved in %s; restored at revision %d in %s; last old resourceVersion %d, first new %s",
		len(want), len(restoredBefore), len(load.acked[ackedDuringSave]), duringFound, len(load.acked[ackedAfterSave]),
		saved.Revision, saved.Keys, saved.Size, saved.Duration.Round(time.Millisecond), res.Revision, res.Duration.Round(time.Millisecond),
		lastOldRV, fresh.ResourceVersion)
}
