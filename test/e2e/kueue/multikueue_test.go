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
	"encoding/base64"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// multiKueueSetup returns the manager's objects (a MultiKueue admission
// check on one worker cluster, one ClusterQueue per side) and the worker's
// (one ClusterQueue per side on the kwok flavor); in both, each side's
// namespace has the LocalQueue q.
func multiKueueSetup(t *testing.T) (managerObjects, workerObjects string) {
	kubeconfig, err := worker.SelfContainedKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	managerObjects = fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: worker-kubeconfig
  namespace: %s
data:
  kubeconfig: %s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueCluster
metadata:
  name: worker
spec:
  clusterSource:
    kubeConfig:
      locationType: Secret
      location: worker-kubeconfig
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: MultiKueueConfig
metadata:
  name: mk
spec:
  clusters: ["worker"]
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: AdmissionCheck
metadata:
  name: mk
spec:
  controllerName: %s
  parameters:
    apiGroup: kueue.x-k8s.io
    kind: MultiKueueConfig
    name: mk
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: default
`, framework.KueueNamespace, base64.StdEncoding.EncodeToString(kubeconfig), multiKueueManager)
	workerObjects = kwokFlavor()
	for _, api := range sides {
		ns := sideNamespace("mk", api)
		queues := func(flavor, checks string) string {
			return fmt.Sprintf(`---
apiVersion: v1
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
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: %[2]s
      resources:
      - name: cpu
        nominalQuota: "10"
%[3]s---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: q
  namespace: %[1]s
spec:
  clusterQueue: %[1]s
`, ns, flavor, checks)
		}
		managerObjects += queues("default", "  admissionChecksStrategy:\n    admissionChecks:\n    - name: mk\n")
		workerObjects += queues("kwok", "")
	}
	return managerObjects, workerObjects
}

// multiKueueJobs are the dispatched Jobs: one that succeeds, an Indexed
// Job with a per-index backoff limit whose index 1 fails, and one a
// podFailurePolicy FailJob rule fails.
var multiKueueJobs = map[string]jobOpts{
	"mk-plain":   {parallelism: 2, completions: 2, managedBy: multiKueueManager, runFor: "2s"},
	"mk-indexed": {parallelism: 3, completions: 3, indexed: true, managedBy: multiKueueManager, backoffLimitPerIndex: ptr.To[int32](0), failIndex: "1", failExitCode: 1, runFor: "2s"},
	"mk-pfp":     {parallelism: 2, completions: 2, indexed: true, managedBy: multiKueueManager, failIndex: "0", failExitCode: 42, failJobOnExitCode: 42, runFor: "30s"},
}

// TestMultiKueue creates the Jobs on the manager cluster, where
// MultiKueue dispatches them to the worker: ours with Kueue's generic
// adapter (a verbatim copy, then the worker's whole status merge-patched
// onto the manager's Job), batch/v1 with Kueue's own adapter. At the end
// each manager Job's status equals its worker copy's last status, its
// Workload is Finished and the copy is gone; both sides end with the same
// statuses; and our servers refused none of the adapter's writes.
func TestMultiKueue(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	managerObjects, workerObjects := multiKueueSetup(t)
	apply(t, worker, workerObjects)
	apply(t, manager, managerObjects)
	defaultsManagedBy(ctx, t, sideNamespace("mk", framework.OurJobs))
	refusedStatusBefore := refusedRequests(t, manager, "PATCH", "status")
	refusedCreatesBefore := refusedRequests(t, worker, "POST", "")

	var mu sync.Mutex
	final := map[string]map[string]batchv1.JobStatus{}
	t.Run("sides", func(t *testing.T) {
		for _, api := range sides {
			t.Run(api.Name, func(t *testing.T) {
				t.Parallel()
				statuses := runMultiKueue(ctx, t, api)
				mu.Lock()
				final[api.Name] = statuses
				mu.Unlock()
			})
		}
	})
	if t.Failed() {
		return
	}
	if diff := cmp.Diff(final[framework.UpstreamJobs.Name], final[framework.OurJobs.Name]); diff != "" {
		t.Errorf("final statuses (-batch/v1,+ours):\n%s", diff)
	}
	// The adapter's status patches were counted: the zero below is of them.
	patches := jobRequests(t, manager, "PATCH", "status", anyCode)
	if patches == 0 {
		t.Errorf("the manager's batch-apiserver counted no status patches")
	}
	t.Logf("status patches on the manager: %d; Job creates on the worker: %d", patches, jobRequests(t, worker, "POST", "", anyCode))
	if n := refusedRequests(t, manager, "PATCH", "status") - refusedStatusBefore; n != 0 {
		t.Errorf("the manager's batch-apiserver refused %d status patches, want 0", n)
	}
	if n := refusedRequests(t, worker, "POST", "") - refusedCreatesBefore; n != 0 {
		t.Errorf("the worker's batch-apiserver refused %d Job creates, want 0", n)
	}
}

func runMultiKueue(ctx context.Context, t *testing.T, api framework.JobAPI) map[string]batchv1.JobStatus {
	ns := sideNamespace("mk", api)
	remote := watchJobs(ctx, t, worker, api, ns)
	jobs := jobsOf(manager, api, ns)
	for name, opts := range multiKueueJobs {
		if _, err := jobs.Create(ctx, newJob(name, opts)); err != nil {
			t.Fatal(err)
		}
	}
	statuses := map[string]batchv1.JobStatus{}
	for name := range multiKueueJobs {
		waitJob(ctx, t, jobs, name, "finished", finishedJob)
		waitWorkload(ctx, t, manager, api, ns, name, "Finished", func(wl *unstructured.Unstructured) bool {
			c := workloadCondition(wl, "Finished")
			return c != nil && c.Status == metav1.ConditionTrue
		})
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
			_, err := jobsOf(worker, api, ns).Get(ctx, name)
			return apierrors.IsNotFound(err), nil
		})
		if err != nil {
			t.Fatalf("%s job %s/%s: its worker copy is still there: %v", api.Name, ns, name, err)
		}
		last := remote.get(name)
		if last == nil {
			t.Fatalf("%s job %s/%s: never seen on the worker", api.Name, ns, name)
		}
		// Read again after the workload finished: the status the manager
		// holds once MultiKueue has copied the worker's last one.
		local, err := jobs.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(last.Status, local.Status); diff != "" {
			t.Errorf("%s job %s/%s: manager's status (+) is not the worker's last (-):\n%s", api.Name, ns, name, diff)
		}
		if !ptr.Equal(local.Spec.ManagedBy, ptr.To(multiKueueManager)) {
			t.Errorf("%s job %s/%s: managedBy %v, want %s", api.Name, ns, name, local.Spec.ManagedBy, multiKueueManager)
		}
		statuses[name] = comparable(local.Status)
	}
	return statuses
}
