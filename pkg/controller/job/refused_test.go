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
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestRefusedWritesShownNewer(t *testing.T) {
	base := makeJob("j").UID("j-uid").ResourceVersion("7").Obj()
	cases := map[string]struct {
		noted bool
		shown *batchv1.Job
		want  []bool // shownNewer of shown, then of a version after it
	}{
		"nothing noted": {shown: version(base, "8"), want: []bool{false, false}},
		"a newer version, once": {
			noted: true, shown: version(base, "8"), want: []bool{true, false},
		},
		"the base itself waits": {
			noted: true, shown: version(base, "7"), want: []bool{false, true},
		},
		"an older version waits": {
			noted: true, shown: version(base, "5"), want: []bool{false, true},
		},
		"another job of the name ends the entry": {
			noted: true, shown: version(makeJob("j").UID("new-uid").Obj(), "9"), want: []bool{false, false},
		},
		"a version that is no etcd revision syncs now": {
			noted: true, shown: version(base, "x"), want: []bool{true, false},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			r := newRefusedWrites()
			if tc.noted {
				r.note("ns/j", base)
			}
			got := []bool{r.shownNewer("ns/j", tc.shown), r.shownNewer("ns/j", version(base, "10"))}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("shownNewer (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRefusedStatusWriteSyncsOnNewerVersion: a Job suspended with two
// running Pods whose status write (active 0) is refused because someone
// wrote the Job meanwhile, as Kueue clears status.startTime right after it
// suspends. The sync is not sent to the queue's one-second backoff; it is
// queued at once by the newer version, whether the informer shows it after
// the sync returned or already did.
func TestRefusedStatusWriteSyncsOnNewerVersion(t *testing.T) {
	job := started(makeJob("j")).UID("j-uid").Suspend(true).Active(2).Generation(2).Obj()
	afterStartTimeCleared := version(makeJob("j").UID("j-uid").Suspend(true).Active(2).Generation(2).Obj(), "2")
	for _, cachedFirst := range []bool{false, true} {
		name := map[bool]string{false: "the newer version shown after the sync", true: "the newer version cached before the sync returned"}[cachedFirst]
		t.Run(name, func(t *testing.T) {
			f, q, _, _ := watchFixture(t, Config{})
			f.podExpect.forget("ns/j")
			f.finalizerExpect.forget("ns/j")
			f.ownWrites.forget("ns/j", "")
			f.addJobs(t, job)
			f.addPods(t, makePod("a", job).Running().Obj(), makePod("b", job).Running().Obj())
			refusals := 0
			f.jobs.PrependReactor("update", "jobs", func(action clienttesting.Action) (bool, runtime.Object, error) {
				if action.GetSubresource() != "status" || refusals > 0 {
					return false, nil, nil
				}
				refusals++
				if cachedFirst {
					f.cacheJob(t, afterStartTimeCleared)
				}
				return true, nil, apierrors.NewConflict(batchv1.Resource("jobs"), "j", errors.New("the object has been modified"))
			})

			if err := f.handleJob(f.ctx, "ns/j"); err != nil {
				t.Fatalf("handleJob: %v, want the refused write handled", err)
			}
			if !cachedFirst {
				if diff := cmp.Diff([]queued[string](nil), q.items()); diff != "" {
					t.Errorf("queued before the newer version is shown (-want +got):\n%s", diff)
				}
				f.onJobUpdate(f.logger(), job, afterStartTimeCleared)
			}
			// Once at once; a later status change by someone else is
			// batched and spaced as usual.
			f.onJobUpdate(f.logger(), afterStartTimeCleared, version(afterStartTimeCleared, "3"))
			want := []queued[string]{{Key: "ns/j"}, {Key: "ns/j", Delay: SyncJobPodSpacing}}
			if diff := cmp.Diff(want, q.items()); diff != "" {
				t.Errorf("queued (-want +got):\n%s", diff)
			}
			if got := countActions(f.kube.Actions(), "delete", "pods"); got != 2 {
				t.Errorf("pods deleted by the refused sync: %d, want 2", got)
			}
		})
	}
}

// TestHandleJobOtherErrors: an error that is no refused status write goes
// back to the queue's backoff, as before.
func TestHandleJobOtherErrors(t *testing.T) {
	job := started(makeJob("j")).Obj()
	f := newFixture(t, fixtureOptions{})
	f.addJobs(t, job)
	f.jobs.PrependReactor("update", "jobs", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	err := f.handleJob(f.ctx, "ns/j")
	if !apierrors.IsInternalError(err) {
		t.Fatalf("handleJob error = %v, want the internal error", err)
	}
}
