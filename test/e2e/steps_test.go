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
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// The kubectl steps both run modes share: through the aggregator and
// against the standalone server.

const examplesDir = "artifacts/examples"

// exampleFiles lists artifacts/examples.
func exampleFiles(t testing.TB) []string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(bins.RepoRoot, examplesDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no examples in %s: %v", examplesDir, err)
	}
	return files
}

// exampleJobs decodes the Jobs of artifacts/examples.
func exampleJobs(t testing.TB) []batchv1.Job {
	t.Helper()
	var jobs []batchv1.Job
	for _, f := range exampleFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			var job batchv1.Job
			if err := dec.Decode(&job); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatalf("decoding %s: %v", f, err)
			}
			if job.Kind == "" {
				continue
			}
			if job.APIVersion != "batch.jobs.dev/v1" || job.Kind != "Job" {
				t.Fatalf("%s: %s %s is not a batch.jobs.dev/v1 Job", f, job.APIVersion, job.Kind)
			}
			jobs = append(jobs, job)
		}
	}
	return jobs
}

// stepAPIResources: jobs in batch.jobs.dev with short name bjob, category
// all and every verb.
func stepAPIResources(t *testing.T, k framework.Kubectl) {
	out := k.MustRun(t, "api-resources", "--api-group=batch.jobs.dev", "-o", "wide")
	tb := parseTable(t, out)
	want := map[string]string{
		"NAME":       "jobs",
		"SHORTNAMES": "bjob",
		"APIVERSION": "batch.jobs.dev/v1",
		"NAMESPACED": "true",
		"KIND":       "Job",
		"VERBS":      "create,delete,deletecollection,get,list,patch,update,watch",
		"CATEGORIES": "all",
	}
	row := tb.row(t, "jobs")
	for col, v := range want {
		if row[col] != v {
			t.Errorf("api-resources %s = %q, want %q\n%s", col, row[col], v, out)
		}
	}
	if len(tb.rows) != 1 {
		t.Errorf("api-resources lists %d resources in batch.jobs.dev, want 1 (status is a subresource):\n%s", len(tb.rows), out)
	}
}

// stepCreateExamples creates artifacts/examples and checks kubectl reports
// each Job created.
func stepCreateExamples(t *testing.T, k framework.Kubectl) {
	out := k.MustRun(t, "create", "-f", filepath.Join(bins.RepoRoot, examplesDir)+"/")
	for _, job := range exampleJobs(t) {
		mustContain(t, out, fmt.Sprintf("job.batch.jobs.dev/%s created", job.Name))
	}
}

// wantCompletions is kubectl's COMPLETIONS of a Job with succeeded pods.
func wantCompletions(job *batchv1.Job, succeeded int32) string {
	switch {
	case job.Spec.Completions != nil:
		return fmt.Sprintf("%d/%d", succeeded, *job.Spec.Completions)
	case ptr.Deref(job.Spec.Parallelism, 1) > 1:
		return fmt.Sprintf("%d/1 of %d", succeeded, *job.Spec.Parallelism)
	default:
		return fmt.Sprintf("%d/1", succeeded)
	}
}

// stepGetColumns checks the table of the example Jobs, plain and -o wide,
// cell by cell against what the manifests say. No Pod of theirs has run
// (there is no kubelet); the embedded controller may have started those
// it manages (a DURATION then), never the externally managed one.
func stepGetColumns(t *testing.T, k framework.Kubectl) {
	jobs := exampleJobs(t)
	out := k.MustRun(t, "get", "bjob")
	tb := parseTable(t, out)
	if want := []string{"NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE"}; !slices.Equal(tb.columns, want) {
		t.Errorf("columns %v, want %v", tb.columns, want)
	}
	for i := range jobs {
		job := &jobs[i]
		row := tb.row(t, job.Name)
		durationRE := regexp.MustCompile(`^(\d+s)?$`)
		wantDuration := "none or seconds"
		if job.Spec.ManagedBy != nil || ptr.Deref(job.Spec.Suspend, false) {
			// Nothing starts a suspended or externally managed Job.
			durationRE, wantDuration = regexp.MustCompile(`^$`), "none"
		}
		if row["STATUS"] != "Running" || row["COMPLETIONS"] != wantCompletions(job, 0) || !durationRE.MatchString(row["DURATION"]) || row["AGE"] == "" {
			t.Errorf("row %s = %v, want STATUS Running, COMPLETIONS %s, DURATION %s, an AGE", job.Name, row, wantCompletions(job, 0), wantDuration)
		}
	}

	out = k.MustRun(t, "get", "bjob", "-o", "wide")
	tb = parseTable(t, out)
	// MANAGED-BY is ours alone (docs/deviations.md).
	if want := []string{"NAME", "STATUS", "COMPLETIONS", "DURATION", "AGE", "CONTAINERS", "IMAGES", "SELECTOR", "MANAGED-BY"}; !slices.Equal(tb.columns, want) {
		t.Errorf("wide columns %v, want %v", tb.columns, want)
	}
	for i := range jobs {
		job := &jobs[i]
		row := tb.row(t, job.Name)
		var names, images []string
		for _, c := range job.Spec.Template.Spec.Containers {
			names = append(names, c.Name)
			images = append(images, c.Image)
		}
		uid := jsonpath(t, k, "bjob/"+job.Name, "{.metadata.uid}")
		want := map[string]string{
			"CONTAINERS": strings.Join(names, ","),
			"IMAGES":     strings.Join(images, ","),
			"SELECTOR":   "batch.jobs.dev/controller-uid=" + uid,
			"MANAGED-BY": ptr.Deref(job.Spec.ManagedBy, ""),
		}
		for col, v := range want {
			if row[col] != v {
				t.Errorf("%s %s = %q, want %q", job.Name, col, row[col], v)
			}
		}
	}
}

// stepExplain reads the schema through /openapi/v3.
func stepExplain(t *testing.T, k framework.Kubectl) {
	out := k.MustRun(t, "explain", "bjob")
	mustContain(t, out, "GROUP:      batch.jobs.dev", "KIND:       Job", "VERSION:    v1", "spec\t<JobSpec>", "status\t<JobStatus>")

	out = k.MustRun(t, "explain", "bjob.spec.podFailurePolicy.rules.onPodConditions")
	mustContain(t, out, "FIELD: onPodConditions <[]PodFailurePolicyOnPodConditionsPattern>", "status\t<string>", "type\t<string> -required-")

	// With --api-version, kubectl takes the first segment as the resource.
	out = k.MustRun(t, "explain", "bjob.spec.managedBy", "--api-version=batch.jobs.dev/v1beta1")
	mustContain(t, out, "VERSION:    v1beta1", "FIELD: managedBy <string>")
}

// stepServerSideApply applies as one field manager, conflicts as a second
// one on a field the first owns, forces it, and applies a partial object
// that shares no field.
func stepServerSideApply(t *testing.T, k framework.Kubectl) {
	first := jobYAML("ssa", map[string]string{"app": "ssa"}, "parallelism: 1", "completions: 4")
	out := k.MustRunStdin(t, first, "apply", "--server-side", "-f", "-")
	mustContain(t, out, "job.batch.jobs.dev/ssa serverside-applied")

	second := strings.Replace(first, "parallelism: 1", "parallelism: 2", 1)
	res := k.MustFailStdin(t, second, "apply", "--server-side", "--field-manager=second", "-f", "-")
	if res.ExitCode != 1 {
		t.Errorf("conflicting apply exit code %d, want 1", res.ExitCode)
	}
	mustContain(t, res.Stderr, `Apply failed with 1 conflict: conflict with "kubectl": .spec.parallelism`, "--force-conflicts")
	if got := jsonpath(t, k, "bjob/ssa", "{.spec.parallelism}"); got != "1" {
		t.Errorf("parallelism after the refused apply = %s, want 1", got)
	}

	out = k.MustRunStdin(t, second, "apply", "--server-side", "--field-manager=second", "--force-conflicts", "-f", "-")
	mustContain(t, out, "job.batch.jobs.dev/ssa serverside-applied")
	if got := jsonpath(t, k, "bjob/ssa", "{.spec.parallelism}"); got != "2" {
		t.Errorf("parallelism after the forced apply = %s, want 2", got)
	}

	// A manager that sets only its own label conflicts with nobody.
	third := "apiVersion: batch.jobs.dev/v1\nkind: Job\nmetadata:\n  name: ssa\n  labels:\n    third: \"yes\"\n"
	out = k.MustRunStdin(t, third, "apply", "--server-side", "--field-manager=third", "-f", "-")
	mustContain(t, out, "job.batch.jobs.dev/ssa serverside-applied")

	managers := map[string]string{}
	for _, line := range strings.Split(jsonpath(t, k, "bjob/ssa", `{range .metadata.managedFields[*]}{.manager}/{.operation}={.fieldsV1}{"\n"}{end}`), "\n") {
		if name, fields, ok := strings.Cut(line, "="); ok {
			managers[name] = fields
		}
	}
	if f := managers["second/Apply"]; !strings.Contains(f, `"f:parallelism"`) {
		t.Errorf("manager second does not own spec.parallelism: %q", f)
	}
	if f := managers["kubectl/Apply"]; f == "" || strings.Contains(f, `"f:parallelism"`) {
		t.Errorf("manager kubectl should still own its fields but not spec.parallelism: %q", f)
	}
	if f := managers["third/Apply"]; !strings.Contains(f, `"f:third"`) || strings.Contains(f, `"f:spec"`) {
		t.Errorf("manager third should own only its label: %q", f)
	}
	if got := jsonpath(t, k, "bjob/ssa", "{.metadata.labels.app},{.metadata.labels.third}"); got != "ssa,yes" {
		t.Errorf("labels app,third = %q, want ssa,yes", got)
	}
}

// stepDelete deletes the examples and checks they are gone.
func stepDelete(t *testing.T, k framework.Kubectl) {
	jobs := exampleJobs(t)
	out := k.MustRun(t, "delete", "-f", filepath.Join(bins.RepoRoot, examplesDir)+"/")
	for _, job := range jobs {
		mustContain(t, out, fmt.Sprintf("job.batch.jobs.dev %q deleted", job.Name))
	}
	for _, job := range jobs {
		res, err := k.Run("get", "bjob", job.Name)
		if err != nil {
			t.Fatal(err)
		}
		if res.ExitCode == 0 || !strings.Contains(res.Stderr, "NotFound") {
			t.Errorf("get of deleted %s: %s", job.Name, res.Combined())
		}
	}
}
