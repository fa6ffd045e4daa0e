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
	"errors"
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/tools/cache"
	"k8s.io/klog/v2"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// A status write refused for a conflict.
//
// The write was based on a version of the Job that is no longer the stored
// one: someone else wrote it in between (Kueue clears status.startTime right
// after it suspends a Job, an external writer updates a label). The sync is
// right to fail, but waiting out the queue's backoff (a second) before the
// next try only delays what the sync had decided: a suspended Job's
// status.active kept its old value for that second. The newer version is
// certain to reach the informer, so the retry waits for exactly that: the
// refused write's base is noted, and the first update event newer than it,
// or the cache already holding one when the sync returns, queues the sync
// at once. kube-controller-manager backs off as for any error.

// staleWriteError is the error of a status write refused for a conflict.
type staleWriteError struct{ err error }

func (e *staleWriteError) Error() string { return e.err.Error() }
func (e *staleWriteError) Unwrap() error { return e.err }

// refusedWrites holds, per Job key, the version a refused status write was
// based on, until a newer one is seen.
type refusedWrites struct {
	mu    sync.Mutex
	bases map[string]refusedBase
}

type refusedBase struct {
	uid             types.UID
	resourceVersion string
}

func newRefusedWrites() *refusedWrites {
	return &refusedWrites{bases: map[string]refusedBase{}}
}

// note remembers that a status write based on job was refused.
func (r *refusedWrites) note(key string, job *batchv1.Job) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bases[key] = refusedBase{uid: job.UID, resourceVersion: job.ResourceVersion}
}

// shownNewer is told of a version of the Job of key. It returns true, once,
// when a refused write of that Job is noted and job is newer than its base:
// the sync may run again at once. Another Job of the name ends the entry
// (its own events sync it); an older or equal version leaves it.
func (r *refusedWrites) shownNewer(key string, job *batchv1.Job) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	base, ok := r.bases[key]
	if !ok {
		return false
	}
	if base.uid != job.UID {
		delete(r.bases, key)
		return false
	}
	order, err := resourceversion.CompareResourceVersion(job.ResourceVersion, base.resourceVersion)
	if err != nil {
		// Not etcd revisions: nothing to wait for, sync now.
		delete(r.bases, key)
		return true
	}
	if order <= 0 {
		return false
	}
	delete(r.bases, key)
	return true
}

// forget drops the entry of key.
func (r *refusedWrites) forget(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.bases, key)
}

// handleJob syncs the Job of key for the queue's workers. A sync that
// failed on a refused status write is not handed back to the queue's
// backoff: it runs again when the informer shows the Job's newer version,
// now if it already does.
func (jm *Controller) handleJob(ctx context.Context, key string) error {
	err := jm.syncJob(ctx, key)
	var stale *staleWriteError
	if !errors.As(err, &stale) {
		return err
	}
	logger := klog.FromContext(ctx)
	ns, name, splitErr := cache.SplitMetaNamespaceKey(key)
	if splitErr != nil {
		return err
	}
	cached, getErr := jm.jobs.get(ns, name)
	if getErr != nil {
		// Deleted meanwhile: the delete event syncs it.
		jm.refused.forget(key)
		return nil
	}
	if jm.refused.shownNewer(key, cached) {
		logger.V(2).Info("Status write refused, the job changed: syncing again from the newer version", "key", key, "err", err)
		jm.queue.Add(key)
		return nil
	}
	logger.V(2).Info("Status write refused, the job changed: syncing again once the informer shows the newer version", "key", key, "err", err)
	return nil
}
