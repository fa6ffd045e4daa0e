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
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// jobControllerLease is the Lease the embedded Job controller's replicas
// compete for, in framework.Namespace (POD_NAMESPACE): named after the
// server identity, which the replica behind the APIServices logged at
// startup (every replica on the cluster's etcd shares it).
func jobControllerLease(t testing.TB) string {
	t.Helper()
	data, err := os.ReadFile(cluster.BatchAPIServer.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	m := identityLogRE.FindSubmatch(data)
	if m == nil {
		t.Fatalf("%s logged no server identity (%s)", cluster.BatchAPIServer.LogFile, identityLogRE)
	}
	return "batch-apiserver-job-controller-" + string(m[1])
}

// takeoverTimeout bounds how long a follower needs to take a dead leader's
// Lease: the lease duration the harness sets (8s) and a few retry periods.
const takeoverTimeout = time.Minute

// leaseHolder returns the holder identity of the Lease leaseName ("" when
// there is none).
func leaseHolder(ctx context.Context, client kubernetes.Interface, leaseName string) (string, error) {
	lease, err := client.CoordinationV1().Leases(framework.Namespace).Get(ctx, leaseName, metav1.GetOptions{})
	if err != nil {
		return "", err
	}
	if lease.Spec.HolderIdentity == nil {
		return "", nil
	}
	return *lease.Spec.HolderIdentity, nil
}

// waitLeaseHolder waits until the Job controller's Lease is held by
// someone for whom ok is true and returns the holder.
func waitLeaseHolder(t *testing.T, what string, ok func(holder string) bool) string {
	t.Helper()
	leaseName := jobControllerLease(t)
	var holder, last string
	err := wait.PollUntilContextTimeout(context.Background(), 250*time.Millisecond, takeoverTimeout, true, func(ctx context.Context) (bool, error) {
		h, err := leaseHolder(ctx, cluster.AdminClient, leaseName)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		holder, last = h, "holder "+h
		return h != "" && ok(h), nil
	})
	if err != nil {
		t.Fatalf("Lease %s/%s: waiting for %s: %v (last: %s)", framework.Namespace, leaseName, what, err, last)
	}
	return holder
}

// leadingLog is what batch-apiserver logs, with its identity, when it
// wins the Lease and starts the Job controller.
const leadingLog = `"Leading: starting the Job controller"`

// ledAs says whether p's log says it took the Lease as holder (identities
// are unique per process, so an earlier run in the same log file does not
// count).
func ledAs(t *testing.T, p *framework.Process, holder string) bool {
	t.Helper()
	data, err := os.ReadFile(p.LogFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, leadingLog) && strings.Contains(line, `identity="`+holder+`"`) {
			return true
		}
	}
	return false
}

// TestJobControllerLeaderElection runs a second batch-apiserver: only the
// leader creates Pods; when the leader dies, the other takes the Lease and
// runs new Jobs. It kills the replica behind the APIServices, so it does
// not run in parallel with anything, and restarts it at the end.
func TestJobControllerLeaderElection(t *testing.T) {
	skipWithoutOurController(t)
	ctx := context.Background()
	ctl := controllers[1]
	if ctl.api != framework.OurJobs {
		t.Fatal("controllers[1] is not batch-apiserver")
	}

	// The replica behind the APIServices started long ago: it leads. (Its
	// log may hold earlier runs of the package with -count; what counts is
	// that the Lease has a holder and the second replica does not take it.)
	firstHolder := waitLeaseHolder(t, "a holder", func(string) bool { return true })
	main := cluster.BatchAPIServer
	if !ledAs(t, main, firstHolder) {
		t.Fatalf("the Lease is held by %q but %s never logged %s with that identity", firstHolder, main.LogFile, leadingLog)
	}

	second, err := cluster.StartBatchReplica(ctx, "batch-apiserver-2")
	if err != nil {
		t.Fatal(err)
	}
	secondHolder := ""
	defer func() {
		if main.Exited() == nil {
			// The main replica still runs; stop the second one.
			cluster.StopProcess(second.Process)
			return
		}
		// The main replica was killed: bring it back for the tests after
		// this one, then stop the second one so that it gives the Lease
		// back.
		if err := cluster.RestartBatchAPIServer(ctx); err != nil {
			t.Fatalf("restarting batch-apiserver: %v", err)
		}
		cluster.StopProcess(second.Process)
		waitLeaseHolder(t, "the restarted replica to lead", func(h string) bool { return ledAs(t, cluster.BatchAPIServer, h) })
	}()
	r := newJobRun(t, ctl, "leader")
	r.name = "before"
	r.create(newJob(2, 2))
	r.activePods(2)
	// Both replicas see the Job; only the leader acts on it, so there are
	// never more than two Pods.
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, quietPeriod, true, func(ctx context.Context) (bool, error) {
		pods, err := framework.JobPods(ctx, r.client, r.jobs.Namespace, r.name)
		if err != nil {
			return false, err
		}
		if len(pods) != 2 {
			return false, fmt.Errorf("%d pods for parallelism 2 with two replicas: %s", len(pods), framework.DescribePods(pods))
		}
		return false, nil
	})
	if !wait.Interrupted(err) {
		t.Fatal(err)
	}
	if h, err := leaseHolder(ctx, cluster.AdminClient, jobControllerLease(t)); err != nil || h != firstHolder {
		t.Fatalf("the Lease holder changed to %q (%v) when the second replica started, want %q", h, err, firstHolder)
	}
	if data, err := os.ReadFile(second.LogFile); err != nil || strings.Contains(string(data), leadingLog) {
		t.Fatalf("the second replica started the Job controller while the first leads (%v); log %s", err, second.LogFile)
	}

	// The leader dies without releasing the Lease.
	cluster.KillProcess(main)
	secondHolder = waitLeaseHolder(t, "another holder", func(h string) bool { return h != firstHolder })
	if !ledAs(t, second.Process, secondHolder) {
		t.Fatalf("the Lease went to %q but the second replica never logged %s with that identity", secondHolder, leadingLog)
	}

	// The aggregator's backend is gone: talk to the new leader directly.
	dyn, err := dynamic.NewForConfig(second.Config)
	if err != nil {
		t.Fatal(err)
	}
	r.jobs = framework.Jobs{API: ctl.api, Client: dyn, Namespace: r.jobs.Namespace}
	r.name = "after"
	r.create(newJob(1, 1))
	r.succeed(r.activePods(1)...)
	job := r.waitCondition(batchv1.JobComplete)
	r.wantFinished(job, batchv1.JobComplete, "CompletionsReached")
}
