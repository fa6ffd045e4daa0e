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
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// allPhases are the workloads of one side, in the order they run.
var allPhases = []string{"mix_defaults", "mix_equal_qps", "large_job", "failures", "stored"}

// equalRatePhases are the workloads run on the cluster at equal raised
// client rates; it is started only for a selection with one of them.
var equalRatePhases = allPhases[1:]

// allSides are the sides of a whole run, in the order they run.
var allSides = []string{sideKCM, sideOurs}

// selection is what one run measures: the workloads of EnvPhases on the
// sides of EnvSides.
type selection struct {
	phases map[string]bool
	// sides are in the order of allSides, whatever the order asked.
	sides []string
}

// selectionFrom reads a selection from the values of EnvPhases and
// EnvSides; an empty value selects every workload or both sides, an
// unknown name is an error that says which names there are.
func selectionFrom(phases, sides string) (selection, error) {
	names, err := namesOf(EnvPhases, phases, "phase", allPhases)
	if err != nil {
		return selection{}, err
	}
	sel := selection{phases: map[string]bool{}}
	for _, n := range names {
		sel.phases[n] = true
	}
	asked, err := namesOf(EnvSides, sides, "side", allSides)
	if err != nil {
		return selection{}, err
	}
	for _, n := range allSides {
		if slices.Contains(asked, n) {
			sel.sides = append(sel.sides, n)
		}
	}
	return sel, nil
}

// namesOf splits the value of the environment variable env into names
// out of known (what says what a name is, for the error); an empty value
// is all of them, empty items between commas are ignored.
func namesOf(env, value, what string, known []string) ([]string, error) {
	if strings.TrimSpace(value) == "" {
		return slices.Clone(known), nil
	}
	var out []string
	for _, n := range strings.Split(value, ",") {
		n = strings.TrimSpace(n)
		if n == "" {
			continue
		}
		if !slices.Contains(known, n) {
			return nil, fmt.Errorf("%s=%q: unknown %s %q, want a comma-separated subset of %s", env, value, what, n, strings.Join(known, ","))
		}
		out = append(out, n)
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s=%q names no %s, want a comma-separated subset of %s", env, value, what, strings.Join(known, ","))
	}
	return out, nil
}

// runs tells whether the phase is selected.
func (s selection) runs(phase string) bool { return s.phases[phase] }

// runsAny tells whether one of phases is selected.
func (s selection) runsAny(phases ...string) bool { return slices.ContainsFunc(phases, s.runs) }

// whole tells whether every phase runs on both sides.
func (s selection) whole() bool {
	return len(s.phases) == len(allPhases) && len(s.sides) == len(allSides)
}

// phaseList is the selected phases in the order they run.
func (s selection) phaseList() []string {
	return slices.DeleteFunc(slices.Clone(allPhases), func(p string) bool { return !s.runs(p) })
}

// TestSelectionFrom reads the values of EnvPhases and EnvSides: empty
// ones select everything, the sides keep the order of a whole run, and an
// unknown or missing name is an error naming its variable.
func TestSelectionFrom(t *testing.T) {
	sel, err := selectionFrom("", " ")
	if err != nil {
		t.Fatal(err)
	}
	if !sel.whole() || !slices.Equal(sel.phaseList(), allPhases) || !slices.Equal(sel.sides, allSides) {
		t.Errorf("empty values: whole %v, phases %v, sides %v; want every phase on both sides", sel.whole(), sel.phaseList(), sel.sides)
	}
	sel, err = selectionFrom("stored, large_job,", "ours,kcm")
	if err != nil {
		t.Fatal(err)
	}
	if sel.whole() || !slices.Equal(sel.phaseList(), []string{"large_job", "stored"}) || sel.runsAny(equalRatePhases[:1]...) || !sel.runsAny(equalRatePhases...) {
		t.Errorf("stored,large_job: whole %v, phases %v; want false, [large_job stored]", sel.whole(), sel.phaseList())
	}
	if !slices.Equal(sel.sides, allSides) {
		t.Errorf("sides %v, want %v (the order of a whole run)", sel.sides, allSides)
	}
	sel, err = selectionFrom("mix_defaults", "ours")
	if err != nil {
		t.Fatal(err)
	}
	if sel.whole() || sel.runsAny(equalRatePhases...) || !slices.Equal(sel.sides, []string{sideOurs}) {
		t.Errorf("mix_defaults on ours: whole %v, equal-rate phases %v, sides %v; want false, false, [ours]", sel.whole(), sel.runsAny(equalRatePhases...), sel.sides)
	}
	for _, bad := range [][2]string{{"mix", ""}, {"", "kube"}, {",", ""}, {"", " , "}} {
		_, err := selectionFrom(bad[0], bad[1])
		if err == nil {
			t.Errorf("selectionFrom(%q, %q): no error, want one", bad[0], bad[1])
			continue
		}
		if env := map[bool]string{true: EnvPhases, false: EnvSides}[bad[0] != ""]; !strings.Contains(err.Error(), env) {
			t.Errorf("selectionFrom(%q, %q): %v; want it to name %s", bad[0], bad[1], err, env)
		}
	}
}

// calls builds the phase of a controller's workload that ran jobs Jobs
// with syncs syncs and statusWrites Job status writes (PUT), for the
// summary's and the table's tests.
func calls(jobs int, syncs, statusWrites float64) (runOutcome, phaseResult) {
	return runOutcome{Created: jobs}, phaseResult{JobSyncCount: syncs, Calls: map[string]float64{"PUT jobs/status": statusWrites}}
}

// mixOf is a batch mix of calls' figures.
func mixOf(jobs int, syncs, statusWrites float64) *mixResult {
	out, phase := calls(jobs, syncs, statusWrites)
	return &mixResult{Outcome: out, Phase: phase, Jobs: jobs}
}

// TestPartialResults summarizes and prints runs that measured part of the
// figures: nothing may dereference a missing result, a missing figure
// prints "-", a ratio needs both sides, and the summary encodes as JSON.
// The per-Job ratios are the worst over the workloads both sides ran
// with a count on each, per Job rather than per workload.
func TestPartialResults(t *testing.T) {
	sz := sizesFor(0.01)
	// The per-Job cases: by counts, failures would be the worst workload
	// of both figures (48/32 syncs, 40/24 writes); per Job it is the best
	// (6/8 syncs, 5/6 writes), as kcm ran half the Jobs there.
	kcmFailOut, kcmFailPhase := calls(4, 32, 24)
	oursFailOut, oursFailPhase := calls(8, 48, 40)
	kcmMix := mixOf(10, 40, 30)
	kcmMix.Phase.JobSyncsByResult = map[string]float64{"success": 38, "error": 2}
	kcmMix.Phase.JobSyncsByAction = map[string]float64{"pods_created": 10, "reconciling": 5, "tracking": 25}
	kcmMix.Phase.StaleSyncSkips = 5
	kcmMix.Phase.Refused = map[string]float64{"PUT jobs/status": 3, "PATCH jobs/status": 1, "PUT pods": 7}
	oursMix := mixOf(10, 50, 30)
	oursMix.Phase.JobSyncsByResult = map[string]float64{"success": 49, "error": 1}
	oursMix.Phase.JobSyncsByAction = map[string]float64{"pods_created": 10, "tracking": 40}
	zeroOut, zeroPhase := calls(5, 0, 0)
	for _, tc := range []struct {
		name string
		res  map[string]*sideResults
		// want are lines the table must have, as fields.
		want [][]string
		// wantKeys and noKeys are keys the summary must and must not have.
		wantKeys, noKeys []string
		// wantValues are figures of the summary, exactly.
		wantValues map[string]float64
	}{{
		name: "stored on one side",
		res: map[string]*sideResults{
			sideOurs: {Rates: map[string]string{"equal": "100/200"}, Stored: &storedResult{Jobs: 10, ServerRSSMiB: 100, ServerHeapInUseMiB: 40}},
		},
		want:     [][]string{{"server", "Go", "heap", "in", "use", "MiB", "40", "-", "-"}, {"full", "LIST", "p99", "s", "0.000", "-", "-"}},
		wantKeys: []string{"stored_heap_inuse_mib"},
		noKeys:   []string{"rss_ratio_stored", "failure_statuses_differing", "pods_per_minute_ratio_equal_qps"},
	}, {
		name: "large Job on one side, failures on both",
		res: map[string]*sideResults{
			sideKCM:  {Rates: map[string]string{}, Large: &largeResult{Seconds: 30}, Failures: &failuresResult{}},
			sideOurs: {Rates: map[string]string{}, Failures: &failuresResult{}},
		},
		want: [][]string{{"seconds", "to", "Complete", "-", "30", "-"},
			{"job", "syncs", "per", "Job,", "worst", "workload", "-", "-", "-"}},
		wantKeys: []string{"failure_statuses_differing"},
		noKeys:   []string{"rss_ratio_stored", "job_syncs_per_job_ratio", "job_status_writes_per_job_ratio"},
	}, {
		name: "both sides, one mix",
		res: map[string]*sideResults{
			sideKCM:  {Rates: map[string]string{}, MixEqual: &mixResult{PodsPerMinute: 100}},
			sideOurs: {Rates: map[string]string{}, MixEqual: &mixResult{PodsPerMinute: 150}},
		},
		want:     [][]string{{"Pods", "completed", "/", "min", "150", "100", "1.50"}},
		wantKeys: []string{"pods_per_minute_ratio_equal_qps"},
		noKeys:   []string{"pods_per_minute_ratio_defaults", "large_job_seconds_ratio"},
	}, {
		// Syncs: mix_defaults 5/4 per Job, mix_equal_qps 4.4/4, failures
		// 6/8; writes: 3/3, 4.5/3, 5/6. The large Job ran on ours only,
		// with far more of both, and has no ratio.
		name: "per-Job ratios, the worst workload of each",
		res: map[string]*sideResults{
			sideKCM: {Rates: map[string]string{}, MixDefaults: kcmMix, MixEqual: mixOf(10, 40, 30),
				Failures: &failuresResult{Outcome: kcmFailOut, Phase: kcmFailPhase}},
			sideOurs: {Rates: map[string]string{}, MixDefaults: oursMix, MixEqual: mixOf(10, 44, 45),
				Large:    &largeResult{Outcome: runOutcome{Created: 1}, Phase: phaseResult{JobSyncCount: 9000, Calls: map[string]float64{"PUT jobs/status": 9000}}},
				Failures: &failuresResult{Outcome: oursFailOut, Phase: oursFailPhase}},
		},
		want: [][]string{
			{"job", "syncs", "per", "Job,", "worst", "workload", "(mix_defaults)", "5.00", "4.00", "1.25"},
			{"Job", "status", "writes", "per", "Job,", "worst", "workload", "(mix_equal_qps)", "4.50", "3.00", "1.50"},
			// The rows of the batch mix at defaults.
			{"job", "syncs", "50", "40", "1.25"},
			{"job", "syncs", "by", "result:", "error", "1", "2", "0.50"},
			{"job", "syncs", "by", "result:", "success", "49", "38", "1.29"},
			{"job", "syncs", "by", "action:", "pods_created", "10", "10", "1.00"},
			{"job", "syncs", "by", "action:", "reconciling", "0", "5", "-"},
			{"job", "syncs", "by", "action:", "tracking", "40", "25", "1.60"},
			{"stale", "sync", "skips", "0", "5", "-"},
			{"Job", "status", "writes", "refused", "(409", "Conflict)", "0", "4", "-"},
			// The large Job: kcm did not run it.
			{"job", "syncs", "9000", "-", "-"},
		},
		wantValues: map[string]float64{"job_syncs_per_job_ratio": 1.25, "job_status_writes_per_job_ratio": 1.5},
	}, {
		// Ours counted no sync in the mix, kcm none in the failures; no
		// side wrote a Job status.
		name: "zero counts give no per-Job ratio",
		res: map[string]*sideResults{
			sideKCM: {Rates: map[string]string{}, MixEqual: mixOf(5, 10, 0),
				Failures: &failuresResult{Outcome: zeroOut, Phase: zeroPhase}},
			sideOurs: {Rates: map[string]string{}, MixEqual: &mixResult{Outcome: zeroOut, Phase: zeroPhase, Jobs: 5},
				Failures: &failuresResult{Outcome: runOutcome{Created: 5}, Phase: phaseResult{JobSyncCount: 12}}},
		},
		want: [][]string{
			{"job", "syncs", "per", "Job,", "worst", "workload", "-", "-", "-"},
			{"Job", "status", "writes", "per", "Job,", "worst", "workload", "-", "-", "-"},
		},
		noKeys: []string{"job_syncs_per_job_ratio", "job_status_writes_per_job_ratio"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			summary := summarize(sz, tc.res)
			text := tableText(sz, tc.res, summary)
			t.Log(text)
			for _, want := range tc.want {
				found := false
				for _, line := range strings.Split(text, "\n") {
					if slices.Equal(strings.Fields(line), want) {
						found = true
					}
				}
				if !found {
					t.Errorf("no line %q in the table:\n%s", strings.Join(want, " "), text)
				}
			}
			for _, k := range tc.wantKeys {
				if _, ok := summary[k]; !ok {
					t.Errorf("summary has no %s", k)
				}
			}
			for _, k := range tc.noKeys {
				if v, ok := summary[k]; ok {
					t.Errorf("summary has %s = %v, want none", k, v)
				}
			}
			for k, want := range tc.wantValues {
				if got, ok := summary[k]; !ok || got != want {
					t.Errorf("summary %s = %v (present %v), want %v", k, got, ok, want)
				}
			}
			if _, err := json.Marshal(summary); err != nil {
				t.Errorf("encoding the summary: %v", err)
			}
			if err := writeJSONFile(filepath.Join(t.TempDir(), "results.json"), map[string]any{"summary": summary, "sides": tc.res}); err != nil {
				t.Error(err)
			}
		})
	}
}
