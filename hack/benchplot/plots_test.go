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
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// fabricated is a results.json as test/scale writes it, with made-up
// figures: both sides ran the two mixes, ours alone the failures, both the
// stored phase; nobody the large Job.
const fabricated = `{
  "jobs_lost": 0,
  "sizes": {"scale": 0.01},
  "sides": {
    "kcm": {
      "mix_defaults": {
        "outcome": {"jobs_created": 3, "completed_over_time": [
          {"seconds": 4.5, "jobs": 1, "pods_succeeded": 5},
          {"seconds": 9, "jobs": 2, "pods_succeeded": 30},
          {"seconds": 20.25, "jobs": 3, "pods_succeeded": 430}]},
        "phase": {"job_queue_wait_mean_seconds": 184.38, "job_queue_keys": 1132}
      },
      "mix_equal_qps": {
        "outcome": {"completed_over_time": [{"seconds": 3, "jobs": 1, "pods_succeeded": 5}]},
        "phase": {"job_queue_wait_mean_seconds": 19.18, "job_queue_keys": 10}
      },
      "stored": {"stored_jobs": 1500, "server_rss_mib": 812.5, "server_heap_inuse_mib": 401, "full_list_p99_seconds": 2.5, "page_list_p99_seconds": 0.2}
    },
    "ours": {
      "mix_defaults": {
        "outcome": {"completed_over_time": [
          {"seconds": 2, "jobs": 1, "pods_succeeded": 5},
          {"seconds": 3.5, "jobs": 3, "pods_succeeded": 430}]},
        "phase": {"job_queue_wait_mean_seconds": 12.04, "job_queue_keys": 1142}
      },
      "mix_equal_qps": {
        "outcome": {"completed_over_time": [{"seconds": 2.5, "jobs": 1, "pods_succeeded": 5}]},
        "phase": {"job_queue_wait_mean_seconds": 12.72, "job_queue_keys": 11}
      },
      "failures": {
        "outcome": {"completed_over_time": [{"seconds": 15, "jobs": 1, "pods_succeeded": 4}]},
        "phase": {"job_queue_wait_mean_seconds": 1.5, "job_queue_keys": 40}
      },
      "stored": {"stored_jobs": 1500, "server_rss_mib": 300.25, "server_heap_inuse_mib": 120, "full_list_p99_seconds": 1.25, "page_list_p99_seconds": 0.1}
    }
  }
}`

func TestDrawAllFromFabricatedResults(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "results.json")
	if err := os.WriteFile(in, []byte(fabricated), 0o644); err != nil {
		t.Fatal(err)
	}
	res, err := readResults(in)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "plots")
	files, err := drawAll(res, out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range files {
		names = append(names, strings.TrimPrefix(f, out+string(filepath.Separator)))
	}
	want := []string{
		"mix_defaults-completed.svg", "mix_equal_qps-completed.svg", "failures-completed.svg",
		"queue-wait.svg", "stored-memory.svg", "stored-list.svg",
	}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Fatalf("files written (-want +got):\n%s", diff)
	}

	// What each drawing must say: its title, the sides drawn, and for the
	// bar charts the groups of bars.
	kcm, ours := "kube-controller-manager (batch/v1)", "batch-apiserver (batch.jobs.dev/v1)"
	mustSay := map[string][]string{
		"mix_defaults-completed.svg":  {"Pods completed: batch mix, each side", "seconds after the first create", kcm, ours},
		"mix_equal_qps-completed.svg": {"Pods completed: batch mix, equal client rates", kcm, ours},
		"failures-completed.svg":      {"Pods completed: Jobs with failures", ours},
		"queue-wait.svg":              {"Mean wait of a due Job for a worker", "mix_defaults", "mix_equal_qps", "failures", kcm, ours},
		"stored-memory.svg":           {"Job server memory with the stored Jobs (1500 Jobs)", "RSS, settled", "Go heap in use", kcm, ours},
		"stored-list.svg":             {"LIST of the stored Jobs through kube-apiserver, p99 (1500 Jobs)", "whole list", "pages of 500", kcm, ours},
	}
	mustNotSay := map[string][]string{
		"failures-completed.svg": {kcm},
		"queue-wait.svg":         {"large_job"},
	}
	for _, name := range want {
		data, err := os.ReadFile(filepath.Join(out, name))
		if err != nil {
			t.Fatal(err)
		}
		svg := string(data)
		if !strings.Contains(svg, "<svg") {
			t.Errorf("%s is not an SVG document: %.80q", name, svg)
		}
		for _, s := range mustSay[name] {
			if !strings.Contains(svg, escapeXML(s)) {
				t.Errorf("%s does not say %q", name, s)
			}
		}
		for _, s := range mustNotSay[name] {
			if strings.Contains(svg, escapeXML(s)) {
				t.Errorf("%s says %q, which it has no data for", name, s)
			}
		}
	}
}

// escapeXML is s as SVG text carries it.
func escapeXML(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", "'", "&#39;", `"`, "&#34;").Replace(s)
}

func TestReadResultsRefusesBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]string{
		"not JSON":      "{",
		"no side":       `{"sides": {}}`,
		"nothing drawn": `{"sides": {"ours": {"mix_defaults": {"outcome": {}}}}}`,
	}
	for name, content := range cases {
		t.Run(name, func(t *testing.T) {
			in := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".json")
			if err := os.WriteFile(in, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
			res, err := readResults(in)
			if err == nil {
				_, err = drawAll(res, filepath.Join(dir, "plots-"+strings.ReplaceAll(name, " ", "-")))
			}
			if err == nil {
				t.Errorf("no error for %s", name)
			}
		})
	}
}
