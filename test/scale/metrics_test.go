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
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/rest"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// Metric names read from the servers' and controllers' /metrics.
const (
	requestDurationMetric = "apiserver_request_duration_seconds"
	// requestCountMetric counts requests by their answer's code as well.
	requestCountMetric = "apiserver_request_total"
	jobSyncMetric      = "job_controller_job_sync_duration_seconds"
	// staleSyncSkipsMetric counts the syncs a Job controller dropped because
	// its informer had not yet seen a status it wrote (kube-controller-
	// manager 1.37 does; ours registers it and leaves it at 0).
	staleSyncSkipsMetric = "job_controller_stale_sync_skips_total"
	// queueWaitMetric is client-go's workqueue histogram of how long an
	// item waited in a queue, from the moment it was due (an AddAfter's
	// delay is over) until a worker took it; both controllers name the
	// Job queue jobQueueName.
	queueWaitMetric = "workqueue_queue_duration_seconds"
	jobQueueName    = "job"
	// heapInUseMetric is the Go runtime's heap in use, in bytes: the spans
	// holding objects, live or not yet collected.
	heapInUseMetric = "go_memstats_heap_inuse_bytes"
)

// histogram is a cumulative Prometheus histogram: count of observations
// at or below each upper bound.
type histogram map[float64]float64

// sub returns h minus before, bucket by bucket.
func (h histogram) sub(before histogram) histogram {
	out := histogram{}
	for le, v := range h {
		out[le] = v - before[le]
	}
	return out
}

// count is the number of observations.
func (h histogram) count() float64 { return h[math.Inf(1)] }

// quantile estimates the q-quantile as Prometheus's histogram_quantile
// does: linear within the bucket that holds it; the highest finite bound
// when it falls in the +Inf bucket; NaN without observations.
func (h histogram) quantile(q float64) float64 {
	total := h.count()
	if total <= 0 {
		return math.NaN()
	}
	bounds := make([]float64, 0, len(h))
	for le := range h {
		bounds = append(bounds, le)
	}
	sort.Float64s(bounds)
	rank := q * total
	prevBound, prevCount := 0.0, 0.0
	for _, le := range bounds {
		c := h[le]
		if c >= rank {
			if math.IsInf(le, 1) {
				return prevBound
			}
			if c == prevCount {
				return le
			}
			return prevBound + (le-prevBound)*(rank-prevCount)/(c-prevCount)
		}
		prevBound, prevCount = le, c
	}
	return prevBound
}

// eachSample calls f with the labels and the value of every sample of
// the series called name at url, with labels (`name{a="x"} 1`) or
// without (`name 1`); the samples of a longer name that begins with name
// are not its.
func eachSample(ctx context.Context, client *http.Client, url, name string, f func(labels map[string]string, v float64)) error {
	body, err := openMetrics(ctx, client, url)
	if err != nil {
		return err
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), name)
		if !ok {
			continue
		}
		labels := map[string]string{}
		switch {
		case strings.HasPrefix(rest, "{"):
			end := strings.LastIndexByte(rest, '}')
			if end < 0 {
				continue
			}
			labels = parseLabels(rest[1:end])
			rest = rest[end+1:]
		case !strings.HasPrefix(rest, " "):
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			continue
		}
		f(labels, v)
	}
	return sc.Err()
}

// scrapeHistograms reads metric from url and sums its buckets into one
// histogram per key; key returns "" for series to leave out.
func scrapeHistograms(ctx context.Context, client *http.Client, url, metric string, key func(labels map[string]string) string) (map[string]histogram, error) {
	out := map[string]histogram{}
	err := eachSample(ctx, client, url, metric+"_bucket", func(labels map[string]string, v float64) {
		le, err := strconv.ParseFloat(labels["le"], 64)
		if err != nil {
			return
		}
		k := key(labels)
		if k == "" {
			return
		}
		if out[k] == nil {
			out[k] = histogram{}
		}
		out[k][le] += v
	})
	return out, err
}

// scrapeCounters reads the counter metric from url and sums its series
// per key; key returns "" for series to leave out. A counter with labels
// has no series before its first increment, so an absent metric is no
// error: it has counted nothing.
func scrapeCounters(ctx context.Context, client *http.Client, url, metric string, key func(labels map[string]string) string) (map[string]float64, error) {
	out := map[string]float64{}
	err := eachSample(ctx, client, url, metric, func(labels map[string]string, v float64) {
		if k := key(labels); k != "" {
			out[k] += v
		}
	})
	return out, err
}

// scrapeGauge reads the value of metric, a series without labels (a
// gauge of the Go runtime or the process), from url.
func scrapeGauge(ctx context.Context, client *http.Client, url, metric string) (float64, error) {
	body, err := openMetrics(ctx, client, url)
	if err != nil {
		return 0, err
	}
	defer body.Close()
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), metric+" ")
		if !ok {
			continue
		}
		fields := strings.Fields(rest)
		if len(fields) == 0 {
			break
		}
		return strconv.ParseFloat(fields[0], 64)
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s has no %s", url, metric)
}

// openMetrics GETs a /metrics url and returns its body, which the caller
// closes; an answer other than 200 is an error.
func openMetrics(ctx context.Context, client *http.Client, url string) (io.ReadCloser, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 1024))
		return nil, fmt.Errorf("GET %s: %d %s", url, resp.StatusCode, body)
	}
	return resp.Body, nil
}

// parseLabels parses `a="x",b="y"` (values without escaped quotes, as the
// label values read here are).
func parseLabels(s string) map[string]string {
	labels := map[string]string{}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			break
		}
		name := s[:eq]
		rest := s[eq+2:]
		q := strings.IndexByte(rest, '"')
		if q < 0 {
			break
		}
		labels[name] = rest[:q]
		s = strings.TrimPrefix(rest[q+1:], ",")
	}
	return labels
}

// byVerb keys apiserver_request_duration_seconds by verb, leaving out the
// long-running ones.
func byVerb(labels map[string]string) string {
	switch v := labels["verb"]; v {
	case "WATCH", "WATCHLIST", "CONNECT", "":
		return ""
	default:
		return v
	}
}

// byCall keys apiserver_request_duration_seconds by verb and resource
// ("PATCH pods", "PUT jobs/status"), leaving out the long-running verbs:
// the number of calls of each kind, whatever their latency.
func byCall(labels map[string]string) string {
	verb := byVerb(labels)
	if verb == "" || labels["resource"] == "" {
		return ""
	}
	if sub := labels["subresource"]; sub != "" {
		return verb + " " + labels["resource"] + "/" + sub
	}
	return verb + " " + labels["resource"]
}

// refusedCall keys apiserver_request_total's calls answered 409 Conflict
// as byCall does, leaving out every other answer.
func refusedCall(labels map[string]string) string {
	if labels["code"] != "409" {
		return ""
	}
	return byCall(labels)
}

// byResultAndAction keys the Job controller's sync metrics by their
// result and action labels, "result action" (neither value has a space).
func byResultAndAction(labels map[string]string) string {
	return labels["result"] + " " + labels["action"]
}

// all keys every series alike.
func all(map[string]string) string { return "all" }

// mutatingVerbs are the verbs the SLO of 1 s applies to.
var mutatingVerbs = map[string]bool{"POST": true, "PUT": true, "PATCH": true, "DELETE": true, "APPLY": true, "DELETECOLLECTION": true}

// metricsSource is a /metrics endpoint and the client that may read it.
type metricsSource struct {
	name   string
	url    string
	client *http.Client
}

// metricsSources returns the endpoints of a side: kube-apiserver's,
// batch-apiserver's (ours) and the Job controller's (kube-controller-
// manager's for kcm, batch-apiserver's for ours).
func (s *side) metricsSources() (apiservers []metricsSource, controller metricsSource, err error) {
	kube, err := rest.HTTPClientFor(s.cluster.Admin)
	if err != nil {
		return nil, metricsSource{}, err
	}
	apiservers = append(apiservers, metricsSource{name: "kube-apiserver", url: s.cluster.HostURL + "/metrics", client: kube})
	if s.name == sideOurs {
		batch, err := rest.HTTPClientFor(s.cluster.BatchAdminConfig())
		if err != nil {
			return nil, metricsSource{}, err
		}
		src := metricsSource{name: "batch-apiserver", url: s.cluster.BatchURL + "/metrics", client: batch}
		apiservers = append(apiservers, src)
		return apiservers, src, nil
	}
	// kube-controller-manager serves a self-signed certificate; it trusts
	// the cluster CA's client certificates.
	kcm, err := rest.HTTPClientFor(&rest.Config{Host: s.cluster.ControllerManagerURL, TLSClientConfig: rest.TLSClientConfig{
		Insecure: true,
		CertFile: s.cluster.PKIFile("e2e-admin.crt"),
		KeyFile:  s.cluster.PKIFile("e2e-admin.key"),
	}})
	if err != nil {
		return nil, metricsSource{}, err
	}
	return apiservers, metricsSource{name: "kube-controller-manager", url: s.cluster.ControllerManagerURL + "/metrics", client: kcm}, nil
}

// snapshot is what a meter reads at the start and the end of a phase.
type snapshot struct {
	at       time.Time
	cpu      map[string]float64
	requests map[string]map[string]histogram // by server, by verb
	calls    map[string]map[string]histogram // by server, by call (byCall)
	// refused counts the calls answered 409 Conflict, by server, by call.
	refused map[string]map[string]float64
	// jobSync is the sync latency by result and action (byResultAndAction).
	jobSync        map[string]histogram
	staleSyncSkips float64
	jobQueueWait   queueWait
}

// queueWait is the running total of queueWaitMetric for one queue: how
// many keys a worker took and the seconds they waited, summed. Its
// decade-wide buckets (up to 10 s) say little; sum over count is exact.
type queueWait struct {
	seconds, keys float64
}

// scrapeQueueWait reads queueWaitMetric of the queue called name from
// url. A process without that queue reads as none taken.
func scrapeQueueWait(ctx context.Context, client *http.Client, url, name string) (queueWait, error) {
	ofQueue := func(labels map[string]string) string {
		if labels["name"] != name {
			return ""
		}
		return name
	}
	sum, err := scrapeCounters(ctx, client, url, queueWaitMetric+"_sum", ofQueue)
	if err != nil {
		return queueWait{}, err
	}
	count, err := scrapeCounters(ctx, client, url, queueWaitMetric+"_count", ofQueue)
	if err != nil {
		return queueWait{}, err
	}
	return queueWait{seconds: sum[name], keys: count[name]}, nil
}

// meanSince is the mean wait of the keys taken since before, and how
// many they were; NaN when none was.
func (w queueWait) meanSince(before queueWait) (mean, keys float64) {
	keys = w.keys - before.keys
	if keys <= 0 {
		return math.NaN(), 0
	}
	return (w.seconds - before.seconds) / keys, keys
}

// meter measures one phase of one side: CPU seconds and the highest RSS
// of every process, request latencies per verb of each API server and the
// Job controller's sync latency.
type meter struct {
	s       *side
	start   snapshot
	stopRSS chan struct{}
	wg      sync.WaitGroup

	mu     sync.Mutex
	maxRSS map[string]float64
}

// phaseResult is what a meter measured.
type phaseResult struct {
	Seconds float64 `json:"seconds"`
	// CPUSeconds and MaxRSSMiB are per process.
	CPUSeconds map[string]float64 `json:"cpu_seconds"`
	MaxRSSMiB  map[string]float64 `json:"max_rss_mib"`
	// RequestP99 is per API server, per verb, in seconds.
	RequestP99 map[string]map[string]float64 `json:"request_p99_seconds"`
	// JobSyncP99 is the Job controller's sync duration p99 in seconds.
	JobSyncP99   float64 `json:"job_sync_p99_seconds"`
	JobSyncCount float64 `json:"job_syncs"`
	// JobSyncsByResult and JobSyncsByAction split JobSyncCount by the
	// result (success, error) and the action (what the sync did) of the
	// Job controller's sync metrics.
	JobSyncsByResult map[string]float64 `json:"job_syncs_by_result,omitempty"`
	JobSyncsByAction map[string]float64 `json:"job_syncs_by_action,omitempty"`
	// StaleSyncSkips is how many syncs the Job controller dropped as
	// stale (staleSyncSkipsMetric).
	StaleSyncSkips float64 `json:"stale_sync_skips"`
	// JobQueueWaitMean is how long, on average, a Job's key that was due
	// waited for one of the controller's workers, in seconds (0 when no
	// key was taken: JobQueueKeys says so); the batch period and any
	// other planned delay before a key is due are not in it. It is what
	// folds a Job's events into fewer syncs on a controller whose workers
	// cannot keep up.
	JobQueueWaitMean float64 `json:"job_queue_wait_mean_seconds"`
	JobQueueKeys     float64 `json:"job_queue_keys"`
	// Calls counts the requests of each kind (byCall) every API server of
	// the side served, summed: what a controller's work costs in calls.
	Calls map[string]float64 `json:"calls"`
	// Refused counts, of Calls, those answered 409 Conflict (an update
	// sent with a resourceVersion older than the stored one's), from
	// apiserver_request_total.
	Refused map[string]float64 `json:"refused_409,omitempty"`
}

// queueWaitOrNaN is JobQueueWaitMean, NaN ("-" in the table) when no key
// was taken, as on a controller that does not serve the metric.
func (r phaseResult) queueWaitOrNaN() float64 {
	if r.JobQueueKeys <= 0 {
		return math.NaN()
	}
	return r.JobQueueWaitMean
}

// callCount is the number of calls of the kinds named.
func (r phaseResult) callCount(kinds ...string) float64 { return sumOf(r.Calls, kinds) }

// refusedCount is the number of calls of the kinds named answered 409
// Conflict.
func (r phaseResult) refusedCount(kinds ...string) float64 { return sumOf(r.Refused, kinds) }

// sumOf is the sum of m's values at keys.
func sumOf(m map[string]float64, keys []string) float64 {
	var n float64
	for _, k := range keys {
		n += m[k]
	}
	return n
}

// controlPlaneCPU is the CPU of every process of the side but kwok (the
// stand-in of the kubelets, not part of a control plane).
func (r phaseResult) controlPlaneCPU() float64 {
	var total float64
	for name, v := range r.CPUSeconds {
		if name != "kwok" {
			total += v
		}
	}
	return total
}

// mutatingP99Max is the highest p99 over the mutating verbs of server.
func (r phaseResult) mutatingP99Max(server string) float64 {
	highest := 0.0
	for verb, v := range r.RequestP99[server] {
		if mutatingVerbs[verb] && !math.IsNaN(v) && v > highest {
			highest = v
		}
	}
	return highest
}

func startMeter(ctx context.Context, s *side) (*meter, error) {
	m := &meter{s: s, stopRSS: make(chan struct{}), maxRSS: map[string]float64{}}
	snap, err := m.read(ctx)
	if err != nil {
		return nil, err
	}
	m.start = snap
	m.sampleRSS()
	m.wg.Add(1)
	go func() {
		defer m.wg.Done()
		tick := time.NewTicker(time.Second)
		defer tick.Stop()
		for {
			select {
			case <-m.stopRSS:
				return
			case <-tick.C:
				m.sampleRSS()
			}
		}
	}()
	return m, nil
}

func (m *meter) sampleRSS() {
	m.mu.Lock()
	defer m.mu.Unlock()
	for name, p := range m.s.processes() {
		if v := rssMiB(p.PID()); v > m.maxRSS[name] {
			m.maxRSS[name] = v
		}
	}
}

func (m *meter) read(ctx context.Context) (snapshot, error) {
	snap := snapshot{at: time.Now(), cpu: map[string]float64{}, requests: map[string]map[string]histogram{}, calls: map[string]map[string]histogram{},
		refused: map[string]map[string]float64{}}
	for name, p := range m.s.processes() {
		v, err := framework.ProcessCPUSeconds(p.PID())
		if err != nil {
			return snap, err
		}
		snap.cpu[name] = v
	}
	servers, controller, err := m.s.metricsSources()
	if err != nil {
		return snap, err
	}
	for _, src := range servers {
		h, err := scrapeHistograms(ctx, src.client, src.url, requestDurationMetric, byVerb)
		if err != nil {
			return snap, err
		}
		snap.requests[src.name] = h
		if snap.calls[src.name], err = scrapeHistograms(ctx, src.client, src.url, requestDurationMetric, byCall); err != nil {
			return snap, err
		}
		if snap.refused[src.name], err = scrapeCounters(ctx, src.client, src.url, requestCountMetric, refusedCall); err != nil {
			return snap, err
		}
	}
	if snap.jobSync, err = scrapeHistograms(ctx, controller.client, controller.url, jobSyncMetric, byResultAndAction); err != nil {
		return snap, err
	}
	skips, err := scrapeCounters(ctx, controller.client, controller.url, staleSyncSkipsMetric, all)
	if err != nil {
		return snap, err
	}
	snap.staleSyncSkips = skips["all"]
	if snap.jobQueueWait, err = scrapeQueueWait(ctx, controller.client, controller.url, jobQueueName); err != nil {
		return snap, err
	}
	return snap, nil
}

// stop ends the phase and returns what it measured.
func (m *meter) stop(ctx context.Context) (phaseResult, error) {
	close(m.stopRSS)
	m.wg.Wait()
	m.sampleRSS()
	end, err := m.read(ctx)
	if err != nil {
		return phaseResult{}, err
	}
	r := phaseResult{
		Seconds:    end.at.Sub(m.start.at).Seconds(),
		CPUSeconds: map[string]float64{},
		MaxRSSMiB:  map[string]float64{},
		RequestP99: map[string]map[string]float64{},
		Calls:      map[string]float64{},
		Refused:    map[string]float64{},
	}
	for name, v := range end.cpu {
		r.CPUSeconds[name] = v - m.start.cpu[name]
	}
	m.mu.Lock()
	for name, v := range m.maxRSS {
		r.MaxRSSMiB[name] = v
	}
	m.mu.Unlock()
	for server, verbs := range end.requests {
		r.RequestP99[server] = map[string]float64{}
		for verb, h := range verbs {
			d := h.sub(m.start.requests[server][verb])
			if d.count() > 0 {
				r.RequestP99[server][verb] = d.quantile(0.99)
			}
		}
	}
	for server, calls := range end.calls {
		for call, h := range calls {
			if n := h.sub(m.start.calls[server][call]).count(); n > 0 {
				r.Calls[call] += n
			}
		}
	}
	for server, calls := range end.refused {
		for call, n := range calls {
			if d := n - m.start.refused[server][call]; d > 0 {
				r.Refused[call] += d
			}
		}
	}
	sync, byResult, byAction := syncsBetween(m.start.jobSync, end.jobSync)
	r.JobSyncsByResult, r.JobSyncsByAction = byResult, byAction
	r.JobSyncCount = sync.count()
	if r.JobSyncCount > 0 {
		r.JobSyncP99 = sync.quantile(0.99)
	}
	r.StaleSyncSkips = end.staleSyncSkips - m.start.staleSyncSkips
	if mean, keys := end.jobQueueWait.meanSince(m.start.jobQueueWait); keys > 0 {
		r.JobQueueWaitMean, r.JobQueueKeys = mean, keys
	}
	return r, nil
}

// syncsBetween returns the Job controller's syncs between two scrapes of
// its sync latency keyed by byResultAndAction: the latency of them all,
// and how many there were by result and by action. All three come from
// the same scrapes, so the splits add up to the count exactly.
func syncsBetween(start, end map[string]histogram) (total histogram, byResult, byAction map[string]float64) {
	total, byResult, byAction = histogram{}, map[string]float64{}, map[string]float64{}
	for key, h := range end {
		d := h.sub(start[key])
		for le, v := range d {
			total[le] += v
		}
		if n := d.count(); n > 0 {
			result, action, _ := strings.Cut(key, " ")
			byResult[result] += n
			byAction[action] += n
		}
	}
	return total, byResult, byAction
}

// rssMiB is the resident set of pid in MiB (0 when it cannot be read).
func rssMiB(pid int) float64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			f := strings.Fields(rest)
			if len(f) == 0 {
				return 0
			}
			kb, _ := strconv.ParseFloat(f[0], 64)
			return kb / 1024
		}
	}
	return 0
}

// TestScrapeGauge reads a gauge from a text exposition beside metrics
// whose names it prefixes, and fails on one it lacks.
func TestScrapeGauge(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, "# HELP go_memstats_heap_inuse_bytes Number of heap bytes that are in use.\n"+
			"# TYPE go_memstats_heap_inuse_bytes gauge\n"+
			"go_memstats_heap_inuse_bytes_total 1\n"+
			"go_memstats_heap_inuse_bytes 4.194304e+07\n")
	}))
	defer srv.Close()
	got, err := scrapeGauge(context.Background(), srv.Client(), srv.URL, heapInUseMetric)
	if err != nil || got != 4.194304e+07 {
		t.Errorf("scrapeGauge(%s) = %v, %v; want 4.194304e+07", heapInUseMetric, got, err)
	}
	if _, err := scrapeGauge(context.Background(), srv.Client(), srv.URL, "go_memstats_heap_alloc_bytes"); err == nil {
		t.Error("scrapeGauge of a missing metric: no error, want one")
	}
}

// TestScrapeCounters sums a counter's series by key: the calls answered
// 409 Conflict by kind, every other code left out; a counter without any
// series (stale sync skips never counted) reads as nothing counted. It
// also splits a controller's syncs between two scrapes of its sync
// latency by result and by action, and takes the mean wait of the Job
// queue's keys between them.
func TestScrapeCounters(t *testing.T) {
	exposition := map[bool]string{
		false: `# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",resource="jobs",subresource="status",verb="PUT"} 90
apiserver_request_total{code="409",component="apiserver",resource="jobs",subresource="status",verb="PUT"} 4
apiserver_request_total{code="409",component="apiserver",resource="jobs",subresource="status",verb="PATCH"} 2
apiserver_request_total{code="409",component="apiserver",resource="pods",subresource="",verb="PUT"} 1
apiserver_request_total{code="409",component="apiserver",resource="jobs",subresource="",verb="WATCH"} 3
apiserver_request_total_extra{code="409",resource="jobs",subresource="status",verb="PUT"} 50
job_controller_job_sync_duration_seconds_bucket{action="tracking",completion_mode="Indexed",result="success",le="0.004"} 2
job_controller_job_sync_duration_seconds_bucket{action="tracking",completion_mode="Indexed",result="success",le="+Inf"} 3
job_controller_job_sync_duration_seconds_bucket{action="tracking",completion_mode="NonIndexed",result="success",le="0.004"} 1
job_controller_job_sync_duration_seconds_bucket{action="tracking",completion_mode="NonIndexed",result="success",le="+Inf"} 1
workqueue_queue_duration_seconds_sum{name="job"} 0.5
workqueue_queue_duration_seconds_count{name="job"} 2
`,
		true: `job_controller_job_sync_duration_seconds_bucket{action="tracking",completion_mode="Indexed",result="success",le="0.004"} 5
job_controller_job_sync_duration_seconds_bucket{action="tracking",completion_mode="Indexed",result="success",le="+Inf"} 7
job_controller_job_sync_duration_seconds_bucket{action="tracking",completion_mode="NonIndexed",result="success",le="0.004"} 1
job_controller_job_sync_duration_seconds_bucket{action="tracking",completion_mode="NonIndexed",result="success",le="+Inf"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="error",le="0.004"} 0
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="error",le="+Inf"} 2
job_controller_stale_sync_skips_total{group="batch",resource="jobs"} 6
workqueue_queue_duration_seconds_sum{name="job"} 40.5
workqueue_queue_duration_seconds_count{name="job"} 12
workqueue_queue_duration_seconds_sum{name="job_orphan_pod"} 900
workqueue_queue_duration_seconds_count{name="job_orphan_pod"} 3
`,
	}
	later := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprint(w, exposition[later])
	}))
	defer srv.Close()
	ctx := context.Background()

	refused, err := scrapeCounters(ctx, srv.Client(), srv.URL, requestCountMetric, refusedCall)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]float64{"PUT jobs/status": 4, "PATCH jobs/status": 2, "PUT pods": 1}, refused); diff != "" {
		t.Errorf("calls refused (-want +got):\n%s", diff)
	}
	skips, err := scrapeCounters(ctx, srv.Client(), srv.URL, staleSyncSkipsMetric, all)
	if err != nil || len(skips) != 0 {
		t.Errorf("stale sync skips before any: %v, %v; want none, no error", skips, err)
	}

	start, err := scrapeHistograms(ctx, srv.Client(), srv.URL, jobSyncMetric, byResultAndAction)
	if err != nil {
		t.Fatal(err)
	}
	waitBefore, err := scrapeQueueWait(ctx, srv.Client(), srv.URL, jobQueueName)
	if err != nil {
		t.Fatal(err)
	}
	if mean, keys := waitBefore.meanSince(queueWait{seconds: 0.5, keys: 2}); keys != 0 || !math.IsNaN(mean) {
		t.Errorf("queue wait with no key taken since: mean %v of %v keys, want NaN of 0", mean, keys)
	}
	later = true
	waitAfter, err := scrapeQueueWait(ctx, srv.Client(), srv.URL, jobQueueName)
	if err != nil {
		t.Fatal(err)
	}
	// The Job queue's 10 keys since waited 40 s in all; the orphan
	// queue's are not the Job queue's.
	if mean, keys := waitAfter.meanSince(waitBefore); mean != 4 || keys != 10 {
		t.Errorf("queue wait between the scrapes: mean %v s of %v keys, want 4 s of 10", mean, keys)
	}
	end, err := scrapeHistograms(ctx, srv.Client(), srv.URL, jobSyncMetric, byResultAndAction)
	if err != nil {
		t.Fatal(err)
	}
	if skips, err = scrapeCounters(ctx, srv.Client(), srv.URL, staleSyncSkipsMetric, all); err != nil || skips["all"] != 6 {
		t.Errorf("stale sync skips: %v, %v; want all: 6", skips, err)
	}
	total, byResult, byAction := syncsBetween(start, end)
	if diff := cmp.Diff(histogram{0.004: 3, math.Inf(1): 6}, total); diff != "" {
		t.Errorf("syncs between the scrapes (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"success": 4, "error": 2}, byResult); diff != "" {
		t.Errorf("syncs by result (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]float64{"tracking": 4, "pods_created": 2}, byAction); diff != "" {
		t.Errorf("syncs by action (-want +got):\n%s", diff)
	}
}
