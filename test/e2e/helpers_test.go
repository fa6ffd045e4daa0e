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
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// pollInterval is how often eventually checks; kubectl runs are cheap.
const pollInterval = 250 * time.Millisecond

// eventually polls check until it reports done or the timeout passes, and
// fails the test with the last detail check gave. It stops early when a
// process of the host cluster has died.
func eventually(t testing.TB, timeout time.Duration, what string, check func() (done bool, detail string)) {
	t.Helper()
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), pollInterval, timeout, true, func(context.Context) (bool, error) {
		if cluster != nil {
			if err := cluster.Healthy(); err != nil {
				return false, err
			}
		}
		done, detail := check()
		last = detail
		return done, nil
	})
	if err != nil {
		t.Fatalf("%s: %v; last seen:\n%s", what, err, last)
	}
}

// mustContain fails the test unless out contains every one of want.
func mustContain(t testing.TB, out string, want ...string) {
	t.Helper()
	for _, w := range want {
		if !strings.Contains(out, w) {
			t.Errorf("output does not contain %q:\n%s", w, out)
		}
	}
}

// mustNotContain fails the test if out contains any of unwanted.
func mustNotContain(t testing.TB, out string, unwanted ...string) {
	t.Helper()
	for _, u := range unwanted {
		if strings.Contains(out, u) {
			t.Errorf("output contains %q:\n%s", u, out)
		}
	}
}

// table is kubectl's human-readable output: the header's column names and
// one map per row.
type table struct {
	columns []string
	rows    []map[string]string
}

// row returns the row whose NAME is name.
func (tb table) row(t testing.TB, name string) map[string]string {
	t.Helper()
	for _, r := range tb.rows {
		if r["NAME"] == name {
			return r
		}
	}
	t.Fatalf("no row %q in %v", name, tb.rows)
	return nil
}

// parseTable cuts kubectl's table output at the header's column starts;
// kubectl left-aligns every column, and a cell may be empty (DURATION of a
// Job that never started), so splitting on spaces would not do.
func parseTable(t testing.TB, out string) table {
	t.Helper()
	lines := strings.Split(strings.TrimRight(out, "\n"), "\n")
	if len(lines) == 0 || lines[0] == "" {
		t.Fatalf("no table in output %q", out)
	}
	header := lines[0]
	locs := regexp.MustCompile(`\S+`).FindAllStringIndex(header, -1)
	var tb table
	for _, l := range locs {
		tb.columns = append(tb.columns, header[l[0]:l[1]])
	}
	for _, line := range lines[1:] {
		if strings.TrimSpace(line) == "" {
			continue
		}
		row := map[string]string{}
		for i, l := range locs {
			if l[0] >= len(line) {
				row[tb.columns[i]] = ""
				continue
			}
			end := len(line)
			if i+1 < len(locs) && locs[i+1][0] < end {
				end = locs[i+1][0]
			}
			row[tb.columns[i]] = strings.TrimSpace(line[l[0]:end])
		}
		tb.rows = append(tb.rows, row)
	}
	return tb
}

// createNamespace creates a namespace in the host cluster and waits for its
// default ServiceAccount, which Pods need.
func createNamespace(t testing.TB, name string) framework.Kubectl {
	t.Helper()
	k := cluster.Kubectl()
	k.MustRun(t, "create", "namespace", name)
	eventually(t, time.Minute, "default ServiceAccount in "+name, func() (bool, string) {
		res, err := k.In(name).Run("get", "serviceaccount", "default", "-o", "name")
		if err != nil {
			return false, err.Error()
		}
		return res.ExitCode == 0, res.Combined()
	})
	return k.In(name)
}

// jsonpath returns kubectl get -o jsonpath=<expr> of one object.
func jsonpath(t testing.TB, k framework.Kubectl, resource, expr string) string {
	t.Helper()
	return k.MustRun(t, "get", resource, "-o", "jsonpath="+expr)
}

// jobYAML is a minimal valid Job of ours with extra spec lines (indented
// by two spaces, under spec) and labels.
func jobYAML(name string, labels map[string]string, specLines ...string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: batch.jobs.dev/v1\nkind: Job\nmetadata:\n  name: %s\n", name)
	if len(labels) > 0 {
		b.WriteString("  labels:\n")
		for k, v := range labels {
			fmt.Fprintf(&b, "    %s: %q\n", k, v)
		}
	}
	b.WriteString("spec:\n")
	for _, l := range specLines {
		fmt.Fprintf(&b, "  %s\n", l)
	}
	b.WriteString(`  template:
    spec:
      restartPolicy: Never
      containers:
      - name: main
        image: docker.io/library/busybox:1.36
        command: ["true"]
`)
	return b.String()
}
