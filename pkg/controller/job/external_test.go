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
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/component-base/metrics/testutil"

	"github.com/batch-apiserver/batch-apiserver/pkg/controller/job/metrics"
)

const otherManager = "kueue.x-k8s.io/multikueue"

// TestExternallyManagedEventOnce: successive terms, each with a new
// controller on the same host, see the same externally managed Job. The
// Event is created once: a later term of the same process does not even
// ask, a term after a restart asks and meets AlreadyExists. The metric
// counts the Job once in a process; the Job is never written.
func TestExternallyManagedEventOnce(t *testing.T) {
	job := makeJob("j").ManagedBy(otherManager).Obj()
	forgetExternal(job.UID)
	metrics.JobByExternalControllerTotal.Reset()
	kube := newFakeHost()

	terms := []struct {
		name string
		// restart: the process starts afresh, its memory gone.
		restart     bool
		wantQueued  int
		wantCreates int
		wantCounted float64
	}{
		{name: "first term", wantQueued: 1, wantCreates: 1, wantCounted: 1},
		{name: "second term of the process", wantQueued: 0, wantCreates: 1, wantCounted: 1},
		{name: "after a restart", restart: true, wantQueued: 1, wantCreates: 2, wantCounted: 2},
	}
	for _, term := range terms {
		if term.restart {
			forgetExternal(job.UID)
		}
		f := newFixture(t, fixtureOptions{kube: kube})
		f.addJobs(t, job)
		f.onJobAdd(f.logger(), job)
		f.onJobUpdate(f.logger(), job, job)
		if err := f.syncJob(t, job); err != nil {
			t.Fatalf("%s: syncJob: %v", term.name, err)
		}
		// Everything above asked for the one announcement at most once.
		if n := f.external.Len(); n != term.wantQueued {
			t.Fatalf("%s: announcements queued = %d, want %d", term.name, n, term.wantQueued)
		}
		if n := f.external.Len(); n > 0 {
			serveOne(f.ctx, f.external, "Announcing an externally managed job", f.announce)
		}
		f.onJobUpdate(f.logger(), job, job)
		if n := f.external.Len(); n != 0 {
			t.Errorf("%s: announcements queued once the event exists = %d, want 0", term.name, n)
		}
		if got := countActions(kube.Actions(), "create", "events"); got != term.wantCreates {
			t.Errorf("%s: event creations requested so far = %d, want %d", term.name, got, term.wantCreates)
		}
		if writes := f.jobs.Actions(); countActions(writes, "update", "jobs")+countActions(writes, "patch", "jobs") != 0 {
			t.Errorf("%s: writes to the job: %v", term.name, writes)
		}
		got, err := testutil.GetCounterMetricValue(metrics.JobByExternalControllerTotal.WithLabelValues(otherManager))
		if err != nil {
			t.Fatal(err)
		}
		if got != term.wantCounted {
			t.Errorf("%s: jobs_by_external_controller_total{controller_name=%q} = %v, want %v", term.name, otherManager, got, term.wantCounted)
		}
	}

	events, err := kube.CoreV1().Events("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []corev1.Event{{
		ObjectMeta: metav1.ObjectMeta{Name: "j.juid.externally-managed", Namespace: "ns"},
		InvolvedObject: corev1.ObjectReference{
			APIVersion: "batch.jobs.dev/v1", Kind: "Job", Namespace: "ns", Name: "j", UID: "j-uid", ResourceVersion: "1",
		},
		Reason:              "ExternallyManaged",
		Message:             `Job is managed by "kueue.x-k8s.io/multikueue", not by kubernetes.io/job-controller: the Job controller creates no Pods and writes no status for it`,
		Type:                corev1.EventTypeNormal,
		Source:              corev1.EventSource{Component: "job-controller"},
		FirstTimestamp:      metav1.NewTime(testNow),
		LastTimestamp:       metav1.NewTime(testNow),
		Count:               1,
		ReportingController: "job-controller",
	}}
	ignore := cmp.Options{cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ManagedFields", "ResourceVersion"), cmpopts.IgnoreTypes(metav1.TypeMeta{})}
	if diff := cmp.Diff(want, events.Items, ignore); diff != "" {
		t.Errorf("events in the host (-want +got):\n%s", diff)
	}
}

func TestExternallyManagedEventName(t *testing.T) {
	long := strings.Repeat("a", 250)
	cases := map[string]struct {
		name, uid string
		want      string
	}{
		"short": {name: "j", uid: "0a1b-2c3d", want: "j.0a1b2c3d.externally-managed"},
		"long names are cut, not the UID": {
			name: long, uid: "0a1b-2c3d",
			want: long[:validation.DNS1123SubdomainMaxLength-len(".0a1b2c3d.externally-managed")] + ".0a1b2c3d.externally-managed",
		},
		"a cut ending in a dot or dash is trimmed": {
			name: strings.Repeat("b", 223) + ".-" + strings.Repeat("c", 30), uid: "0a1b-2c3d",
			want: strings.Repeat("b", 223) + ".0a1b2c3d.externally-managed",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := makeJob(tc.name).UID(types.UID(tc.uid)).Generated().Obj()
			got := externallyManagedEventName(job)
			if got != tc.want {
				t.Errorf("name = %q, want %q", got, tc.want)
			}
			if errs := validation.IsDNS1123Subdomain(got); len(errs) != 0 {
				t.Errorf("name %q is not a valid object name: %v", got, errs)
			}
		})
	}
}

// TestExternallyManagedJob: a Job of another controller is never queued
// for a sync, whatever event arrives, and a sync of it writes nothing.
// The queue and clock are the controller's own: the test moves the fake
// clock past every delay the handlers use, and a sentinel queued with the
// longest of them proves the delayed items have all come out.
func TestExternallyManagedJob(t *testing.T) {
	external := started(makeJob("j").ManagedBy(otherManager)).ActiveDeadlineSeconds(3600).Obj()
	changed := external.DeepCopy()
	changed.Generation = 2
	changed.Spec.ActiveDeadlineSeconds = new(int64)
	*changed.Spec.ActiveDeadlineSeconds = 60
	pod := makePod("a", external).Phase(corev1.PodSucceeded).Obj()
	orphan := makePod("b", external).Orphan().NoFinalizer().Obj()

	f := newFixture(t, fixtureOptions{})
	f.addJobs(t, external)
	f.addPods(t, pod, orphan)
	logger := f.logger()
	f.onJobAdd(logger, external)
	f.onJobUpdate(logger, external, changed)
	f.onJobUpdate(logger, external, external)
	f.onPodAdd(logger, pod)
	f.onPodAdd(logger, orphan)
	before := pod.DeepCopy()
	before.ResourceVersion = "0"
	f.onPodUpdate(logger, before, pod)
	f.onPodDelete(logger, pod, true)

	// The queue's waiting loop may hold a due item while it hands out a
	// later one; a second sentinel, due after the first came out, can
	// only come out once the loop has handed out everything due before.
	got := f.drainUntil(t, "sentinel/1", 2*SyncJobBatchPeriod)
	got = append(got, f.drainUntil(t, "sentinel/2", time.Millisecond)...)
	if diff := cmp.Diff([]string{"sentinel/1", "sentinel/2"}, got); diff != "" {
		t.Errorf("keys queued for a sync (-want +got):\n%s", diff)
	}

	if err := f.syncJob(t, external); err != nil {
		t.Fatalf("syncJob: %v", err)
	}
	if w := f.written(); len(w) != 0 {
		t.Errorf("status writes for an externally managed job: %+v", w)
	}
	if w := podWrites(f.kube); len(w) != 0 {
		t.Errorf("pod writes for an externally managed job: %v", w)
	}
}

// drainUntil queues sentinel after delay, moves the fake clock by delay and
// returns every key the queue hands out up to the sentinel.
func (f *fixture) drainUntil(t *testing.T, sentinel string, delay time.Duration) []string {
	t.Helper()
	f.queue.AddAfter(sentinel, delay)
	f.clock.Step(delay)
	var got []string
	err := wait.PollUntilContextTimeout(f.ctx, time.Millisecond, wait.ForeverTestTimeout, true, func(context.Context) (bool, error) {
		for f.queue.Len() > 0 {
			key, _ := f.queue.Get()
			f.queue.Done(key)
			got = append(got, key)
			if key == sentinel {
				return true, nil
			}
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s never came out of the queue: %v", sentinel, err)
	}
	return got
}
