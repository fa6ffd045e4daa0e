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

package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// stream writes events as go test -json does, one per line, with a line
// that is not JSON in between (go test prints some of those).
func stream(events ...event) string {
	var b strings.Builder
	b.WriteString("e2e: built batch-apiserver in 1s\n")
	for _, e := range events {
		data, _ := json.Marshal(e)
		b.Write(data)
		b.WriteByte('\n')
	}
	return b.String()
}

func ended(test, action string, seconds float64) []event {
	return []event{{Action: "run", Test: test}, {Action: action, Test: test, Elapsed: seconds}}
}

func TestCell(t *testing.T) {
	var events []event
	events = append(events, ended("TestAPIServicesAvailable", "pass", 1)...)
	events = append(events, ended("TestKubectlThroughAggregator/api-resources", "pass", 2)...)
	events = append(events, ended(gcTest, "fail", 3)...)
	events = append(events, ended(namespaceTest, "pass", 4)...)
	events = append(events, ended("TestJobController/indexed/run/batch-apiserver", "pass", 5)...)
	events = append(events,
		event{Action: "run", Test: "TestJobController/indexed/run/kube-controller-manager"},
		event{Action: "output", Test: "TestJobController/indexed/run/kube-controller-manager", Output: "=== RUN   TestJobController/indexed/run/kube-controller-manager\n"},
		event{Action: "output", Test: "TestJobController/indexed/run/kube-controller-manager", Output: "    controller_test.go:99: host v1.34.4 is older than 1.35: no X\n"},
		event{Action: "output", Test: "TestJobController/indexed/run/kube-controller-manager", Output: "--- SKIP: TestJobController/indexed/run/kube-controller-manager (0.00s)\n"},
		event{Action: "skip", Test: "TestJobController/indexed/run/kube-controller-manager"},
	)
	events = append(events, ended("TestJobController/indexed", "pass", 6)...)
	// Started, never ended: the run was cut short.
	events = append(events, event{Action: "run", Test: "TestJobController/nonindexed"})
	events = append(events, event{Action: "fail", Elapsed: 60})

	r, err := readRun(strings.NewReader(stream(events...)))
	if err != nil {
		t.Fatal(err)
	}
	var got []Cell
	for _, s := range scenarios()[:7] {
		got = append(got, r.cell(s))
	}
	want := []Cell{
		{Scenario: "APIServices Available", Result: "pass", Seconds: 1},
		{Scenario: "kubectl through the aggregator", Result: "pass"},
		{Scenario: "RBAC", Result: "not run"},
		{Scenario: "garbage collection", Result: "fail", Failed: []string{gcTest}, Seconds: 3},
		{Scenario: "namespace deletion", Result: "pass", Seconds: 4},
		{Scenario: "controller: nonindexed", Result: "fail", Failed: []string{"TestJobController/nonindexed"}},
		{Scenario: "controller: indexed", Result: "pass (part skipped)", Seconds: 6,
			Skipped: []string{"TestJobController/indexed/run/kube-controller-manager: host v1.34.4 is older than 1.35: no X"}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("cells (-want +got):\n%s", diff)
	}
	if r.elapsed != 60 || !r.started {
		t.Errorf("elapsed %v started %v, want 60 true", r.elapsed, r.started)
	}
}

func TestNoTestRan(t *testing.T) {
	r, err := readRun(strings.NewReader(stream(event{Action: "output", Output: "e2e: starting the e2e cluster, step kube-apiserver: exit 1\n"}, event{Action: "fail", Elapsed: 9})))
	if err != nil {
		t.Fatal(err)
	}
	if r.started {
		t.Errorf("a run where no test started reads as started")
	}
}
