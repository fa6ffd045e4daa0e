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
	"context"
	"io"
	"net/http"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	batchv1beta1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1beta1"
	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/server"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// protobufStoragePrefix starts every object kube's storage writes in protobuf.
var protobufStoragePrefix = []byte("k8s\x00")

// newProtobufTestClient returns a clientset that sends and accepts only
// protobuf, as kube's own controllers do.
func newProtobufTestClient(t *testing.T, ts *framework.TestServer) versioned.Interface {
	t.Helper()
	cfg := rest.CopyConfig(ts.ClientConfig)
	cfg.ContentType = runtime.ContentTypeProtobuf
	cfg.AcceptContentTypes = runtime.ContentTypeProtobuf
	client, _ := newTestClientWithWarnings(t, cfg)
	return client
}

// TestProtobufServed checks that a client preferring protobuf (as the
// namespace controller does when it lists and deletes collections) gets
// protobuf, including the metadata-only list the namespace controller asks
// for.
func TestProtobufServed(t *testing.T) {
	ts := framework.StartServer(t)
	ctx := testContext(t)
	if _, err := newTestClient(t, ts).BatchV1().Jobs("default").Create(ctx, newTestJob("default", "one").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a job: %v", err)
	}
	client, err := rest.HTTPClientFor(ts.ClientConfig)
	if err != nil {
		t.Fatal(err)
	}
	const metadataList = "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
	for _, r := range []struct{ method, path, accept, wantType string }{
		{http.MethodGet, "/apis/batch.jobs.dev/v1/jobs", "application/vnd.kubernetes.protobuf, application/json", runtime.ContentTypeProtobuf},
		{http.MethodGet, "/apis/batch.jobs.dev/v1beta1/namespaces/default/jobs", "application/vnd.kubernetes.protobuf, application/json", runtime.ContentTypeProtobuf},
		{http.MethodGet, "/apis/batch.jobs.dev/v1/namespaces/default/jobs/one", "application/vnd.kubernetes.protobuf", runtime.ContentTypeProtobuf},
		// The namespace controller: a metadata-only list, then a delete of
		// the collection.
		{http.MethodGet, "/apis/batch.jobs.dev/v1/namespaces/default/jobs", metadataList + ", application/json", runtime.ContentTypeProtobuf},
		{http.MethodDelete, "/apis/batch.jobs.dev/v1/namespaces/default/jobs", "application/vnd.kubernetes.protobuf, application/json", runtime.ContentTypeProtobuf},
	} {
		req, err := http.NewRequestWithContext(ctx, r.method, ts.ClientConfig.Host+r.path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Accept", r.accept)
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", r.method, r.path, err)
		}
		body, _ := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s %s (Accept %s): status %d, want 200: %q", r.method, r.path, r.accept, resp.StatusCode, body)
		}
		if got := resp.Header.Get("Content-Type"); got != r.wantType {
			t.Errorf("%s %s (Accept %s): Content-Type %q, want %q", r.method, r.path, r.accept, got, r.wantType)
		}
		if !bytes.HasPrefix(body, protobufStoragePrefix) {
			t.Errorf("%s %s (Accept %s): body is not protobuf: %q", r.method, r.path, r.accept, body)
		}
	}
}

// TestProtobufMetadataList lists, gets and deletes Jobs with client-go's
// metadata client, as the namespace controller and the garbage collector
// do (protobuf PartialObjectMetadata first, JSON as a fallback): it gets
// the Jobs' metadata and nothing else.
func TestProtobufMetadataList(t *testing.T) {
	ts := framework.StartServer(t)
	ctx := testContext(t)
	ns := testNamespace(t)
	created, err := newTestClient(t, ts).BatchV1().Jobs(ns).Create(ctx, newTestJob(ns, "one").Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a job: %v", err)
	}
	cfg := rest.CopyConfig(ts.ClientConfig)
	cfg.QPS = -1
	mc, err := metadata.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	jobs := mc.Resource(batchv1.SchemeGroupVersion.WithResource("jobs")).Namespace(ns)
	// The objects' TypeMeta is the client's business (protobuf carries
	// none for list items); the metadata is what matters.
	want := metav1.PartialObjectMetadata{ObjectMeta: created.ObjectMeta}
	list, err := jobs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing metadata: %v", err)
	}
	if diff := cmp.Diff([]metav1.PartialObjectMetadata{want}, list.Items, ignoreTypeMeta); diff != "" {
		t.Errorf("metadata list (-want +got):\n%s", diff)
	}
	got, err := jobs.Get(ctx, "one", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("getting metadata: %v", err)
	}
	if diff := cmp.Diff(&want, got, ignoreTypeMeta); diff != "" {
		t.Errorf("metadata get (-want +got):\n%s", diff)
	}
	if err := jobs.DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("deleting the collection: %v", err)
	}
	if list, err = jobs.List(ctx, metav1.ListOptions{}); err != nil || len(list.Items) != 0 {
		t.Errorf("after deleting the collection: %d Jobs (%v), want none", len(list.Items), err)
	}
}

// TestProtobufClientSeesWhatJSONClientSees drives Jobs through a protobuf
// client (create, get, list, watch, update status, delete, in both
// versions) and checks that every object it gets is the one a JSON client
// gets.
func TestProtobufClientSeesWhatJSONClientSees(t *testing.T) {
	ts := framework.StartServer(t)
	ctx := testContext(t)
	ns := testNamespace(t)
	pb := newProtobufTestClient(t, ts)
	js := newTestClient(t, ts)

	pbWatch, err := pb.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("protobuf watch: %v", err)
	}
	defer pbWatch.Stop()
	jsWatch, err := js.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("JSON watch: %v", err)
	}
	defer jsWatch.Stop()
	// Both watches see the same events, each the same object.
	nextEvents := func(want watch.EventType, wantObj *batchv1.Job) {
		t.Helper()
		pbEv, jsEv := nextTestWatchEvent(ctx, t, pbWatch), nextTestWatchEvent(ctx, t, jsWatch)
		if pbEv.Type != want || jsEv.Type != want {
			t.Fatalf("watch events %s (protobuf) and %s (JSON), want %s", pbEv.Type, jsEv.Type, want)
		}
		if diff := cmp.Diff(jsEv.Object, pbEv.Object); diff != "" {
			t.Errorf("%s event (-JSON +protobuf):\n%s", want, diff)
		}
		if diff := cmp.Diff(wantObj, pbEv.Object, ignoreTypeMeta); diff != "" {
			t.Errorf("%s event (-answer to the write +event):\n%s", want, diff)
		}
	}

	job := newTestJob(ns, "pb").Completions(3).Parallelism(2).Labels(map[string]string{"app": "pb"}).Obj()
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action:      batchv1.PodFailurePolicyActionFailJob,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{1, 42}},
	}, {
		Action:          batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
	}}}
	created, err := pb.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("protobuf create: %v", err)
	}
	if created.UID == "" || created.Spec.Selector == nil || *created.Spec.Completions != 3 || len(created.Spec.PodFailurePolicy.Rules) != 2 {
		t.Errorf("protobuf create answered an incomplete Job: %+v", created)
	}
	nextEvents(watch.Added, created)

	compare := func(what string, viaPB, viaJSON runtime.Object) {
		t.Helper()
		if diff := cmp.Diff(viaJSON, viaPB); diff != "" {
			t.Errorf("%s (-JSON +protobuf):\n%s", what, diff)
		}
	}
	pbGot, err := pb.BatchV1().Jobs(ns).Get(ctx, "pb", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("protobuf get: %v", err)
	}
	jsGot, err := js.BatchV1().Jobs(ns).Get(ctx, "pb", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("JSON get: %v", err)
	}
	compare("get", pbGot, jsGot)
	if diff := cmp.Diff(created, pbGot, ignoreTypeMeta); diff != "" {
		t.Errorf("protobuf get (-create's answer +get):\n%s", diff)
	}

	// Status, through protobuf.
	start := metav1.Now().Rfc3339Copy()
	pbGot.Status = batchv1.JobStatus{
		StartTime:               &start,
		Active:                  2,
		Ready:                   ptr.To[int32](1),
		Terminating:             ptr.To[int32](0),
		UncountedTerminatedPods: &batchv1.UncountedTerminatedPods{},
		Conditions:              []batchv1.JobCondition{newTestJobCondition(batchv1.JobSuspended, corev1.ConditionFalse, "Resumed")},
	}
	updated, err := pb.BatchV1().Jobs(ns).UpdateStatus(ctx, pbGot, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("protobuf update status: %v", err)
	}
	if diff := cmp.Diff(pbGot.Status, updated.Status); diff != "" {
		t.Errorf("protobuf update status answer (-sent +answered):\n%s", diff)
	}
	nextEvents(watch.Modified, updated)
	jsGot, err = js.BatchV1().Jobs(ns).Get(ctx, "pb", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("JSON get: %v", err)
	}
	compare("get after the status update", updated, jsGot)

	// v1beta1 through protobuf, read back through JSON in both versions.
	beta := &batchv1beta1.Job{}
	convertTestJob(t, newTestJob(ns, "pb-beta").Obj(), beta)
	betaCreated, err := pb.BatchV1beta1().Jobs(ns).Create(ctx, beta, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("protobuf create through v1beta1: %v", err)
	}
	betaJS, err := js.BatchV1beta1().Jobs(ns).Get(ctx, "pb-beta", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("JSON get through v1beta1: %v", err)
	}
	compare("v1beta1 create", betaCreated, betaJS)
	betaAsV1, err := js.BatchV1().Jobs(ns).Get(ctx, "pb-beta", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("JSON get of the v1beta1 Job through v1: %v", err)
	}
	nextEvents(watch.Added, betaAsV1)

	pbList, err := pb.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("protobuf list: %v", err)
	}
	jsList, err := js.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("JSON list: %v", err)
	}
	compare("list", pbList, jsList)
	if len(pbList.Items) != 2 {
		t.Errorf("protobuf list has %d Jobs, want 2", len(pbList.Items))
	}
	pbBetaList, err := pb.BatchV1beta1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("protobuf list through v1beta1: %v", err)
	}
	jsBetaList, err := js.BatchV1beta1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("JSON list through v1beta1: %v", err)
	}
	compare("v1beta1 list", pbBetaList, jsBetaList)

	// Delete through protobuf: the watches see the last state.
	if err := pb.BatchV1().Jobs(ns).Delete(ctx, "pb", metav1.DeleteOptions{}); err != nil {
		t.Fatalf("protobuf delete: %v", err)
	}
	pbEv, jsEv := nextTestWatchEvent(ctx, t, pbWatch), nextTestWatchEvent(ctx, t, jsWatch)
	if pbEv.Type != watch.Deleted || jsEv.Type != watch.Deleted {
		t.Fatalf("watch events after the delete: %s (protobuf), %s (JSON), want DELETED", pbEv.Type, jsEv.Type)
	}
	compare("deleted event", pbEv.Object, jsEv.Object)
	if got := pbEv.Object.(*batchv1.Job); got.UID != updated.UID {
		t.Errorf("deleted event carries UID %s, want %s", got.UID, updated.UID)
	}
	if err := pb.BatchV1beta1().Jobs(ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatalf("protobuf delete collection through v1beta1: %v", err)
	}
	left, err := js.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("JSON list after the deletes: %v", err)
	}
	if len(left.Items) != 0 {
		t.Errorf("%d Jobs left after the deletes, want none", len(left.Items))
	}
}

// storedJob reads the raw value of a Job from etcd.
func storedJob(ctx context.Context, t *testing.T, ts *framework.TestServer, ns, name string) []byte {
	t.Helper()
	resp, err := ts.EtcdClient().Get(ctx, framework.JobKey(ns, name))
	if err != nil {
		t.Fatalf("reading %s from etcd: %v", name, err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatalf("etcd has %d values at %s, want 1", len(resp.Kvs), framework.JobKey(ns, name))
	}
	return resp.Kvs[0].Value
}

// storeJSON is --storage-media-type=application/json.
func storeJSON(o *server.Options) {
	o.RecommendedOptions.Etcd.DefaultStorageMediaType = runtime.ContentTypeJSON
}

// TestStorageSwitchFromJSONToProtobuf stores Jobs as JSON
// (--storage-media-type=application/json), restarts the server with the
// default, protobuf: it serves the Jobs stored as JSON unchanged, and
// stores what it writes, new Jobs and updates of old ones, as protobuf.
func TestStorageSwitchFromJSONToProtobuf(t *testing.T) {
	ctx := testContext(t)
	ns := testNamespace(t)
	ts := framework.StartServer(t, storeJSON)
	jobs := newTestClient(t, ts).BatchV1().Jobs(ns)
	for _, name := range []string{"old", "old-updated"} {
		created, err := jobs.Create(ctx, newTestJob(ns, name).Obj(), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating %s: %v", name, err)
		}
		created.Status.Active = 1
		created.Status.StartTime = ptr.To(metav1.Now().Rfc3339Copy())
		if _, err := jobs.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("updating the status of %s: %v", name, err)
		}
		if raw := storedJob(ctx, t, ts, ns, name); !bytes.HasPrefix(raw, []byte(`{"kind":"Job","apiVersion":"batch.jobs.dev/v1"`)) {
			t.Fatalf("with --storage-media-type=application/json, %s is stored as %q", name, raw)
		}
	}
	before, err := jobs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing before the switch: %v", err)
	}

	ts.Stop()
	ts = framework.StartServerOnDataDir(t, ts.DataDir)
	client := newTestClient(t, ts)
	jobs = client.BatchV1().Jobs(ns)
	after, err := jobs.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing after the switch: %v", err)
	}
	if diff := cmp.Diff(before.Items, after.Items); diff != "" {
		t.Errorf("Jobs stored as JSON, listed after the switch (-before +after):\n%s", diff)
	}
	for _, want := range before.Items {
		got, err := newProtobufTestClient(t, ts).BatchV1().Jobs(ns).Get(ctx, want.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("getting %s through protobuf after the switch: %v", want.Name, err)
		}
		if diff := cmp.Diff(&want, got, ignoreTypeMeta); diff != "" {
			t.Errorf("%s after the switch (-before +after):\n%s", want.Name, diff)
		}
	}

	// Writes are stored as protobuf; what is not written stays JSON.
	old, err := jobs.Get(ctx, "old-updated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	old.Status.Ready = ptr.To[int32](1)
	updated, err := jobs.UpdateStatus(ctx, old, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("updating the status of old-updated after the switch: %v", err)
	}
	if _, err := jobs.Create(ctx, newTestJob(ns, "new").Obj(), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating new: %v", err)
	}
	for name, wantPrefix := range map[string][]byte{
		"old":         []byte(`{"kind":"Job"`),
		"old-updated": protobufStoragePrefix,
		"new":         protobufStoragePrefix,
	} {
		if raw := storedJob(ctx, t, ts, ns, name); !bytes.HasPrefix(raw, wantPrefix) {
			t.Errorf("%s stored as %q, want it to start with %q", name, raw[:min(len(raw), 40)], wantPrefix)
		}
	}
	got, err := jobs.Get(ctx, "old-updated", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(updated, got, ignoreTypeMeta); diff != "" {
		t.Errorf("old-updated read back from protobuf (-update's answer +get):\n%s", diff)
	}
}
