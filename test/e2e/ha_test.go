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
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// haLeaseName is the Lease the HA test's replicas compete for, apart from
// the cluster's own batch-apiserver.
const haLeaseName = "batch-apiserver-ha-test"

// TestHA runs a three-member etcd (one process per member) and two
// batch-apiserver replicas on it, loads both, then kills one etcd member
// and the replica leading the Job controller: the survivor keeps accepting
// writes, nothing acknowledged is lost, and the controller's leadership
// moves to the survivor within the lease.
func TestHA(t *testing.T) {
	const ns = "e2e-ha"
	createNamespace(t, ns)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	etcd, err := framework.StartEtcdCluster(ctx, t.TempDir(), cluster.LogDir, 3)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Stop)
	args := []string{
		"--etcd-servers=" + strings.Join(etcd.Endpoints, ","),
		"--etcd-prefix=/batch.jobs.dev-ha",
		"--leader-elect-resource-name=" + haLeaseName,
	}
	var replicas []*framework.BatchReplica
	for _, name := range []string{"ha-a", "ha-b"} {
		r, err := cluster.StartBatchReplica(ctx, name, args...)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cluster.StopProcess(r.Process) })
		replicas = append(replicas, r)
	}

	holderOf := func(ctx context.Context) string {
		lease, err := cluster.AdminClient.CoordinationV1().Leases(framework.Namespace).Get(ctx, haLeaseName, metav1.GetOptions{})
		if err != nil || lease.Spec.HolderIdentity == nil {
			return ""
		}
		return *lease.Spec.HolderIdentity
	}
	waitLeader := func(not string) (string, *framework.BatchReplica) {
		var holder string
		var leader *framework.BatchReplica
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, takeoverTimeout, true, func(ctx context.Context) (bool, error) {
			holder = holderOf(ctx)
			for _, r := range replicas {
				if holder != "" && holder != not && ledAs(t, r.Process, holder) {
					leader = r
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("Lease %s: waiting for a replica to lead (last holder %q): %v", haLeaseName, holder, err)
		}
		return holder, leader
	}
	firstHolder, leader := waitLeader("")
	survivor := replicas[0]
	if survivor == leader {
		survivor = replicas[1]
	}

	size := faultSize()
	acked := framework.NewAckedWrites()
	loadCtx, stopLoad := context.WithCancel(ctx)
	wgLeader := framework.RunWriteLoad(loadCtx, faultClient(t, leader.Config), ns, "leader", size.writers/2, acked)
	wgSurvivor := framework.RunWriteLoad(loadCtx, faultClient(t, survivor.Config), ns, "survivor", size.writers/2, acked)
	time.Sleep(size.load)

	etcd.Members[0].Kill()
	cluster.KillProcess(leader.Process)
	killed := time.Now()
	t.Logf("killed etcd member m0 and the leader at %s", killed.Format("15:04:05.000"))
	creates, updates := acked.Counts()
	atKill := creates + updates

	newHolder, newLeader := waitLeader(firstHolder)
	takeover := time.Since(killed)
	if newLeader != survivor {
		t.Errorf("the Lease went to %q, not to the surviving replica", newHolder)
	}
	if remaining := size.load - takeover; remaining > 0 {
		time.Sleep(remaining)
	}
	time.Sleep(time.Second)
	stopLoad()
	wgLeader.Wait()
	wgSurvivor.Wait()
	creates, updates = acked.Counts()
	afterKill := creates + updates - atKill
	if afterKill == 0 {
		t.Errorf("the surviving replica acknowledged no write after one etcd member and the other replica died")
	}
	found := verifyAcked(t, faultClient(t, survivor.Config), ns, "", acked)
	wantNoClientErrors(t, acked)
	failures, examples := acked.Failures()
	t.Logf("HA: 3 etcd members, 2 replicas, %d writers for %s; killed etcd member m0 and the leading replica: %d creates and %d status updates acknowledged in all (%d after the kill, by the survivor), %d Jobs found intact; failures %v; the survivor led the Job controller %s after the kill; first message of each failure code %q",
		size.writers, size.load, creates, updates, afterKill, found, failures, takeover.Round(time.Millisecond), examples)
}
