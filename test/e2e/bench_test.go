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
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// EnvBench turns on TestControllerBenchmark (`make bench-controller`).
const EnvBench = "E2E_BENCH"

// EnvBenchJobs overrides the number of Jobs of the benchmark.
const EnvBenchJobs = "E2E_BENCH_JOBS"

// benchJobs is how many one-Pod Jobs each controller runs.
const benchJobs = 500

// benchWorkers is how many goroutines create Jobs, and how many play the
// kubelet.
const benchWorkers = 16

// benchResult is one controller's run.
type benchResult struct {
	controller string
	jobs       int
	wall       time.Duration
	cpuSeconds float64
	process    string
}

// TestControllerBenchmark is a benchmark, not a test (it asserts no time):
// N one-Pod Jobs from create to Complete, the test as kubelet finishing
// each Pod as soon as it appears, first under kube-controller-manager's job
// controller (batch/v1) and then under the one embedded in batch-apiserver,
// reporting the wall time and the CPU seconds each controller's process
// used (/proc/<pid>/stat: kube-controller-manager as a whole, batch-apiserver
// as a whole, which also serves the Jobs' API requests).
// Runs only with E2E_BENCH=1.
func TestControllerBenchmark(t *testing.T) {
	if os.Getenv(EnvBench) == "" {
		t.Skipf("a benchmark: set %s=1 (make bench-controller)", EnvBench)
	}
	n := benchJobs
	if v := os.Getenv(EnvBenchJobs); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			t.Fatalf("%s=%q: want a positive number", EnvBenchJobs, v)
		}
	}
	var results []benchResult
	for _, ctl := range controllers {
		if ctl.api == framework.OurJobs {
			skipWithoutOurController(t)
		}
		proc := cluster.KubeControllerManager
		if ctl.api == framework.OurJobs {
			proc = cluster.BatchAPIServer
		}
		res := runBench(t, ctl, proc, n)
		results = append(results, res)
		t.Logf("%s: %d jobs in %v, %.2f CPU seconds of %s", res.controller, res.jobs, res.wall.Round(time.Millisecond), res.cpuSeconds, res.process)
	}
	fmt.Printf("\n%-24s %6s %12s %10s  %s\n", "controller", "jobs", "wall", "CPU s", "process measured")
	for _, r := range results {
		fmt.Printf("%-24s %6d %12v %10.2f  %s\n", r.controller, r.jobs, r.wall.Round(time.Millisecond), r.cpuSeconds, r.process)
	}
	if len(results) == 2 {
		fmt.Printf("batch-apiserver / kube-controller-manager: wall %.2fx, CPU %.2fx\n",
			results[1].wall.Seconds()/results[0].wall.Seconds(), results[1].cpuSeconds/results[0].cpuSeconds)
	}
}

func runBench(t *testing.T, ctl controllerUnderTest, proc *framework.Process, n int) benchResult {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	ns := "bench-" + ctl.nsSuffix
	createNamespace(t, ns)
	defer func() { _, _ = cluster.Kubectl().Run("delete", "namespace", ns, "--wait=false") }()
	cfg := fastConfig()
	client := kubernetes.NewForConfigOrDie(cfg)
	// Unthrottled, or the load generator and not the controller sets the pace.
	jobs := framework.Jobs{API: ctl.api, Client: dynamic.NewForConfigOrDie(cfg), Namespace: ns}

	// The kubelet: every new Pod of the namespace ends Succeeded.
	stopKubelet := startBenchKubelet(ctx, t, client, ns)
	defer stopKubelet()

	cpuBefore, err := proc.CPUSeconds()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, benchWorkers)
	for range benchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := int(next.Add(1)); i <= n; i = int(next.Add(1)) {
				job := newJob(1, 1)
				job.Name = fmt.Sprintf("bench-%04d", i)
				if _, err := jobs.Create(ctx, job); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}

	var complete int
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, 15*time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := cluster.Dynamic.Resource(ctl.api.GVR).Namespace(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, nil
		}
		complete = 0
		for _, u := range list.Items {
			conds, _, _ := unstructuredConditions(u.Object)
			for _, c := range conds {
				if c["type"] == string(batchv1.JobComplete) && c["status"] == string(corev1.ConditionTrue) {
					complete++
				}
			}
		}
		return complete == n, nil
	})
	wall := time.Since(start)
	if err != nil {
		t.Fatalf("%s: %d of %d jobs complete after %v: %v", ctl.name, complete, n, wall, err)
	}
	cpuAfter, err := proc.CPUSeconds()
	if err != nil {
		t.Fatal(err)
	}
	return benchResult{controller: ctl.name, jobs: n, wall: wall, cpuSeconds: cpuAfter - cpuBefore, process: fmt.Sprintf("%s (pid %d)", proc.Name, proc.PID())}
}

// unstructuredConditions returns status.conditions of a Job object.
func unstructuredConditions(obj map[string]any) ([]map[string]any, bool, error) {
	status, _ := obj["status"].(map[string]any)
	raw, _ := status["conditions"].([]any)
	var out []map[string]any
	for _, c := range raw {
		if m, ok := c.(map[string]any); ok {
			out = append(out, m)
		}
	}
	return out, len(out) > 0, nil
}

// startBenchKubelet ends every Pod created in ns Succeeded, from a Pod
// informer and a work queue drained by benchWorkers goroutines.
func startBenchKubelet(ctx context.Context, t *testing.T, client kubernetes.Interface, ns string) (stop func()) {
	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithNamespace(ns))
	podInformer := factory.Core().V1().Pods()
	queue := workqueue.NewTypedRateLimitingQueue(workqueue.DefaultTypedControllerRateLimiter[string]())
	enqueue := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok || pod.DeletionTimestamp != nil || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			return
		}
		queue.Add(pod.Name)
	}
	if _, err := podInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueue,
		UpdateFunc: func(_, obj any) { enqueue(obj) },
	}); err != nil {
		t.Fatal(err)
	}
	kubelet := framework.Kubelet{Client: client}
	ctx, cancel := context.WithCancel(ctx)
	factory.Start(ctx.Done())
	factory.WaitForCacheSync(ctx.Done())
	var wg sync.WaitGroup
	for range benchWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				name, quit := queue.Get()
				if quit {
					return
				}
				pod, err := podInformer.Lister().Pods(ns).Get(name)
				if err == nil && pod.DeletionTimestamp == nil && pod.Status.Phase != corev1.PodSucceeded {
					err = kubelet.Succeed(ctx, pod)
				}
				if err != nil && ctx.Err() == nil && !isNotFoundErr(err) {
					queue.AddRateLimited(name)
				} else {
					queue.Forget(name)
				}
				queue.Done(name)
			}
		}()
	}
	return func() {
		cancel()
		queue.ShutDown()
		wg.Wait()
		factory.Shutdown()
	}
}

func isNotFoundErr(err error) bool { return apierrors.IsNotFound(err) }
