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
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clienttesting "k8s.io/client-go/testing"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// TestExpire deletes a finished Job once its TTL ran out, by a live read,
// in the foreground, on the read's resourceVersion.
func TestExpire(t *testing.T) {
	finished := func(ttl int32) *batchv1.Job {
		j := makeJob("j").TTLSecondsAfterFinished(ttl).
			Condition(cond(batchv1.JobComplete, batch.JobReasonCompletionsReached, "done")).Obj()
		j.Status.CompletionTime = timeAt(testNow)
		return j
	}
	cases := map[string]struct {
		cached, live *batchv1.Job
		after        time.Duration
		wantDeleted  bool
		wantRequeue  []queued[string]
	}{
		"before the TTL: looked at again when due": {
			cached: finished(60), live: finished(60), after: 10 * time.Second,
			wantRequeue: []queued[string]{{Key: "ns/j", Delay: 50 * time.Second}},
		},
		"after the TTL: deleted": {cached: finished(60), live: finished(60), after: time.Minute, wantDeleted: true},
		"the TTL raised since the cache saw it: kept": {
			cached: finished(60), live: finished(600), after: time.Minute,
			wantRequeue: []queued[string]{{Key: "ns/j", Delay: 9 * time.Minute}},
		},
		"not finished: kept": {cached: makeJob("j").TTLSecondsAfterFinished(0).Obj(), live: makeJob("j").Obj(), after: time.Hour},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, fixtureOptions{})
			f.shutDownQueues()
			ttl := newRecordingQueue[string]()
			f.ttl = ttl
			f.cacheJob(t, tc.cached)
			if err := f.jobs.Tracker().Add(tc.live); err != nil {
				t.Fatal(err)
			}
			f.clock.Step(tc.after)
			if err := f.expire(f.ctx, "ns/j"); err != nil {
				t.Fatalf("expire: %v", err)
			}
			_, err := f.jobs.BatchV1().Jobs("ns").Get(context.Background(), "j", metav1.GetOptions{})
			if deleted := apierrors.IsNotFound(err); deleted != tc.wantDeleted {
				t.Errorf("deleted = %v, want %v", deleted, tc.wantDeleted)
			}
			for _, a := range f.jobs.Actions() {
				if d, ok := a.(clienttesting.DeleteAction); ok {
					opts := d.GetDeleteOptions()
					if opts.PropagationPolicy == nil || *opts.PropagationPolicy != metav1.DeletePropagationForeground ||
						opts.Preconditions == nil || opts.Preconditions.ResourceVersion == nil {
						t.Errorf("delete options = %+v, want foreground on the read's resourceVersion", opts)
					}
				}
			}
			if diff := cmp.Diff(tc.wantRequeue, ttl.items()); diff != "" {
				t.Errorf("TTL requeues (-want +got):\n%s", diff)
			}
		})
	}
}
