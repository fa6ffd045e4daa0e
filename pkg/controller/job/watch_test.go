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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// watchResult is everything a handler may change.
type watchResult struct {
	Queue   []queued[string]
	Orphans []queued[orphanKey]
	TTL     []queued[string]
	// Creations and Deletions are what ns/j still expects; Tracked is
	// false once its expectations are forgotten.
	Creations, Deletions int
	Tracked              bool
	InFlight             []types.UID
	Finishing            bool
	// Written is the resourceVersion of ns/j's last status write still
	// remembered, "" once forgotten.
	Written string
	// SyncBegan is set while the start of ns/j's last sync is remembered.
	SyncBegan bool
}

// watchFixture is a fixture whose queues record instead of scheduling.
func watchFixture(t *testing.T, cfg Config) (*fixture, *recordingQueue[string], *recordingQueue[orphanKey], *recordingQueue[string]) {
	f := newFixture(t, fixtureOptions{cfg: cfg})
	f.shutDownQueues()
	q, o, ttl := newRecordingQueue[string](), newRecordingQueue[orphanKey](), newRecordingQueue[string]()
	f.queue, f.orphans, f.ttl = q, o, ttl
	// ns/j waits for one creation, one deletion and one finalizer
	// removal, so that the handlers' effect on them shows.
	f.podExpect.expect("ns/j", 1, 1)
	f.finalizerExpect.expect("ns/j", "a-uid")
	// It remembers a status write of ns/j for the same reason.
	f.ownWrites.wrote("ns/j", makeJob("j").ResourceVersion("7").Obj())
	return f, q, o, ttl
}

func (f *fixture) watchResult(q *recordingQueue[string], o *recordingQueue[orphanKey], ttl *recordingQueue[string], job *batchv1.Job) watchResult {
	c, d, ok := f.podExpect.counts("ns/j")
	_, syncBegan := f.starts.last("ns/j")
	return watchResult{
		Queue: q.items(), Orphans: o.items(), TTL: ttl.items(),
		Creations: c, Deletions: d, Tracked: ok,
		InFlight:  sets.List(f.finalizerExpect.inFlight("ns/j")),
		Finishing: f.finishing.has(job.UID),
		Written:   f.ownWrites.kept("ns/j"),
		SyncBegan: syncBegan,
	}
}

const batch1s = time.Second

func TestPodEvents(t *testing.T) {
	job := makeJob("j").Obj()
	other := makeJob("k").Obj()
	external := makeJob("j").ManagedBy("example.com/other").Obj()
	finished := makeJob("j").Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "done")).Obj()
	goneAt := testNow.Add(-time.Minute)
	untouched := watchResult{Creations: 1, Deletions: 1, Tracked: true, InFlight: []types.UID{"a-uid"}, Written: "7"}
	with := func(r watchResult, change func(*watchResult)) watchResult {
		change(&r)
		return r
	}
	batched := []queued[string]{{Key: "ns/j", Delay: batch1s}}
	orphanA := []queued[orphanKey]{{Key: orphanKey{namespace: "ns", name: "a"}}}

	cases := map[string]struct {
		jobs  []*batchv1.Job
		cfg   Config
		event func(f *fixture)
		want  watchResult
	}{
		"add: an awaited pod as created is an observed creation; its creating sync counted it, nothing is queued": {
			jobs:  []*batchv1.Job{job},
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", job).Obj()) },
			want:  with(untouched, func(r *watchResult) { r.Creations = 0 }),
		},
		"add: the awaited pod that ends the wait a sync was held on queues the job": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.podExpect.expect("ns/j", 1, 0)
				f.podExpect.metOrHold("ns/j")
				f.onPodAdd(f.logger(), makePod("a", job).Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Queue, r.Creations, r.Deletions = batched, 0, 0 }),
		},
		"add: an awaited pod that does not end the held wait queues nothing": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.podExpect.expect("ns/j", 2, 0)
				f.podExpect.metOrHold("ns/j")
				f.onPodAdd(f.logger(), makePod("a", job).Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Creations, r.Deletions = 1, 0 }),
		},
		"add: an awaited pod seen already failed queues the job": {
			jobs:  []*batchv1.Job{job},
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", job).Failed(testNow).Obj()) },
			want:  with(untouched, func(r *watchResult) { r.Queue, r.Creations = batched, 0 }),
		},
		"add: an awaited pod seen already ready queues the job": {
			jobs:  []*batchv1.Job{job},
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", job).Running().ReadySince(testNow).Obj()) },
			want:  with(untouched, func(r *watchResult) { r.Queue, r.Creations = batched, 0 }),
		},
		"add: a pod nobody awaited queues the job": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.podExpect.expect("ns/j", 0, 1)
				f.onPodAdd(f.logger(), makePod("a", job).Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Queue, r.Creations = batched, -1 }),
		},
		"add: a pod seen already going is an observed deletion": {
			jobs:  []*batchv1.Job{job},
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", job).Deleted(goneAt).Obj()) },
			want:  with(untouched, func(r *watchResult) { r.Queue, r.Deletions = batched, 0 }),
		},
		"add: a pod of another server is none of ours": {
			jobs:  []*batchv1.Job{job},
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", job).Identity("other").Obj()) },
			want:  untouched,
		},
		"add: our identity is required when we have one": {
			jobs:  []*batchv1.Job{job},
			cfg:   Config{Identity: "us"},
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", job).Obj()) },
			want:  untouched,
		},
		"add: a pod carrying our identity is ours": {
			jobs:  []*batchv1.Job{job},
			cfg:   Config{Identity: "us"},
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", job).Identity("us").Obj()) },
			want:  with(untouched, func(r *watchResult) { r.Creations = 0 }),
		},
		"add: a pod whose job is gone goes to the orphan worker": {
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", job).Obj()) },
			want:  with(untouched, func(r *watchResult) { r.Orphans = orphanA }),
		},
		"add: a pod without finalizer whose job is gone is left alone in aggregated mode": {
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", job).NoFinalizer().Obj()) },
			want:  untouched,
		},
		"add: a pod without finalizer whose job is gone is deleted in standalone mode": {
			cfg:   Config{DeletePodsOfDeletedJobs: true},
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", job).NoFinalizer().Obj()) },
			want:  with(untouched, func(r *watchResult) { r.Orphans = orphanA }),
		},
		"add: a pod of a job with another UID is an orphan": {
			jobs:  []*batchv1.Job{makeJob("j").UID("new-uid").Generated().Obj()},
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", job).Obj()) },
			want:  with(untouched, func(r *watchResult) { r.Orphans = orphanA }),
		},
		"add: a pod of an externally managed job is ignored": {
			jobs:  []*batchv1.Job{external},
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", external).Obj()) },
			want:  untouched,
		},
		"add: a pod of a host batch/v1 Job is ignored": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				pod := makePod("a", job).Obj()
				pod.OwnerReferences[0].APIVersion = "batch/v1"
				f.onPodAdd(f.logger(), pod)
			},
			want: untouched,
		},
		"add: an orphan with the finalizer is released and its selecting jobs wake": {
			jobs:  []*batchv1.Job{job},
			event: func(f *fixture) { f.onPodAdd(f.logger(), makePod("a", job).Orphan().Obj()) },
			want:  with(untouched, func(r *watchResult) { r.Queue, r.Orphans = batched, orphanA }),
		},
		"update: a resync changes nothing": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				p := makePod("a", job).ResourceVersion("1").Obj()
				f.onPodUpdate(f.logger(), p, p.DeepCopy())
			},
			want: untouched,
		},
		"update: a pod bound and started, not yet ready, queues nothing": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.onPodUpdate(f.logger(), makePod("a", job).ResourceVersion("1").Obj(), makePod("a", job).ResourceVersion("2").NodeName("n1").Running().Obj())
			},
			want: untouched,
		},
		"update: a pod turning ready waits for the longer readiness period": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.onPodUpdate(f.logger(), makePod("a", job).NodeName("n1").Running().ResourceVersion("1").Obj(),
					makePod("a", job).NodeName("n1").Running().ReadySince(testNow).ResourceVersion("2").Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Queue = []queued[string]{{Key: "ns/j", Delay: 5 * time.Second}} }),
		},
		"update: a finished pod is batched": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.onPodUpdate(f.logger(), makePod("a", job).Running().ResourceVersion("1").Obj(), makePod("a", job).Succeeded(testNow).ResourceVersion("2").Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Queue = batched }),
		},
		"update: a finished pod a second after the job's last sync began waits until the spacing has passed since that start": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.starts.note("ns/j", testNow.Add(-time.Second))
				f.onPodUpdate(f.logger(), makePod("a", job).Running().ResourceVersion("1").Obj(), makePod("a", job).Succeeded(testNow).ResourceVersion("2").Obj())
			},
			want: with(untouched, func(r *watchResult) {
				r.Queue = []queued[string]{{Key: "ns/j", Delay: SyncJobPodSpacing - time.Second}}
				r.SyncBegan = true
			}),
		},
		"update: a finished pod once the spacing has passed is batched, and the job's last sync start is dropped": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.starts.note("ns/j", testNow.Add(-SyncJobPodSpacing))
				f.onPodUpdate(f.logger(), makePod("a", job).Running().ResourceVersion("1").Obj(), makePod("a", job).Succeeded(testNow).ResourceVersion("2").Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Queue = batched }),
		},
		"update: a finished pod just before the spacing has passed still waits the batch period": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.starts.note("ns/j", testNow.Add(-SyncJobPodSpacing+time.Millisecond))
				f.onPodUpdate(f.logger(), makePod("a", job).Running().ResourceVersion("1").Obj(), makePod("a", job).Succeeded(testNow).ResourceVersion("2").Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Queue, r.SyncBegan = batched, true }),
		},
		"update: the controller's own finalizer removal, alone, is an observed removal and queues nothing": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.onPodUpdate(f.logger(), makePod("a", job).Succeeded(testNow).ResourceVersion("1").Obj(), makePod("a", job).Succeeded(testNow).ResourceVersion("2").NoFinalizer().Obj())
			},
			want: with(untouched, func(r *watchResult) { r.InFlight = nil }),
		},
		"update: the controller's own finalizer removal with another change is batched": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.onPodUpdate(f.logger(), makePod("a", job).ResourceVersion("1").Obj(), makePod("a", job).ResourceVersion("2").Failed(testNow).NoFinalizer().Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Queue, r.InFlight = batched, nil }),
		},
		"update: a finalizer removed by someone else is batched": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.onPodUpdate(f.logger(), makePod("b", job).ResourceVersion("1").Obj(), makePod("b", job).ResourceVersion("2").NoFinalizer().Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Queue = batched }),
		},
		"update: a deletion begun is an observed deletion": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.onPodUpdate(f.logger(), makePod("a", job).ResourceVersion("1").Obj(), makePod("a", job).ResourceVersion("2").Deleted(goneAt).Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Queue, r.Deletions = batched, 0 }),
		},
		"update: a new controller wakes the old and the new job": {
			jobs: []*batchv1.Job{job, other},
			event: func(f *fixture) {
				moved := makePod("a", job).ResourceVersion("2").Obj()
				moved.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(other, jobKind)}
				f.onPodUpdate(f.logger(), makePod("a", job).ResourceVersion("1").Obj(), moved)
			},
			want: with(untouched, func(r *watchResult) {
				r.Queue = []queued[string]{{Key: "ns/j", Delay: batch1s}, {Key: "ns/k", Delay: batch1s}}
			}),
		},
		"update: an orphan relabelled to match a job wakes it": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				before := makePod("a", job).Orphan().NoFinalizer().ResourceVersion("1").Label(batch.ControllerUIDLabel, "x").Obj()
				f.onPodUpdate(f.logger(), before, makePod("a", job).Orphan().NoFinalizer().ResourceVersion("2").Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Queue = batched }),
		},
		"update: a pod whose job is gone goes to the orphan worker": {
			event: func(f *fixture) {
				f.onPodUpdate(f.logger(), makePod("a", job).ResourceVersion("1").Obj(), makePod("a", job).ResourceVersion("2").Phase(corev1.PodSucceeded).Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Orphans = orphanA }),
		},
		"update: a pod relabelled to another server wakes its job, nothing else": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.onPodUpdate(f.logger(), makePod("a", job).ResourceVersion("1").Obj(), makePod("a", job).ResourceVersion("2").Identity("other").NoFinalizer().Obj())
			},
			want: with(untouched, func(r *watchResult) { r.Queue = batched }),
		},
		"update: a pod of another server is none of ours": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.onPodUpdate(f.logger(), makePod("a", job).Identity("other").ResourceVersion("1").Obj(), makePod("a", job).Identity("other").ResourceVersion("2").NoFinalizer().Obj())
			},
			want: untouched,
		},
		"delete: a pod gone is an observed deletion and finalizer removal": {
			jobs:  []*batchv1.Job{job},
			event: func(f *fixture) { f.onPodDelete(f.logger(), makePod("a", job).Obj(), true) },
			want:  with(untouched, func(r *watchResult) { r.Queue, r.Deletions, r.InFlight = batched, 0, nil }),
		},
		"delete: a tombstone is unwrapped": {
			jobs: []*batchv1.Job{job},
			event: func(f *fixture) {
				f.onPodDelete(f.logger(), cache.DeletedFinalStateUnknown{Key: "ns/a", Obj: makePod("a", job).Obj()}, true)
			},
			want: with(untouched, func(r *watchResult) { r.Queue, r.Deletions, r.InFlight = batched, 0, nil }),
		},
		"delete: a pod of a finished job with the finalizer goes to the orphan worker": {
			jobs:  []*batchv1.Job{finished},
			event: func(f *fixture) { f.onPodDelete(f.logger(), makePod("a", finished).Obj(), true) },
			want:  with(untouched, func(r *watchResult) { r.Orphans = orphanA }),
		},
		"delete: a pod of a gone job with the finalizer goes to the orphan worker": {
			event: func(f *fixture) { f.onPodDelete(f.logger(), makePod("a", job).Obj(), true) },
			want:  with(untouched, func(r *watchResult) { r.Orphans = orphanA }),
		},
		"delete: a pod of another server is none of ours": {
			jobs:  []*batchv1.Job{job},
			event: func(f *fixture) { f.onPodDelete(f.logger(), makePod("a", job).Identity("other").Obj(), true) },
			want:  untouched,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, q, o, ttl := watchFixture(t, tc.cfg)
			f.addJobs(t, tc.jobs...)
			tc.event(f)
			got := f.watchResult(q, o, ttl, job)
			if diff := cmp.Diff(tc.want, got, cmpopts.EquateEmpty(), cmp.AllowUnexported(orphanKey{})); diff != "" {
				t.Errorf("after the event (-want +got):\n%s", diff)
			}
		})
	}
}

// version returns a copy of job at resourceVersion rv.
func version(job *batchv1.Job, rv string) *batchv1.Job {
	j := job.DeepCopy()
	j.ResourceVersion = rv
	return j
}

func TestJobEvents(t *testing.T) {
	job := started(makeJob("j")).Generation(1).Obj()
	respecced := started(makeJob("j")).Generation(2).Obj()
	withDeadline := started(makeJob("j")).Generation(2).ActiveDeadlineSeconds(7200).Obj()
	finished := makeJob("j").TTLSecondsAfterFinished(600).Generation(1).
		Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "done")).Obj()
	finished.Status.CompletionTime = timeAt(testNow.Add(-time.Minute))
	external := makeJob("j").ManagedBy("example.com/other").Obj()
	selectorOrphans := []queued[orphanKey]{{Key: orphanKey{namespace: "ns", selector: batch.ControllerUIDLabel + "=j-uid"}}}
	untouched := watchResult{Creations: 1, Deletions: 1, Tracked: true, InFlight: []types.UID{"a-uid"}, Written: "7"}
	with := func(r watchResult, change func(*watchResult)) watchResult {
		change(&r)
		return r
	}

	cases := map[string]struct {
		finishing bool
		event     func(f *fixture)
		want      watchResult
	}{
		"add: a job syncs at once": {
			event: func(f *fixture) { f.onJobAdd(f.logger(), job) },
			want:  with(untouched, func(r *watchResult) { r.Queue = []queued[string]{{Key: "ns/j"}} }),
		},
		"add: a finished job with a TTL is scheduled for deletion": {
			event: func(f *fixture) { f.onJobAdd(f.logger(), finished) },
			want: with(untouched, func(r *watchResult) {
				r.Queue = []queued[string]{{Key: "ns/j"}}
				r.TTL = []queued[string]{{Key: "ns/j", Delay: 9 * time.Minute}}
			}),
		},
		"add: an externally managed job is not queued": {
			event: func(f *fixture) { f.onJobAdd(f.logger(), external) },
			want:  untouched,
		},
		"update: a status change by someone else is batched, and ends the kept write it follows": {
			event: func(f *fixture) { f.onJobUpdate(f.logger(), job, version(job, "8")) },
			want: with(untouched, func(r *watchResult) {
				r.Queue = []queued[string]{{Key: "ns/j", Delay: batch1s}}
				r.Written = ""
			}),
		},
		"update: the controller's own last status write is not synced; the informer has caught up": {
			event: func(f *fixture) { f.onJobUpdate(f.logger(), job, version(job, "7")) },
			want:  with(untouched, func(r *watchResult) { r.Written = "" }),
		},
		"update: a version before the controller's last status write (its first write of a sync) is not synced": {
			event: func(f *fixture) { f.onJobUpdate(f.logger(), job, version(job, "5")) },
			want:  untouched,
		},
		"update: a status change of another job of the name is batched": {
			event: func(f *fixture) {
				f.onJobUpdate(f.logger(), job, version(makeJob("j").UID("new-uid").Generation(1).Obj(), "5"))
			},
			want: with(untouched, func(r *watchResult) {
				r.Queue = []queued[string]{{Key: "ns/j", Delay: batch1s}}
				r.Written = ""
			}),
		},
		"update: a spec change syncs at once even at a version the controller wrote": {
			event: func(f *fixture) { f.onJobUpdate(f.logger(), job, version(respecced, "7")) },
			want: with(untouched, func(r *watchResult) {
				r.Queue = []queued[string]{{Key: "ns/j"}}
				r.Written = ""
			}),
		},
		"update: a spec change syncs at once": {
			event: func(f *fixture) { f.onJobUpdate(f.logger(), job, respecced) },
			want:  with(untouched, func(r *watchResult) { r.Queue = []queued[string]{{Key: "ns/j"}} }),
		},
		"update: a spec change right after a sync is not spaced": {
			event: func(f *fixture) {
				f.starts.note("ns/j", testNow)
				f.onJobUpdate(f.logger(), job, respecced)
			},
			want: with(untouched, func(r *watchResult) { r.Queue, r.SyncBegan = []queued[string]{{Key: "ns/j"}}, true }),
		},
		"update: a status change by someone else right after a sync is spaced like a pod event": {
			event: func(f *fixture) {
				f.starts.note("ns/j", testNow)
				f.onJobUpdate(f.logger(), job, version(job, "8"))
			},
			want: with(untouched, func(r *watchResult) {
				r.Queue = []queued[string]{{Key: "ns/j", Delay: SyncJobPodSpacing}}
				r.Written, r.SyncBegan = "", true
			}),
		},
		"update: a new active deadline schedules its own sync": {
			event: func(f *fixture) { f.onJobUpdate(f.logger(), job, withDeadline) },
			want: with(untouched, func(r *watchResult) {
				r.Queue = []queued[string]{{Key: "ns/j"}, {Key: "ns/j", Delay: time.Hour}}
			}),
		},
		"update: finished shown, syncs resume; leftover finalizers and the TTL are looked after": {
			finishing: true,
			event:     func(f *fixture) { f.onJobUpdate(f.logger(), job, finished) },
			want: with(untouched, func(r *watchResult) {
				r.Orphans = selectorOrphans
				r.TTL = []queued[string]{{Key: "ns/j", Delay: 9 * time.Minute}}
				r.Written = ""
			}),
		},
		"update: an externally managed job is not queued": {
			event: func(f *fixture) { f.onJobUpdate(f.logger(), external, external) },
			want:  untouched,
		},
		"delete: the job is forgotten and its pods go to the orphan worker": {
			finishing: true,
			event: func(f *fixture) {
				f.starts.note("ns/j", testNow)
				f.onJobDelete(f.logger(), job)
			},
			want: watchResult{
				Queue: []queued[string]{{Key: "ns/j"}}, Orphans: selectorOrphans,
				InFlight: []types.UID{"a-uid"},
			},
		},
		"delete of an older job of the same name: the status write of the new one stays remembered": {
			event: func(f *fixture) { f.onJobDelete(f.logger(), makeJob("j").UID("old-uid").Obj()) },
			want: watchResult{
				Queue: []queued[string]{{Key: "ns/j"}}, Orphans: selectorOrphans,
				InFlight: []types.UID{"a-uid"}, Written: "7",
			},
		},
		"delete: a tombstone is unwrapped": {
			event: func(f *fixture) {
				f.onJobDelete(f.logger(), cache.DeletedFinalStateUnknown{Key: "ns/j", Obj: job})
			},
			want: watchResult{
				Queue: []queued[string]{{Key: "ns/j"}}, Orphans: selectorOrphans,
				InFlight: []types.UID{"a-uid"},
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f, q, o, ttl := watchFixture(t, Config{})
			f.external = newRecordingQueue[string]()
			if tc.finishing {
				f.finishing.add(job.UID)
			}
			tc.event(f)
			if diff := cmp.Diff(tc.want, f.watchResult(q, o, ttl, job), cmpopts.EquateEmpty(), cmp.AllowUnexported(orphanKey{})); diff != "" {
				t.Errorf("after the event (-want +got):\n%s", diff)
			}
		})
	}
}
