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

package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// EnvReadyStarts sets how many starts TestQueuedJobRightAfterReady makes
// (default 3; issue 44 asks for 20 once).
const EnvReadyStarts = "E2E_READY_STARTS"

// TestQueuedJobRightAfterReady applies the Kueue component's
// suspend-on-create policy to a host that has no APIService of ours (so
// no OpenAPI of ours either), starts batch-apiserver, and creates a queued
// Job on it the moment its /readyz passes, several times over: every
// create is accepted, and suspended. Before the policy plugin took the
// schema of our Job from the server's own OpenAPI definitions, each was
// refused with 503 ("Resource kind batch.jobs.dev/v1, Kind=Job not
// found") until the host had aggregated our OpenAPI and the plugin had
// listed it again.
func TestQueuedJobRightAfterReady(t *testing.T) {
	bins.SkipIfHostLacks(t, framework.HostGap{Since: 36, Missing: "MutatingAdmissionPolicy (admissionregistration.k8s.io/v1): the plugin is off"})
	starts := 3
	if v := os.Getenv(EnvReadyStarts); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want a positive number", EnvReadyStarts, v)
		}
		starts = n
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(2+starts)*time.Minute)
	defer cancel()
	host, err := framework.StartClusterWith(ctx, bins, filepath.Join(t.TempDir(), "host"),
		framework.ClusterOptions{NoControllerManager: true, NoAPIServices: true})
	if err != nil {
		if host != nil {
			host.DumpLogs(os.Stderr, 40)
		}
		t.Fatal(err)
	}
	t.Cleanup(host.Stop)
	host.Kubectl().MustRun(t, "apply", "-f", host.Artifact("artifacts/kueue/suspend-queued-jobs.yaml"))
	const ns = "queued-at-start"
	host.Kubectl().MustRun(t, "create", "namespace", ns)

	type created struct {
		Suspend bool
	}
	for i := range starts {
		name := fmt.Sprintf("batch-apiserver-start-%d", i)
		// The replica returns once its /readyz has answered 200.
		server, err := host.StartBatchReplica(ctx, name, "--controllers=-job")
		if err != nil {
			t.Fatal(err)
		}
		client, err := versioned.NewForConfig(server.Config)
		if err != nil {
			t.Fatal(err)
		}
		job, err := client.BatchV1().Jobs(ns).Create(ctx, queuedJob(fmt.Sprintf("queued-%d", i)), metav1.CreateOptions{})
		host.StopProcess(server.Process)
		if err != nil {
			t.Fatalf("start %d: creating a queued Job right after /readyz: %v\nlog %s:\n%s", i, err, server.LogFile, framework.Tail(server.LogFile, 30))
		}
		if diff := cmp.Diff(created{Suspend: true}, created{Suspend: ptr.Deref(job.Spec.Suspend, false)}); diff != "" {
			t.Errorf("start %d: the queued Job as created (-want,+got):\n%s", i, diff)
		}
	}
}

// queuedJob is a Job with Kueue's queue-name label, which the component's
// policy matches.
func queuedJob(name string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"kueue.x-k8s.io/queue-name": "user-queue"}},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: "busybox"}},
		}}},
	}
}
