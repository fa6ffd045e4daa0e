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
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// EnvFaultsFull runs the fault tests at full size (make test-faults):
// more writers, longer load, several trials. Without it they run bounded,
// inside make test.
const EnvFaultsFull = "E2E_FAULTS_FULL"

// faultLoadSize is how hard and how long a fault test loads the server
// before the fault.
type faultLoadSize struct {
	writers int
	load    time.Duration
	trials  int
}

func faultSize() faultLoadSize {
	if os.Getenv(EnvFaultsFull) != "" {
		return faultLoadSize{writers: 16, load: 10 * time.Second, trials: 3}
	}
	return faultLoadSize{writers: 8, load: 2 * time.Second, trials: 1}
}

// faultManager is the managedBy of the Jobs the fault load writes: our
// controller leaves them alone, so only the load writes their status.
const faultManager = "faults.e2e.jobs.dev/writer"

// ackedWrites records what the server acknowledged (2xx) and what was
// attempted, per Job: the status.active value of the last acknowledged and
// of the last attempted status update (0 for the create alone).
type ackedWrites struct {
	mu        sync.Mutex
	acked     map[string]int32
	attempted map[string]int32
	creates   int
	updates   int
	failures  map[string]int
	// examples holds the first message of each failure kind but
	// connection errors, for the log.
	examples map[string]string
}

func newAckedWrites() *ackedWrites {
	return &ackedWrites{acked: map[string]int32{}, attempted: map[string]int32{}, failures: map[string]int{}, examples: map[string]string{}}
}

func (a *ackedWrites) attempt(name string, active int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.attempted[name] = active
}

func (a *ackedWrites) ack(name string, active int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if active == 0 {
		a.creates++
	} else {
		a.updates++
	}
	a.acked[name] = active
}

func (a *ackedWrites) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	reason := "connection"
	if status, ok := err.(apierrors.APIStatus); ok {
		reason = fmt.Sprint(status.Status().Code)
		if _, seen := a.examples[reason]; !seen {
			a.examples[reason] = status.Status().Message + " at " + time.Now().Format("15:04:05.000")
		}
	}
	a.failures[reason]++
}

// faultJob is the Job the load creates: small, valid, managed elsewhere.
func faultJob(name string) *batchv1.Job {
	managedBy := faultManager
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"e2e": "faults"}},
		Spec: batchv1.JobSpec{
			ManagedBy: &managedBy,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"true"}}},
			}},
		},
	}
}

// runFaultLoad runs writers until ctx is done: each creates a Job, then
// updates its status three times (active 1, 2, 3), then the next Job.
// Errors are expected once the fault strikes; each writer keeps going.
func runFaultLoad(ctx context.Context, client versioned.Interface, ns, prefix string, writers int, acked *ackedWrites) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			jobs := client.BatchV1().Jobs(ns)
			for n := 0; ctx.Err() == nil; n++ {
				name := fmt.Sprintf("%s-w%d-%d", prefix, w, n)
				acked.attempt(name, 0)
				job, err := jobs.Create(ctx, faultJob(name), metav1.CreateOptions{})
				if err != nil {
					acked.fail(err)
					time.Sleep(50 * time.Millisecond)
					continue
				}
				acked.ack(name, 0)
				now := metav1.Now()
				for active := int32(1); active <= 3 && ctx.Err() == nil; active++ {
					job.Status.StartTime = &now
					job.Status.Active = active
					acked.attempt(name, active)
					updated, err := jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
					if err != nil {
						acked.fail(err)
						break
					}
					acked.ack(name, active)
					job = updated
				}
			}
		}()
	}
	return &wg
}

// wantNoClientErrors fails the test when the server answered a write of the
// load with a 4xx: a server fault must never look like the client's error
// (wrong credentials, a missing Job).
func wantNoClientErrors(t *testing.T, acked *ackedWrites) {
	t.Helper()
	acked.mu.Lock()
	defer acked.mu.Unlock()
	for code, n := range acked.failures {
		if code[0] == '4' {
			t.Errorf("%d writes answered %s: %s", n, code, acked.examples[code])
		}
	}
}

// verifyAcked checks, after the fault and the restart, that every
// acknowledged create is there and that each Job's status holds its last
// acknowledged update or a later attempted one: never less.
func verifyAcked(t *testing.T, client versioned.Interface, ns, prefix string, acked *ackedWrites) (found int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing after the restart: %v", err)
	}
	stored := map[string]int32{}
	for _, j := range list.Items {
		stored[j.Name] = j.Status.Active
	}
	var lost []string
	for name, want := range acked.acked {
		got, ok := stored[name]
		switch {
		case !ok:
			lost = append(lost, name+": missing")
		case got < want || got > acked.attempted[name]:
			lost = append(lost, fmt.Sprintf("%s: status.active %d, acknowledged %d, last attempted %d", name, got, want, acked.attempted[name]))
		default:
			found++
		}
	}
	for name := range stored {
		// Earlier trials wrote in the same namespace under other prefixes.
		if !strings.HasPrefix(name, prefix) {
			continue
		}
		if _, ok := acked.attempted[name]; !ok {
			lost = append(lost, name+": stored but never written")
		}
	}
	sort.Strings(lost)
	if len(lost) > 0 {
		t.Errorf("%d acknowledged writes lost or wrong after the crash:\n%v", len(lost), lost)
	}
	return found
}

// crashUnderLoad loads the server behind client, calls crash while the
// load runs, stops the load, then restart; it returns the restart time.
func crashUnderLoad(t *testing.T, what string, client func() versioned.Interface, ns string, crash func(), restart func() time.Duration) {
	size := faultSize()
	for trial := range size.trials {
		acked := newAckedWrites()
		ctx, cancel := context.WithCancel(context.Background())
		wg := runFaultLoad(ctx, client(), ns, fmt.Sprintf("t%d", trial), size.writers, acked)
		time.Sleep(size.load)
		crash()
		// Writes in flight when the process died fail; give them a moment.
		time.Sleep(500 * time.Millisecond)
		cancel()
		wg.Wait()
		ready := restart()
		found := verifyAcked(t, client(), ns, fmt.Sprintf("t%d-", trial), acked)
		wantNoClientErrors(t, acked)
		t.Logf("%s trial %d: %d writers for %s, then SIGKILL: %d creates and %d status updates acknowledged (%d Jobs), %d found intact after the restart, failures during the crash by code %v; restart to ready %s; first message of each failure code %q",
			what, trial+1, size.writers, size.load, acked.creates, acked.updates, len(acked.acked), found, acked.failures, ready.Round(time.Millisecond), acked.examples)
		if acked.creates == 0 || acked.updates == 0 {
			t.Errorf("the load acknowledged %d creates and %d updates before the crash; the test proved nothing", acked.creates, acked.updates)
		}
	}
}

// TestCrashStandalone: SIGKILL the standalone server under concurrent
// creates and status updates, start it again on the same data dir: every
// acknowledged write is there with its acknowledged content.
func TestCrashStandalone(t *testing.T) {
	dir := t.TempDir()
	dataDir := filepath.Join(dir, "data")
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, err := framework.StartStandalone(ctx, bins.BatchAPIServer, dataDir, dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("standalone server log:\n%s", framework.Tail(s.Process.LogFile, 60))
		}
	})
	client := func() versioned.Interface {
		cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		return faultClient(t, cfg)
	}
	crashUnderLoad(t, "standalone", client, "default",
		func() { s.Process.Kill() },
		func() time.Duration {
			// The restarted server writes a kubeconfig for its new port;
			// StartStandalone waits for that one.
			if err := os.Remove(s.Kubeconfig); err != nil {
				t.Fatal(err)
			}
			start := time.Now()
			restarted, err := framework.StartStandalone(ctx, bins.BatchAPIServer, dataDir, dir)
			if err != nil {
				t.Fatalf("restarting on the same data dir: %v", err)
			}
			s = restarted
			return time.Since(start)
		})
}

// TestCrashAggregated: the same against the aggregated server on the
// cluster's etcd, writing to it directly.
func TestCrashAggregated(t *testing.T) {
	const ns = "e2e-crash"
	createNamespace(t, ns)
	client := func() versioned.Interface { return faultClient(t, cluster.BatchAdminConfig()) }
	crashUnderLoad(t, "aggregated", client, ns,
		func() { cluster.KillProcess(cluster.BatchAPIServer) },
		func() time.Duration {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			start := time.Now()
			if err := cluster.RestartBatchAPIServer(ctx); err != nil {
				t.Fatalf("restarting the aggregated server: %v", err)
			}
			return time.Since(start)
		})
}

// faultClient is a clientset for cfg without client-side throttling, whose
// requests fail fast once the server is gone.
func faultClient(t *testing.T, cfg *rest.Config) versioned.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1
	cfg.Timeout = 10 * time.Second
	c, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
