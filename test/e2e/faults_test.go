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
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

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

// verifyAcked checks, after the fault and the restart, that every
// acknowledged write is stored (framework.AckedWrites.Verify).
func verifyAcked(t *testing.T, client versioned.Interface, ns, prefix string, acked *framework.AckedWrites) (found int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	found, lost, err := acked.Verify(ctx, client, ns, prefix)
	if err != nil {
		t.Fatalf("after the restart: %v", err)
	}
	if len(lost) > 0 {
		t.Errorf("%d acknowledged writes lost or wrong after the crash:\n%v", len(lost), lost)
	}
	return found
}

// wantNoClientErrors fails the test when the server answered a write of the
// load with a 4xx.
func wantNoClientErrors(t *testing.T, acked *framework.AckedWrites) {
	t.Helper()
	for _, e := range acked.ClientErrors() {
		t.Error(e)
	}
}

// crashUnderLoad loads the server behind client, calls crash while the
// load runs, stops the load, then restart; it returns the restart time.
func crashUnderLoad(t *testing.T, what string, client func() versioned.Interface, ns string, crash func(), restart func() time.Duration) {
	size := faultSize()
	for trial := range size.trials {
		acked := framework.NewAckedWrites()
		ctx, cancel := context.WithCancel(context.Background())
		wg := framework.RunWriteLoad(ctx, client(), ns, fmt.Sprintf("t%d", trial), size.writers, acked)
		time.Sleep(size.load)
		crash()
		// Writes in flight when the process died fail; give them a moment.
		time.Sleep(500 * time.Millisecond)
		cancel()
		wg.Wait()
		ready := restart()
		found := verifyAcked(t, client(), ns, fmt.Sprintf("t%d-", trial), acked)
		wantNoClientErrors(t, acked)
		creates, updates := acked.Counts()
		failures, examples := acked.Failures()
		t.Logf("%s trial %d: %d writers for %s, then SIGKILL: %d creates and %d status updates acknowledged, %d Jobs found intact after the restart, failures during the crash by code %v; restart to ready %s; first message of each failure code %q",
			what, trial+1, size.writers, size.load, creates, updates, found, failures, ready.Round(time.Millisecond), examples)
		if creates == 0 || updates == 0 {
			t.Errorf("the load acknowledged %d creates and %d updates before the crash; the test proved nothing", creates, updates)
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
	c, err := framework.WriteLoadClient(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
