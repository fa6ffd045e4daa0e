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
	"fmt"
	"net/http"
	"strings"
	"testing"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// bigJob returns a Job whose container argument alone is size bytes: no
// other field limits it, so the object is as large as the request body lets
// it be.
func bigJob(namespace, name string, size int) *batchv1.Job {
	job := newTestJob(namespace, name).Obj()
	job.Spec.Template.Spec.Containers[0].Args = []string{strings.Repeat("x", size)}
	return job
}

// wantEntityTooLarge fails unless err is a 413 whose message names the Job
// and the limit, and nothing of the storage layout.
func wantEntityTooLarge(t *testing.T, err error, name, limit string) {
	t.Helper()
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		t.Fatalf("error = %v (%T), want a 413 Status", err, err)
	}
	got := status.Status()
	want := metav1.Status{
		Status: metav1.StatusFailure,
		Code:   http.StatusRequestEntityTooLarge,
		Reason: metav1.StatusReasonRequestEntityTooLarge,
		Message: fmt.Sprintf("Request entity too large: jobs.batch.jobs.dev %q is too large to store (%s); "+
			"make it smaller, for example with fewer or shorter labels, annotations, environment variables or commands", name, limit),
	}
	if diff := cmp.Diff(want, got, cmpIgnoreTypeMeta); diff != "" {
		t.Errorf("status mismatch (-want +got):\n%s", diff)
	}
}

var cmpIgnoreTypeMeta = cmp.FilterPath(func(p cmp.Path) bool {
	return p.String() == "TypeMeta" || p.String() == "ListMeta" || p.String() == "Details"
}, cmp.Ignore())

// Defect 2 of issue 9: objects between etcd's 1.5 MiB request limit and the
// API's 3 MiB body limit got a misleading 422 about controller-uid (the
// create was retried with a new UID) or a 500 "etcdserver: request is too
// large". The embedded etcd now takes up to 4 MiB; what the etcd client
// cannot send (over 2 MiB) is a 413.
func TestTooLargeObjects(t *testing.T) {
	ts := framework.StartServer(t)
	client := newTestClient(t, ts)
	ctx := testContext(t)
	ns := testNamespace(t)
	jobs := client.BatchV1().Jobs(ns)
	const clientLimit = "larger than the 2 MiB the etcd client sends"

	t.Run("1.8 MiB is stored", func(t *testing.T) {
		created, err := jobs.Create(ctx, bigJob(ns, "fits", 1800<<10), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		got, err := jobs.Get(ctx, "fits", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if diff := cmp.Diff(created, got); diff != "" {
			t.Errorf("stored Job mismatch (-created +got):\n%s", diff)
		}
	})
	t.Run("2.5 MiB create is 413", func(t *testing.T) {
		_, err := jobs.Create(ctx, bigJob(ns, "big", 2500<<10), metav1.CreateOptions{})
		wantEntityTooLarge(t, err, "big", clientLimit)
		if _, err := jobs.Get(ctx, "big", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after the refused create: %v, want NotFound", err)
		}
	})
	t.Run("2.5 MiB create with manualSelector is 413", func(t *testing.T) {
		job := bigJob(ns, "big-manual", 2500<<10)
		manual := true
		job.Spec.ManualSelector = &manual
		job.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "big"}}
		job.Spec.Template.Labels = map[string]string{"app": "big"}
		_, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		wantEntityTooLarge(t, err, "big-manual", clientLimit)
	})
	t.Run("patch growing a Job past the limit is 413 and changes nothing", func(t *testing.T) {
		// The template is immutable and annotations hold at most 256 KiB:
		// start close to the limit.
		before, err := jobs.Create(ctx, bigJob(ns, "grows", 1900<<10), metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		patch := fmt.Sprintf(`{"metadata":{"annotations":{"big":%q}}}`, strings.Repeat("x", 200<<10))
		_, err = jobs.Patch(ctx, "grows", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{})
		wantEntityTooLarge(t, err, "grows", clientLimit)
		after, err := jobs.Get(ctx, "grows", metav1.GetOptions{})
		if err != nil {
			t.Fatalf("get: %v", err)
		}
		if diff := cmp.Diff(before, after); diff != "" {
			t.Errorf("Job changed by the refused patch (-before +after):\n%s", diff)
		}
	})
	t.Run("server-side apply past the limit is 413", func(t *testing.T) {
		body := fmt.Sprintf(`{"apiVersion":"batch.jobs.dev/v1","kind":"Job","metadata":{"name":"applied"},`+
			`"spec":{"template":{"spec":{"restartPolicy":"Never","containers":[{"name":"main","image":"busybox","args":[%q]}]}}}}`,
			strings.Repeat("x", 2500<<10))
		_, err := jobs.Patch(ctx, "applied", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: "test"})
		wantEntityTooLarge(t, err, "applied", clientLimit)
	})
}

// Against an etcd with a smaller request limit than ours (an external etcd
// run with --max-request-bytes 256 KiB), what etcd refuses is a 413 too.
func TestTooLargeForExternalEtcdLimit(t *testing.T) {
	ts := framework.StartServerWithEtcd(t, t.TempDir(), func(c *embeddedetcd.Config) { c.MaxRequestBytes = 256 << 10 })
	client := newTestClient(t, ts)
	ctx := testContext(t)
	ns := testNamespace(t)
	jobs := client.BatchV1().Jobs(ns)
	const etcdLimit = "larger than etcd's request size limit"

	if _, err := jobs.Create(ctx, bigJob(ns, "small", 100<<10), metav1.CreateOptions{}); err != nil {
		t.Fatalf("create under the limit: %v", err)
	}
	_, err := jobs.Create(ctx, bigJob(ns, "big", 512<<10), metav1.CreateOptions{})
	wantEntityTooLarge(t, err, "big", etcdLimit)

	job, err := jobs.Get(ctx, "small", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get: %v", err)
	}
	// The template is immutable; annotations may hold up to 256 KiB.
	job.Annotations = map[string]string{"big": strings.Repeat("y", 200<<10)}
	_, err = jobs.Update(ctx, job, metav1.UpdateOptions{})
	wantEntityTooLarge(t, err, "small", etcdLimit)
}
