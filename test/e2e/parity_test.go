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
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// The same manifests and the same kubectl commands against kube-apiserver's
// batch/v1 and against batch.jobs.dev/v1: the answers must match once the
// deliberate differences of docs/deviations.md are taken out. Both job
// controllers run (kube-controller-manager's for batch/v1, the embedded one
// for ours); the Jobs whose status the tests write by hand are managed by
// testExternalController, so neither touches them.

const parityDir = "testdata/parity"

var uidRE = regexp.MustCompile(`[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}`)

// normalize takes out the expected differences: the label prefix, uids and
// the group in kubectl's resource names.
func normalize(s string) string {
	s = uidRE.ReplaceAllString(s, "<uid>")
	s = strings.ReplaceAll(s, "batch.kubernetes.io/", "batch.jobs.dev/")
	s = strings.ReplaceAll(s, "job.batch.jobs.dev", "job.batch")
	s = strings.ReplaceAll(s, "batch.jobs.dev/v1", "batch/v1")
	return s
}

// parityPair is kubectl on the same namespace for batch/v1 and for ours.
type parityPair struct {
	k framework.Kubectl
}

var servers = []struct {
	name       string
	apiVersion string
	resource   string
}{
	{"kube-apiserver", "batch/v1", "jobs.batch"},
	{"batch-apiserver", "batch.jobs.dev/v1", "jobs.batch.jobs.dev"},
}

// asVersion swaps the apiVersion of a batch/v1 manifest.
func asVersion(manifest, apiVersion string) string {
	return strings.ReplaceAll(manifest, "apiVersion: batch/v1\n", "apiVersion: "+apiVersion+"\n")
}

// upstream turns a manifest of ours into batch/v1.
func upstream(manifest string) string {
	return strings.ReplaceAll(manifest, "apiVersion: batch.jobs.dev/v1\n", "apiVersion: batch/v1\n")
}

func readParity(t testing.TB, name string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(parityDir, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// both runs args (with {resource} replaced) on both servers, with the
// manifest in stdin when not empty, and returns the two results.
func (p parityPair) both(t testing.TB, manifest string, args ...string) [2]framework.Result {
	t.Helper()
	var out [2]framework.Result
	for i, s := range servers {
		a := make([]string, len(args))
		for j, arg := range args {
			a[j] = strings.ReplaceAll(arg, "{resource}", s.resource)
		}
		res, err := p.k.RunStdin(asVersion(manifest, s.apiVersion), a...)
		if err != nil {
			t.Fatalf("%s: %v", s.name, err)
		}
		out[i] = res
	}
	return out
}

// objectFields decodes kubectl's JSON output and returns spec and status,
// normalized.
func objectFields(t testing.TB, out string) map[string]any {
	t.Helper()
	var obj map[string]any
	if err := json.Unmarshal([]byte(out), &obj); err != nil {
		t.Fatalf("decoding %q: %v", out, err)
	}
	data, err := json.Marshal(map[string]any{"spec": obj["spec"], "status": obj["status"]})
	if err != nil {
		t.Fatal(err)
	}
	var fields map[string]any
	if err := json.Unmarshal([]byte(normalize(string(data))), &fields); err != nil {
		t.Fatal(err)
	}
	return fields
}

// warnings returns the sorted Warning: lines of stderr.
func warnings(stderr string) []string {
	var w []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.HasPrefix(l, "Warning: ") {
			w = append(w, l)
		}
	}
	slices.Sort(w)
	return w
}

// errorCauses returns the "path: Type" pairs of an invalid-object error.
var causeRE = regexp.MustCompile(`((?:metadata|spec|status)[\w.\[\]/-]*): (Invalid value|Required value|Forbidden|Duplicate value|Unsupported value|Not found|Too many|Too long)`)

func errorCauses(stderr string) []string {
	var c []string
	for _, m := range causeRE.FindAllStringSubmatch(stderr, -1) {
		c = append(c, m[1]+": "+m[2])
	}
	slices.Sort(c)
	return slices.Compact(c)
}

// TestParityWithKubeAPIServer compares defaults, warnings, errors, status
// rules and kubectl's table with kube-apiserver 1.37's batch/v1.
func TestParityWithKubeAPIServer(t *testing.T) {
	p := parityPair{k: createNamespace(t, "e2e-parity")}

	t.Run("defaults", func(t *testing.T) {
		manifests := map[string]string{}
		files, err := filepath.Glob(filepath.Join(parityDir, "defaults-*.yaml"))
		if err != nil || len(files) == 0 {
			t.Fatalf("no defaults-*.yaml in %s: %v", parityDir, err)
		}
		for _, f := range files {
			manifests[filepath.Base(f)] = readParity(t, filepath.Base(f))
		}
		// The examples, as a user would send them to either server.
		for _, f := range exampleFiles(t) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			manifests["examples/"+filepath.Base(f)] = upstream(string(data))
		}
		for name, manifest := range manifests {
			t.Run(name, func(t *testing.T) {
				res := p.both(t, manifest, "create", "--dry-run=server", "-o", "json", "-f", "-")
				for i, r := range res {
					if r.ExitCode != 0 {
						t.Fatalf("%s: %s", servers[i].name, r.Combined())
					}
				}
				if diff := cmp.Diff(objectFields(t, res[0].Stdout), objectFields(t, res[1].Stdout)); diff != "" {
					t.Errorf("spec and status differ (-kube-apiserver +batch-apiserver):\n%s", diff)
				}
				// The deprecated version defaults the same.
				beta, err := p.k.RunStdin(asVersion(manifest, "batch.jobs.dev/v1beta1"), "create", "--dry-run=server", "-o", "json", "-f", "-")
				if err != nil || beta.ExitCode != 0 {
					t.Fatalf("v1beta1: %v %s", err, beta.Combined())
				}
				if diff := cmp.Diff(objectFields(t, res[0].Stdout), objectFields(t, beta.Stdout)); diff != "" {
					t.Errorf("spec and status differ (-kube-apiserver +batch-apiserver v1beta1):\n%s", diff)
				}
			})
		}
	})

	t.Run("warnings on create", func(t *testing.T) {
		res := p.both(t, readParity(t, "warnings.yaml"), "create", "--dry-run=server", "-o", "name", "-f", "-")
		up, ours := warnings(res[0].Stderr), warnings(res[1].Stderr)
		if len(up) == 0 {
			t.Fatalf("kube-apiserver gave no warnings: %s", res[0].Combined())
		}
		if diff := cmp.Diff(up, ours); diff != "" {
			t.Errorf("warnings differ (-kube-apiserver +batch-apiserver):\n%s", diff)
		}
	})

	t.Run("errors on create", func(t *testing.T) {
		res := p.both(t, readParity(t, "invalid.yaml"), "create", "--dry-run=server", "-f", "-")
		if res[0].ExitCode == 0 || res[1].ExitCode == 0 {
			t.Fatalf("the invalid Job was accepted:\n%s\n%s", res[0].Combined(), res[1].Combined())
		}
		if diff := cmp.Diff(normalize(res[0].Stderr), normalize(res[1].Stderr)); diff != "" {
			t.Errorf("errors differ (-kube-apiserver +batch-apiserver):\n%s", diff)
		}
	})

	t.Run("errors on update", func(t *testing.T) {
		manifest := upstream(jobYAML("updated", nil, "completions: 2", "parallelism: 1"))
		p.both(t, manifest, "create", "-f", "-")
		patches := map[string]string{
			"completions":     `{"spec":{"completions":3}}`,
			"container image": `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"docker.io/library/busybox:1.37"}]}}}}`,
			"selector":        `{"spec":{"selector":{"matchLabels":{"a":"b"}}}}`,
			"managedBy":       `{"spec":{"managedBy":"example.com/other"}}`,
			"completionMode":  `{"spec":{"completionMode":"Indexed"}}`,
			"parallelism":     `{"spec":{"parallelism":-1}}`,
		}
		for name, patch := range patches {
			t.Run(name, func(t *testing.T) {
				res := p.both(t, "", "patch", "{resource}", "updated", "--type=merge", "-p", patch)
				if res[0].ExitCode != res[1].ExitCode {
					t.Fatalf("exit codes differ:\nkube-apiserver: %s\nbatch-apiserver: %s", res[0].Combined(), res[1].Combined())
				}
				if res[0].ExitCode == 0 || len(errorCauses(res[0].Stderr)) == 0 {
					t.Fatalf("kube-apiserver accepted the change or gave no causes: %s", res[0].Combined())
				}
				if diff := cmp.Diff(errorCauses(normalize(res[0].Stderr)), errorCauses(normalize(res[1].Stderr))); diff != "" {
					t.Errorf("error causes differ (-kube-apiserver +batch-apiserver):\n%s\nkube-apiserver: %s\nbatch-apiserver: %s", diff, res[0].Stderr, res[1].Stderr)
				}
			})
		}
	})

	// Bodies the servers cannot parse, and a JSON patch whose test fails:
	// the same answer, word for word (issue 9 defect 6 asked about the hex
	// summary of a body that is not JSON and the JSON patch test message:
	// both are kube-apiserver's own).
	t.Run("malformed requests", func(t *testing.T) {
		manifest := upstream(jobYAML("patched", nil, "completions: 2", "parallelism: 1"))
		p.both(t, manifest, "create", "-f", "-")
		paths := [2]string{
			"/apis/batch/v1/namespaces/e2e-parity/jobs",
			"/apis/batch.jobs.dev/v1/namespaces/e2e-parity/jobs",
		}
		for name, body := range map[string]string{
			"not json":         "{bad json",
			"binary":           "\x01\x02binary",
			"broken yaml":      "apiVersion: [",
			"wrong type":       `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"x"},"spec":{"parallelism":"abc"}}`,
			"fractional int32": `{"apiVersion":"batch/v1","kind":"Job","metadata":{"name":"x"},"spec":{"parallelism":1.5}}`,
		} {
			t.Run(name, func(t *testing.T) {
				var res [2]framework.Result
				for i := range servers {
					body := strings.ReplaceAll(body, `"batch/v1"`, `"`+servers[i].apiVersion+`"`)
					r, err := p.k.RunStdin(body, "create", "--raw", paths[i], "-f", "-")
					if err != nil {
						t.Fatal(err)
					}
					res[i] = r
				}
				if res[0].ExitCode == 0 {
					t.Fatalf("kube-apiserver accepted %q: %s", body, res[0].Combined())
				}
				if diff := cmp.Diff(normalize(res[0].Stderr), normalize(res[1].Stderr)); diff != "" {
					t.Errorf("answers differ (-kube-apiserver +batch-apiserver):\n%s", diff)
				}
			})
		}
		t.Run("json patch test fails", func(t *testing.T) {
			res := p.both(t, "", "patch", "{resource}", "patched", "--type=json", "-p", `[{"op":"test","path":"/spec/parallelism","value":5}]`)
			if res[0].ExitCode == 0 {
				t.Fatalf("kube-apiserver applied the patch: %s", res[0].Combined())
			}
			if diff := cmp.Diff(normalize(res[0].Stderr), normalize(res[1].Stderr)); diff != "" {
				t.Errorf("answers differ (-kube-apiserver +batch-apiserver):\n%s", diff)
			}
		})
	})

	t.Run("status writes of an external controller", func(t *testing.T) {
		manifest := upstream(jobYAML("status", nil, "completions: 1", "managedBy: "+testExternalController))
		p.both(t, manifest, "create", "-f", "-")
		start := time.Now().Add(-2 * time.Minute).Truncate(time.Second)
		end := start.Add(time.Minute)
		ts := func(tm time.Time) string { return tm.UTC().Format(time.RFC3339) }
		steps := []struct {
			name   string
			status map[string]any
			ok     bool
		}{
			{"Complete out of nowhere", map[string]any{"conditions": []any{condition("Complete", end)}}, false},
			{"started", map[string]any{"startTime": ts(start), "active": 1, "ready": 1}, true},
			{"more ready than active", map[string]any{"ready": 2}, false},
			{"negative counters", map[string]any{"failed": -1, "terminating": -1}, false},
			{"success criteria met", map[string]any{"active": 0, "ready": 0, "succeeded": 1, "conditions": []any{condition("SuccessCriteriaMet", end)}}, true},
			{"completed before it started", map[string]any{"completionTime": ts(start.Add(-time.Second)),
				"conditions": []any{condition("SuccessCriteriaMet", end), condition("Complete", end)}}, false},
			{"complete", map[string]any{"completionTime": ts(end),
				"conditions": []any{condition("SuccessCriteriaMet", end), condition("Complete", end)}}, true},
			{"succeeded decreases", map[string]any{"succeeded": 0}, false},
			{"Complete dropped", map[string]any{"conditions": []any{condition("SuccessCriteriaMet", end)}}, false},
			{"completionTime changed", map[string]any{"completionTime": ts(end.Add(time.Second))}, false},
			{"Failed on a complete job", map[string]any{"conditions": []any{condition("SuccessCriteriaMet", end), condition("Complete", end), condition("FailureTarget", end), condition("Failed", end)}}, false},
		}
		for _, s := range steps {
			t.Run(s.name, func(t *testing.T) {
				res := p.both(t, "", "patch", "{resource}", "status", "--subresource=status", "--type=merge", "-p", statusPatch(t, s.status))
				if res[0].ExitCode != res[1].ExitCode {
					t.Fatalf("exit codes differ:\nkube-apiserver: %s\nbatch-apiserver: %s", res[0].Combined(), res[1].Combined())
				}
				// The sequence itself is checked against kube-apiserver, so
				// that the comparison is not between two refusals of a
				// broken first step.
				if ok := res[0].ExitCode == 0; ok != s.ok || (!ok && len(errorCauses(res[0].Stderr)) == 0) {
					t.Fatalf("kube-apiserver: %s, want accepted=%v with causes on refusal", res[0].Combined(), s.ok)
				}
				if diff := cmp.Diff(errorCauses(res[0].Stderr), errorCauses(res[1].Stderr)); diff != "" {
					t.Errorf("error causes differ (-kube-apiserver +batch-apiserver):\n%s\nkube-apiserver: %s\nbatch-apiserver: %s", diff, res[0].Stderr, res[1].Stderr)
				}
			})
		}
		res := p.both(t, "", "get", "{resource}", "status", "-o", "json")
		if diff := cmp.Diff(objectFields(t, res[0].Stdout)["status"], objectFields(t, res[1].Stdout)["status"]); diff != "" {
			t.Errorf("final status differs (-kube-apiserver +batch-apiserver):\n%s", diff)
		}
	})

	t.Run("get -o wide", func(t *testing.T) {
		for _, f := range exampleFiles(t) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			p.both(t, upstream(string(data)), "create", "-f", "-")
		}
		// Both job controllers start the Jobs they manage, each at its own
		// pace: DURATION counts only as there or not, and the tables are
		// read until the two agree.
		var tables [2]table
		var diffs string
		// Our last column, MANAGED-BY, is a deliberate difference
		// (docs/deviations.md): it is taken out of our table before the
		// comparison and checked on its own below.
		var managedBy map[string]string
		eventually(t, time.Minute, "the same table from both servers", func() (bool, string) {
			res := p.both(t, "", "get", "{resource}", "-o", "wide")
			for i, r := range res {
				if r.ExitCode != 0 {
					return false, fmt.Sprintf("%s: %s", servers[i].name, r.Combined())
				}
				// Cut first, normalize each cell after: normalizing shortens
				// the SELECTOR cell, which would move our MANAGED-BY cell
				// away from its header.
				tables[i] = parseTable(t, r.Stdout)
				for _, row := range tables[i].rows {
					for col, cell := range row {
						row[col] = normalize(cell)
					}
					delete(row, "AGE")
					if row["DURATION"] != "" {
						row["DURATION"] = "<set>"
					}
				}
			}
			ours := &tables[1]
			if n := len(ours.columns); n == 0 || ours.columns[n-1] != "MANAGED-BY" {
				return false, fmt.Sprintf("batch-apiserver: columns %v, want MANAGED-BY last", ours.columns)
			}
			ours.columns = ours.columns[:len(ours.columns)-1]
			managedBy = map[string]string{}
			for _, row := range ours.rows {
				managedBy[row["NAME"]] = row["MANAGED-BY"]
				delete(row, "MANAGED-BY")
			}
			diffs = cmp.Diff(tables[0].columns, tables[1].columns) + cmp.Diff(tables[0].rows, tables[1].rows)
			return diffs == "", "differences (-kube-apiserver +batch-apiserver):\n" + diffs
		})

		// MANAGED-BY is each Job's spec.managedBy as kube-apiserver stores
		// it for the same manifest, empty where it is unset.
		res := p.both(t, "", "get", "{resource}", "-o", `jsonpath={range .items[*]}{.metadata.name}{"\t"}{.spec.managedBy}{"\n"}{end}`)
		if res[0].ExitCode != 0 {
			t.Fatalf("kube-apiserver: %s", res[0].Combined())
		}
		wantManagedBy := map[string]string{}
		for _, line := range strings.Split(strings.TrimRight(res[0].Stdout, "\n"), "\n") {
			name, value, _ := strings.Cut(line, "\t")
			wantManagedBy[name] = value
		}
		if diff := cmp.Diff(wantManagedBy, managedBy); diff != "" {
			t.Errorf("MANAGED-BY (-spec.managedBy on kube-apiserver +batch-apiserver):\n%s", diff)
		}
	})
}
