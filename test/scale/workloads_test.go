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

package scale

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math/rand"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// batchMix is clusterloader2's batch shape for about pods Pods: half of
// them in Jobs of sizes[0] Pods, a quarter in Jobs of sizes[1], a quarter
// in Jobs of sizes[2] (at least one Job of each size), every Job Indexed
// with parallelism equal to completions, in a fixed shuffled order.
func batchMix(prefix string, pods int, sizes [3]int32, runFor time.Duration) []jobSpec {
	shares := [3]int{pods / 2, pods / 4, pods / 4}
	var specs []jobSpec
	for k, size := range sizes {
		n := max(1, (shares[k]+int(size)/2)/int(size))
		for i := range n {
			specs = append(specs, jobSpec{
				name:        fmt.Sprintf("%s-%c%d-%d", prefix, 'a'+k, size, i),
				completions: size,
				parallelism: size,
				runFor:      runFor,
			})
		}
	}
	rng := rand.New(rand.NewSource(17))
	rng.Shuffle(len(specs), func(i, j int) { specs[i], specs[j] = specs[j], specs[i] })
	return specs
}

// failureJobs are n Jobs of 5 indexes with backoffLimitPerIndex 1 and a
// podFailurePolicy, in four kinds whose outcome KWOK decides the same way
// under both controllers: every index succeeds; index 1 fails once with
// exit code 3 and is retried; index 2 fails with exit code 42 (FailIndex);
// index 0 fails with exit code 3 until its backoff is spent.
func failureJobs(prefix string, n int, runFor time.Duration) []jobSpec {
	one := int32(1)
	var specs []jobSpec
	for i := range n {
		spec := jobSpec{
			name:                 fmt.Sprintf("%s-%d", prefix, i),
			completions:          5,
			parallelism:          5,
			runFor:               runFor,
			backoffLimitPerIndex: &one,
			failurePolicy:        true,
		}
		switch i % 4 {
		case 1:
			spec.failIndex, spec.failExitCode, spec.failAttempts = 1, 3, 1
		case 2:
			spec.failIndex, spec.failExitCode, spec.failAttempts = 2, 42, 100
		case 3:
			spec.failIndex, spec.failExitCode, spec.failAttempts = 0, 3, 100
		}
		specs = append(specs, spec)
	}
	return specs
}

// mixResult is workload 1 on one side.
type mixResult struct {
	Outcome       runOutcome  `json:"outcome"`
	Phase         phaseResult `json:"phase"`
	Pods          int64       `json:"pods_completed"`
	Jobs          int         `json:"jobs"`
	WallSeconds   float64     `json:"wall_seconds"`
	PodsPerMinute float64     `json:"pods_per_minute"`
	JobsPerSecond float64     `json:"jobs_per_second"`
	P50Seconds    float64     `json:"create_to_complete_p50_seconds"`
	P99Seconds    float64     `json:"create_to_complete_p99_seconds"`
}

// runMeasured runs specs in a new namespace ns under a meter and deletes
// the namespace afterwards.
func (s *side) runMeasured(ctx context.Context, t *testing.T, ns string, specs []jobSpec, perSecond float64, limit time.Duration) (runOutcome, phaseResult) {
	t.Helper()
	s.newNamespace(ctx, t, ns)
	m, err := startMeter(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	out := s.runJobs(ctx, t, ns, specs, perSecond, limit)
	phase, err := m.stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	s.logEvents(ctx, t, ns)
	s.deleteNamespace(ctx, t, ns, 5*time.Minute)
	return out, phase
}

// logEvents logs how many Events of ns each component recorded, by
// reason, and how many times they were seen in all: what a workload cost
// the host in Events.
func (s *side) logEvents(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	events, err := s.kube.CoreV1().Events(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("%s: listing the Events of %s: %v", s.name, ns, err)
		return
	}
	type tally struct{ events, seen int32 }
	byReason := map[string]*tally{}
	for _, e := range events.Items {
		key := e.Source.Component + "/" + e.ReportingController + " " + e.InvolvedObject.Kind + " " + e.Reason
		if byReason[key] == nil {
			byReason[key] = &tally{}
		}
		byReason[key].events++
		byReason[key].seen += max(1, e.Count)
	}
	keys := slices.Sorted(maps.Keys(byReason))
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "\n  %s: %d events, seen %d times", k, byReason[k].events, byReason[k].seen)
	}
	t.Logf("%s: Events of %s by source, object kind and reason:%s", s.name, ns, b.String())
}

func (s *side) runMix(ctx context.Context, t *testing.T, ns string, specs []jobSpec, limit time.Duration) mixResult {
	t.Helper()
	var profiled <-chan struct{}
	if dir := os.Getenv(EnvProfile); dir != "" {
		// The first mixProfileSeconds of the mix: Jobs are being created
		// and run, as in most of the phase.
		hostClient, err := rest.HTTPClientFor(s.host)
		if err != nil {
			t.Fatal(err)
		}
		profiled = s.startCPUProfiles(ctx, t, dir, ns, hostClient, mixProfileSeconds)
	}
	out, phase := s.runMeasured(ctx, t, ns, specs, 10, limit)
	if profiled != nil {
		<-profiled
	}
	r := mixResult{
		Outcome:     out,
		Phase:       phase,
		Pods:        out.PodsSucceeded,
		Jobs:        out.Created,
		WallSeconds: out.Wall.Seconds(),
		P50Seconds:  out.P50.Seconds(),
		P99Seconds:  out.P99.Seconds(),
	}
	if r.WallSeconds > 0 {
		r.PodsPerMinute = float64(r.Pods) / r.WallSeconds * 60
		r.JobsPerSecond = float64(r.Jobs) / r.WallSeconds
	}
	return r
}

// mixProfileSeconds is how long the CPU profiles of the batch mix last.
const mixProfileSeconds = 60

// largeResult is workload 2 on one side.
type largeResult struct {
	Outcome          runOutcome  `json:"outcome"`
	Phase            phaseResult `json:"phase"`
	Completions      int32       `json:"completions"`
	Parallelism      int32       `json:"parallelism"`
	Seconds          float64     `json:"seconds_to_complete"`
	StatusBytes      int         `json:"status_bytes"`
	ControllerRSSMiB float64     `json:"controller_max_rss_mib"`
}

func (s *side) runLarge(ctx context.Context, t *testing.T, ns string, completions, parallelism int32, runFor, limit time.Duration) largeResult {
	t.Helper()
	s.newNamespace(ctx, t, ns)
	m, err := startMeter(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	spec := jobSpec{name: "large", completions: completions, parallelism: parallelism, runFor: runFor}
	out := s.runJobs(ctx, t, ns, []jobSpec{spec}, 1, limit)
	phase, err := m.stop(ctx)
	if err != nil {
		t.Fatal(err)
	}
	r := largeResult{Outcome: out, Phase: phase, Completions: completions, Parallelism: parallelism, Seconds: out.Wall.Seconds()}
	if u, err := s.dyn.Resource(s.gvr).Namespace(ns).Get(ctx, spec.name, metav1.GetOptions{}); err == nil {
		status, _, _ := unstructured.NestedMap(u.Object, "status")
		data, _ := json.Marshal(status)
		r.StatusBytes = len(data)
	} else {
		t.Errorf("%s: reading the large Job: %v", s.name, err)
	}
	r.ControllerRSSMiB = phase.MaxRSSMiB[s.controllerProcess().Name]
	s.deleteNamespace(ctx, t, ns, 10*time.Minute)
	return r
}

// failuresResult is workload 3 on one side.
type failuresResult struct {
	Outcome runOutcome  `json:"outcome"`
	Phase   phaseResult `json:"phase"`
}

// storedResult is workload 4 on one side.
type storedResult struct {
	Jobs int `json:"stored_jobs"`
	// Fill is the phase of creating the Jobs and writing their status.
	Fill phaseResult `json:"fill"`
	// ServerRSSAfterFillMiB is the RSS of the server holding the Jobs read
	// once as the fill ends: it depends on where the server's collector
	// was in its cycle, up to a quarter apart between runs of one build.
	ServerRSSAfterFillMiB float64 `json:"server_rss_after_fill_mib"`
	// ServerRSSMiB is the RSS of the same server settled: after a forced
	// collection (its /debug/pprof/heap?gc=1) and settleWait, the median of
	// rssReadings readings. Both servers are Go programs with the default
	// GOGC, so settled they are compared on what they keep, not on when
	// each last collected.
	ServerRSSMiB float64 `json:"server_rss_mib"`
	// ServerHeapInUseMiB is the Go heap in use of the settled server, from
	// its /metrics (heapInUseMetric): what of the RSS is the heap rather
	// than the runtime's unreturned pages, stacks and binary; 0 when it
	// could not be read.
	ServerHeapInUseMiB float64 `json:"server_heap_inuse_mib"`
	FullListP99        float64 `json:"full_list_p99_seconds"`
	PageListP99        float64 `json:"page_list_p99_seconds"`
	// FullListDirectP99 and PageListDirectP99 are the same LISTs sent to
	// the Job server itself: for ours batch-apiserver's own port, without
	// the aggregator's hop; for kcm's side kube-apiserver again.
	FullListDirectP99 float64 `json:"full_list_direct_p99_seconds"`
	PageListDirectP99 float64 `json:"page_list_direct_p99_seconds"`
	RestartReady      float64 `json:"restart_to_ready_seconds"`
	WatchEvents       int     `json:"watch_events_expected"`
	WatchEventsLost   int64   `json:"watch_events_lost"`
	FillErrors        int64   `json:"fill_errors"`
	FullLists, Pages  int     `json:"-"`
	WatchersConnected int     `json:"watchers"`
}

// externalController is the spec.managedBy of the stored Jobs: no
// controller of either side works on them.
const externalController = "scale.jobs.dev/external"

// storedJob is a finished Job as an external controller leaves it.
func storedJob(name string) *batchv1.Job {
	j := jobSpec{name: name, completions: 1, parallelism: 1, runFor: time.Second}.upstreamJob()
	managedBy := externalController
	j.Spec.ManagedBy = &managedBy
	return j
}

// finishedStatus is the status an external controller writes when the
// Job's one Pod has succeeded.
func finishedStatus(at time.Time) map[string]any {
	ts := at.UTC().Format(time.RFC3339)
	cond := func(typ string) map[string]any {
		return map[string]any{"type": typ, "status": "True", "reason": "CompletionsReached", "message": "Reached expected number of succeeded pods", "lastProbeTime": ts, "lastTransitionTime": ts}
	}
	return map[string]any{
		"startTime":        ts,
		"completionTime":   ts,
		"succeeded":        int64(1),
		"completedIndexes": "0",
		"conditions":       []any{cond("SuccessCriteriaMet"), cond("Complete")},
	}
}

func (s *side) runStored(ctx context.Context, t *testing.T, ns string, n, watchers, watchJobs, lists int) storedResult {
	t.Helper()
	s.newNamespace(ctx, t, ns)
	r := storedResult{Jobs: n, WatchersConnected: watchers, WatchEvents: watchers * watchJobs}
	m, err := startMeter(ctx, s)
	if err != nil {
		t.Fatal(err)
	}
	var errs atomic.Int64
	var firstErr atomic.Pointer[error]
	s.createFinished(ctx, ns, "stored", n, 32, &errs, &firstErr)
	if r.Fill, err = m.stop(ctx); err != nil {
		t.Fatal(err)
	}
	r.FillErrors = errs.Load()
	if p := firstErr.Load(); p != nil {
		t.Errorf("%s: %d writes of stored Jobs failed, the first: %v", s.name, r.FillErrors, *p)
	}
	r.ServerRSSAfterFillMiB = rssMiB(s.jobServerProcess().PID())
	// The forced collection is the heap profile's: it is saved when asked
	// for (a profile is for reading afterwards: a failure is logged only).
	profile, err := s.heapProfile(ctx)
	if err != nil {
		t.Fatalf("%s: forcing a collection in the Job server: %v", s.name, err)
	}
	if dir := os.Getenv(EnvProfile); dir != "" {
		if path, err := saveProfile(dir, s.name, "stored-heap", profile); err != nil {
			t.Logf("%s: saving the Job server's heap profile: %v", s.name, err)
		} else {
			t.Logf("%s: heap profile of the Job server with the stored Jobs in %s", s.name, path)
		}
	}
	r.ServerRSSMiB = s.settledRSSMiB(ctx)
	if heap, err := s.heapInUseMiB(ctx); err != nil {
		t.Logf("%s: reading the Job server's heap in use: %v", s.name, err)
	} else {
		r.ServerHeapInUseMiB = heap
	}
	t.Logf("%s: %d Jobs stored in %.1fs, server RSS %.0f MiB after the fill, settled %.0f MiB, Go heap in use %.0f MiB", s.name, n, r.Fill.Seconds, r.ServerRSSAfterFillMiB, r.ServerRSSMiB, r.ServerHeapInUseMiB)

	// Full and paginated LISTs through kube-apiserver (for ours, through
	// the aggregator), as a client sees them, then sent to the Job server
	// directly; bodies are read, not decoded.
	viaHost, err := rest.HTTPClientFor(s.host)
	if err != nil {
		t.Fatal(err)
	}
	path := fmt.Sprintf(s.apiPath, ns)
	full, pages := timedLists(ctx, t, viaHost, s.cluster.HostURL+path, lists)
	t.Logf("%s: full LISTs through kube-apiserver took %v", s.name, roundAll(full))
	r.FullLists, r.Pages = len(full), len(pages)
	r.FullListP99 = p99(full).Seconds()
	r.PageListP99 = p99(pages).Seconds()
	direct, directURL := viaHost, s.cluster.HostURL
	if s.cluster.BatchAPIServer != nil {
		if direct, err = rest.HTTPClientFor(s.cluster.BatchAdminConfig()); err != nil {
			t.Fatal(err)
		}
		directURL = s.cluster.BatchURL
	}
	full, pages = timedLists(ctx, t, direct, directURL+path, lists)
	t.Logf("%s: full LISTs sent to the Job server directly took %v", s.name, roundAll(full))
	r.FullListDirectP99 = p99(full).Seconds()
	r.PageListDirectP99 = p99(pages).Seconds()
	if dir := os.Getenv(EnvProfile); dir != "" {
		s.profileLists(ctx, t, dir, viaHost, path)
	}

	r.WatchEventsLost = s.watchFanOut(ctx, t, ns, watchers, watchJobs)
	r.RestartReady = s.restartServer(ctx, t).Seconds()
	return r
}

// heapInUseMiB reads the Go heap in use of the side's Job server from its
// /metrics, in MiB.
func (s *side) heapInUseMiB(ctx context.Context) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	url, client, err := s.jobServerEndpoint()
	if err != nil {
		return 0, err
	}
	v, err := scrapeGauge(ctx, client, url+"/metrics", heapInUseMetric)
	return v / (1 << 20), err
}

const (
	// settleWait is how long the Job server is left after the forced
	// collection before its RSS is read: the Go runtime returns freed
	// pages to the system in the background, a few MB a second.
	settleWait = 20 * time.Second
	// rssReadings is how many RSS readings, one a second, the settled
	// figure is the median of.
	rssReadings = 5
)

// settledRSSMiB waits settleWait and returns the median of rssReadings
// readings of the Job server's RSS.
func (s *side) settledRSSMiB(ctx context.Context) float64 {
	pid := s.jobServerProcess().PID()
	readings := make([]float64, 0, rssReadings)
	delay := settleWait
	for range rssReadings {
		select {
		case <-ctx.Done():
			return 0
		case <-time.After(delay):
		}
		readings = append(readings, rssMiB(pid))
		delay = time.Second
	}
	slices.Sort(readings)
	return readings[len(readings)/2]
}

// heapProfile returns the heap profile of the side's Job server, taken
// after a garbage collection (the generic API server's
// /debug/pprof/heap?gc=1).
func (s *side) heapProfile(ctx context.Context) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	url, client, err := s.jobServerEndpoint()
	if err != nil {
		return nil, err
	}
	_, body, err := timedGet(ctx, client, url+"/debug/pprof/heap?gc=1")
	return body, err
}

// saveProfile writes a profile as dir/<side>-<what>.pb.gz and returns the
// file's path.
func saveProfile(dir, side, what string, profile []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	path := filepath.Join(dir, fmt.Sprintf("%s-%s.pb.gz", side, what))
	return path, os.WriteFile(path, profile, 0o644)
}

// listProfileSeconds is how long the CPU profiles of profileLists last.
const listProfileSeconds = 20

// startCPUProfiles starts CPU profiles of seconds of kube-apiserver (with
// hostClient) and, on our side, of the Job server, saved in dir as
// <side>-<what>-host-cpu and <side>-<what>-server-cpu. The returned
// channel is closed once both are done. A failure is logged only.
func (s *side) startCPUProfiles(ctx context.Context, t *testing.T, dir, what string, hostClient *http.Client, seconds int) <-chan struct{} {
	t.Helper()
	type server struct {
		url    string
		client *http.Client
	}
	servers := map[string]server{what + "-host-cpu": {s.cluster.HostURL, hostClient}}
	if s.cluster.BatchAPIServer != nil {
		jobURL, jobClient, err := s.jobServerEndpoint()
		if err != nil {
			t.Logf("%s: CPU profile of the Job server: %v", s.name, err)
		} else {
			servers[what+"-server-cpu"] = server{jobURL, jobClient}
		}
	}
	var wg sync.WaitGroup
	for name, server := range servers {
		wg.Go(func() {
			_, profile, err := timedGet(ctx, server.client, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", server.url, seconds))
			if err == nil {
				var file string
				if file, err = saveProfile(dir, s.name, name, profile); err == nil {
					t.Logf("%s: CPU profile %s in %s", s.name, name, file)
				}
			}
			if err != nil {
				t.Logf("%s: CPU profile %s: %v", s.name, name, err)
			}
		})
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	return done
}

// profileLists takes CPU profiles of kube-apiserver and of the Job server
// (one process on kcm's side) while full LISTs of path go through
// kube-apiserver with hostClient, after the timed ones so that they are
// not slowed, and saves them in dir. A failure is logged only.
func (s *side) profileLists(ctx context.Context, t *testing.T, dir string, hostClient *http.Client, path string) {
	t.Helper()
	done := s.startCPUProfiles(ctx, t, dir, "list", hostClient, listProfileSeconds)
	url := s.cluster.HostURL + path
	for n := 0; ; n++ {
		select {
		case <-done:
			t.Logf("%s: %d full LISTs through kube-apiserver while profiling", s.name, n)
			return
		default:
		}
		if _, _, err := timedGet(ctx, hostClient, url); err != nil {
			t.Logf("%s: LIST while profiling: %v", s.name, err)
		}
	}
}

// timedLists times n full LISTs of url and then one paginated walk of it,
// 500 items a page.
func timedLists(ctx context.Context, t *testing.T, client *http.Client, url string, n int) (full, pages []time.Duration) {
	t.Helper()
	for range n {
		d, _, err := timedGet(ctx, client, url)
		if err != nil {
			t.Fatal(err)
		}
		full = append(full, d)
	}
	cont := ""
	for {
		page := url + "?limit=500"
		if cont != "" {
			page += "&continue=" + cont
		}
		d, body, err := timedGet(ctx, client, page)
		if err != nil {
			t.Fatal(err)
		}
		pages = append(pages, d)
		var meta struct {
			Metadata struct {
				Continue string `json:"continue"`
			} `json:"metadata"`
		}
		if err := json.Unmarshal(body, &meta); err != nil {
			t.Fatal(err)
		}
		if cont = meta.Metadata.Continue; cont == "" {
			return full, pages
		}
	}
}

// createFinished creates n finished Jobs named prefix-i with c writers:
// each create is followed by the status write an external controller
// would make.
func (s *side) createFinished(ctx context.Context, ns, prefix string, n, c int, errs *atomic.Int64, firstErr *atomic.Pointer[error]) {
	var next atomic.Int64
	var wg sync.WaitGroup
	fail := func(err error) {
		errs.Add(1)
		firstErr.CompareAndSwap(nil, &err)
	}
	for range c {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				obj, err := s.object(storedJob(fmt.Sprintf("%s-%d", prefix, i)))
				if err != nil {
					fail(err)
					continue
				}
				created, err := s.dyn.Resource(s.gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{})
				if err != nil {
					fail(err)
					continue
				}
				if err := unstructured.SetNestedMap(created.Object, finishedStatus(time.Now()), "status"); err != nil {
					fail(err)
					continue
				}
				if _, err := s.dyn.Resource(s.gvr).Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
					fail(err)
				}
			}
		}()
	}
	wg.Wait()
}

func timedGet(ctx context.Context, client *http.Client, url string) (time.Duration, []byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Accept", "application/json")
	start := time.Now()
	resp, err := client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	d := time.Since(start)
	if err != nil {
		return 0, nil, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, truncate(string(body), 300))
	}
	return d, body, nil
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// roundAll rounds each of v to the millisecond, for a log line.
func roundAll(v []time.Duration) []time.Duration {
	out := make([]time.Duration, len(v))
	for i, d := range v {
		out[i] = d.Round(time.Millisecond)
	}
	return out
}

func p99(v []time.Duration) time.Duration {
	s := append([]time.Duration(nil), v...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return percentile(s, 0.99)
}

// watchFanOut opens watchers watches on the Jobs of ns from the current
// resourceVersion, creates jobs finished Jobs, and returns how many of
// the watchers×jobs ADDED events never arrived.
func (s *side) watchFanOut(ctx context.Context, t *testing.T, ns string, watchers, jobs int) int64 {
	t.Helper()
	list, err := s.dyn.Resource(s.gvr).Namespace(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		t.Fatal(err)
	}
	rv := list.GetResourceVersion()
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var received atomic.Int64
	var wg sync.WaitGroup
	for range watchers {
		w, err := s.dyn.Resource(s.gvr).Namespace(ns).Watch(wctx, metav1.ListOptions{ResourceVersion: rv, AllowWatchBookmarks: true})
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer w.Stop()
			for ev := range w.ResultChan() {
				if ev.Type != watch.Added {
					continue
				}
				if u, ok := ev.Object.(*unstructured.Unstructured); ok && strings.HasPrefix(u.GetName(), "fanout-") {
					received.Add(1)
				}
			}
		}()
	}
	var errs atomic.Int64
	var firstErr atomic.Pointer[error]
	s.createFinished(ctx, ns, "fanout", jobs, 8, &errs, &firstErr)
	if p := firstErr.Load(); p != nil {
		t.Errorf("%s: %d writes of the fan-out Jobs failed, the first: %v", s.name, errs.Load(), *p)
	}
	want := int64(watchers * (jobs - int(errs.Load())))
	// Wait until every event has arrived or none has for 30 s.
	last, lastChange := received.Load(), time.Now()
	_ = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 10*time.Minute, true, func(context.Context) (bool, error) {
		now := received.Load()
		if now != last {
			last, lastChange = now, time.Now()
		}
		return now >= want || time.Since(lastChange) > 30*time.Second, nil
	})
	cancel()
	wg.Wait()
	return want - received.Load()
}

// restartServer kills the server that holds the side's Jobs, starts it
// again and returns the time from the start to its first ready /readyz.
func (s *side) restartServer(ctx context.Context, t *testing.T) time.Duration {
	t.Helper()
	if s.name == sideKCM {
		s.cluster.KillProcess(s.cluster.KubeAPIServer)
		start := time.Now()
		if err := s.cluster.RestartKubeAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		return time.Since(start)
	}
	s.cluster.KillProcess(s.cluster.BatchAPIServer)
	client, err := rest.HTTPClientFor(&rest.Config{Host: s.cluster.BatchURL, TLSClientConfig: rest.TLSClientConfig{CAData: s.cluster.BatchCA.CertPEM}})
	if err != nil {
		t.Fatal(err)
	}
	client.Timeout = 5 * time.Second
	start := time.Now()
	restarted := make(chan error, 1)
	go func() { restarted <- s.cluster.RestartBatchAPIServer(ctx) }()
	var ready time.Duration
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 3*time.Minute, true, func(ctx context.Context) (bool, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.cluster.BatchURL+"/readyz", nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			return false, nil
		}
		_ = resp.Body.Close()
		if resp.StatusCode == http.StatusOK {
			ready = time.Since(start)
			return true, nil
		}
		return false, nil
	})
	if err != nil {
		t.Fatalf("%s: batch-apiserver not ready after a restart: %v", s.name, err)
	}
	if err := <-restarted; err != nil {
		t.Fatal(err)
	}
	return ready
}

// compareStatuses returns the Jobs whose final status differs between the
// two sides, with both statuses.
func compareStatuses(kcm, ours map[string]finalStatus) []string {
	var diffs []string
	names := map[string]bool{}
	for n := range kcm {
		names[n] = true
	}
	for n := range ours {
		names[n] = true
	}
	for n := range names {
		a, aok := kcm[n]
		b, bok := ours[n]
		if !aok || !bok || !equalStatus(a, b) {
			diffs = append(diffs, fmt.Sprintf("%s: kcm %+v, ours %+v", n, a, b))
		}
	}
	sort.Strings(diffs)
	return diffs
}

func equalStatus(a, b finalStatus) bool {
	x, _ := json.Marshal(a)
	y, _ := json.Marshal(b)
	return string(x) == string(y)
}
