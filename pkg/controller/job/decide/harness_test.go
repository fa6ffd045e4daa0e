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

package decide

import (
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// syncRow is one row of a Decide table: a snapshot, which of the
// controller's requests fail (none by default), and the whole result of
// the three steps.
type syncRow struct {
	job  *jobFx
	pods []*podFx
	// now defaults to t0.
	now               time.Time
	expectationsUnmet bool
	inFlight          []string
	failures          FailureRecord
	nsTerminating     bool
	// opts fields left zero take DefaultOptions.
	opts Options

	// failDelete names the Pods whose deletion fails.
	failDelete []string
	// notFound names the Pods found gone when deleted.
	notFound []string
	// created, when set, is how many creations succeed.
	created *int
	// failRemoval names the Pods whose finalizer removal fails.
	failRemoval []string

	want syncResult
}

// syncResult is the whole of a sync in a form rows can spell out.
type syncResult struct {
	Action string
	// Delete: "<pod> <reason>", with " -finalizer" when the finalizer goes
	// first.
	Delete []string
	// Create: the generateName, then the failure count annotations.
	Create   []string
	Reason   string
	Requeue  time.Duration
	Failures FailureRecord
	// Events of all three steps, in order: "<type> <reason>: <message>".
	Events   []string
	Interim  *batchv1.JobStatus
	Release  []string
	Actions  map[batchv1.PodFailurePolicyAction]int
	Final    *batchv1.JobStatus
	Finished string
}

var syncCmp = []cmp.Option{cmpopts.EquateEmpty()}

// runSync runs Decide, AfterPods and AfterFinalizers with every request
// succeeding except those the row fails, and checks that the snapshot was
// left untouched.
func runSync(t *testing.T, row syncRow) syncResult {
	t.Helper()
	j := row.job.Obj()
	ps := pods(row.pods...)
	jobBefore := j.DeepCopy()
	podsBefore := make([]any, len(ps))
	for i, p := range ps {
		podsBefore[i] = p.DeepCopy()
	}
	now := row.now
	if now.IsZero() {
		now = t0
	}
	inFlight := sets.New[types.UID]()
	for _, n := range row.inFlight {
		inFlight.Insert(types.UID(n))
	}
	plan := Decide(Snapshot{
		Job: j, Pods: ps, Now: now, ExpectationsMet: !row.expectationsUnmet,
		FinalizersInFlight: inFlight, Failures: row.failures,
		NamespaceTerminating: row.nsTerminating, Options: row.opts,
	})

	var res syncResult
	res.Action, res.Reason, res.Requeue, res.Failures = plan.SyncAction, plan.CreationReason, plan.RequeueAfter, plan.Failures
	res.Events = eventLines(plan.Events)
	failDelete, notFound := sets.New(row.failDelete...), sets.New(row.notFound...)
	deleted := make([]bool, len(plan.Deletions))
	gone := make([]bool, len(plan.Deletions))
	for i, d := range plan.Deletions {
		line := d.Pod.Name + " " + string(d.Reason)
		if d.RemoveFinalizer {
			line += " -finalizer"
		}
		res.Delete = append(res.Delete, line)
		deleted[i] = !failDelete.Has(d.Pod.Name)
		gone[i] = notFound.Has(d.Pod.Name)
	}
	for _, c := range plan.Creations {
		res.Create = append(res.Create, creationLine(c))
	}
	created := len(plan.Creations)
	if row.created != nil {
		created = *row.created
	}

	tr := plan.AfterPods(PodOutcome{Deleted: deleted, Created: created, NotFound: gone})
	res.Events = append(res.Events, eventLines(tr.Events)...)
	res.Interim, res.Actions = tr.Interim, tr.PolicyActions
	failRemoval := sets.New(row.failRemoval...)
	removed := sets.New[types.UID]()
	for _, p := range tr.RemoveFinalizers {
		res.Release = append(res.Release, p.Name)
		if !failRemoval.Has(p.Name) {
			removed.Insert(p.UID)
		}
	}

	fin := tr.AfterFinalizers(removed, failRemoval.Len() > 0)
	res.Final = fin.Status
	res.Events = append(res.Events, eventLines(fin.Events)...)
	if fin.Finished != nil {
		res.Finished = fmt.Sprintf("%s %s", fin.Finished.Type, fin.Finished.Reason)
	}

	if diff := cmp.Diff(jobBefore, j); diff != "" {
		t.Errorf("the snapshot's Job changed (-before +after):\n%s", diff)
	}
	for i, p := range ps {
		if diff := cmp.Diff(podsBefore[i], any(p)); diff != "" {
			t.Errorf("the snapshot's Pod %s changed (-before +after):\n%s", p.Name, diff)
		}
	}
	return res
}

func eventLines(events []Event) []string {
	var out []string
	for _, e := range events {
		out = append(out, fmt.Sprintf("%s %s: %s", e.Type, e.Reason, e.Message))
	}
	return out
}

func creationLine(c PodCreation) string {
	line := c.GenerateName
	var extra []string
	if v, ok := c.Template.Annotations[batch.JobIndexFailureCountAnnotation]; ok {
		extra = append(extra, "failures="+v)
	}
	if v, ok := c.Template.Annotations[batch.JobIndexIgnoredFailureCountAnnotation]; ok {
		extra = append(extra, "ignored="+v)
	}
	sort.Strings(extra)
	for _, e := range extra {
		line += " " + e
	}
	return line
}

// runRows runs a table of rows.
func runRows(t *testing.T, rows map[string]syncRow) {
	t.Helper()
	for name, row := range rows {
		t.Run(name, func(t *testing.T) {
			got := runSync(t, row)
			if diff := cmp.Diff(row.want, got, syncCmp...); diff != "" {
				t.Errorf("sync result (-want +got):\n%s", diff)
			}
		})
	}
}

func intp(n int) *int { return &n }

// cmpDiff is cmp.Diff with empty and nil slices equal.
func cmpDiff(want, got any) string { return cmp.Diff(want, got, syncCmp...) }
