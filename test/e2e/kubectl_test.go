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
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// TestKubectlThroughAggregator drives batch.jobs.dev Jobs with kubectl
// through the host kube-apiserver, as a cluster user would.
func TestKubectlThroughAggregator(t *testing.T) {
	const ns = "e2e-kubectl"
	k := createNamespace(t, ns)

	t.Run("api-resources", func(t *testing.T) { stepAPIResources(t, k) })
	t.Run("create -f examples", func(t *testing.T) { stepCreateExamples(t, k) })
	t.Run("get columns and -o wide", func(t *testing.T) { stepGetColumns(t, k) })
	t.Run("get v1beta1 warns deprecated", func(t *testing.T) {
		res, err := k.Run("get", "jobs.v1beta1.batch.jobs.dev")
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("get v1beta1: %v %s", err, res.Combined())
		}
		mustContain(t, res.Stderr, "Warning: batch.jobs.dev/v1beta1 Job is deprecated")
		for _, job := range exampleJobs(t) {
			parseTable(t, res.Stdout).row(t, job.Name)
		}
	})
	t.Run("get all lists jobs.batch.jobs.dev", func(t *testing.T) {
		out := k.MustRun(t, "get", "all")
		for _, job := range exampleJobs(t) {
			mustContain(t, out, "job.batch.jobs.dev/"+job.Name)
		}
	})
	t.Run("explain", func(t *testing.T) { stepExplain(t, k) })
	t.Run("describe", func(t *testing.T) {
		job := exampleJobs(t)[0]
		out := k.MustRun(t, "describe", "bjob", job.Name)
		mustContain(t, out, "Name:         "+job.Name, "Namespace:    "+ns, "API Version:  batch.jobs.dev/v1", "Kind:         Job", "Spec:", "Template:")
	})
	t.Run("apply client-side", func(t *testing.T) { stepClientSideApply(t, k) })
	t.Run("apply server-side with a second field manager", func(t *testing.T) { stepServerSideApply(t, k) })
	t.Run("patch strategic merge json", func(t *testing.T) { stepPatch(t, k) })
	t.Run("label and annotate", func(t *testing.T) { stepLabelAnnotate(t, k) })
	t.Run("get --watch", func(t *testing.T) { stepWatch(t, k) })
	t.Run("status subresource, selectors and wait --for=condition=Complete", func(t *testing.T) { stepStatusAndWait(t, k) })
	t.Run("delete: dependents garbage-collected", func(t *testing.T) { stepDeleteGarbageCollection(t, k) })
	t.Run("delete -f examples", func(t *testing.T) { stepDelete(t, k) })
	t.Run("delete namespace holding jobs", func(t *testing.T) { stepDeleteNamespace(t) })
}

func stepClientSideApply(t *testing.T, k framework.Kubectl) {
	v1 := jobYAML("applied", map[string]string{"app": "applied", "extra": "x"}, "parallelism: 1", "completions: 3")
	mustContain(t, k.MustRunStdin(t, v1, "apply", "-f", "-"), "job.batch.jobs.dev/applied created")
	mustContain(t, k.MustRunStdin(t, v1, "apply", "-f", "-"), "job.batch.jobs.dev/applied unchanged")

	// The second version changes parallelism and drops a label: the
	// three-way merge with last-applied-configuration removes it.
	v2 := jobYAML("applied", map[string]string{"app": "applied"}, "parallelism: 2", "completions: 3")
	mustContain(t, k.MustRunStdin(t, v2, "apply", "-f", "-"), "job.batch.jobs.dev/applied configured")
	got := jsonpath(t, k, "bjob/applied", `{.spec.parallelism},{.metadata.labels.app},{.metadata.labels.extra}`)
	if got != "2,applied," {
		t.Errorf("after apply: parallelism,app,extra = %q, want 2,applied,", got)
	}
	last := jsonpath(t, k, "bjob/applied", `{.metadata.annotations.kubectl\.kubernetes\.io/last-applied-configuration}`)
	mustContain(t, last, `"parallelism":2`)
	mustNotContain(t, last, `"extra"`)
}

func stepPatch(t *testing.T, k framework.Kubectl) {
	// Suspended and never started: the scheduling directives of the
	// template, schedulingGates among them, may change.
	manifest := `apiVersion: batch.jobs.dev/v1
kind: Job
metadata:
  name: patched
  labels: {app: patched}
spec:
  suspend: true
  parallelism: 1
  completions: 5
  template:
    spec:
      restartPolicy: Never
      schedulingGates: [{name: example.com/a}]
      containers:
      - name: main
        image: docker.io/library/busybox:1.36
`
	k.MustRunStdin(t, manifest, "create", "-f", "-")
	gates := func() string {
		return jsonpath(t, k, "bjob/patched", `{.spec.template.spec.schedulingGates[*].name}`)
	}

	// Strategic merge: schedulingGates merge by name (the patch's items
	// first, as kube-apiserver orders them).
	out := k.MustRun(t, "patch", "bjob", "patched", "--type=strategic",
		"-p", `{"spec":{"parallelism":2,"template":{"spec":{"schedulingGates":[{"name":"example.com/b"}]}}}}`)
	mustContain(t, out, "job.batch.jobs.dev/patched patched")
	if got := gates(); got != "example.com/b example.com/a" {
		t.Errorf("strategic patch: gates %q, want the list merged: example.com/b example.com/a", got)
	}

	// JSON merge patch: a list is replaced; null deletes a key.
	k.MustRun(t, "patch", "bjob", "patched", "--type=merge",
		"-p", `{"metadata":{"labels":{"app":null,"merged":"yes"}},"spec":{"template":{"spec":{"schedulingGates":[{"name":"example.com/c"}]}}}}`)
	if got := gates(); got != "example.com/c" {
		t.Errorf("merge patch: gates %q, want the list replaced: example.com/c", got)
	}
	if got := jsonpath(t, k, "bjob/patched", `{.metadata.labels}`); got != `{"merged":"yes"}` {
		t.Errorf("merge patch: labels %s, want only merged=yes", got)
	}

	// JSON patch, with a failing test operation first.
	res := k.MustFail(t, "patch", "bjob", "patched", "--type=json",
		"-p", `[{"op":"test","path":"/spec/parallelism","value":7},{"op":"replace","path":"/spec/parallelism","value":3}]`)
	mustContain(t, res.Stderr, "The request is invalid")
	k.MustRun(t, "patch", "bjob", "patched", "--type=json",
		"-p", `[{"op":"test","path":"/spec/parallelism","value":2},{"op":"replace","path":"/spec/parallelism","value":3},{"op":"remove","path":"/spec/template/spec/schedulingGates"}]`)
	if got := jsonpath(t, k, "bjob/patched", `{.spec.parallelism}/{.spec.template.spec.schedulingGates}`); got != "3/" {
		t.Errorf("json patch: parallelism/gates = %q, want 3/", got)
	}

	// The container list is immutable; the server says so at its field.
	res = k.MustFail(t, "patch", "bjob", "patched", "--type=strategic",
		"-p", `{"spec":{"template":{"spec":{"containers":[{"name":"main","image":"docker.io/library/busybox:1.37"}]}}}}`)
	mustContain(t, res.Stderr, `The Job "patched" is invalid: spec.template.spec: Invalid value`, "field is immutable")
}

func stepLabelAnnotate(t *testing.T, k framework.Kubectl) {
	k.MustRunStdin(t, jobYAML("labeled", nil), "create", "-f", "-")
	k.MustRunStdin(t, jobYAML("unlabeled", nil), "create", "-f", "-")

	mustContain(t, k.MustRun(t, "label", "bjob", "labeled", "tier=batch"), "job.batch.jobs.dev/labeled labeled")
	res := k.MustFail(t, "label", "bjob", "labeled", "tier=other")
	mustContain(t, res.Stderr, "'tier' already has a value (batch), and --overwrite is false")
	k.MustRun(t, "label", "bjob", "labeled", "tier=other", "--overwrite")
	if got := strings.TrimSpace(k.MustRun(t, "get", "bjob", "-l", "tier=other", "-o", "name")); got != "job.batch.jobs.dev/labeled" {
		t.Errorf("get -l tier=other: %q", got)
	}
	if got := strings.TrimSpace(k.MustRun(t, "get", "bjob", "-l", "tier in (batch,other),tier!=batch", "-o", "name")); got != "job.batch.jobs.dev/labeled" {
		t.Errorf("get with a set-based selector: %q", got)
	}
	mustContain(t, k.MustRun(t, "label", "bjob", "labeled", "tier-"), "job.batch.jobs.dev/labeled unlabeled")
	// The Job keeps the labels it got from its template at creation, as
	// batch/v1 Jobs do.
	labels := jsonpath(t, k, "bjob/labeled", "{.metadata.labels}")
	mustNotContain(t, labels, "tier")
	mustContain(t, labels, `"batch.jobs.dev/job-name":"labeled"`)

	mustContain(t, k.MustRun(t, "annotate", "bjob", "labeled", "example.com/note=hello"), "job.batch.jobs.dev/labeled annotated")
	k.MustRun(t, "annotate", "bjob", "labeled", "example.com/note=again", "--overwrite")
	if got := jsonpath(t, k, "bjob/labeled", `{.metadata.annotations.example\.com/note}`); got != "again" {
		t.Errorf("annotation = %q, want again", got)
	}
	k.MustRun(t, "annotate", "bjob", "labeled", "example.com/note-")
	if got := jsonpath(t, k, "bjob/labeled", `{.metadata.annotations}`); got != "" {
		t.Errorf("annotations after removal: %q", got)
	}
}

func stepWatch(t *testing.T, k framework.Kubectl) {
	k.MustRunStdin(t, jobYAML("watched", nil), "create", "-f", "-")
	s, err := k.Start(2*time.Minute, "get", "bjob", "watched", "--watch", "--output-watch-events")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	event := func(typ string) func(string) bool {
		return func(line string) bool {
			f := strings.Fields(line)
			return len(f) >= 3 && f[0] == typ && f[1] == "watched"
		}
	}
	// The first line comes from the initial list: the watch is open after it.
	if _, err := s.WaitForLine(ctx, event("ADDED")); err != nil {
		t.Fatal(err)
	}
	k.MustRun(t, "label", "bjob", "watched", "step=one")
	if _, err := s.WaitForLine(ctx, event("MODIFIED")); err != nil {
		t.Fatal(err)
	}
	k.MustRun(t, "delete", "bjob", "watched")
	if _, err := s.WaitForLine(ctx, event("DELETED")); err != nil {
		t.Fatal(err)
	}
}

// testExternalController is the spec.managedBy of the Jobs whose status
// the tests write by hand, as an external controller would: neither Job
// controller of the cluster touches them.
const testExternalController = "example.com/e2e-status-writer"

// condition is a Job condition as an external controller writes it.
func condition(typ string, at time.Time) map[string]any {
	ts := at.UTC().Format(time.RFC3339)
	return map[string]any{
		"type": typ, "status": "True", "reason": "CompletionsReached",
		"message": "Reached expected number of succeeded pods", "lastProbeTime": ts, "lastTransitionTime": ts,
	}
}

func statusPatch(t testing.TB, status map[string]any) string {
	t.Helper()
	p, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		t.Fatal(err)
	}
	return string(p)
}

// stepStatusAndWait writes a Job's status through the status subresource
// as an external controller would, in a legal order, and checks what reads
// it: the table, the status.successful field selector and kubectl wait.
func stepStatusAndWait(t *testing.T, k framework.Kubectl) {
	// Managed by that external controller, so that the embedded one leaves
	// their status to the test.
	k.MustRunStdin(t, jobYAML("done", map[string]string{"kind": "status"}, "managedBy: "+testExternalController), "create", "-f", "-")
	k.MustRunStdin(t, jobYAML("pending", map[string]string{"kind": "status"}, "managedBy: "+testExternalController), "create", "-f", "-")
	start := time.Now().Add(-2 * time.Minute).Truncate(time.Second)
	end := start.Add(time.Minute)

	// Complete with nothing before it breaks three rules at once.
	res := k.MustFail(t, "patch", "bjob", "done", "--subresource=status", "--type=merge",
		"-p", statusPatch(t, map[string]any{"conditions": []any{condition("Complete", end)}}))
	mustContain(t, res.Stderr, `The Job "done" is invalid`, "status.completionTime: Required value", "status.startTime: Required value",
		"status.conditions: Invalid value: cannot set Complete=True condition without the SuccessCriteriaMet=true condition")

	// A status write through the main resource is ignored.
	k.MustRun(t, "patch", "bjob", "done", "--type=merge", "-p", statusPatch(t, map[string]any{"active": 1}))
	if got := jsonpath(t, k, "bjob/done", "{.status.active}"); got != "" {
		t.Errorf("status.active after a patch of the main resource = %q, want unset", got)
	}

	steps := []map[string]any{
		{"startTime": start.UTC().Format(time.RFC3339), "active": 1, "ready": 1},
		{"active": 0, "ready": 0, "succeeded": 1, "conditions": []any{condition("SuccessCriteriaMet", end)}},
	}
	for _, s := range steps {
		mustContain(t, k.MustRun(t, "patch", "bjob", "done", "--subresource=status", "--type=merge", "-p", statusPatch(t, s)),
			"job.batch.jobs.dev/done patched")
	}

	// Not Complete yet: wait times out.
	res = k.MustFail(t, "wait", "--for=condition=Complete", "bjob/done", "--timeout=1s")
	mustContain(t, res.Stderr, "timed out waiting for the condition")

	w, err := k.Start(2*time.Minute, "wait", "--for=condition=Complete", "bjob/done", "--timeout=60s")
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	k.MustRun(t, "patch", "bjob", "done", "--subresource=status", "--type=merge", "-p", statusPatch(t, map[string]any{
		"completionTime": end.UTC().Format(time.RFC3339),
		"conditions":     []any{condition("SuccessCriteriaMet", end), condition("Complete", end)},
	}))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := w.WaitForLine(ctx, func(l string) bool { return l == "job.batch.jobs.dev/done condition met" }); err != nil {
		t.Fatal(err)
	}

	row := parseTable(t, k.MustRun(t, "get", "bjob", "done")).row(t, "done")
	if row["STATUS"] != "Complete" || row["COMPLETIONS"] != "1/1" || row["DURATION"] != "60s" {
		t.Errorf("finished job row %v, want STATUS Complete, COMPLETIONS 1/1, DURATION 60s", row)
	}
	if got := strings.TrimSpace(k.MustRun(t, "get", "bjob", "--field-selector", "status.successful=1", "-o", "name")); got != "job.batch.jobs.dev/done" {
		t.Errorf("--field-selector status.successful=1: %q, want only done", got)
	}
	if got := strings.TrimSpace(k.MustRun(t, "get", "bjob", "-l", "kind=status", "--field-selector", "status.successful!=1", "-o", "name")); got != "job.batch.jobs.dev/pending" {
		t.Errorf("-l kind=status --field-selector status.successful!=1: %q, want only pending", got)
	}
	res = k.MustFail(t, "get", "bjob", "--field-selector", "spec.parallelism=1")
	mustContain(t, res.Stderr, `field label "spec.parallelism" not supported for Job`)

	// Complete is terminal.
	res = k.MustFail(t, "patch", "bjob", "done", "--subresource=status", "--type=merge",
		"-p", statusPatch(t, map[string]any{"conditions": []any{condition("SuccessCriteriaMet", end)}}))
	mustContain(t, res.Stderr, "cannot disable the terminal Complete=True condition")
}

// ownedPod is a Pod in the host cluster owned by a Job of ours, as the
// embedded controller would create it.
func ownedPod(t testing.TB, k framework.Kubectl, pod, job string) string {
	t.Helper()
	uid := jsonpath(t, k, "bjob/"+job, "{.metadata.uid}")
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
  ownerReferences:
  - apiVersion: batch.jobs.dev/v1
    kind: Job
    name: %s
    uid: %s
    controller: true
    blockOwnerDeletion: true
spec:
  containers:
  - name: main
    image: docker.io/library/busybox:1.36
`, pod, job, uid)
}

func gone(k framework.Kubectl, resource string) (bool, string) {
	res, err := k.Run("get", resource, "-o", "name")
	if err != nil {
		return false, err.Error()
	}
	return res.ExitCode != 0 && strings.Contains(res.Stderr, "NotFound"), res.Combined()
}

// stepDeleteGarbageCollection deletes Jobs with Pods that name them as
// owner; kube-controller-manager's garbage collector, which discovers
// jobs.batch.jobs.dev through the aggregator, acts on the dependents.
func stepDeleteGarbageCollection(t *testing.T, k framework.Kubectl) {
	cases := []struct {
		name string
		args []string
		// orphaned: the Pod stays, without its ownerReference.
		orphaned bool
	}{
		{name: "gc-background", args: []string{"--cascade=background"}},
		{name: "gc-foreground", args: []string{"--cascade=foreground"}},
		{name: "gc-orphan", args: []string{"--cascade=orphan"}, orphaned: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			k.MustRunStdin(t, jobYAML(tc.name, nil), "create", "-f", "-")
			k.MustRunStdin(t, ownedPod(t, k, tc.name+"-pod", tc.name), "create", "-f", "-")
			out := k.MustRun(t, append([]string{"delete", "bjob", tc.name, "--wait=true"}, tc.args...)...)
			mustContain(t, out, fmt.Sprintf("job.batch.jobs.dev %q deleted", tc.name))
			eventually(t, time.Minute, "job "+tc.name+" gone", func() (bool, string) { return gone(k, "bjob/"+tc.name) })
			if tc.orphaned {
				eventually(t, time.Minute, "pod orphaned", func() (bool, string) {
					refs := jsonpath(t, k, "pod/"+tc.name+"-pod", "{.metadata.ownerReferences}")
					return refs == "", refs
				})
				return
			}
			eventually(t, time.Minute, "pod garbage-collected", func() (bool, string) { return gone(k, "pod/"+tc.name+"-pod") })
		})
	}

	// Unlike batch/v1 (orphan, kept for old clients), a DELETE without
	// propagationPolicy deletes the dependents (docs/deviations.md).
	t.Run("server default propagation", func(t *testing.T) {
		k.MustRunStdin(t, jobYAML("gc-default", nil), "create", "-f", "-")
		k.MustRunStdin(t, ownedPod(t, k, "gc-default-pod", "gc-default"), "create", "-f", "-")
		k.MustRun(t, "delete", "--raw", "/apis/batch.jobs.dev/v1/namespaces/"+k.Namespace+"/jobs/gc-default")
		eventually(t, time.Minute, "job gone", func() (bool, string) { return gone(k, "bjob/gc-default") })
		eventually(t, time.Minute, "pod garbage-collected", func() (bool, string) { return gone(k, "pod/gc-default-pod") })
	})
}

// stepDeleteNamespace deletes a namespace holding Jobs (and a Pod one of
// them owns): the namespace controller must find and delete the Jobs
// through the aggregator and finish.
func stepDeleteNamespace(t *testing.T) {
	const ns = "e2e-kubectl-nsdelete"
	k := createNamespace(t, ns)
	stepCreateExamples(t, k)
	job := exampleJobs(t)[0].Name
	k.MustRunStdin(t, ownedPod(t, k, "owned", job), "create", "-f", "-")

	admin := cluster.Kubectl()
	admin.MustRun(t, "delete", "namespace", ns, "--wait=false")
	eventually(t, time.Minute, "namespace "+ns+" deleted", func() (bool, string) {
		res, err := admin.Run("get", "namespace", ns, "-o", "jsonpath={.status}")
		if err != nil {
			return false, err.Error()
		}
		// What is left in it, should it hang.
		left, _ := admin.Run("get", "pods,jobs.batch.jobs.dev,events", "-n", ns, "-o", "custom-columns=KIND:.kind,NAME:.metadata.name,FINALIZERS:.metadata.finalizers,DELETED:.metadata.deletionTimestamp")
		return res.ExitCode != 0 && strings.Contains(res.Stderr, "NotFound"), res.Combined() + "\nleft in the namespace:\n" + left.Combined()
	})
	// A namespace of the same name starts empty.
	k = createNamespace(t, ns)
	res, err := k.Run("get", "bjob", "-o", "name")
	if err != nil || res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "" {
		t.Errorf("jobs in the recreated namespace: %v %s", err, res.Combined())
	}
	admin.MustRun(t, "delete", "namespace", ns, "--wait=false")
}
