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

// Command demo runs a throwaway cluster on this machine for make demo:
// kube-apiserver, kube-controller-manager (without its job controller),
// kube-scheduler and KWOK with a few simulated nodes, batch-apiserver
// aggregated into it with its Job controller on; creates the examples,
// waits until they are Complete, prints them, and keeps everything running
// until Ctrl-C. Everything lives under one temporary directory, removed on
// exit; every process dies with this one.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// nodes is how many simulated nodes the demo cluster has.
const nodes = 3

// examples are the Jobs of artifacts/examples that our controller runs
// (job-managed-by-multikueue.yaml is created too and, as it should, left
// alone: no MultiKueue runs here).
var examples = []string{"pi", "indexed-with-policy"}

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

func run() error {
	begin := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	dir, err := os.MkdirTemp("", "batch-apiserver-demo-")
	if err != nil {
		return err
	}
	defer func() {
		if err := os.RemoveAll(dir); err != nil {
			fmt.Fprintln(os.Stderr, "demo:", err)
		}
		fmt.Printf("removed %s\n", dir)
	}()
	say := func(format string, args ...any) {
		fmt.Printf("[%5.1fs] %s\n", time.Since(begin).Seconds(), fmt.Sprintf(format, args...))
	}

	bins, err := framework.FindBinaries(dir)
	if err != nil {
		return err
	}
	sbins, err := framework.FindScaleBinaries(bins)
	if err != nil {
		return err
	}
	stages, err := kwokStages(bins.RepoRoot)
	if err != nil {
		return err
	}
	say("starting etcd, kube-apiserver, kube-controller-manager and batch-apiserver in %s", dir)
	startCtx, cancel := context.WithTimeout(ctx, 4*time.Minute)
	defer cancel()
	cluster, err := framework.StartClusterWith(startCtx, bins, dir, framework.ClusterOptions{
		// Every controller but the host's job controller: batch/v1 Jobs are
		// not what this demo is about.
		KubeControllers: []string{"*", "-job-controller"},
	})
	if err != nil {
		return fmt.Errorf("starting the cluster (logs in %s): %w", filepath.Join(dir, "logs"), err)
	}
	defer cluster.Stop()
	if _, err := cluster.StartKubeScheduler(startCtx, sbins.KubeScheduler, 50, 100); err != nil {
		return err
	}
	if _, err := cluster.StartKWOK(sbins.KWOK, stages); err != nil {
		return err
	}
	if err := cluster.CreateKWOKNodes(startCtx, nodes); err != nil {
		return err
	}
	// The examples have no toleration for the simulated nodes' taint.
	for i := range nodes {
		name := fmt.Sprintf("kwok-node-%d", i)
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"taints": nil}})
		if _, err := cluster.AdminClient.CoreV1().Nodes().Patch(startCtx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("untainting node %s: %w", name, err)
		}
	}
	say("cluster up: %d simulated nodes (KWOK), batch-apiserver aggregated with its Job controller", nodes)

	kubeconfig := filepath.Join(dir, "kubeconfig")
	data, err := os.ReadFile(cluster.AdminKubeconfig)
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		return err
	}
	binDir := filepath.Dir(bins.Kubectl)
	env := append(os.Environ(), "KUBECONFIG="+kubeconfig, "PATH="+binDir+string(os.PathListSeparator)+os.Getenv("PATH"))
	kubectl := func(args ...string) error {
		fmt.Printf("\n$ kubectl %s\n", strings.Join(args, " "))
		cmd := exec.CommandContext(ctx, bins.Kubectl, args...)
		cmd.Env, cmd.Stdout, cmd.Stderr = env, os.Stdout, os.Stderr
		return cmd.Run()
	}

	// Pods need the namespace's default ServiceAccount, which
	// kube-controller-manager creates shortly after it starts.
	if err := wait.PollUntilContextTimeout(startCtx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cluster.AdminClient.CoreV1().ServiceAccounts("default").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	}); err != nil {
		return fmt.Errorf("waiting for the default ServiceAccount: %w", err)
	}
	if err := kubectl("create", "-f", filepath.Join(bins.RepoRoot, "artifacts", "examples")); err != nil {
		return err
	}
	created := time.Now()
	if err := kubectl(append(append([]string{"bjob", "wait"}, examples[0]), "--timeout=5m")...); err != nil {
		return fmt.Errorf("waiting for %s: %w", examples[0], err)
	}
	say("first Job Complete %.1fs after its creation", time.Since(created).Seconds())
	if err := kubectl(append(append([]string{"bjob", "wait"}, examples[1:]...), "--timeout=5m")...); err != nil {
		return fmt.Errorf("waiting for the examples: %w", err)
	}
	for _, args := range [][]string{
		{"get", "bjob", "-o", "wide"},
		{"get", "pods", "-o", "wide"},
		{"bjob", "describe", "indexed-with-policy"},
	} {
		if err := kubectl(args...); err != nil {
			return err
		}
	}
	say("all examples run by batch-apiserver's Job controller are Complete")

	fmt.Printf(`
The cluster keeps running until Ctrl-C. In another shell:

  export KUBECONFIG=%s PATH=%s:$PATH
  kubectl get bjob                          # the Jobs, through the aggregator
  kubectl bjob describe pi                  # kubectl describe, for our Jobs
  kubectl bjob wait pi --timeout=2m         # exit 0 Complete, 1 Failed, 2 timeout
  kubectl bjob suspend indexed-with-policy  # then resume, retry, logs --help

Logs of every process: %s
`, kubeconfig, binDir, filepath.Join(dir, "logs"))
	<-ctx.Done()
	fmt.Println("\nstopping the cluster")
	return nil
}

// kwokModule holds KWOK's own Stages, at the version hack/tools/kwok pins.
const kwokModule = "sigs.k8s.io/kwok"

// kwokStages are KWOK's fast node and Pod Stages (a Node is Ready, a
// scheduled Pod runs, a deleted one goes) and the scale tests' Stage that
// ends a Job's running Pod Succeeded after a second.
func kwokStages(root string) ([]string, error) {
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", kwokModule)
	cmd.Dir = filepath.Join(root, "hack", "tools", "kwok")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return nil, errors.Join(fmt.Errorf("locating %s in the module cache (run hack/build-scale-bins.sh)", kwokModule), err)
	}
	dir := strings.TrimSpace(string(out))
	files := []string{
		filepath.Join(dir, "kustomize", "stage", "node", "fast", "node-initialize.yaml"),
		filepath.Join(dir, "kustomize", "stage", "pod", "fast", "pod-ready.yaml"),
		filepath.Join(dir, "kustomize", "stage", "pod", "fast", "pod-delete.yaml"),
		filepath.Join(root, "test", "scale", "testdata", "stages", "pod-complete.yaml"),
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, err
		}
	}
	return files, nil
}
