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

// Command report turns the `go test -json` output of make test-compat's e2e
// runs, one per host version, into the compatibility table: a result per
// host version and scenario, written as JSON and printed as a table.
//
//	go run ./hack/compat/report -o _output/compat/results.json \
//		v1.34.4=_output/compat/v1.34.4/e2e.json v1.37.2=_output/compat/v1.37.2/e2e.json
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
)

// scenario is one row of the table: the e2e tests that make it up.
type scenario struct {
	Name string
	// Tests are test names (as go test -json spells them, spaces as
	// underscores); a name ending in "/" stands for every subtest under it.
	Tests []string
	// Except are tests Tests would otherwise take in.
	Except []string
}

// jobControllerScenarios are TestJobController's scenarios (controller_test.go).
var jobControllerScenarios = []string{
	"nonindexed", "indexed", "backoff-limit", "failjob-exit-code", "failjob-init-container",
	"disruption-ignored", "failindex-max-failed", "success-policy", "suspend-resume",
	"active-deadline", "ttl-after-finished", "managed-by-multikueue",
}

const (
	gcTest        = "TestKubectlThroughAggregator/delete:_dependents_garbage-collected"
	namespaceTest = "TestKubectlThroughAggregator/delete_namespace_holding_jobs"
)

func scenarios() []scenario {
	out := []scenario{
		{Name: "APIServices Available", Tests: []string{"TestAPIServicesAvailable"}},
		{Name: "kubectl through the aggregator", Tests: []string{"TestKubectlThroughAggregator/"}, Except: []string{gcTest, namespaceTest}},
		{Name: "RBAC", Tests: []string{"TestSecurityThroughAggregator", "TestServiceAccountPermissions", "TestStatusAndSpecPermissionsAreSeparate"}},
		{Name: "garbage collection", Tests: []string{gcTest}},
		{Name: "namespace deletion", Tests: []string{namespaceTest}},
	}
	for _, s := range jobControllerScenarios {
		out = append(out, scenario{Name: "controller: " + s, Tests: []string{"TestJobController/" + s}})
	}
	return out
}

// event is a line of go test -json (test2json).
type event struct {
	Action  string
	Test    string
	Elapsed float64
	Output  string
}

// testResult is what one test ended with.
type testResult struct {
	Action  string
	Elapsed float64
	// Skip is the message of a skipped test.
	Skip string
}

// run is one host's e2e run.
type run struct {
	// tests by name.
	tests map[string]*testResult
	// output of each test, for skip messages.
	output map[string][]string
	// elapsed is the package's time.
	elapsed float64
	// started is false when no test ran (the host cluster did not start).
	started bool
}

func readRun(r io.Reader) (*run, error) {
	res := &run{tests: map[string]*testResult{}, output: map[string][]string{}}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var e event
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			// go test prints build errors and the harness's own lines
			// outside of JSON; they are not results.
			continue
		}
		if e.Test == "" {
			if e.Action == "pass" || e.Action == "fail" {
				res.elapsed = e.Elapsed
			}
			continue
		}
		switch e.Action {
		case "run":
			res.started = true
			// A test that starts and never ends (the run timed out or
			// crashed) counts as failed.
			res.tests[e.Test] = &testResult{Action: "fail"}
		case "output":
			res.output[e.Test] = append(res.output[e.Test], e.Output)
		case "pass", "fail", "skip":
			tr := &testResult{Action: e.Action, Elapsed: e.Elapsed}
			if e.Action == "skip" {
				tr.Skip = skipMessage(res.output[e.Test])
			}
			res.tests[e.Test] = tr
		}
	}
	return res, sc.Err()
}

// skipMessage is the last line a test logged before "--- SKIP", without
// its file:line prefix.
func skipMessage(lines []string) string {
	msg := ""
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if t == "" || strings.HasPrefix(t, "=== ") || strings.HasPrefix(t, "--- ") {
			continue
		}
		if _, after, ok := strings.Cut(t, ".go:"); ok {
			if _, m, ok := strings.Cut(after, ": "); ok {
				t = m
			}
		}
		msg = t
	}
	return msg
}

// Cell is the result of one scenario on one host.
type Cell struct {
	Scenario string `json:"scenario"`
	// Result is pass, fail, skip or "not run".
	Result string `json:"result"`
	// Skipped lists the parts of the scenario that were skipped, with why.
	Skipped []string `json:"skipped,omitempty"`
	// Failed lists the tests that failed.
	Failed  []string `json:"failed,omitempty"`
	Seconds float64  `json:"seconds"`
}

// Host is one host version's run.
type Host struct {
	Version string  `json:"version"`
	Seconds float64 `json:"seconds"`
	Started bool    `json:"started"`
	Cells   []Cell  `json:"scenarios"`
}

func (r *run) matches(s scenario, name string) bool {
	if slices.Contains(s.Except, name) {
		return false
	}
	for _, t := range s.Tests {
		if name == t || (strings.HasSuffix(t, "/") && strings.HasPrefix(name, t)) {
			return true
		}
	}
	return false
}

func (r *run) cell(s scenario) Cell {
	c := Cell{Scenario: s.Name, Result: "not run"}
	var names []string
	for name := range r.tests {
		if r.matches(s, name) {
			names = append(names, name)
		}
	}
	// A scenario's tests and everything under them, so that a skipped
	// part of a passing scenario is told.
	for name := range r.tests {
		for _, t := range s.Tests {
			if strings.HasPrefix(name, strings.TrimSuffix(t, "/")+"/") && !slices.Contains(names, name) && !slices.Contains(s.Except, name) {
				names = append(names, name)
			}
		}
	}
	slices.Sort(names)
	passed, skipped := 0, 0
	for _, name := range names {
		tr := r.tests[name]
		switch tr.Action {
		case "pass":
			passed++
		case "fail":
			c.Failed = append(c.Failed, name)
		case "skip":
			skipped++
			c.Skipped = append(c.Skipped, name+": "+tr.Skip)
		}
		if slices.Contains(s.Tests, name) {
			c.Seconds += tr.Elapsed
		}
	}
	switch {
	case len(c.Failed) > 0:
		c.Result = "fail"
	case passed > 0 && skipped > 0:
		c.Result = "pass (part skipped)"
	case passed > 0:
		c.Result = "pass"
	case skipped > 0:
		c.Result = "skip"
	}
	return c
}

func main() {
	out := flag.String("o", "", "write the results as JSON to this file")
	markdown := flag.Bool("markdown", false, "print the table as Markdown (for docs/compatibility.md)")
	flag.Parse()
	if err := report(*out, *markdown, flag.Args(), os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "report: %v\n", err)
		os.Exit(1)
	}
}

func report(outFile string, markdown bool, args []string, w io.Writer) error {
	if len(args) == 0 {
		return errors.New("usage: report [-o results.json] VERSION=GO-TEST-JSON (one or more)")
	}
	var hosts []Host
	for _, a := range args {
		v, file, ok := strings.Cut(a, "=")
		if !ok {
			return fmt.Errorf("argument %q is not VERSION=FILE", a)
		}
		h := Host{Version: v}
		f, err := os.Open(file)
		if err != nil {
			return err
		}
		r, err := readRun(f)
		_ = f.Close()
		if err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		h.Seconds, h.Started = r.elapsed, r.started
		for _, s := range scenarios() {
			c := r.cell(s)
			if !r.started {
				c.Result = "fail"
				c.Failed = []string{"the host cluster did not start (see " + file + ")"}
			}
			h.Cells = append(h.Cells, c)
		}
		hosts = append(hosts, h)
	}

	if outFile != "" {
		data, err := json.MarshalIndent(map[string]any{"hosts": hosts}, "", "  ")
		if err != nil {
			return err
		}
		if err := os.WriteFile(outFile, append(data, '\n'), 0o644); err != nil {
			return err
		}
	}
	if markdown {
		return printMarkdown(w, hosts)
	}
	return printTable(w, hosts)
}

// printMarkdown prints host version × scenario as a Markdown table.
func printMarkdown(w io.Writer, hosts []Host) error {
	var b strings.Builder
	b.WriteString("| scenario |")
	for _, h := range hosts {
		fmt.Fprintf(&b, " %s |", h.Version)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(hosts)) + "\n")
	for i, s := range scenarios() {
		fmt.Fprintf(&b, "| %s |", s.Name)
		for _, h := range hosts {
			fmt.Fprintf(&b, " %s |", h.Cells[i].Result)
		}
		b.WriteString("\n")
	}
	b.WriteString("| e2e package run time |")
	for _, h := range hosts {
		fmt.Fprintf(&b, " %.0fs |", h.Seconds)
	}
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// printTable prints host version × scenario, then what was skipped or failed
// and why.
func printTable(w io.Writer, hosts []Host) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprint(tw, "scenario")
	for _, h := range hosts {
		fmt.Fprintf(tw, "\t%s", h.Version)
	}
	fmt.Fprintln(tw)
	for i, s := range scenarios() {
		fmt.Fprint(tw, s.Name)
		for _, h := range hosts {
			fmt.Fprintf(tw, "\t%s", h.Cells[i].Result)
		}
		fmt.Fprintln(tw)
	}
	fmt.Fprint(tw, "package run time")
	for _, h := range hosts {
		fmt.Fprintf(tw, "\t%.0fs", h.Seconds)
	}
	fmt.Fprintln(tw)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, h := range hosts {
		for _, c := range h.Cells {
			for _, f := range c.Failed {
				fmt.Fprintf(w, "%s %s: FAIL %s\n", h.Version, c.Scenario, f)
			}
			for _, s := range c.Skipped {
				fmt.Fprintf(w, "%s %s: skip %s\n", h.Version, c.Scenario, s)
			}
		}
	}
	return nil
}
