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

package kueue

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// queueNameImmutable is the refusal Kueue gives a changed queue name on a
// Job that is not suspended (jobframework's ValidateJobOnUpdate). The
// scenario checks both sides against it: batch/v1 Jobs under Kueue's own
// webhook (registered in the tier, kube-apiserver calls it) and ours under
// batch-kueue's, so the two messages after "denied the request: " are
// equal.
const queueNameImmutable = `metadata.labels[kueue.x-k8s.io/queue-name]: Invalid value: "other": field is immutable`

// refuseQueueNameChange: moving the admitted, running Job name to another
// queue is refused by the side's Kueue webhook with Kueue's message, and
// the Job keeps its queue.
func refuseQueueNameChange(ctx context.Context, t *testing.T, jobs framework.Jobs, name string) {
	t.Helper()
	_, err := jobs.MergePatch(ctx, name, map[string]any{"metadata": map[string]any{"labels": map[string]any{queueLabel: "other"}}})
	if err == nil {
		t.Errorf("changing the queue name of running %s was accepted", name)
	} else if !apierrors.IsForbidden(err) || !strings.Contains(err.Error(), "denied the request: "+queueNameImmutable) {
		t.Errorf("changing the queue name of running %s: %v, want Forbidden by the webhook with %q", name, err, queueNameImmutable)
	}
	if job, err := jobs.Get(ctx, name); err != nil || job.Labels[queueLabel] != "q" {
		t.Errorf("%s after the refused change: %s (err %v), want queue q", name, describe(job), err)
	}
}

// TestJobsWithoutQueueName: the manager cluster's batch-kueue runs with
// --manage-jobs-without-queue-name and a namespace selector that leaves
// out unmanagedNamespace; its webhook creates a Job with no queue name
// suspended in a selected namespace, and leaves one in unmanagedNamespace
// alone.
func TestJobsWithoutQueueName(t *testing.T) {
	ctx := context.Background()
	apply(t, manager, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: noqueue-managed
---
apiVersion: v1
kind: Namespace
metadata:
  name: %s
`, unmanagedNamespace))
	for ns, wantSuspended := range map[string]bool{"noqueue-managed": true, unmanagedNamespace: false} {
		jobs := jobsOf(manager, framework.OurJobs, ns)
		job := newJob("j", jobOpts{parallelism: 1, completions: 1})
		delete(job.Labels, queueLabel)
		created, err := jobs.Create(ctx, job)
		if err != nil {
			t.Fatalf("creating a Job without a queue name in %s: %v", ns, err)
		}
		if got := ptr.Deref(created.Spec.Suspend, false); got != wantSuspended {
			t.Errorf("a Job without a queue name in %s was created with suspend=%v, want %v", ns, got, wantSuspended)
		}
		if err := jobs.Delete(ctx, "j"); err != nil {
			t.Error(err)
		}
	}
}

// defaultsManagedBy: a Job created on the manager cluster in a queue whose
// ClusterQueue has MultiKueue's admission check, with no managedBy, gets
// managedBy MultiKueue from batch-kueue's webhook (a server-side dry run,
// so nothing is dispatched). The webhook reads the queue through
// batch-kueue's cache, which sees the queue just applied a moment later:
// wait for that, as a user would.
func defaultsManagedBy(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	manifest := fmt.Sprintf(`{"apiVersion": %q, "kind": "Job",
"metadata": {"name": "managedby-probe", "namespace": %q, "labels": {%q: "q"}},
"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}`,
		framework.OurJobs.APIVersion(), ns, queueLabel)
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		res, err := manager.Kubectl().RunStdin(manifest, "create", "--dry-run=server", "-o", "jsonpath={.spec.managedBy}", "-f", "-")
		if err != nil {
			return false, err
		}
		if res.ExitCode != 0 {
			return false, fmt.Errorf("a dry-run create was refused: %s", res.Combined())
		}
		last = strings.TrimSpace(res.Stdout)
		return last == multiKueueManager, nil
	})
	if err != nil {
		t.Errorf("a Job with no managedBy in MultiKueue queue %s/q: managedBy %q, want %q: %v", ns, last, multiKueueManager, err)
	}
}

// TestDefaultLocalQueue: in a namespace with a LocalQueue named "default",
// a Job created with no queue name is queued there and created suspended,
// ours by batch-kueue's webhook as batch/v1 by Kueue's (server-side dry
// runs on the worker). Each webhook learns of the queue through an
// informer: wait for it, as a user would.
func TestDefaultLocalQueue(t *testing.T) {
	ctx := context.Background()
	const ns = "default-queue"
	apply(t, worker, fmt.Sprintf(`apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: %[1]s
spec:
  namespaceSelector: {}
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: default
  namespace: %[1]s
spec:
  clusterQueue: %[1]s
`, ns))
	for _, api := range sides {
		manifest := fmt.Sprintf(`{"apiVersion": %q, "kind": "Job",
"metadata": {"name": "no-queue", "namespace": %q},
"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}`, api.APIVersion(), ns)
		const want = "default true"
		var last string
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			res, err := worker.Kubectl().RunStdin(manifest, "create", "--dry-run=server", "-o",
				`jsonpath={.metadata.labels.kueue\.x-k8s\.io/queue-name} {.spec.suspend}`, "-f", "-")
			if err != nil {
				return false, err
			}
			if res.ExitCode != 0 {
				return false, fmt.Errorf("a dry-run create was refused: %s", res.Combined())
			}
			last = strings.TrimSpace(res.Stdout)
			return last == want, nil
		})
		if err != nil {
			t.Errorf("%s: a Job with no queue name in %s: queue and suspend %q, want %q: %v", api.Name, ns, last, want, err)
		}
	}
}
