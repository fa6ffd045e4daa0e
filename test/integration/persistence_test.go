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
	"bytes"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	batchv1beta1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1beta1"
	batchv1ac "github.com/batch-apiserver/batch-apiserver/pkg/generated/applyconfiguration/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// TestJobPersistence stores Jobs written every way (create, status update,
// v1beta1, server-side apply), checks they are stored as v1 in etcd, in
// protobuf, stops the server, starts a new one on the same data dir, and
// finds the same
// objects: same UIDs, resourceVersions, status and managedFields. The new
// server takes writes, and a watch resumed from a resourceVersion of the old
// one sees them.
func TestJobPersistence(t *testing.T) {
	ctx := testContext(t)
	ns := "persistence"
	ts := framework.StartServer(t)
	client := newTestClient(t, ts)
	jobs := client.BatchV1().Jobs(ns)

	if _, err := jobs.Create(ctx, newTestJob(ns, "plain").Completions(3).Parallelism(2).Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating plain: %v", err)
	}
	withStatus, err := jobs.Create(ctx, newTestJob(ns, "with-status").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating with-status: %v", err)
	}
	startTime := metav1.Now().Rfc3339Copy()
	withStatus.Status = batchv1.JobStatus{
		StartTime:  &startTime,
		Active:     1,
		Ready:      ptr.To[int32](1),
		Conditions: []batchv1.JobCondition{newTestJobCondition(batchv1.JobSuspended, corev1.ConditionFalse, "Resumed")},
	}
	if _, err := jobs.UpdateStatus(ctx, withStatus, metav1.UpdateOptions{}); err != nil {
		t.Fatalf("updating status of with-status: %v", err)
	}
	beta := &batchv1beta1.Job{}
	convertTestJob(t, newTestJob(ns, "beta").Obj(), beta)
	if _, err := client.BatchV1beta1().Jobs(ns).Create(ctx, beta, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating beta through v1beta1: %v", err)
	}
	applied := newTestJobApply(ns, "applied").WithLabels(map[string]string{"app": "applied"})
	applied.Spec.WithBackoffLimit(2)
	if _, err := jobs.Apply(ctx, applied, metav1.ApplyOptions{FieldManager: "applier"}); err != nil {
		t.Fatalf("applying applied: %v", err)
	}

	before, err := jobs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing before the restart: %v", err)
	}
	if got := len(before.Items); got != 4 {
		t.Fatalf("listed %d jobs before the restart, want 4", got)
	}

	// Every version is stored as v1, the storage version.
	etcd := ts.EtcdClient()
	for _, job := range before.Items {
		resp, err := etcd.Get(ctx, framework.JobKey(ns, job.Name))
		if err != nil {
			t.Fatalf("reading %s from etcd: %v", job.Name, err)
		}
		if len(resp.Kvs) != 1 {
			t.Fatalf("etcd has %d values at %s, want 1", len(resp.Kvs), framework.JobKey(ns, job.Name))
		}
		// Stored in protobuf: the prefix, then a runtime.Unknown naming
		// the version.
		value := resp.Kvs[0].Value
		if !bytes.HasPrefix(value, protobufStoragePrefix) {
			t.Fatalf("%s is not stored as protobuf: %q", job.Name, value)
		}
		var stored runtime.Unknown
		if err := stored.Unmarshal(value[len(protobufStoragePrefix):]); err != nil {
			t.Fatalf("decoding %s as protobuf: %v", job.Name, err)
		}
		if want := (runtime.TypeMeta{APIVersion: "batch.jobs.dev/v1", Kind: "Job"}); stored.TypeMeta != want {
			t.Errorf("%s stored as %v, want %v", job.Name, stored.TypeMeta, want)
		}
	}

	ts.Stop()
	ts = framework.StartServerOnDataDir(t, ts.DataDir)
	client = newTestClient(t, ts)
	jobs = client.BatchV1().Jobs(ns)

	after, err := jobs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing after the restart: %v", err)
	}
	if diff := cmp.Diff(before.Items, after.Items); diff != "" {
		t.Errorf("jobs after the restart (-before +after):\n%s", diff)
	}
	for _, want := range before.Items {
		got, err := jobs.Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Errorf("getting %s after the restart: %v", want.Name, err)
			continue
		}
		if diff := cmp.Diff(&want, got, ignoreTypeMeta); diff != "" {
			t.Errorf("get %s after the restart (-before +after):\n%s", want.Name, diff)
		}
	}

	// The new server resumes a watch from the old one's resourceVersion
	// (as an informer does across a restart) and takes writes.
	w, err := jobs.Watch(ctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion})
	if err != nil {
		t.Fatalf("watching from the resourceVersion before the restart: %v", err)
	}
	defer w.Stop()
	patched, err := jobs.Apply(ctx, batchv1ac.Job("applied", ns).WithLabels(map[string]string{"app": "applied", "restarted": "yes"}),
		metav1.ApplyOptions{FieldManager: "applier-2"})
	if err != nil {
		t.Fatalf("applying after the restart: %v", err)
	}
	ev := nextTestWatchEvent(ctx, t, w)
	got, ok := ev.Object.(*batchv1.Job)
	if !ok {
		t.Fatalf("watch event %s carries %T, want *v1.Job", ev.Type, ev.Object)
	}
	if ev.Type != watch.Modified {
		t.Errorf("first event after the restart is %s, want %s", ev.Type, watch.Modified)
	}
	if diff := cmp.Diff(patched, got, ignoreTypeMeta); diff != "" {
		t.Errorf("watched object after the restart (-apply result +event):\n%s", diff)
	}
}
