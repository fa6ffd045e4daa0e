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

// Package kueue is the e2e tier's Kueue scenarios: Kueue v0.17.0's manager
// and batch-kueue queue batch.jobs.dev Jobs, side by side with batch/v1 Jobs
// under Kueue's own integration, in one cluster and dispatched by
// MultiKueue from a manager cluster to a worker cluster. It starts its own
// two host clusters, apart from the e2e package's shared one.
package kueue

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

const startTimeout = 6 * time.Minute

var (
	// manager is the MultiKueue manager cluster: no nodes.
	manager *framework.Cluster
	// worker runs Pods (kube-scheduler, KWOK nodes): the single-cluster
	// scenarios and MultiKueue's worker.
	worker *framework.Cluster
)

func TestMain(m *testing.M) {
	if ran, code := framework.RunEtcdMemberIfAsked(); ran {
		os.Exit(code)
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	flag.Parse()
	dir, err := os.MkdirTemp("", "batch-apiserver-e2e-kueue-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e-kueue: %v\n", err)
		return 1
	}
	keep := os.Getenv("E2E_KEEP_DIR") != ""
	defer func() {
		if keep {
			fmt.Fprintf(os.Stderr, "e2e-kueue: kept %s\n", dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()
	begin := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	stop, err := startClusters(ctx, dir)
	defer stop()
	if err != nil {
		keep = true
		fmt.Fprintf(os.Stderr, "e2e-kueue: %v\n", err)
		for _, c := range []*framework.Cluster{manager, worker} {
			if c != nil {
				c.DumpLogs(os.Stderr, 60)
			}
		}
		return 1
	}
	fmt.Fprintf(os.Stderr, "e2e-kueue: two clusters with Kueue started in %v\n", time.Since(begin).Round(time.Millisecond))
	code := m.Run()
	if code != 0 {
		keep = true
		for _, c := range []*framework.Cluster{manager, worker} {
			c.DumpLogs(os.Stderr, 60)
		}
	}
	return code
}

// startClusters starts both clusters, with Kueue and batch-kueue (and
// their webhooks) in each, and the worker's scheduler and nodes.
func startClusters(ctx context.Context, dir string) (stop func(), err error) {
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	bins, err := framework.FindBinaries(dir)
	if err != nil {
		return stop, err
	}
	fmt.Fprintf(os.Stderr, "e2e-kueue: host kube-apiserver %s (%s)\n", bins.HostVersion, bins.KubeAPIServer)
	kueueBins, err := framework.FindKueueBinaries(bins)
	if err != nil {
		return stop, err
	}
	scaleBins, err := framework.FindScaleBinaries(bins)
	if err != nil {
		return stop, err
	}
	stages, err := stageFiles(bins.RepoRoot)
	if err != nil {
		return stop, err
	}
	for _, c := range []struct {
		name string
		into **framework.Cluster
	}{{"manager", &manager}, {"worker", &worker}} {
		cl, err := framework.StartCluster(ctx, bins, filepath.Join(dir, c.name))
		if cl != nil {
			stops = append(stops, cl.Stop)
		}
		if err != nil {
			return stop, fmt.Errorf("%s cluster: %w", c.name, err)
		}
		*c.into = cl
		// batch-kueue serves its webhook in both clusters; on the manager
		// it also queues Jobs with no queue name, in every namespace but
		// unmanagedNamespace (the worker's single-cluster scenario shows
		// that such a Job is left alone without the option).
		opts := framework.KueueOptions{FeatureGates: "VisibilityOnDemand=false"}
		if c.name == "manager" {
			opts.BatchKueueArgs = []string{
				"--manage-jobs-without-queue-name",
				"--managed-jobs-namespace-selector=kubernetes.io/metadata.name notin (kube-system,kueue-system," + unmanagedNamespace + ")",
			}
		}
		if err := cl.StartKueue(ctx, kueueBins, opts); err != nil {
			return stop, fmt.Errorf("%s cluster: %w", c.name, err)
		}
		if err := waitQueuedJobsSuspended(ctx, cl); err != nil {
			return stop, fmt.Errorf("%s cluster: %w", c.name, err)
		}
	}
	if _, err := worker.StartKubeScheduler(ctx, scaleBins.KubeScheduler, 50, 100); err != nil {
		return stop, err
	}
	if _, err := worker.StartKWOK(scaleBins.KWOK, stages); err != nil {
		return stop, err
	}
	if err := worker.CreateKWOKNodes(ctx, 2); err != nil {
		return stop, err
	}
	return stop, nil
}

// unmanagedNamespace is the namespace of the manager cluster that
// batch-kueue's --managed-jobs-namespace-selector leaves out. The selector
// is Kueue's default with one more name: Kueue v0.17 respects it for every
// Job, queue name or not (ManagedJobsNamespaceSelectorAlwaysRespected,
// beta and on), so it must select the namespaces of the other scenarios.
const unmanagedNamespace = "noqueue-unmanaged"

// waitQueuedJobsSuspended waits, as a user can see it, until each server
// calls its Kueue webhook (kube-apiserver Kueue's manager's for batch/v1
// Jobs, batch-apiserver batch-kueue's for ours; both read webhook
// configurations through informers): a server-side dry run of a queued Job
// comes back suspended. Any refusal fails at once.
func waitQueuedJobsSuspended(ctx context.Context, c *framework.Cluster) error {
	for _, api := range []framework.JobAPI{framework.OurJobs, framework.UpstreamJobs} {
		manifest := fmt.Sprintf(`{"apiVersion": %q, "kind": "Job",
"metadata": {"name": "webhook-probe", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "probe"}},
"spec": {"template": {"spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "busybox"}]}}}}`, api.APIVersion())
		var last string
		err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			res, err := c.Kubectl().RunStdin(manifest, "create", "--dry-run=server", "-o", "jsonpath={.spec.suspend}", "-f", "-")
			if err != nil {
				return false, err
			}
			if res.ExitCode != 0 {
				return false, fmt.Errorf("a dry-run create of a queued %s Job was refused: %s", api.Name, res.Combined())
			}
			last = res.Stdout
			return strings.TrimSpace(res.Stdout) == "true", nil
		})
		if err != nil {
			return fmt.Errorf("waiting for the webhook to suspend queued %s Jobs (last spec.suspend %q): %w", api.Name, last, err)
		}
	}
	return nil
}

// stageFiles are KWOK's own fast node and Pod stages (from the module
// cache, at the version hack/tools/kwok pins) and ours from testdata.
func stageFiles(root string) ([]string, error) {
	kwokDir, err := framework.KWOKModuleDir(root)
	if err != nil {
		return nil, err
	}
	files := []string{
		filepath.Join(kwokDir, "kustomize", "stage", "node", "fast", "node-initialize.yaml"),
		filepath.Join(kwokDir, "kustomize", "stage", "pod", "fast", "pod-ready.yaml"),
		filepath.Join(kwokDir, "kustomize", "stage", "pod", "fast", "pod-delete.yaml"),
		filepath.Join(root, "test", "e2e", "kueue", "testdata", "stages", "pod-succeed.yaml"),
		filepath.Join(root, "test", "e2e", "kueue", "testdata", "stages", "pod-fail.yaml"),
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, err
		}
	}
	return files, nil
}
