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
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"

	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// etcdTools returns etcdctl and etcdutl beside the host binaries, built by
// hack/build-etcd-tools.sh (cached) when they are not there yet.
func etcdTools(t *testing.T) (etcdctl, etcdutl string) {
	t.Helper()
	dir := filepath.Dir(bins.Kubectl)
	etcdctl, etcdutl = filepath.Join(dir, "etcdctl"), filepath.Join(dir, "etcdutl")
	_, errCtl := os.Stat(etcdctl)
	_, errUtl := os.Stat(etcdutl)
	if errCtl == nil && errUtl == nil {
		return etcdctl, etcdutl
	}
	start := time.Now()
	cmd := exec.Command("bash", filepath.Join(bins.RepoRoot, "hack", "build-etcd-tools.sh"))
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("building etcdctl and etcdutl: %v\n%s", err, out)
	}
	// The script builds into the repository's _output/bin.
	built := filepath.Join(bins.RepoRoot, "_output", "bin")
	t.Logf("built etcdctl and etcdutl in %s", time.Since(start).Round(time.Second))
	return filepath.Join(built, "etcdctl"), filepath.Join(built, "etcdutl")
}

// loopbackURL returns http://127.0.0.1:<a port free a moment ago>.
func loopbackURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return "http://" + l.Addr().String()
}

// startEtcdMember runs one etcd member (a copy of this test binary, as the
// HA tests run theirs) on spec and waits until it takes a write.
func startEtcdMember(ctx context.Context, t *testing.T, logDir, name string, spec framework.EtcdMemberSpec) *framework.Process {
	t.Helper()
	raw, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p, err := framework.StartProcessEnv(logDir, name, self, []string{framework.EnvEtcdMember + "=" + string(raw)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Stop)
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{spec.ClientURL}, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := p.Exited(); err != nil {
			return false, err
		}
		putCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		defer cancel()
		_, err := client.Put(putCtx, "/e2e-external-ready", "yes")
		return err == nil, nil
	}); err != nil {
		t.Fatalf("etcd member %s: %v\n%s", name, err, framework.Tail(p.LogFile, 20))
	}
	return p
}

// TestExternalEtcdBackupRestore follows docs/operations.md for an
// aggregated server on an external etcd, with etcdctl and etcdutl of the
// etcd release the server embeds: `etcdctl snapshot save` while writers
// create Jobs through the server, then `etcdutl snapshot restore
// --bump-revision --mark-compacted` into a new member, and a server on
// it: every create acknowledged before the save is back with its UID,
// nothing else is, resourceVersions go on above the old ones, and a watch
// from an old one gets 410 Gone.
func TestExternalEtcdBackupRestore(t *testing.T) {
	etcdctl, etcdutl := etcdTools(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	dir := t.TempDir()
	const ns = "e2e-external-restore"
	createNamespace(t, ns)

	oldPeer := loopbackURL(t)
	oldMember := framework.EtcdMemberSpec{Name: "m0", Dir: filepath.Join(dir, "m0"), ClientURL: loopbackURL(t), PeerURL: oldPeer, InitialCluster: "m0=" + oldPeer}
	oldEtcd := startEtcdMember(ctx, t, dir, "etcd-old", oldMember)
	// The controller stays off: these servers only store.
	old, err := cluster.StartBatchReplica(ctx, "batch-external-old", "--etcd-servers="+oldMember.ClientURL, "--controllers=-job")
	if err != nil {
		t.Fatal(err)
	}
	client := externalClient(t, old.Config)

	// Writers create Jobs; each acknowledged create is recorded with
	// whether its answer came before the save was called.
	const (
		before = iota
		during
		after
	)
	var phase atomic.Int32
	var stop atomic.Bool
	var mu sync.Mutex
	acked := map[int32]map[string]types.UID{before: {}, during: {}, after: {}}
	attempted := map[string]bool{}
	var lastRV int64
	var errs []error
	count := func(p int32) int {
		mu.Lock()
		defer mu.Unlock()
		return len(acked[p])
	}
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Go(func() {
			for n := 0; n < 300 && !stop.Load(); n++ {
				// The write load's Job: managed elsewhere, so no
				// controller acts on it.
				job := framework.WriteLoadJob(fmt.Sprintf("w%d-%d", w, n))
				mu.Lock()
				attempted[job.Name] = true
				mu.Unlock()
				created, err := client.BatchV1().Jobs(ns).Create(ctx, job, metav1.CreateOptions{})
				p := phase.Load()
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					acked[p][created.Name] = created.UID
					rv, _ := strconv.ParseInt(created.ResourceVersion, 10, 64)
					lastRV = max(lastRV, rv)
				}
				mu.Unlock()
			}
		})
	}
	defer wg.Wait()
	defer stop.Store(true)
	waitCount := func(p int32, n int) {
		t.Helper()
		if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
			return count(p) >= n, nil
		}); err != nil {
			t.Fatalf("waiting for %d creates in phase %d (have %d): %v", n, p, count(p), err)
		}
	}
	waitCount(before, 20)
	file := filepath.Join(dir, "etcd.db")
	phase.Store(during)
	out, err := exec.CommandContext(ctx, etcdctl, "--endpoints", oldMember.ClientURL, "snapshot", "save", file).CombinedOutput()
	phase.Store(after)
	if err != nil {
		t.Fatalf("etcdctl snapshot save: %v\n%s", err, out)
	}
	waitCount(after, 10)
	stop.Store(true)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("creates failed during the save: %v", errs)
	}
	cluster.StopProcess(old.Process)
	oldEtcd.Stop()

	// The restore, as docs/operations.md writes it, into a new member.
	newPeer := loopbackURL(t)
	newMember := framework.EtcdMemberSpec{Name: "m0", Dir: filepath.Join(dir, "m0-restored"), ClientURL: loopbackURL(t), PeerURL: newPeer, InitialCluster: "m0=" + newPeer}
	const bump = 1000000000
	if out, err := exec.CommandContext(ctx, etcdutl, "snapshot", "restore", file,
		"--name", newMember.Name, "--initial-cluster", newMember.InitialCluster, "--initial-advertise-peer-urls", newPeer,
		"--initial-cluster-token", "e2e-ha", "--bump-revision", strconv.Itoa(bump), "--mark-compacted",
		"--data-dir", newMember.Dir).CombinedOutput(); err != nil {
		t.Fatalf("etcdutl snapshot restore: %v\n%s", err, out)
	}
	startEtcdMember(ctx, t, dir, "etcd-restored", newMember)
	restored, err := cluster.StartBatchReplica(ctx, "batch-external-restored", "--etcd-servers="+newMember.ClientURL, "--controllers=-job")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cluster.StopProcess(restored.Process) })
	client = externalClient(t, restored.Config)

	list, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]types.UID{}
	var phantoms []string
	for _, j := range list.Items {
		if !attempted[j.Name] {
			phantoms = append(phantoms, j.Name)
		}
		if _, ok := acked[before][j.Name]; ok {
			found[j.Name] = j.UID
		}
	}
	if len(phantoms) > 0 {
		t.Errorf("Jobs nobody created after the restore: %v", phantoms)
	}
	if diff := cmp.Diff(acked[before], found); diff != "" {
		t.Errorf("creates acknowledged before the save, after the restore (-acknowledged +restored):\n%s", diff)
	}
	fresh, err := client.BatchV1().Jobs(ns).Create(ctx, framework.WriteLoadJob("after-restore"), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rv, _ := strconv.ParseInt(fresh.ResourceVersion, 10, 64); rv <= lastRV {
		t.Errorf("a create after the restore got resourceVersion %d, want above %d, the old server's last", rv, lastRV)
	}
	w, err := client.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: strconv.FormatInt(lastRV, 10)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var got []any
	select {
	case ev := <-w.ResultChan():
		got = []any{ev.Type}
		if status, ok := ev.Object.(*metav1.Status); ok {
			got = append(got, status.Code, status.Reason)
		}
	case <-ctx.Done():
		t.Fatal("no event on a watch from an old resourceVersion")
	}
	if diff := cmp.Diff([]any{watch.Error, int32(http.StatusGone), metav1.StatusReasonExpired}, got); diff != "" {
		t.Errorf("watch from resourceVersion %d of the old etcd (-want +got):\n%s", lastRV, diff)
	}
	t.Logf("external etcd: %d creates acknowledged before etcdctl snapshot save (%d found after etcdutl restore), %d during, %d after; last old resourceVersion %d, first new %s",
		len(acked[before]), len(found), len(acked[during]), len(acked[after]), lastRV, fresh.ResourceVersion)
}

// externalClient is a clientset of cfg without client-side throttling.
func externalClient(t *testing.T, cfg *rest.Config) versioned.Interface {
	t.Helper()
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1
	c, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c
}
