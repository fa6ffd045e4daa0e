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
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Environment of `make bench-scale`.
const (
	// EnvRun turns the benchmark on.
	EnvRun = "BENCH_SCALE_RUN"
	// EnvScale scales every count (1: the sizes of issue 17).
	EnvScale = "BENCH_SCALE"
	// EnvOut is the path of the JSON results.
	EnvOut = "BENCH_SCALE_OUT"
)

// benchSizes are the counts of one run.
type benchSizes struct {
	Scale            float64  `json:"scale"`
	Nodes            int      `json:"nodes"`
	MixPods          int      `json:"mix_pods"`
	MixSizes         [3]int32 `json:"mix_job_sizes"`
	LargeCompletions int32    `json:"large_job_completions"`
	LargeParallelism int32    `json:"large_job_parallelism"`
	FailureJobs      int      `json:"failure_jobs"`
	Stored           int      `json:"stored_jobs"`
	Watchers         int      `json:"watchers"`
	WatchJobs        int      `json:"watch_jobs"`
	FullLists        int      `json:"full_lists"`
	RunFor           string   `json:"pod_run_for"`
}

// sizesFor returns the counts at scale: 5 000 Pods in the batch mix
// (clusterloader2's 5/20/400-Pod Jobs; about what kube-controller-
// manager's 20 QPS default completes in ten minutes here, the issue's
// bound for one side), one Indexed Job of 20 000
// completions at parallelism 1 000, 2 000 Jobs with failures, 150 000
// Jobs stored, 1 000 simulated nodes; every count has a floor so that a
// tiny scale still runs each workload.
func sizesFor(scale float64) benchSizes {
	n := func(full float64, floor int) int { return max(floor, int(math.Round(full*scale))) }
	mixPods := n(5000, 150)
	return benchSizes{
		Scale:            scale,
		Nodes:            n(1000, 100),
		MixPods:          mixPods,
		MixSizes:         [3]int32{5, 20, int32(min(400, max(40, mixPods/12)))},
		LargeCompletions: int32(n(20000, 100)),
		LargeParallelism: int32(n(1000, 10)),
		FailureJobs:      n(2000, 8),
		Stored:           n(150000, 100),
		Watchers:         50,
		WatchJobs:        n(1000, 20),
		FullLists:        5,
		RunFor:           "2s",
	}
}

// limitFor is how long a workload may take at scale before its Jobs count
// as stuck.
func limitFor(full time.Duration, scale float64) time.Duration {
	return max(5*time.Minute, time.Duration(float64(full)*scale))
}

// sideResults is everything measured on one side.
type sideResults struct {
	MixDefaults *mixResult      `json:"mix_defaults,omitempty"`
	MixEqual    *mixResult      `json:"mix_equal_qps,omitempty"`
	Large       *largeResult    `json:"large_job,omitempty"`
	Failures    *failuresResult `json:"failures,omitempty"`
	Stored      *storedResult   `json:"stored,omitempty"`
	// Rates are the controller's client rates of each setting.
	Rates map[string]string `json:"controller_client_rates"`
	// PhaseSeconds is the wall time of each workload.
	PhaseSeconds map[string]float64 `json:"phase_seconds"`
}

// jobStatusWrites are the calls that write a Job's status.
var jobStatusWrites = []string{"PUT jobs/status", "PATCH jobs/status", "APPLY jobs/status"}

// TestBenchScale is `make bench-scale`: workloads 1–5 of issue 17 under
// kube-controller-manager and under ours, one fresh host cluster per side
// and client-rate setting. It prints one table and writes the JSON
// results; it asserts correctness only.
func TestBenchScale(t *testing.T) {
	if os.Getenv(EnvRun) == "" {
		t.Skipf("the scale benchmark runs with %s=1 (make bench-scale)", EnvRun)
	}
	scale := 1.0
	if v := os.Getenv(EnvScale); v != "" {
		var err error
		if scale, err = strconv.ParseFloat(v, 64); err != nil || scale <= 0 {
			t.Fatalf("%s=%q: want a positive number", EnvScale, v)
		}
	}
	sz := sizesFor(scale)
	runFor, _ := time.ParseDuration(sz.RunFor)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Hour)
	t.Cleanup(cancel)
	e := newEnv(t, sz.Nodes)
	res := map[string]*sideResults{}
	for _, name := range []string{sideKCM, sideOurs} {
		res[name] = &sideResults{Rates: map[string]string{}, PhaseSeconds: map[string]float64{}}
	}
	timed := func(side, phase string, f func()) {
		start := time.Now()
		f()
		res[side].PhaseSeconds[phase] = time.Since(start).Seconds()
		t.Logf("%s: %s took %v", side, phase, time.Since(start).Round(time.Second))
		writePartial(t, sz, res)
	}

	// Workload 1 at each side's defaults.
	for _, name := range []string{sideKCM, sideOurs} {
		start := time.Now()
		s := e.startSide(ctx, t, name, rateDefaults)
		res[name].PhaseSeconds["cluster_start_defaults"] = time.Since(start).Seconds()
		res[name].Rates[rateDefaults.name] = s.effectiveRate
		timed(name, "mix_defaults", func() {
			r := s.runMix(ctx, t, "mix-defaults", batchMix("mix", sz.MixPods, sz.MixSizes, runFor), limitFor(40*time.Minute, scale))
			res[name].MixDefaults = &r
		})
		s.stop()
	}
	// Workloads 1–4 at equal raised rates.
	for _, name := range []string{sideKCM, sideOurs} {
		start := time.Now()
		s := e.startSide(ctx, t, name, rateRaised)
		res[name].PhaseSeconds["cluster_start_equal"] = time.Since(start).Seconds()
		res[name].Rates[rateRaised.name] = s.effectiveRate
		timed(name, "mix_equal_qps", func() {
			r := s.runMix(ctx, t, "mix-equal", batchMix("mix", sz.MixPods, sz.MixSizes, runFor), limitFor(40*time.Minute, scale))
			res[name].MixEqual = &r
		})
		timed(name, "large_job", func() {
			r := s.runLarge(ctx, t, "large", sz.LargeCompletions, sz.LargeParallelism, runFor, limitFor(60*time.Minute, scale))
			res[name].Large = &r
		})
		timed(name, "failures", func() {
			out, phase := s.runMeasured(ctx, t, "failures", failureJobs("fail", sz.FailureJobs, runFor), 10, limitFor(40*time.Minute, scale))
			res[name].Failures = &failuresResult{Outcome: out, Phase: phase}
		})
		timed(name, "stored", func() {
			r := s.runStored(ctx, t, "stored", sz.Stored, sz.Watchers, sz.WatchJobs, sz.FullLists)
			res[name].Stored = &r
		})
		s.stop()
	}

	summary := summarize(sz, res)
	printTable(t, sz, res, summary)
	writeJSON(t, summary, sz, res)

	// Correctness, never a time.
	if summary["jobs_lost"].(int) != 0 || summary["jobs_stuck"].(int) != 0 || summary["pods_left_with_finalizer"].(int) != 0 {
		t.Errorf("jobs lost %v, stuck %v, Pods left with a tracking finalizer %v; want 0 each",
			summary["jobs_lost"], summary["jobs_stuck"], summary["pods_left_with_finalizer"])
	}
	if n := summary["mix_jobs_not_complete"].(int); n != 0 {
		t.Errorf("%d Jobs of the batch mix did not complete", n)
	}
	if diffs := compareStatuses(res[sideKCM].Failures.Outcome.Statuses, res[sideOurs].Failures.Outcome.Statuses); len(diffs) > 0 {
		t.Errorf("%d Jobs with failures end differently under the two controllers, e.g.:\n%s", len(diffs), strings.Join(diffs[:min(10, len(diffs))], "\n"))
	}
	for _, name := range []string{sideKCM, sideOurs} {
		if st := res[name].Stored; st.WatchEventsLost != 0 || st.FillErrors != 0 {
			t.Errorf("%s: stored Jobs: %d writes failed, %d watch events lost; want 0", name, st.FillErrors, st.WatchEventsLost)
		}
	}
}

// outcomes returns every run outcome of a side.
func (r *sideResults) outcomes() []runOutcome {
	var out []runOutcome
	for _, m := range []*mixResult{r.MixDefaults, r.MixEqual} {
		if m != nil {
			out = append(out, m.Outcome)
		}
	}
	if r.Large != nil {
		out = append(out, r.Large.Outcome)
	}
	if r.Failures != nil {
		out = append(out, r.Failures.Outcome)
	}
	return out
}

// phases returns the measured phases of a side with a Job controller at
// work, by name.
func (r *sideResults) phases() map[string]phaseResult {
	p := map[string]phaseResult{}
	if r.MixDefaults != nil {
		p["mix_defaults"] = r.MixDefaults.Phase
	}
	if r.MixEqual != nil {
		p["mix_equal_qps"] = r.MixEqual.Phase
	}
	if r.Large != nil {
		p["large_job"] = r.Large.Phase
	}
	if r.Failures != nil {
		p["failures"] = r.Failures.Phase
	}
	if r.Stored != nil {
		p["stored_fill"] = r.Stored.Fill
	}
	return p
}

func ratio(ours, kcm float64) float64 {
	if kcm == 0 || math.IsNaN(kcm) || math.IsNaN(ours) {
		return 0
	}
	return ours / kcm
}

// cpuPer1000Pods is the control plane's CPU seconds per 1 000 Pods
// completed in a batch mix.
func cpuPer1000Pods(m *mixResult) float64 {
	if m == nil || m.Pods == 0 {
		return 0
	}
	return m.Phase.controlPlaneCPU() / float64(m.Pods) * 1000
}

// summarize computes the figures issue 17 asks for by name.
func summarize(sz benchSizes, res map[string]*sideResults) map[string]any {
	ours, kcm := res[sideOurs], res[sideKCM]
	var lost, stuck, left, mixNotComplete int
	for _, r := range res {
		for _, o := range r.outcomes() {
			lost += o.Lost
			stuck += o.Stuck
			left += max(0, o.PodsLeftWithFinalizer)
			if o.PodsLeftWithFinalizer < 0 {
				left++
			}
		}
		for _, m := range []*mixResult{r.MixDefaults, r.MixEqual} {
			if m != nil {
				mixNotComplete += m.Outcome.NotComplete
			}
		}
	}
	syncMax := func(r *sideResults) float64 {
		highest := 0.0
		for _, p := range r.phases() {
			highest = math.Max(highest, p.JobSyncP99)
		}
		return highest
	}
	mutatingMax := func(r *sideResults, server string) float64 {
		highest := 0.0
		for _, p := range r.phases() {
			highest = math.Max(highest, p.mutatingP99Max(server))
		}
		return highest
	}
	listMax := func(r *sideResults, server string) float64 {
		highest := 0.0
		for _, p := range r.phases() {
			if v, ok := p.RequestP99[server]["LIST"]; ok {
				highest = math.Max(highest, v)
			}
		}
		return highest
	}
	statusDiffs := len(compareStatuses(kcm.Failures.Outcome.Statuses, ours.Failures.Outcome.Statuses))
	return map[string]any{
		"pods_per_minute_ratio_equal_qps":                ratio(ours.MixEqual.PodsPerMinute, kcm.MixEqual.PodsPerMinute),
		"pods_per_minute_ratio_defaults":                 ratio(ours.MixDefaults.PodsPerMinute, kcm.MixDefaults.PodsPerMinute),
		"control_plane_cpu_per_1000_pods_ratio":          ratio(cpuPer1000Pods(ours.MixEqual), cpuPer1000Pods(kcm.MixEqual)),
		"control_plane_cpu_per_1000_pods_ratio_defaults": ratio(cpuPer1000Pods(ours.MixDefaults), cpuPer1000Pods(kcm.MixDefaults)),
		"job_sync_p99_seconds":                           map[string]float64{"ours": syncMax(ours), "kcm": syncMax(kcm)},
		"mutating_p99_seconds_max": map[string]float64{
			"ours": mutatingMax(ours, "batch-apiserver"),
			"kube": mutatingMax(kcm, "kube-apiserver"),
			// kube-apiserver of our side (Pods, Events, the aggregator).
			"kube_on_ours_side": mutatingMax(ours, "kube-apiserver"),
		},
		"list_p99_seconds_max": map[string]float64{
			"ours": listMax(ours, "batch-apiserver"),
			"kube": listMax(kcm, "kube-apiserver"),
		},
		"large_job_completions":         sz.LargeCompletions,
		"large_job_parallelism":         sz.LargeParallelism,
		"large_job_seconds":             map[string]float64{"ours": ours.Large.Seconds, "kcm": kcm.Large.Seconds},
		"large_job_status_bytes":        map[string]int{"ours": ours.Large.StatusBytes, "kcm": kcm.Large.StatusBytes},
		"large_job_controller_rss_mib":  map[string]float64{"ours": ours.Large.ControllerRSSMiB, "kcm": kcm.Large.ControllerRSSMiB},
		"stored_jobs":                   sz.Stored,
		"rss_ratio_stored":              ratio(ours.Stored.ServerRSSMiB, kcm.Stored.ServerRSSMiB),
		"list_ratio_stored":             ratio(ours.Stored.FullListP99, kcm.Stored.FullListP99),
		"page_list_ratio_stored":        ratio(ours.Stored.PageListP99, kcm.Stored.PageListP99),
		"list_ratio_stored_direct":      ratio(ours.Stored.FullListDirectP99, kcm.Stored.FullListDirectP99),
		"page_list_ratio_stored_direct": ratio(ours.Stored.PageListDirectP99, kcm.Stored.PageListDirectP99),
		"restart_ratio_stored":          ratio(ours.Stored.RestartReady, kcm.Stored.RestartReady),
		"watch_events_lost":             map[string]int64{"ours": ours.Stored.WatchEventsLost, "kcm": kcm.Stored.WatchEventsLost},
		"failure_statuses_differing":    statusDiffs,
		"jobs_lost":                     lost,
		"jobs_stuck":                    stuck,
		"pods_left_with_finalizer":      left,
		"mix_jobs_not_complete":         mixNotComplete,
	}
}

// row is one figure of the table.
type row struct {
	figure    string
	ours, kcm float64
	// format prints a value.
	format string
}

func printTable(t *testing.T, sz benchSizes, res map[string]*sideResults, summary map[string]any) {
	ours, kcm := res[sideOurs], res[sideKCM]
	var rows []row
	add := func(figure, format string, o, k float64) {
		rows = append(rows, row{figure: figure, ours: o, kcm: k, format: format})
	}
	// addCalls adds what a phase cost in the Job controller's syncs and
	// API calls, which says whether a difference of CPU is one of work.
	addCalls := func(o, k phaseResult) {
		add("  job syncs", "%.0f", o.JobSyncCount, k.JobSyncCount)
		add("  Job status writes", "%.0f", o.callCount(jobStatusWrites...), k.callCount(jobStatusWrites...))
		add("  Pod creates", "%.0f", o.callCount("POST pods"), k.callCount("POST pods"))
		add("  Pod patches and updates", "%.0f", o.callCount("PATCH pods", "PUT pods"), k.callCount("PATCH pods", "PUT pods"))
		add("  Pod deletes", "%.0f", o.callCount("DELETE pods"), k.callCount("DELETE pods"))
	}
	for _, mix := range []struct {
		label string
		o, k  *mixResult
		rate  string
	}{
		{"1 batch mix, defaults", ours.MixDefaults, kcm.MixDefaults, fmt.Sprintf("ours %s, kcm %s", ours.Rates["defaults"], kcm.Rates["defaults"])},
		{"1 batch mix, equal QPS", ours.MixEqual, kcm.MixEqual, fmt.Sprintf("ours %s, kcm %s", ours.Rates["equal"], kcm.Rates["equal"])},
	} {
		rows = append(rows, row{figure: mix.label + " (" + mix.rate + ")"})
		add("  Pods completed / min", "%.0f", mix.o.PodsPerMinute, mix.k.PodsPerMinute)
		add("  Jobs completed / s", "%.2f", mix.o.JobsPerSecond, mix.k.JobsPerSecond)
		add("  create→Complete p50 s", "%.1f", mix.o.P50Seconds, mix.k.P50Seconds)
		add("  create→Complete p99 s", "%.1f", mix.o.P99Seconds, mix.k.P99Seconds)
		add("  job sync p99 s", "%.3f", mix.o.Phase.JobSyncP99, mix.k.Phase.JobSyncP99)
		add("  control plane CPU s / 1000 Pods", "%.1f", cpuPer1000Pods(mix.o), cpuPer1000Pods(mix.k))
		add("  wall s", "%.0f", mix.o.WallSeconds, mix.k.WallSeconds)
		addCalls(mix.o.Phase, mix.k.Phase)
	}
	rows = append(rows, row{figure: fmt.Sprintf("2 large Indexed Job (%d completions, parallelism %d)", sz.LargeCompletions, sz.LargeParallelism)})
	add("  seconds to Complete", "%.0f", ours.Large.Seconds, kcm.Large.Seconds)
	add("  status bytes", "%.0f", float64(ours.Large.StatusBytes), float64(kcm.Large.StatusBytes))
	add("  controller process max RSS MiB", "%.0f", ours.Large.ControllerRSSMiB, kcm.Large.ControllerRSSMiB)
	add("  job sync p99 s", "%.3f", ours.Large.Phase.JobSyncP99, kcm.Large.Phase.JobSyncP99)
	addCalls(ours.Large.Phase, kcm.Large.Phase)
	rows = append(rows, row{figure: fmt.Sprintf("3 failures (%d Jobs, podFailurePolicy + backoffLimitPerIndex)", sz.FailureJobs)})
	add("  wall s", "%.0f", ours.Failures.Outcome.Wall.Seconds(), kcm.Failures.Outcome.Wall.Seconds())
	add("  job sync p99 s", "%.3f", ours.Failures.Phase.JobSyncP99, kcm.Failures.Phase.JobSyncP99)
	add("  control plane CPU s", "%.1f", ours.Failures.Phase.controlPlaneCPU(), kcm.Failures.Phase.controlPlaneCPU())
	addCalls(ours.Failures.Phase, kcm.Failures.Phase)
	rows = append(rows, row{figure: fmt.Sprintf("4 %d finished Jobs stored", sz.Stored)})
	add("  server RSS MiB (ours: batch-apiserver; kcm: kube-apiserver)", "%.0f", ours.Stored.ServerRSSMiB, kcm.Stored.ServerRSSMiB)
	add("  full LIST p99 s", "%.3f", ours.Stored.FullListP99, kcm.Stored.FullListP99)
	add("  paginated LIST (500) p99 s", "%.3f", ours.Stored.PageListP99, kcm.Stored.PageListP99)
	add("  full LIST p99 s, direct (ours: no aggregator hop)", "%.3f", ours.Stored.FullListDirectP99, kcm.Stored.FullListDirectP99)
	add("  paginated LIST p99 s, direct", "%.3f", ours.Stored.PageListDirectP99, kcm.Stored.PageListDirectP99)
	add("  restart to ready s", "%.2f", ours.Stored.RestartReady, kcm.Stored.RestartReady)
	add(fmt.Sprintf("  %d-watcher fan-out, events lost", sz.Watchers), "%.0f", float64(ours.Stored.WatchEventsLost), float64(kcm.Stored.WatchEventsLost))
	add("  fill (create + status) s", "%.0f", ours.Stored.Fill.Seconds, kcm.Stored.Fill.Seconds)
	rows = append(rows, row{figure: "5 during 1–4 (worst phase)"})
	mut := summary["mutating_p99_seconds_max"].(map[string]float64)
	add("  mutating p99 s, Job server (SLO 1 s)", "%.3f", mut["ours"], mut["kube"])
	lists := summary["list_p99_seconds_max"].(map[string]float64)
	add("  LIST p99 s, Job server (SLO 30 s)", "%.3f", lists["ours"], lists["kube"])
	sync := summary["job_sync_p99_seconds"].(map[string]float64)
	add("  job sync p99 s", "%.3f", sync["ours"], sync["kcm"])

	var b strings.Builder
	fmt.Fprintf(&b, "\nbench-scale: scale %g, %d kwok nodes, Pods run %s\n", sz.Scale, sz.Nodes, sz.RunFor)
	fmt.Fprintf(&b, "%-64s %12s %12s %8s\n", "figure", "ours", "kcm", "ours÷kcm")
	for _, r := range rows {
		if r.format == "" {
			fmt.Fprintf(&b, "%s\n", r.figure)
			continue
		}
		fmt.Fprintf(&b, "%-64s %12s %12s %8s\n", r.figure, fmt.Sprintf(r.format, r.ours), fmt.Sprintf(r.format, r.kcm), ratioText(r.ours, r.kcm))
	}
	fmt.Fprintf(&b, "\nCPU seconds (max RSS MiB) per process and phase\n")
	for _, name := range []string{sideKCM, sideOurs} {
		phases := res[name].phases()
		var names []string
		for p := range phases {
			names = append(names, p)
		}
		sort.Strings(names)
		for _, p := range names {
			ph := phases[p]
			var procs []string
			for proc := range ph.CPUSeconds {
				procs = append(procs, proc)
			}
			sort.Strings(procs)
			var parts []string
			for _, proc := range procs {
				parts = append(parts, fmt.Sprintf("%s %.1f (%.0f)", proc, ph.CPUSeconds[proc], ph.MaxRSSMiB[proc]))
			}
			fmt.Fprintf(&b, "  %-4s %-14s %5.0fs  %s\n", name, p, ph.Seconds, strings.Join(parts, ", "))
		}
	}
	fmt.Fprintf(&b, "\ncorrectness: jobs lost %v, stuck %v, Pods left with finalizer %v, mix Jobs not Complete %v, failure statuses differing %v\n",
		summary["jobs_lost"], summary["jobs_stuck"], summary["pods_left_with_finalizer"], summary["mix_jobs_not_complete"], summary["failure_statuses_differing"])
	t.Log(b.String())
	fmt.Print(b.String())
}

func ratioText(ours, kcm float64) string {
	r := ratio(ours, kcm)
	if r == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", r)
}

// writePartial writes what the phases run so far measured, per side, next
// to the results (results.partial.json): a full-size run lasts over an
// hour, and one that is stopped keeps its finished phases.
func writePartial(t *testing.T, sz benchSizes, res map[string]*sideResults) {
	path := os.Getenv(EnvOut)
	if path == "" {
		return
	}
	path = strings.TrimSuffix(path, filepath.Ext(path)) + ".partial.json"
	if err := writeJSONFile(path, map[string]any{"sizes": sz, "sides": res}); err != nil {
		t.Logf("writing the partial results: %v", err)
	}
}

// writeJSONFile writes v as indented JSON to path, making its directory.
func writeJSONFile(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encoding %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o644)
}

func writeJSON(t *testing.T, summary map[string]any, sz benchSizes, res map[string]*sideResults) {
	path := os.Getenv(EnvOut)
	if path == "" {
		return
	}
	out := map[string]any{}
	for k, v := range summary {
		out[k] = v
	}
	out["sizes"] = sz
	out["sides"] = res
	if err := writeJSONFile(path, out); err != nil {
		t.Fatal(err)
	}
	t.Logf("results written to %s", path)
}
