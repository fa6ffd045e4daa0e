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

package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// EnvSnapshotBench turns on TestSnapshotFigures; its value is the number
// of Jobs (1 means 10 000).
const EnvSnapshotBench = "BENCH_SNAPSHOT"

// TestSnapshotFigures measures backup and restore of the standalone
// server with the real binary: it stores N Jobs, runs `batch-apiserver
// snapshot save` against the running server and `snapshot restore` into
// a new data dir, starts a server on it and lists the Jobs. It prints the
// snapshot's size and each step's time; it asserts only that every Job
// comes back.
//
//	BENCH_SNAPSHOT=1 BATCH_APISERVER_BIN=$PWD/_output/bin/batch-apiserver \
//	  go test -count=1 -v -run '^TestSnapshotFigures$' ./test/bench/
func TestSnapshotFigures(t *testing.T) {
	v := os.Getenv(EnvSnapshotBench)
	if v == "" {
		t.Skipf("the snapshot figures are measured with %s=1 (10 000 Jobs) or %s=N", EnvSnapshotBench, EnvSnapshotBench)
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", EnvSnapshotBench, v)
	}
	if n == 1 {
		n = 10000
	}
	bin := os.Getenv("BATCH_APISERVER_BIN")
	if bin == "" {
		t.Fatal("BATCH_APISERVER_BIN names the batch-apiserver binary (make build)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
	defer cancel()
	dir := t.TempDir()

	old, err := framework.StartStandalone(ctx, bin, filepath.Join(dir, "data"), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer old.Stop()
	client := snapshotBenchClient(t, old.Kubeconfig)
	const ns = "snapshot"
	start := time.Now()
	fillJobs(ctx, t, client, ns, n)
	fill := time.Since(start)

	file := filepath.Join(dir, "backup.db")
	save, saveOut := timedRun(t, bin, "snapshot", "save", file, "--data-dir", old.DataDir)
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	old.Stop()
	restoredDir := filepath.Join(dir, "restored")
	restore, restoreOut := timedRun(t, bin, "snapshot", "restore", file, "--data-dir", restoredDir)

	start = time.Now()
	restored, err := framework.StartStandalone(ctx, bin, restoredDir, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer restored.Stop()
	ready := time.Since(start)
	client = snapshotBenchClient(t, restored.Kubeconfig)
	start = time.Now()
	list, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	listed := time.Since(start)
	if len(list.Items) != n {
		t.Errorf("the restored server lists %d Jobs, want %d", len(list.Items), n)
	}
	t.Logf("snapshot of %d Jobs: %.1f MiB (%d bytes)\n  fill %s\n  snapshot save (whole command) %s: %s  snapshot restore (whole command) %s: %s  start on the restored data dir to ready %s\n  first LIST of the %d Jobs %s",
		n, float64(info.Size())/(1<<20), info.Size(), fill.Round(time.Millisecond),
		save.Round(time.Millisecond), saveOut, restore.Round(time.Millisecond), restoreOut,
		ready.Round(time.Millisecond), len(list.Items), listed.Round(time.Millisecond))
}

func snapshotBenchClient(t *testing.T, kubeconfig string) versioned.Interface {
	t.Helper()
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	cfg.QPS = -1
	return versioned.NewForConfigOrDie(cfg)
}

// fillJobs creates n Jobs with 16 writers.
func fillJobs(ctx context.Context, t *testing.T, client versioned.Interface, ns string, n int) {
	t.Helper()
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, 16)
	for range 16 {
		wg.Go(func() {
			for i := next.Add(1) - 1; i < int64(n); i = next.Add(1) - 1 {
				job := &batchv1.Job{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%05d", i), Labels: map[string]string{"app": "snapshot-bench"}},
					Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
						RestartPolicy: corev1.RestartPolicyNever,
						Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"sh", "-c", "echo hello"}}},
					}}},
				}
				if _, err := client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{}); err != nil {
					errs <- fmt.Errorf("creating %s: %w", job.Name, err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
}

// timedRun runs bin with args and returns how long it took and what it
// printed.
func timedRun(t *testing.T, bin string, args ...string) (time.Duration, string) {
	t.Helper()
	start := time.Now()
	out, err := exec.Command(bin, args...).CombinedOutput()
	took := time.Since(start)
	if err != nil {
		t.Fatalf("%s %v: %v\n%s", bin, args, err, out)
	}
	return took, string(out)
}
