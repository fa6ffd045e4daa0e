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
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"
)

// Every metric the rules and the dashboard of artifacts/monitoring name is
// one batch-apiserver exports: read from /metrics of the aggregated server,
// with its Job controller on.

var (
	promStringRE   = regexp.MustCompile(`"(?:[^"\\]|\\.)*"`)
	promMatchersRE = regexp.MustCompile(`\{[^}]*\}|\[[^\]]*\]`)
	promGroupingRE = regexp.MustCompile(`\b(?:by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promIdentRE    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*(\s*\()?`)
	promKeywords   = []string{"and", "or", "unless", "by", "without", "offset", "bool", "on", "ignoring", "group_left", "group_right", "inf", "nan"}
)

// metricNames are the metric names a PromQL expression selects: what is
// left once strings, label matchers, ranges, groupings, functions and
// keywords are taken out.
func metricNames(expr string) []string {
	expr = promStringRE.ReplaceAllString(expr, "")
	expr = promMatchersRE.ReplaceAllString(expr, " ")
	expr = promGroupingRE.ReplaceAllString(expr, " ")
	var names []string
	for _, m := range promIdentRE.FindAllStringSubmatch(expr, -1) {
		if m[1] != "" || slices.Contains(promKeywords, strings.ToLower(m[0])) {
			continue // a function call, or a keyword
		}
		names = append(names, m[0])
	}
	return names
}

func TestMetricNames(t *testing.T) {
	got := metricNames(`histogram_quantile(0.99, sum by (le, verb) (rate(a_bucket{job="x", verb!~"LIST|WATCH"}[5m]))) / on (instance) b > 0.5 and absent(up{job="y"} == 1)`)
	if diff := cmp.Diff([]string{"a_bucket", "b", "up"}, got); diff != "" {
		t.Errorf("-want +got:\n%s", diff)
	}
}

// monitoringExprs are the expressions of the rules and the dashboard's
// panels, keyed by where they are.
func monitoringExprs(t *testing.T) map[string]string {
	t.Helper()
	exprs := map[string]string{}
	data, err := os.ReadFile(cluster.Artifact("artifacts/monitoring/prometheusrule.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var rule struct {
		Spec struct {
			Groups []struct {
				Rules []struct {
					Alert, Record, Expr string
				}
			}
		}
	}
	if err := yaml.Unmarshal(data, &rule); err != nil {
		t.Fatal(err)
	}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			exprs["rule "+r.Alert+r.Record] = r.Expr
		}
	}
	data, err = os.ReadFile(cluster.Artifact("artifacts/monitoring/dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	var dash struct {
		Panels []struct {
			Title   string
			Targets []struct{ Expr string }
		}
	}
	if err := json.Unmarshal(data, &dash); err != nil {
		t.Fatal(err)
	}
	for _, p := range dash.Panels {
		for _, tg := range p.Targets {
			exprs["panel "+p.Title] = tg.Expr
		}
	}
	if len(exprs) < 10 {
		t.Fatalf("only %d expressions in artifacts/monitoring", len(exprs))
	}
	return exprs
}

// exportedMetrics are the series names /metrics of batch-apiserver has or
// declares (a vector without values yet has only its # TYPE line; a
// histogram's are _bucket, _sum and _count).
func exportedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	body, err := cluster.BatchMetrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, line := range strings.Split(body, "\n") {
		if rest, ok := strings.CutPrefix(line, "# TYPE "); ok {
			f := strings.Fields(rest)
			if len(f) != 2 {
				continue
			}
			names[f[0]] = true
			if f[1] == "histogram" {
				for _, s := range []string{"_bucket", "_sum", "_count"} {
					names[f[0]+s] = true
				}
			}
			continue
		}
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		names[strings.FieldsFunc(line, func(r rune) bool { return r == '{' || r == ' ' })[0]] = true
	}
	return names
}

func TestMonitoringMetricsExported(t *testing.T) {
	skipWithoutOurController(t)
	// The controller's metrics are vectors: /metrics shows them once they
	// have a value. A Job that completes, one its pod failure policy fails
	// and one handed to another controller give every one of them one.
	ours := controllers[1]
	done := newJobRun(t, ours, "metrics-complete")
	done.create(newJob(1, 1))
	done.succeed(done.activePods(1)...)
	done.waitCondition(batchv1.JobComplete)
	failed := newJobRun(t, ours, "metrics-failjob")
	failed.create(newJob(1, 1, func(j *batchv1.Job) {
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			exitCodeRule(batchv1.PodFailurePolicyActionFailJob, "main", 42)}}
	}))
	failed.fail(failed.activePods(1)[0], "main", 42)
	failed.waitCondition(batchv1.JobFailed)
	external := newJobRun(t, ours, "metrics-external")
	external.create(newJob(1, 1, func(j *batchv1.Job) { j.Spec.ManagedBy = ptr.To(externalController) }))
	eventually(t, time.Minute, "the external Job counted", func() (bool, string) {
		v := externalControllerMetric(t)
		return v > 0, fmt.Sprint(v)
	})

	exported := exportedMetrics(t)
	var missing []string
	for where, expr := range monitoringExprs(t) {
		for _, name := range metricNames(expr) {
			// up is Prometheus's own, of every scrape.
			if name != "up" && !exported[name] {
				missing = append(missing, where+": "+name)
			}
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		var have []string
		for n := range exported {
			if strings.HasPrefix(n, "job_controller_") || strings.HasPrefix(n, "workqueue_") || strings.HasPrefix(n, "apiserver_request") || strings.HasPrefix(n, "etcd_") {
				have = append(have, n)
			}
		}
		slices.Sort(have)
		t.Errorf("metrics artifacts/monitoring names that batch-apiserver does not export:\n%s\nsome it does export:\n%s", strings.Join(missing, "\n"), strings.Join(have, "\n"))
	}
}
