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
	"slices"
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
	// EnvPhases is a comma-separated list of the workloads to run, out of
	// allPhases; empty runs them all.
	EnvPhases = "BENCH_SCALE_PHASES"
	// EnvSides is a comma-separated list of the sides to run (kcm, ours);
	// empty runs both.
	EnvSides = "BENCH_SCALE_SIDES"
	// EnvProfile is a directory: when set, each side saves there a heap
	// profile of its Job server once the stored Jobs are in
	// (<side>-stored-heap.pb.gz), and CPU profiles of kube-apiserver and
	// of our server during full LISTs (<side>-list-host-cpu.pb.gz,
	// -list-server-cpu) and during the first minute of each batch mix
	// (<side>-<namespace>-host-cpu.pb.gz, -server-cpu).
	EnvProfile = "BENCH_SCALE_PROFILE"
	// EnvOursArgs is a space-separated list of flags added to our
	// server's (for instance -v=4, to read why each sync ran).
	EnvOursArgs = "BENCH_SCALE_OURS_ARGS"
	// EnvKCMArgs is the same for kube-controller-manager on its side.
	EnvKCMArgs = "BENCH_SCALE_KCM_ARGS"
	// EnvLogs is a directory: when set, each side's process logs are
	// copied there (<side>-<rate>/) as its cluster stops.
	EnvLogs = "BENCH_SCALE_LOGS"
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

// perJobPhases are the workloads in which a side's Job controller runs
// the Jobs, in the order they run. The stored Jobs are left out: they
// belong to an external controller, and the harness writes their status.
var perJobPhases = []string{"mix_defaults", "mix_equal_qps", "large_job", "failures"}

// perJobFigures are the controller's work compared per Job: the summary
// key of the worst ours ÷ kcm ratio, the table's name of the figure, and
// how to count it in a phase. Status writes count every attempt, refused
// or not, as the table's "Job status writes" row does.
var perJobFigures = []struct {
	key, figure string
	count       func(phaseResult) float64
}{
	{"job_syncs_per_job_ratio", "job syncs", func(p phaseResult) float64 { return p.JobSyncCount }},
	{"job_status_writes_per_job_ratio", "Job status writes", func(p phaseResult) float64 { return p.callCount(jobStatusWrites...) }},
}

// TestBenchScale is `make bench-scale`: workloads 1–5 of issue 17 under
// kube-controller-manager and under ours, one fresh host cluster per side
// and client-rate setting. It prints one table and writes the JSON
// results; it asserts correctness only. EnvPhases and EnvSides narrow a
// run to some workloads or one side; a cluster that would run none of the
// selected workloads is not started.
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
	sel, err := selectionFrom(os.Getenv(EnvPhases), os.Getenv(EnvSides))
	if err != nil {
		t.Fatalf("%v", err)
	}
	runFor, _ := time.ParseDuration(sz.RunFor)
	ctx, cancel := context.WithTimeout(context.Background(), 12*time.Hour)
	t.Cleanup(cancel)
	e := newEnv(t, sz.Nodes)
	res := map[string]*sideResults{}
	for _, name := range sel.sides {
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
	for _, name := range sel.sides {
		if !sel.runs("mix_defaults") {
			break
		}
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
	for _, name := range sel.sides {
		if !sel.runsAny(equalRatePhases...) {
			break
		}
		start := time.Now()
		s := e.startSide(ctx, t, name, rateRaised)
		res[name].PhaseSeconds["cluster_start_equal"] = time.Since(start).Seconds()
		res[name].Rates[rateRaised.name] = s.effectiveRate
		// selected runs a workload when the selection has it.
		selected := func(phase string, f func()) {
			if sel.runs(phase) {
				timed(name, phase, f)
			}
		}
		selected("mix_equal_qps", func() {
			r := s.runMix(ctx, t, "mix-equal", batchMix("mix", sz.MixPods, sz.MixSizes, runFor), limitFor(40*time.Minute, scale))
			res[name].MixEqual = &r
		})
		selected("large_job", func() {
			r := s.runLarge(ctx, t, "large", sz.LargeCompletions, sz.LargeParallelism, runFor, limitFor(60*time.Minute, scale))
			res[name].Large = &r
		})
		selected("failures", func() {
			out, phase := s.runMeasured(ctx, t, "failures", failureJobs("fail", sz.FailureJobs, runFor), 10, limitFor(40*time.Minute, scale))
			res[name].Failures = &failuresResult{Outcome: out, Phase: phase}
		})
		selected("stored", func() {
			r := s.runStored(ctx, t, "stored", sz.Stored, sz.Watchers, sz.WatchJobs, sz.FullLists)
			res[name].Stored = &r
		})
		s.stop()
	}

	summary := summarize(sz, res)
	if !sel.whole() {
		summary["phases_run"], summary["sides_run"] = sel.phaseList(), sel.sides
	}
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
	if kcmStatuses, oursStatuses, ok := failureStatuses(res); ok {
		if diffs := compareStatuses(kcmStatuses, oursStatuses); len(diffs) > 0 {
			t.Errorf("%d Jobs with failures end differently under the two controllers, e.g.:\n%s", len(diffs), strings.Join(diffs[:min(10, len(diffs))], "\n"))
		}
	}
	for _, name := range sel.sides {
		if st := res[name].Stored; st != nil && (st.WatchEventsLost != 0 || st.FillErrors != 0) {
			t.Errorf("%s: stored Jobs: %d writes failed, %d watch events lost; want 0", name, st.FillErrors, st.WatchEventsLost)
		}
	}
}

// outcomes returns every run outcome of a side (none for a side that did
// not run).
func (r *sideResults) outcomes() []runOutcome {
	if r == nil {
		return nil
	}
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
// work, by name (none for a side that did not run).
func (r *sideResults) phases() map[string]phaseResult {
	p := map[string]phaseResult{}
	if r == nil {
		return p
	}
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

// controllerPhase returns the phase of the workload named (one of
// perJobPhases) and how many Jobs it ran; ok is false when the side did
// not run it.
func (r *sideResults) controllerPhase(name string) (p phaseResult, jobs int, ok bool) {
	var out *runOutcome
	switch {
	case name == "mix_defaults" && r.MixDefaults != nil:
		p, out = r.MixDefaults.Phase, &r.MixDefaults.Outcome
	case name == "mix_equal_qps" && r.MixEqual != nil:
		p, out = r.MixEqual.Phase, &r.MixEqual.Outcome
	case name == "large_job" && r.Large != nil:
		p, out = r.Large.Phase, &r.Large.Outcome
	case name == "failures" && r.Failures != nil:
		p, out = r.Failures.Phase, &r.Failures.Outcome
	default:
		return phaseResult{}, 0, false
	}
	return p, out.Created, true
}

// perJob is a figure per Job of one workload on both sides.
type perJob struct {
	workload  string
	ours, kcm float64
}

// worstPerJob returns the workload of perJobPhases with the highest
// ours ÷ kcm ratio of count per Job (the earliest of equals); ok is false
// when none has a ratio. A workload has none when a side did not run it,
// created no Job in it or counted nothing in it: a ratio of a zero count
// would be 0 or infinite and say nothing about the work per Job.
func worstPerJob(res map[string]*sideResults, count func(phaseResult) float64) (worst perJob, ok bool) {
	ours, kcm := sideOf(res, sideOurs), sideOf(res, sideKCM)
	for _, name := range perJobPhases {
		o, oJobs, oRan := ours.controllerPhase(name)
		k, kJobs, kRan := kcm.controllerPhase(name)
		if !oRan || !kRan || oJobs <= 0 || kJobs <= 0 {
			continue
		}
		w := perJob{workload: name, ours: count(o) / float64(oJobs), kcm: count(k) / float64(kJobs)}
		if w.ours <= 0 || w.kcm <= 0 {
			continue
		}
		if !ok || w.ours/w.kcm > worst.ours/worst.kcm {
			worst, ok = w, true
		}
	}
	return worst, ok
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

// summarize computes the figures issue 17 asks for by name. A figure of a
// workload or side that did not run is left out: a ratio needs both
// sides' figure, a per-side map holds the sides that measured it, and the
// final statuses of workload 3 are compared only when both sides ran it.
func summarize(sz benchSizes, res map[string]*sideResults) map[string]any {
	// ours and kcm are empty results for a side that did not run; ranOurs
	// and ranKCM are nil then.
	ranOurs, ranKCM := res[sideOurs], res[sideKCM]
	ours, kcm := sideOf(res, sideOurs), sideOf(res, sideKCM)
	var lost, stuck, left, atFinish, mixNotComplete int
	for _, r := range res {
		for _, o := range r.outcomes() {
			lost += o.Lost
			stuck += o.Stuck
			atFinish += max(0, o.FinalizersAtFinish)
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
	mutating, lists := map[string]float64{}, map[string]float64{}
	if ranOurs != nil {
		mutating["ours"] = mutatingMax(ranOurs, "batch-apiserver")
		// kube-apiserver of our side (Pods, Events, the aggregator).
		mutating["kube_on_ours_side"] = mutatingMax(ranOurs, "kube-apiserver")
		lists["ours"] = listMax(ranOurs, "batch-apiserver")
	}
	if ranKCM != nil {
		mutating["kube"] = mutatingMax(ranKCM, "kube-apiserver")
		lists["kube"] = listMax(ranKCM, "kube-apiserver")
	}
	out := map[string]any{
		"job_sync_p99_seconds":              bySide(ranOurs, ranKCM, syncMax),
		"mutating_p99_seconds_max":          mutating,
		"list_p99_seconds_max":              lists,
		"large_job_completions":             sz.LargeCompletions,
		"large_job_parallelism":             sz.LargeParallelism,
		"large_job_seconds":                 bySide(ours.Large, kcm.Large, func(r *largeResult) float64 { return r.Seconds }),
		"large_job_status_bytes":            bySide(ours.Large, kcm.Large, func(r *largeResult) int { return r.StatusBytes }),
		"large_job_controller_rss_mib":      bySide(ours.Large, kcm.Large, func(r *largeResult) float64 { return r.ControllerRSSMiB }),
		"stored_jobs":                       sz.Stored,
		"stored_heap_inuse_mib":             bySide(ours.Stored, kcm.Stored, func(r *storedResult) float64 { return r.ServerHeapInUseMiB }),
		"stored_rss_after_fill_mib":         bySide(ours.Stored, kcm.Stored, func(r *storedResult) float64 { return r.ServerRSSAfterFillMiB }),
		"watch_events_lost":                 bySide(ours.Stored, kcm.Stored, func(r *storedResult) int64 { return r.WatchEventsLost }),
		"jobs_lost":                         lost,
		"jobs_stuck":                        stuck,
		"pods_left_with_finalizer":          left,
		"pods_with_finalizer_when_finished": atFinish,
		"mix_jobs_not_complete":             mixNotComplete,
	}
	// ratioOf sets key to ours ÷ kcm when both sides measured the figure.
	ratioOf := func(key string, o, k float64) {
		if !math.IsNaN(o) && !math.IsNaN(k) {
			out[key] = ratio(o, k)
		}
	}
	podsPerMinute := func(m *mixResult) float64 { return m.PodsPerMinute }
	ratioOf("pods_per_minute_ratio_equal_qps", measured(ours.MixEqual, podsPerMinute), measured(kcm.MixEqual, podsPerMinute))
	ratioOf("pods_per_minute_ratio_defaults", measured(ours.MixDefaults, podsPerMinute), measured(kcm.MixDefaults, podsPerMinute))
	ratioOf("control_plane_cpu_per_1000_pods_ratio", measured(ours.MixEqual, cpuPer1000Pods), measured(kcm.MixEqual, cpuPer1000Pods))
	ratioOf("control_plane_cpu_per_1000_pods_ratio_defaults", measured(ours.MixDefaults, cpuPer1000Pods), measured(kcm.MixDefaults, cpuPer1000Pods))
	for key, f := range map[string]func(*storedResult) float64{
		"rss_ratio_stored":              func(r *storedResult) float64 { return r.ServerRSSMiB },
		"heap_inuse_ratio_stored":       func(r *storedResult) float64 { return r.ServerHeapInUseMiB },
		"list_ratio_stored":             func(r *storedResult) float64 { return r.FullListP99 },
		"page_list_ratio_stored":        func(r *storedResult) float64 { return r.PageListP99 },
		"list_ratio_stored_direct":      func(r *storedResult) float64 { return r.FullListDirectP99 },
		"page_list_ratio_stored_direct": func(r *storedResult) float64 { return r.PageListDirectP99 },
		"restart_ratio_stored":          func(r *storedResult) float64 { return r.RestartReady },
	} {
		ratioOf(key, measured(ours.Stored, f), measured(kcm.Stored, f))
	}
	for _, f := range perJobFigures {
		if w, ok := worstPerJob(res, f.count); ok {
			out[f.key] = w.ours / w.kcm
		}
	}
	if kcmStatuses, oursStatuses, ok := failureStatuses(res); ok {
		out["failure_statuses_differing"] = len(compareStatuses(kcmStatuses, oursStatuses))
	}
	return out
}

// sideOf returns the results of side name, empty ones (every workload
// nil) when the side did not run.
func sideOf(res map[string]*sideResults, name string) *sideResults {
	if r := res[name]; r != nil {
		return r
	}
	return &sideResults{}
}

// failureStatuses returns the final statuses of workload 3 on both sides;
// ok is false unless both ran it.
func failureStatuses(res map[string]*sideResults) (kcm, ours map[string]finalStatus, ok bool) {
	k, o := sideOf(res, sideKCM).Failures, sideOf(res, sideOurs).Failures
	if k == nil || o == nil {
		return nil, nil, false
	}
	return k.Outcome.Statuses, o.Outcome.Statuses, true
}

// measured is f of a workload's result, NaN (not measured) when the
// workload did not run.
func measured[T any](r *T, f func(*T) float64) float64 {
	if r == nil {
		return math.NaN()
	}
	return f(r)
}

// bySide maps "ours" and "kcm" to f of their result of a workload,
// leaving out a side whose result is nil.
func bySide[T, V any](ours, kcm *T, f func(*T) V) map[string]V {
	out := map[string]V{}
	if ours != nil {
		out["ours"] = f(ours)
	}
	if kcm != nil {
		out["kcm"] = f(kcm)
	}
	return out
}

// row is one figure of the table.
type row struct {
	figure string
	// ours and kcm are NaN when not measured.
	ours, kcm float64
	// format prints a value.
	format string
}

// printTable logs the table of a run and prints it to stdout.
func printTable(t *testing.T, sz benchSizes, res map[string]*sideResults, summary map[string]any) {
	text := tableText(sz, res, summary)
	t.Log(text)
	fmt.Print(text)
}

// tableText is the table of a run: "-" stands for a figure not measured
// (a workload or side not run), a ratio needs both sides' figure, and a
// workload neither side ran has no section.
func tableText(sz benchSizes, res map[string]*sideResults, summary map[string]any) string {
	ours, kcm := sideOf(res, sideOurs), sideOf(res, sideKCM)
	var rows []row
	// adder returns a function adding a figure of a workload, "-" on a
	// side where hasOurs or hasKCM says the workload did not run.
	adder := func(hasOurs, hasKCM bool) func(figure, format string, o, k float64) {
		return func(figure, format string, o, k float64) {
			if !hasOurs {
				o = math.NaN()
			}
			if !hasKCM {
				k = math.NaN()
			}
			rows = append(rows, row{figure: figure, ours: o, kcm: k, format: format})
		}
	}
	// addCalls adds what a phase cost in the Job controller's syncs and
	// API calls, which says whether a difference of CPU is one of work,
	// and the syncs and writes split so as to tell where extra work comes
	// from: one row per result and per action either side counted.
	addCalls := func(add func(figure, format string, o, k float64), o, k phaseResult) {
		add("  job syncs", "%.0f", o.JobSyncCount, k.JobSyncCount)
		for _, result := range keysOf(o.JobSyncsByResult, k.JobSyncsByResult) {
			add("  job syncs by result: "+result, "%.0f", o.JobSyncsByResult[result], k.JobSyncsByResult[result])
		}
		for _, action := range keysOf(o.JobSyncsByAction, k.JobSyncsByAction) {
			add("  job syncs by action: "+action, "%.0f", o.JobSyncsByAction[action], k.JobSyncsByAction[action])
		}
		add("  stale sync skips", "%.0f", o.StaleSyncSkips, k.StaleSyncSkips)
		add("  job queue wait for a worker, mean s", "%.2f", o.queueWaitOrNaN(), k.queueWaitOrNaN())
		add("  Job status writes", "%.0f", o.callCount(jobStatusWrites...), k.callCount(jobStatusWrites...))
		add("  Job status writes refused (409 Conflict)", "%.0f", o.refusedCount(jobStatusWrites...), k.refusedCount(jobStatusWrites...))
		add("  Pod creates", "%.0f", o.callCount("POST pods"), k.callCount("POST pods"))
		add("  Pod patches and updates", "%.0f", o.callCount("PATCH pods", "PUT pods"), k.callCount("PATCH pods", "PUT pods"))
		add("  Pod deletes", "%.0f", o.callCount("DELETE pods"), k.callCount("DELETE pods"))
	}
	for _, mix := range []struct {
		label string
		o, k  *mixResult
		rate  string
	}{
		{"1 batch mix, defaults", ours.MixDefaults, kcm.MixDefaults, fmt.Sprintf("ours %s, kcm %s", rateText(ours, "defaults"), rateText(kcm, "defaults"))},
		{"1 batch mix, equal QPS", ours.MixEqual, kcm.MixEqual, fmt.Sprintf("ours %s, kcm %s", rateText(ours, "equal"), rateText(kcm, "equal"))},
	} {
		if mix.o == nil && mix.k == nil {
			continue
		}
		add := adder(mix.o != nil, mix.k != nil)
		o, k := orZero(mix.o), orZero(mix.k)
		rows = append(rows, row{figure: mix.label + " (" + mix.rate + ")"})
		add("  Pods completed / min", "%.0f", o.PodsPerMinute, k.PodsPerMinute)
		add("  Jobs completed / s", "%.2f", o.JobsPerSecond, k.JobsPerSecond)
		add("  create→Complete p50 s", "%.1f", o.P50Seconds, k.P50Seconds)
		add("  create→Complete p99 s", "%.1f", o.P99Seconds, k.P99Seconds)
		add("  job sync p99 s", "%.3f", o.Phase.JobSyncP99, k.Phase.JobSyncP99)
		add("  control plane CPU s / 1000 Pods", "%.1f", cpuPer1000Pods(o), cpuPer1000Pods(k))
		add("  wall s", "%.0f", o.WallSeconds, k.WallSeconds)
		addCalls(add, o.Phase, k.Phase)
	}
	if ours.Large != nil || kcm.Large != nil {
		add := adder(ours.Large != nil, kcm.Large != nil)
		o, k := orZero(ours.Large), orZero(kcm.Large)
		rows = append(rows, row{figure: fmt.Sprintf("2 large Indexed Job (%d completions, parallelism %d)", sz.LargeCompletions, sz.LargeParallelism)})
		add("  seconds to Complete", "%.0f", o.Seconds, k.Seconds)
		add("  status bytes", "%.0f", float64(o.StatusBytes), float64(k.StatusBytes))
		add("  controller process max RSS MiB", "%.0f", o.ControllerRSSMiB, k.ControllerRSSMiB)
		add("  job sync p99 s", "%.3f", o.Phase.JobSyncP99, k.Phase.JobSyncP99)
		addCalls(add, o.Phase, k.Phase)
	}
	if ours.Failures != nil || kcm.Failures != nil {
		add := adder(ours.Failures != nil, kcm.Failures != nil)
		o, k := orZero(ours.Failures), orZero(kcm.Failures)
		rows = append(rows, row{figure: fmt.Sprintf("3 failures (%d Jobs, podFailurePolicy + backoffLimitPerIndex)", sz.FailureJobs)})
		add("  wall s", "%.0f", o.Outcome.Wall.Seconds(), k.Outcome.Wall.Seconds())
		add("  job sync p99 s", "%.3f", o.Phase.JobSyncP99, k.Phase.JobSyncP99)
		add("  control plane CPU s", "%.1f", o.Phase.controlPlaneCPU(), k.Phase.controlPlaneCPU())
		addCalls(add, o.Phase, k.Phase)
	}
	if ours.Stored != nil || kcm.Stored != nil {
		add := adder(ours.Stored != nil, kcm.Stored != nil)
		o, k := orZero(ours.Stored), orZero(kcm.Stored)
		rows = append(rows, row{figure: fmt.Sprintf("4 %d finished Jobs stored", sz.Stored)})
		add("  server RSS MiB right after the fill", "%.0f", o.ServerRSSAfterFillMiB, k.ServerRSSAfterFillMiB)
		add("  server RSS MiB settled (ours: batch-apiserver; kcm: kube-apiserver)", "%.0f", o.ServerRSSMiB, k.ServerRSSMiB)
		add("  server Go heap in use MiB", "%.0f", o.ServerHeapInUseMiB, k.ServerHeapInUseMiB)
		add("  full LIST p99 s", "%.3f", o.FullListP99, k.FullListP99)
		add("  paginated LIST (500) p99 s", "%.3f", o.PageListP99, k.PageListP99)
		add("  full LIST p99 s, direct (ours: no aggregator hop)", "%.3f", o.FullListDirectP99, k.FullListDirectP99)
		add("  paginated LIST p99 s, direct", "%.3f", o.PageListDirectP99, k.PageListDirectP99)
		add("  restart to ready s", "%.2f", o.RestartReady, k.RestartReady)
		add(fmt.Sprintf("  %d-watcher fan-out, events lost", sz.Watchers), "%.0f", float64(o.WatchEventsLost), float64(k.WatchEventsLost))
		add("  fill (create + status) s", "%.0f", o.Fill.Seconds, k.Fill.Seconds)
	}
	rows = append(rows, row{figure: "5 during 1–4 (worst phase)"})
	add := adder(true, true)
	mut, _ := summary["mutating_p99_seconds_max"].(map[string]float64)
	add("  mutating p99 s, Job server (SLO 1 s)", "%.3f", valueOf(mut, "ours"), valueOf(mut, "kube"))
	lists, _ := summary["list_p99_seconds_max"].(map[string]float64)
	add("  LIST p99 s, Job server (SLO 30 s)", "%.3f", valueOf(lists, "ours"), valueOf(lists, "kube"))
	sync, _ := summary["job_sync_p99_seconds"].(map[string]float64)
	add("  job sync p99 s", "%.3f", valueOf(sync, "ours"), valueOf(sync, "kcm"))
	for _, f := range perJobFigures {
		if w, ok := worstPerJob(res, f.count); ok {
			add(fmt.Sprintf("  %s per Job, worst workload (%s)", f.figure, w.workload), "%.2f", w.ours, w.kcm)
		} else {
			add(fmt.Sprintf("  %s per Job, worst workload", f.figure), "%.2f", math.NaN(), math.NaN())
		}
	}

	var b strings.Builder
	fmt.Fprintf(&b, "\nbench-scale: scale %g, %d kwok nodes, Pods run %s\n", sz.Scale, sz.Nodes, sz.RunFor)
	if phases, ok := summary["phases_run"].([]string); ok {
		sides, _ := summary["sides_run"].([]string)
		fmt.Fprintf(&b, "phases %s on %s only; \"-\" is not measured\n", strings.Join(phases, ","), strings.Join(sides, ","))
	}
	fmt.Fprintf(&b, "%-64s %12s %12s %8s\n", "figure", "ours", "kcm", "ours÷kcm")
	for _, r := range rows {
		if r.format == "" {
			fmt.Fprintf(&b, "%s\n", r.figure)
			continue
		}
		fmt.Fprintf(&b, "%-64s %12s %12s %8s\n", r.figure, cellText(r.format, r.ours), cellText(r.format, r.kcm), ratioText(r.ours, r.kcm))
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
	differing := any("-")
	if v, ok := summary["failure_statuses_differing"]; ok {
		differing = v
	}
	fmt.Fprintf(&b, "\ncorrectness: jobs lost %v, stuck %v, Pods left with finalizer %v (%v when every Job had finished), mix Jobs not Complete %v, failure statuses differing %v\n",
		summary["jobs_lost"], summary["jobs_stuck"], summary["pods_left_with_finalizer"], summary["pods_with_finalizer_when_finished"],
		summary["mix_jobs_not_complete"], differing)
	return b.String()
}

// orZero is r, or a zero result to read figures from when r is nil.
func orZero[T any](r *T) *T {
	if r == nil {
		return new(T)
	}
	return r
}

// keysOf returns the keys of the maps, each once, sorted.
func keysOf(maps ...map[string]float64) []string {
	var keys []string
	for _, m := range maps {
		for k := range m {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return slices.Compact(keys)
}

// valueOf is m[key], NaN (not measured) when m has no such key.
func valueOf(m map[string]float64, key string) float64 {
	if v, ok := m[key]; ok {
		return v
	}
	return math.NaN()
}

// rateText is the client rate a side's controller ran at in the setting
// named, "-" when the side did not run it.
func rateText(r *sideResults, setting string) string {
	if v := r.Rates[setting]; v != "" {
		return v
	}
	return "-"
}

// cellText prints v in format, "-" when it was not measured.
func cellText(format string, v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf(format, v)
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
