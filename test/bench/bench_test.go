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

// Package bench is the side-by-side load generator of `make bench`:
// kube-apiserver 1.37.2 and batch-apiserver (aggregated on the same etcd,
// and standalone) under the same load, in one run, with ratios. It runs
// only with BENCH=1; no test here asserts a time.
package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	kubescheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	ourscheme "github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned/scheme"
	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// EnvBench turns the benchmark on; EnvBenchScale scales its counts (1 is
// the sizes: 3000 operations per phase, 10 000 Jobs stored).
const (
	EnvBench      = "BENCH"
	EnvBenchScale = "BENCH_SCALE"
	EnvBenchOut   = "BENCH_OUT"
	// EnvBenchProfile names a directory: the benchmark then also takes a
	// CPU profile of each server under creates, status updates and full
	// LISTs (not timed) and writes it there.
	EnvBenchProfile = "BENCH_PROFILE"
	// EnvBenchOurFormats set to "json" leaves out protobuf for
	// batch-apiserver (for builds from before it served protobuf).
	EnvBenchOurFormats = "BENCH_OUR_FORMATS"
	// EnvBenchServers limits the run to some servers, a comma-separated
	// list of kube, aggregated and standalone (all three when unset); raw
	// etcd runs with kube or aggregated. For quick runs while profiling:
	// the ratios need kube.
	EnvBenchServers = "BENCH_SERVERS"
)

const (
	jsonType     = "application/json"
	protobufType = "application/vnd.kubernetes.protobuf"
)

var scheme = struct{ upstream, ours runtime.Decoder }{
	upstream: kubescheme.Codecs.UniversalDeserializer(),
	ours:     ourscheme.Codecs.UniversalDeserializer(),
}

func TestMain(m *testing.M) {
	// The benchmark's etcd is a copy of this binary.
	if ran, code := framework.RunEtcdMemberIfAsked(); ran {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// server is a process (or two: the server and its etcd) whose CPU and
// memory the benchmark reads.
type server struct {
	name    string
	targets map[string]target // by wire format
	pids    []int             // CPU counted for this server (server, and etcd when separate)
	rssPID  int
}

func (s *server) cpu(t *testing.T) float64 {
	var total float64
	for _, pid := range s.pids {
		c, err := framework.ProcessCPUSeconds(pid)
		if err != nil {
			t.Fatalf("CPU of %s (pid %d): %v", s.name, pid, err)
		}
		total += c
	}
	return total
}

func rssMiB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			kb, _ := strconv.ParseFloat(strings.Fields(line)[1], 64)
			return kb / 1024
		}
	}
	return 0
}

// result is one figure of one row (server, format).
type result struct {
	Server string  `json:"server"`
	Format string  `json:"format"`
	Metric string  `json:"metric"`
	Value  float64 `json:"value"`
	Unit   string  `json:"unit"`
}

type results struct {
	mu   sync.Mutex
	rows []result
}

func (r *results) add(server, format, metric string, value float64, unit string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.rows = append(r.rows, result{server, format, metric, value, unit})
}

func (r *results) get(server, format, metric string) (float64, bool) {
	for _, row := range r.rows {
		if row.Server == server && row.Format == format && row.Metric == metric {
			return row.Value, true
		}
	}
	return 0, false
}

// run runs op for n items at concurrency c and returns the throughput
// (ops/s), p50 and p99 latencies and the number of errors.
func run(ctx context.Context, n, c int, op func(ctx context.Context, i int) error) (float64, time.Duration, time.Duration, int, error) {
	var next, errs atomic.Int64
	var firstErr atomic.Pointer[error]
	lat := make([]time.Duration, n)
	var wg sync.WaitGroup
	start := time.Now()
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				t0 := time.Now()
				if err := op(ctx, i); err != nil {
					errs.Add(1)
					firstErr.CompareAndSwap(nil, &err)
				}
				lat[i] = time.Since(t0)
			}
		}()
	}
	wg.Wait()
	wall := time.Since(start)
	sort.Slice(lat, func(a, b int) bool { return lat[a] < lat[b] })
	var first error
	if p := firstErr.Load(); p != nil {
		first = *p
	}
	return float64(n) / wall.Seconds(), lat[n/2], lat[n*99/100], int(errs.Load()), first
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	return s[len(s)/2]
}

func TestSideBySide(t *testing.T) {
	if os.Getenv(EnvBench) == "" {
		t.Skipf("the side-by-side benchmark runs with %s=1 (make bench)", EnvBench)
	}
	scale := 1.0
	if v := os.Getenv(EnvBenchScale); v != "" {
		scale, _ = strconv.ParseFloat(v, 64)
	}
	n := int(3000 * scale)
	stored := int(10000 * scale)
	ctx, cancel := context.WithTimeout(context.Background(), 40*time.Minute)
	// Cleanups run last to first: the servers stop before this cancels.
	t.Cleanup(cancel)
	dir := t.TempDir()
	bins, err := framework.FindBinaries(dir)
	if err != nil {
		t.Fatal(err)
	}

	wanted := map[string]bool{"kube": true, "aggregated": true, "standalone": true}
	if v := os.Getenv(EnvBenchServers); v != "" {
		wanted = map[string]bool{}
		for _, name := range strings.Split(v, ",") {
			wanted[strings.TrimSpace(name)] = true
		}
	}
	res := &results{}
	var servers []*server
	if wanted["kube"] || wanted["aggregated"] {
		servers = append(servers, startSharedEtcdServers(ctx, t, dir, bins, res, n, wanted)...)
	}
	if wanted["standalone"] {
		servers = append(servers, startStandaloneServer(ctx, t, dir, bins, res))
	}
	// Every server goes through its formats in the same order (JSON,
	// then protobuf): the servers' i-th formats are loaded together.
	var loads [][]*load
	for _, s := range servers {
		formats := make([]string, 0, len(s.targets))
		for f := range s.targets {
			formats = append(formats, f)
		}
		sort.Strings(formats)
		for fi, format := range formats {
			for len(loads) <= fi {
				loads = append(loads, nil)
			}
			label := map[string]string{jsonType: "JSON", protobufType: "protobuf"}[format]
			loads[fi] = append(loads[fi], &load{s: s, label: label, tg: s.targets[format], ns: benchNamespace(s, fi), first: fi == 0})
		}
	}
	for _, group := range loads {
		loadTogether(ctx, t, res, group, n, stored)
	}
	report(t, res)
}

// ourFormats are the wire formats batch-apiserver is measured in.
func ourFormats() []string {
	// BENCH_OUR_FORMATS=json measures a build that serves JSON only.
	if os.Getenv(EnvBenchOurFormats) == "json" {
		return []string{jsonType}
	}
	return []string{jsonType, protobufType}
}

// startSharedEtcdServers starts one etcd, kube-apiserver and the
// aggregated server on it, measures raw etcd puts and returns the wanted
// servers of the two. Everything stops when the test ends.
func startSharedEtcdServers(ctx context.Context, t *testing.T, dir string, bins *framework.Binaries, res *results, n int, wanted map[string]bool) []*server {
	// A production etcd: fsync on (as in the standalone server's embedded
	// member), room for every server's Jobs.
	etcd, err := framework.StartEtcdClusterWith(ctx, filepath.Join(dir, "etcd"), dir, 1,
		framework.EtcdClusterOptions{Fsync: true, QuotaBackendBytes: 8 << 30})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Stop)
	// The aggregated server only serves here; its controller stays off.
	t.Setenv("E2E_BATCH_CONTROLLERS", "-job")
	cluster, err := framework.StartClusterWith(ctx, bins, filepath.Join(dir, "cluster"),
		framework.ClusterOptions{EtcdEndpoints: etcd.Endpoints, NoControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Stop)
	etcdPID := etcd.Members[0].PID()
	var servers []*server
	if wanted["kube"] {
		kube := &server{name: "kube-apiserver", targets: map[string]target{}, pids: []int{cluster.KubeAPIServer.PID(), etcdPID}, rssPID: cluster.KubeAPIServer.PID()}
		for _, ct := range []string{protobufType, jsonType} {
			if kube.targets[ct], err = newUpstreamTarget(cluster.Admin, ct); err != nil {
				t.Fatal(err)
			}
		}
		servers = append(servers, kube)
	}
	if wanted["aggregated"] {
		agg := &server{name: "batch-apiserver aggregated", targets: map[string]target{}, pids: []int{cluster.BatchAPIServer.PID(), etcdPID}, rssPID: cluster.BatchAPIServer.PID()}
		for _, ct := range ourFormats() {
			if agg.targets[ct], err = newOurTarget(cluster.BatchAdminConfig(), ct); err != nil {
				t.Fatal(err)
			}
		}
		servers = append(servers, agg)
	}

	// kube-apiserver and the aggregated server (through its namespace
	// informer) admit Jobs only into namespaces that exist.
	admin, err := kubernetes.NewForConfig(cluster.Admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range servers {
		for fi := 0; fi < len(s.targets); fi++ {
			ns := benchNamespace(s, fi)
			if _, err := admin.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The aggregated server learns of them through its informer.
	time.Sleep(2 * time.Second)

	rawEtcd(ctx, t, res, etcd.Endpoints, n, etcdPID)
	return servers
}

// startStandaloneServer starts the standalone server on an empty data dir
// and records its start to ready; it stops when the test ends.
func startStandaloneServer(ctx context.Context, t *testing.T, dir string, bins *framework.Binaries, res *results) *server {
	startStandalone := time.Now()
	standalone, err := framework.StartStandalone(ctx, bins.BatchAPIServer, filepath.Join(dir, "standalone"), dir)
	if err != nil {
		t.Fatal(err)
	}
	res.add("batch-apiserver standalone", "-", "start to ready (empty data dir)", time.Since(startStandalone).Seconds()*1000, "ms")
	t.Cleanup(standalone.Stop)
	saCfg, err := clientcmd.BuildConfigFromFlags("", standalone.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	sa := &server{name: "batch-apiserver standalone", targets: map[string]target{}, pids: []int{standalone.Process.PID()}, rssPID: standalone.Process.PID()}
	for _, ct := range ourFormats() {
		if sa.targets[ct], err = newOurTarget(saCfg, ct); err != nil {
			t.Fatal(err)
		}
	}
	return sa
}

// rawEtcd puts n values of a Job's encoded size at concurrency 32 straight
// into etcd: the physical limit for writes.
func rawEtcd(ctx context.Context, t *testing.T, res *results, endpoints []string, n, pid int) {
	client, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 10 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	value, err := json.Marshal(benchJob("raw-etcd-value-of-a-job"))
	if err != nil {
		t.Fatal(err)
	}
	cpu0, _ := framework.ProcessCPUSeconds(pid)
	thr, p50, p99, errs, first := run(ctx, n, 32, func(ctx context.Context, i int) error {
		_, err := client.Put(ctx, fmt.Sprintf("/bench-raw/%d", i), string(value))
		return err
	})
	cpu1, _ := framework.ProcessCPUSeconds(pid)
	res.add("raw etcd", "put", "create c=32", thr, "ops/s")
	res.add("raw etcd", "put", "create c=32 p50", p50.Seconds()*1000, "ms")
	res.add("raw etcd", "put", "create c=32 p99", p99.Seconds()*1000, "ms")
	res.add("raw etcd", "put", "CPU per 1000 create c=32", (cpu1-cpu0)/float64(n)*1000, "s")
	if errs > 0 {
		t.Errorf("raw etcd: %d errors, the first: %v", errs, first)
	}
}

// load is one server in one wire format, with its namespace.
type load struct {
	s     *server
	label string
	tg    target
	ns    string
	// first is true for the server's first format, which measures its
	// memory.
	first bool
}

// loadTogether runs every phase against the loads of one format of each
// server. The timed phases take turns: each of their three repeats (a
// third of the items each) runs on every server before the next repeat,
// so that a slow spell of this shared machine falls on every server
// rather than on one; the median of a server's repeats counts. The loads
// are then filled to stored Jobs: memory (first format), LISTs (taking
// turns too), then watch fan-out one load at a time.
func loadTogether(ctx context.Context, t *testing.T, res *results, loads []*load, n, stored int) {
	// phase measures op on the Jobs named <prefix>-<i>.
	phase := func(metric string, count, c int, prefix string, op func(tg target, ctx context.Context, ns, name string) error) {
		type figures struct{ thr, p50s, p99s, cpus []float64 }
		got := make([]figures, len(loads))
		per := count / 3
		for rep := range 3 {
			for li, l := range loads {
				cpu0 := l.s.cpu(t)
				th, p50, p99, errs, first := run(ctx, per, c, func(ctx context.Context, i int) error {
					return op(l.tg, ctx, l.ns, fmt.Sprintf("%s-%d", prefix, rep*per+i))
				})
				f := &got[li]
				f.cpus = append(f.cpus, (l.s.cpu(t)-cpu0)/float64(per)*1000)
				f.thr, f.p50s, f.p99s = append(f.thr, th), append(f.p50s, p50.Seconds()*1000), append(f.p99s, p99.Seconds()*1000)
				if errs > 0 {
					t.Errorf("%s %s %s: %d of %d failed, the first: %v", l.s.name, l.label, metric, errs, per, first)
				}
			}
		}
		for li, l := range loads {
			f := got[li]
			res.add(l.s.name, l.label, metric, median(f.thr), "ops/s")
			res.add(l.s.name, l.label, metric+" p50", median(f.p50s), "ms")
			res.add(l.s.name, l.label, metric+" p99", median(f.p99s), "ms")
			res.add(l.s.name, l.label, "CPU per 1000 "+metric, median(f.cpus), "s")
		}
	}
	one := n / 10
	phase("create c=1", one, 1, "s", target.create)
	phase("create c=32", n, 32, "c", target.create)
	phase("get c=1", one, 1, "s", target.get)
	phase("get c=32", n, 32, "c", target.get)
	phase("update-status c=1", one, 1, "s", target.updateStatus)
	phase("update-status c=32", n, 32, "c", target.updateStatus)

	// Fill each load to stored Jobs (untimed); the memory of a server is
	// measured on its first format, when it holds stored Jobs.
	for _, l := range loads {
		fill(ctx, t, l, stored-n-one)
	}
	for _, l := range loads {
		if l.first {
			res.add(l.s.name, "-", fmt.Sprintf("RSS with %d Jobs", stored), rssMiB(l.s.rssPID), "MiB")
		}
	}
	listTogether(ctx, t, res, loads, stored)
	for _, l := range loads {
		watchFanOut(ctx, t, res, l.s, l.label, l.tg, l.ns, n/6)
		if dir := os.Getenv(EnvBenchProfile); dir != "" {
			profile(ctx, t, dir, l.s, l.label, l.tg, l.ns)
		}
	}

	phase("delete c=32", n, 32, "c", target.delete)
	phase("delete c=1", one, 1, "s", target.delete)
}

// fill creates count more Jobs in l's namespace at concurrency 32, untimed.
func fill(ctx context.Context, t *testing.T, l *load, count int) {
	if _, _, _, errs, first := run(ctx, count, 32, func(ctx context.Context, i int) error { return l.tg.create(ctx, l.ns, fmt.Sprintf("f-%d", i)) }); errs > 0 {
		t.Errorf("%s %s: %d fill creates failed, the first: %v", l.s.name, l.label, errs, first)
	}
}

// listTogether measures full and paginated (500) LISTs of every load's
// stored Jobs, three times, taking turns as the timed phases do.
func listTogether(ctx context.Context, t *testing.T, res *results, loads []*load, stored int) {
	full, paged := make([][]float64, len(loads)), make([][]float64, len(loads))
	fullBytes, pagedBytes := make([]int, len(loads)), make([]int, len(loads))
	for range 3 {
		for li, l := range loads {
			t0 := time.Now()
			b, _, err := l.tg.list(ctx, l.ns, 0, "")
			if err != nil {
				t.Errorf("%s %s full LIST: %v", l.s.name, l.label, err)
			}
			full[li], fullBytes[li] = append(full[li], time.Since(t0).Seconds()*1000), b
			t0 = time.Now()
			total, cont := 0, ""
			for {
				b, next, err := l.tg.list(ctx, l.ns, 500, cont)
				if err != nil {
					t.Errorf("%s %s paginated LIST: %v", l.s.name, l.label, err)
					break
				}
				total += b
				if cont = next; cont == "" {
					break
				}
			}
			paged[li], pagedBytes[li] = append(paged[li], time.Since(t0).Seconds()*1000), total
		}
	}
	for li, l := range loads {
		res.add(l.s.name, l.label, fmt.Sprintf("full LIST of %d", stored), median(full[li]), "ms")
		res.add(l.s.name, l.label, fmt.Sprintf("full LIST of %d bytes", stored), float64(fullBytes[li])/1024/1024, "MiB")
		res.add(l.s.name, l.label, fmt.Sprintf("paginated LIST of %d (limit 500)", stored), median(paged[li]), "ms")
		res.add(l.s.name, l.label, fmt.Sprintf("paginated LIST of %d bytes", stored), float64(pagedBytes[li])/1024/1024, "MiB")
	}
}

// benchNamespace is the namespace of the formatIndex-th format of s.
func benchNamespace(s *server, formatIndex int) string {
	return fmt.Sprintf("bench-%s-%d", strings.ReplaceAll(s.name, " ", "-"), formatIndex)
}

// watchFanOut opens 50 watchers, creates burst Jobs at concurrency 32 and
// counts what each watcher got: lost and duplicated events, delivery lag.
func watchFanOut(ctx context.Context, t *testing.T, res *results, s *server, label string, tg target, ns string, burst int) {
	const watchers = 50
	rv, err := tg.resourceVersion(ctx, ns)
	if err != nil {
		t.Errorf("%s %s: %v", s.name, label, err)
		return
	}
	wctx, stop := context.WithCancel(ctx)
	defer stop()
	chans := make([]chan string, watchers)
	for i := range chans {
		chans[i] = make(chan string, burst+10)
		if err := tg.watch(wctx, ns, rv, chans[i]); err != nil {
			t.Errorf("%s %s watcher %d: %v", s.name, label, i, err)
			return
		}
	}
	var mu sync.Mutex
	acked := map[string]time.Time{}
	var lags []float64
	var lost, dup atomic.Int64
	var wg sync.WaitGroup
	done := make(chan struct{})
	// Closed when creates failed: the watchers wait for nothing more.
	abort := make(chan struct{})
	for _, ch := range chans {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seen := map[string]bool{}
			deadline := time.After(2 * time.Minute)
			for len(seen) < burst {
				select {
				case name := <-ch:
					at := time.Now()
					if seen[name] {
						dup.Add(1)
						continue
					}
					seen[name] = true
					mu.Lock()
					if t0, ok := acked[name]; ok {
						lags = append(lags, at.Sub(t0).Seconds()*1000)
					}
					mu.Unlock()
				case <-deadline:
					lost.Add(int64(burst - len(seen)))
					return
				case <-abort:
					return
				}
			}
			// A duplicate would come right after.
			select {
			case <-ch:
				dup.Add(1)
			case <-time.After(500 * time.Millisecond):
			}
		}()
	}
	_, _, _, errs, first := run(ctx, burst, 32, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("w-%d", i)
		err := tg.create(ctx, ns, name)
		if err == nil {
			mu.Lock()
			acked[name] = time.Now()
			mu.Unlock()
		}
		return err
	})
	if errs > 0 {
		close(abort)
	}
	go func() { wg.Wait(); close(done) }()
	<-done
	if errs > 0 {
		t.Errorf("%s %s: %d watch burst creates failed, the first: %v", s.name, label, errs, first)
	}
	sort.Float64s(lags)
	p99 := 0.0
	if len(lags) > 0 {
		p99 = lags[len(lags)*99/100]
	}
	res.add(s.name, label, fmt.Sprintf("watch fan-out (%d watchers, %d creates) lost", watchers, burst), float64(lost.Load()), "events")
	res.add(s.name, label, fmt.Sprintf("watch fan-out (%d watchers, %d creates) duplicated", watchers, burst), float64(dup.Load()), "events")
	res.add(s.name, label, fmt.Sprintf("watch fan-out (%d watchers, %d creates) lag p99", watchers, burst), p99, "ms")
	if lost.Load() > 0 || dup.Load() > 0 {
		t.Errorf("%s %s watch fan-out: %d events lost, %d duplicated", s.name, label, lost.Load(), dup.Load())
	}
}

// report prints one table with the ratios ours ÷ kube-apiserver (its
// fastest format for the metric) and ours ÷ raw etcd, and writes the
// figures as JSON.
func report(t *testing.T, res *results) {
	var metrics []string
	seen := map[string]bool{}
	for _, r := range res.rows {
		if !seen[r.Metric] {
			seen[r.Metric] = true
			metrics = append(metrics, r.Metric)
		}
	}
	type column struct{ header, server, format string }
	cols := []column{
		{"kube proto", "kube-apiserver", "protobuf"}, {"kube JSON", "kube-apiserver", "JSON"},
		{"agg proto", "batch-apiserver aggregated", "protobuf"}, {"agg JSON", "batch-apiserver aggregated", "JSON"},
		{"sa proto", "batch-apiserver standalone", "protobuf"}, {"sa JSON", "batch-apiserver standalone", "JSON"},
		{"raw etcd", "raw etcd", "put"},
	}
	higherIsBetter := func(m string) bool {
		return !strings.Contains(m, " p") && !strings.Contains(m, "CPU") && !strings.Contains(m, "LIST") && !strings.Contains(m, "RSS") && !strings.Contains(m, "start") && !strings.Contains(m, "lost") && !strings.Contains(m, "dup") && !strings.Contains(m, "lag")
	}
	// best is a server's best figure for m over its formats ("-" is a
	// figure of the server, not of a format).
	best := func(m, server string) (float64, bool) {
		v, found := 0.0, false
		for _, format := range []string{"protobuf", "JSON", "-"} {
			x, ok := res.get(server, format, m)
			if ok && (!found || (higherIsBetter(m) && x > v) || (!higherIsBetter(m) && x < v)) {
				v, found = x, true
			}
		}
		return v, found
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\n%-56s", "metric")
	for _, c := range cols {
		fmt.Fprintf(&b, " %11s", c.header)
	}
	fmt.Fprintf(&b, " %8s %8s\n", "sa÷kube", "sa÷etcd")
	for _, m := range metrics {
		unit := ""
		for _, r := range res.rows {
			if r.Metric == m {
				unit = r.Unit
			}
		}
		fmt.Fprintf(&b, "%-56s", m+" ("+unit+")")
		for _, c := range cols {
			v, ok := res.get(c.server, c.format, m)
			if !ok && c.format == "protobuf" {
				// A figure of the whole server goes in its first column.
				v, ok = res.get(c.server, "-", m)
			}
			if ok {
				fmt.Fprintf(&b, " %11s", strconv.FormatFloat(v, 'f', 1, 64))
			} else {
				fmt.Fprintf(&b, " %11s", "")
			}
		}
		ratio, etcdRatio := "", ""
		ours, haveOurs := best(m, "batch-apiserver standalone")
		if kube, ok := best(m, "kube-apiserver"); ok && haveOurs && kube != 0 {
			ratio = strconv.FormatFloat(ours/kube, 'f', 2, 64)
		}
		if v, ok := res.get("raw etcd", "put", m); ok && haveOurs && v != 0 && strings.HasPrefix(m, "create c=32") && !strings.Contains(m, " p") {
			etcdRatio = strconv.FormatFloat(ours/v, 'f', 2, 64)
		}
		fmt.Fprintf(&b, " %8s %8s\n", ratio, etcdRatio)
	}
	t.Log(b.String())
	fmt.Println(b.String())
	out := os.Getenv(EnvBenchOut)
	if out == "" {
		return
	}
	data, err := json.MarshalIndent(res.rows, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("figures written to %s", out)
}

// profile takes CPU profiles of s (through its /debug/pprof) while it
// serves creates and status updates at concurrency 32 and full LISTs,
// and writes them to dir as <server>-<format>-<load>.pprof.
func profile(ctx context.Context, t *testing.T, dir string, s *server, label string, tg target, ns string) {
	const seconds = 8
	httpClient, err := rest.HTTPClientFor(tg.config())
	if err != nil {
		t.Fatal(err)
	}
	loads := []struct {
		name string
		op   func(ctx context.Context, i int) error
	}{
		{"create", func(ctx context.Context, i int) error { return tg.create(ctx, ns, fmt.Sprintf("p-%d", i)) }},
		{"update-status", func(ctx context.Context, i int) error { return tg.updateStatus(ctx, ns, fmt.Sprintf("p-%d", i%1000)) }},
		{"list", func(ctx context.Context, _ int) error { _, _, err := tg.list(ctx, ns, 0, ""); return err }},
	}
	base := strings.TrimSuffix(tg.config().Host, "/") + "/debug/pprof/"
	file := func(what string) string {
		return filepath.Join(dir, fmt.Sprintf("%s-%s-%s.pprof", strings.ReplaceAll(s.name, " ", "-"), label, what))
	}
	// The heap with everything stored, before the profiling loads.
	if err := savePprof(httpClient, base+"heap", file("heap")); err != nil {
		t.Errorf("heap of %s %s: %v", s.name, label, err)
	}
	for _, load := range loads {
		lctx, stop := context.WithCancel(ctx)
		var wg sync.WaitGroup
		var next atomic.Int64
		workers := 32
		if load.name == "list" {
			workers = 2
		}
		for range workers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for lctx.Err() == nil {
					_ = load.op(lctx, int(next.Add(1)-1))
				}
			}()
		}
		err := savePprof(httpClient, fmt.Sprintf("%sprofile?seconds=%d", base, seconds), file(load.name))
		stop()
		wg.Wait()
		if err != nil {
			t.Errorf("profile of %s %s under %s: %v", s.name, label, load.name, err)
		}
	}
}

// savePprof GETs a pprof endpoint and writes what it answers to name.
func savePprof(c *http.Client, url, name string) error {
	resp, err := c.Get(url)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, data)
	}
	return os.WriteFile(name, data, 0o644)
}
