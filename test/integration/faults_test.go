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
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// Many writers doing read-modify-write on one Job, half through v1 and half
// through the deprecated v1beta1: every conflict is a 409, and no update is
// lost (the counter ends at the number of acknowledged increments).
func TestConflictsMixedVersions(t *testing.T) {
	ts := framework.StartServer(t)
	client := newTestClient(t, ts)
	ctx := testContext(t)
	ns := testNamespace(t)
	if _, err := client.BatchV1().Jobs(ns).Create(ctx, newTestJob(ns, "counter").Annotation("count", "0").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create: %v", err)
	}

	const writers, increments = 8, 10
	var mu sync.Mutex
	conflicts, others := 0, []string{}
	record := func(err error) bool {
		mu.Lock()
		defer mu.Unlock()
		if apierrors.IsConflict(err) {
			conflicts++
			return true
		}
		others = append(others, err.Error())
		return false
	}
	increment := func(count string) string {
		n, err := strconv.Atoi(count)
		if err != nil {
			t.Errorf("annotation count = %q", count)
		}
		return strconv.Itoa(n + 1)
	}
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range increments {
				for {
					var err error
					if w%2 == 0 {
						var job *batchv1.Job
						if job, err = client.BatchV1().Jobs(ns).Get(ctx, "counter", metav1.GetOptions{}); err == nil {
							job.Annotations["count"] = increment(job.Annotations["count"])
							_, err = client.BatchV1().Jobs(ns).Update(ctx, job, metav1.UpdateOptions{})
						}
					} else {
						job, getErr := client.BatchV1beta1().Jobs(ns).Get(ctx, "counter", metav1.GetOptions{})
						if err = getErr; err == nil {
							job.Annotations["count"] = increment(job.Annotations["count"])
							_, err = client.BatchV1beta1().Jobs(ns).Update(ctx, job, metav1.UpdateOptions{})
						}
					}
					if err == nil {
						break
					}
					if !record(err) {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if diff := cmp.Diff([]string{}, others); diff != "" {
		t.Errorf("errors other than 409 Conflict (-want +got):\n%s", diff)
	}
	job, err := client.BatchV1().Jobs(ns).Get(ctx, "counter", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	if got, want := job.Annotations["count"], strconv.Itoa(writers*increments); got != want {
		t.Errorf("count = %s after %d acknowledged increments: updates were lost", got, writers*increments)
	}
	t.Logf("%d writers x %d increments (v1 and v1beta1): %d conflicts answered 409, none lost", writers, increments, conflicts)
}

// A watch resumed from the last resourceVersion seen before a restart gets
// exactly the changes made after it: no gap, no duplicate.
func TestWatchResumesAcrossRestart(t *testing.T) {
	dataDir := t.TempDir()
	ts := framework.StartServerOnDataDir(t, dataDir)
	ctx := testContext(t)
	ns := testNamespace(t)
	jobs := newTestClient(t, ts).BatchV1().Jobs(ns)
	var lastRV string
	for i := range 3 {
		job, err := jobs.Create(ctx, newTestJob(ns, fmt.Sprintf("before-%d", i)).Obj(), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		lastRV = job.ResourceVersion
	}
	ts.Stop()

	ts = framework.StartServerOnDataDir(t, dataDir)
	jobs = newTestClient(t, ts).BatchV1().Jobs(ns)
	var want []string
	for i := range 3 {
		if _, err := jobs.Create(ctx, newTestJob(ns, fmt.Sprintf("after-%d", i)).Obj(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v", err)
		}
		want = append(want, fmt.Sprintf("ADDED after-%d", i))
	}
	if err := jobs.Delete(ctx, "before-0", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("delete: %v", err)
	}
	want = append(want, "DELETED before-0")

	w, err := jobs.Watch(ctx, metav1.ListOptions{ResourceVersion: lastRV})
	if err != nil {
		t.Fatalf("watch from %s: %v", lastRV, err)
	}
	defer w.Stop()
	var got []string
	timeout := time.After(30 * time.Second)
	for len(got) < len(want) {
		select {
		case ev := <-w.ResultChan():
			job, ok := ev.Object.(*batchv1.Job)
			if !ok {
				t.Fatalf("event %s with %T: %v", ev.Type, ev.Object, ev.Object)
			}
			got = append(got, fmt.Sprintf("%s %s", ev.Type, job.Name))
		case <-timeout:
			t.Fatalf("events after 30s: %v, want %v", got, want)
		}
	}
	// Nothing more: a duplicate would come right after.
	select {
	case ev := <-w.ResultChan():
		got = append(got, fmt.Sprintf("%s %v", ev.Type, ev.Object))
	case <-time.After(time.Second):
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events resumed after the restart (-want +got):\n%s", diff)
	}
}

// A watch from a resourceVersion etcd has compacted away gets 410 Gone
// (Expired), as from kube-apiserver: here after a restart, whose watch cache
// starts from the compacted etcd (a running server keeps serving recent
// events from its watch cache's window, as kube-apiserver does).
func TestWatchAfterCompactionIsGone(t *testing.T) {
	dataDir := t.TempDir()
	ts := framework.StartServerOnDataDir(t, dataDir)
	ctx := testContext(t)
	ns := testNamespace(t)
	jobs := newTestClient(t, ts).BatchV1().Jobs(ns)
	first, err := jobs.Create(ctx, newTestJob(ns, "old").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	var last *batchv1.Job
	for i := range 5 {
		if last, err = jobs.Create(ctx, newTestJob(ns, fmt.Sprintf("new-%d", i)).Obj(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("create: %v", err)
		}
	}
	rev, _ := strconv.ParseInt(last.ResourceVersion, 10, 64)
	if _, err := ts.EtcdClient().Compact(ctx, rev); err != nil {
		t.Fatalf("compacting etcd at %d: %v", rev, err)
	}
	ts.Stop()
	ts = framework.StartServerOnDataDir(t, dataDir)
	jobs = newTestClient(t, ts).BatchV1().Jobs(ns)

	var got metav1.Status
	w, err := jobs.Watch(ctx, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if status, ok := err.(apierrors.APIStatus); ok {
		got = status.Status()
	} else if err != nil {
		t.Fatalf("watch: %v", err)
	} else {
		defer w.Stop()
		select {
		case ev := <-w.ResultChan():
			if ev.Type != watch.Error {
				t.Fatalf("first event %s %v, want an ERROR", ev.Type, ev.Object)
			}
			got = *ev.Object.(*metav1.Status)
		case <-time.After(30 * time.Second):
			t.Fatal("no event from a watch at a compacted resourceVersion")
		}
	}
	if got.Code != http.StatusGone || got.Reason != metav1.StatusReasonExpired {
		t.Errorf("watch from a compacted resourceVersion: %d %s %q, want 410 Expired", got.Code, got.Reason, got.Message)
	}
}

// Bookmarks come when asked for: the initial-events-end bookmark of a
// streaming list (the periodic ones come about once a minute, too slow for
// this tier).
func TestWatchBookmarks(t *testing.T) {
	ts := framework.StartServer(t)
	ctx := testContext(t)
	ns := testNamespace(t)
	jobs := newTestClient(t, ts).BatchV1().Jobs(ns)
	created, err := jobs.Create(ctx, newTestJob(ns, "one").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("create: %v", err)
	}
	sendInitialEvents := true
	timeout := int64(2)
	w, err := jobs.Watch(ctx, metav1.ListOptions{
		AllowWatchBookmarks:  true,
		SendInitialEvents:    &sendInitialEvents,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		TimeoutSeconds:       &timeout,
	})
	if err != nil {
		t.Fatalf("watch: %v", err)
	}
	defer w.Stop()
	var got []string
	for ev := range w.ResultChan() {
		job, ok := ev.Object.(*batchv1.Job)
		if !ok {
			t.Fatalf("event %s with %T: %v", ev.Type, ev.Object, ev.Object)
		}
		switch ev.Type {
		case watch.Bookmark:
			rv, _ := strconv.ParseUint(job.ResourceVersion, 10, 64)
			createdRV, _ := strconv.ParseUint(created.ResourceVersion, 10, 64)
			if rv < createdRV {
				t.Errorf("bookmark at %d, before the create at %d", rv, createdRV)
			}
			got = append(got, fmt.Sprintf("BOOKMARK initial-events-end=%s", job.Annotations[metav1.InitialEventsAnnotationKey]))
		default:
			got = append(got, fmt.Sprintf("%s %s", ev.Type, job.Name))
		}
	}
	want := []string{"ADDED one", "BOOKMARK initial-events-end=true"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("events of a 2 s watch with bookmarks (-want +got):\n%s", diff)
	}
}

// An etcd outage under load: requests fail cleanly (5xx, or the client's
// timeout), never with a wrong answer; /readyz reports it; the server
// recovers by itself once etcd is back; nothing acknowledged is lost. The
// server reaches etcd over gRPC, as it reaches an external etcd.
func TestEtcdOutage(t *testing.T) {
	ts := framework.StartServer(t, framework.EtcdOverGRPC)
	ctx := testContext(t)
	ns := testNamespace(t)
	cfg := rest.CopyConfig(ts.ClientConfig)
	cfg.Timeout = 5 * time.Second
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	jobs := client.BatchV1().Jobs(ns)

	var mu sync.Mutex
	acked := map[string]bool{}
	failures := map[string]int{}
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for w := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; loadCtx.Err() == nil; n++ {
				name := fmt.Sprintf("w%d-%d", w, n)
				_, err := jobs.Create(loadCtx, newTestJob(ns, name).Obj(), metav1.CreateOptions{})
				mu.Lock()
				switch status, isStatus := err.(apierrors.APIStatus); {
				case err == nil:
					acked[name] = true
				case isStatus && status.Status().Code >= 500:
					failures[fmt.Sprint(status.Status().Code)]++
				case isStatus && status.Status().Code == http.StatusTooManyRequests:
					failures["429"]++
				case isStatus:
					t.Errorf("create %s during the outage: %d %s %q: a client error for a server fault", name, status.Status().Code, status.Status().Reason, status.Status().Message)
				case errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) || isTimeout(err):
					failures["client timeout"]++
				default:
					failures[err.Error()]++
				}
				mu.Unlock()
				if err != nil {
					time.Sleep(100 * time.Millisecond)
				}
			}
		}()
	}
	readyz := func() int {
		var code int
		ts.Client.Discovery().RESTClient().Get().AbsPath("/readyz").Timeout(10 * time.Second).Do(ctx).StatusCode(&code)
		return code
	}

	time.Sleep(time.Second)
	ts.StopEtcd()
	outage := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		return readyz() != http.StatusOK, nil
	}); err != nil {
		t.Errorf("/readyz stayed ok with etcd down: %v", err)
	}
	reported := time.Since(outage)
	time.Sleep(2 * time.Second)

	ts.StartEtcd()
	back := time.Now()
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, func(context.Context) (bool, error) {
		return readyz() == http.StatusOK, nil
	}); err != nil {
		t.Fatalf("/readyz not ok again after etcd came back: %v", err)
	}
	recovered := time.Since(back)
	// Writes go through again.
	if _, err := jobs.Create(ctx, newTestJob(ns, "after").Obj(), metav1.CreateOptions{}); err != nil {
		t.Errorf("create after recovery: %v", err)
	}
	time.Sleep(time.Second)
	stopLoad()
	wg.Wait()

	list, err := jobs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("list: %v", err)
	}
	stored := map[string]bool{}
	for _, j := range list.Items {
		stored[j.Name] = true
	}
	var lost []string
	for name := range acked {
		if !stored[name] {
			lost = append(lost, name)
		}
	}
	if diff := cmp.Diff([]string(nil), lost); diff != "" {
		t.Errorf("acknowledged creates lost (-want +got):\n%s", diff)
	}
	t.Logf("etcd outage under 4 writers: %d creates acknowledged, all %d found; failures by kind %v; /readyz failing %s after the stop, ok %s after etcd came back",
		len(acked), len(acked)-len(lost), failures, reported.Round(time.Millisecond), recovered.Round(time.Millisecond))
}

func isTimeout(err error) bool {
	var timeout interface{ Timeout() bool }
	return errors.As(err, &timeout) && timeout.Timeout()
}
