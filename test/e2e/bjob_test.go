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
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// The kubectl bjob plugin against the cluster: describe compared line by
// line with kubectl describe job of the same Job on kube-apiserver, logs
// by index, wait's exit codes and retry of a failed Job.

// EnvKubectlBjobBin is the kubectl-bjob binary under test; when it is
// unset the test looks next to BATCH_APISERVER_BIN, then builds one.
const EnvKubectlBjobBin = "KUBECTL_BJOB_BIN"

var (
	pluginDirOnce sync.Once
	pluginDir     string
	pluginDirErr  error
)

// kubectlBjobDir is a directory holding kubectl-bjob, for kubectl's PATH.
func kubectlBjobDir(t *testing.T) string {
	t.Helper()
	pluginDirOnce.Do(func() {
		bin := os.Getenv(EnvKubectlBjobBin)
		if bin == "" {
			if b := os.Getenv(framework.EnvBatchAPIServerBin); b != "" {
				if _, err := os.Stat(filepath.Join(filepath.Dir(b), "kubectl-bjob")); err == nil {
					bin = filepath.Join(filepath.Dir(b), "kubectl-bjob")
				}
			}
		}
		dir, err := os.MkdirTemp("", "kubectl-bjob-")
		if err != nil {
			pluginDirErr = err
			return
		}
		pluginDir = dir
		if bin != "" {
			pluginDirErr = os.Symlink(bin, filepath.Join(dir, "kubectl-bjob"))
			return
		}
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, "kubectl-bjob"), "./cmd/kubectl-bjob")
		cmd.Dir = bins.RepoRoot
		if out, err := cmd.CombinedOutput(); err != nil {
			pluginDirErr = errors.New("building kubectl-bjob: " + err.Error() + ": " + string(out))
		}
	})
	if pluginDirErr != nil {
		t.Fatal(pluginDirErr)
	}
	return pluginDir
}

// bjob runs "kubectl bjob args..." in namespace ns through kubectl's
// plugin lookup (kubectl finds plugins only when the plugin's name is its
// first argument, so the connection flags come after).
func bjob(t *testing.T, ns string, args ...string) framework.Result {
	t.Helper()
	dir := kubectlBjobDir(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	full := append(append([]string{"bjob"}, args...), "--kubeconfig", cluster.AdminKubeconfig, "--namespace", ns)
	cmd := exec.CommandContext(ctx, bins.Kubectl, full...)
	cmd.Env = append(os.Environ(), "PATH="+dir+string(os.PathListSeparator)+os.Getenv("PATH"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	res := framework.Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case errors.As(err, &exit):
		res.ExitCode = exit.ExitCode()
	case err != nil:
		t.Fatalf("kubectl bjob %s: %v", strings.Join(args, " "), err)
	}
	return res
}

var (
	rfc1123ZRE = regexp.MustCompile(`[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} [+-]\d{4}`)
	eventRE    = regexp.MustCompile(`^(Normal|Warning) (\S+) .+? (job-controller .*)$`)
)

// ourDescribeLines are the labels of the lines kubectl bjob describe adds
// to kubectl's; a label alone on its line starts an indented block.
var ourDescribeLines = []string{
	"Managed By:", "Backoff Limit Per Index:", "Max Failed Indexes:", "Pod Replacement Policy:",
	"Terminating:", "Failed Indexes:", "Pod Failure Policy:", "Success Policy:", "Conditions:",
}

// comparableDescribe is describe's output without our own lines, with
// runs of spaces squeezed (our longer labels widen the columns) and what
// must differ normalized: namespaces, uids, the label prefix, times,
// durations, Pod names and Event ages.
func comparableDescribe(out, ns, job string) []string {
	podRE := regexp.MustCompile(regexp.QuoteMeta(job) + `-(\d+)-[a-z0-9]{5}`)
	var lines []string
	inBlock := false
	for _, line := range strings.Split(out, "\n") {
		if inBlock && strings.HasPrefix(line, " ") {
			continue
		}
		inBlock = false
		ours := false
		for _, l := range ourDescribeLines {
			if strings.HasPrefix(line, l) {
				ours, inBlock = true, strings.TrimSpace(line) == l
			}
		}
		if ours {
			continue
		}
		line = strings.Join(strings.Fields(line), " ")
		line = strings.ReplaceAll(line, ns, "<ns>")
		line = normalize(line)
		line = rfc1123ZRE.ReplaceAllString(line, "<time>")
		line = podRE.ReplaceAllString(line, job+"-$1-<pod>")
		line = eventRE.ReplaceAllString(line, "$1 $2 <age> $3")
		if strings.HasPrefix(line, "Duration: ") {
			line = "Duration: <duration>"
		}
		lines = append(lines, line)
	}
	return lines
}

func TestKubectlBjob(t *testing.T) {
	skipWithoutOurController(t)
	t.Parallel()

	t.Run("describe", func(t *testing.T) {
		t.Parallel()
		var outs [2][]string
		var raw [2]string
		for i, ctl := range controllers {
			r := newJobRun(t, ctl, "bjob-describe")
			r.create(newJob(2, 2, indexed, func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](1) }))
			r.succeed(r.activePods(2)...)
			r.waitCondition(batchv1.JobComplete)
			var res framework.Result
			if ctl.api == framework.OurJobs {
				res = bjob(t, r.jobs.Namespace, "describe", r.name)
			} else {
				var err error
				res, err = cluster.Kubectl().In(r.jobs.Namespace).Run("describe", "job", r.name)
				if err != nil {
					t.Fatal(err)
				}
			}
			if res.ExitCode != 0 {
				t.Fatalf("%s: %s", ctl.name, res.Combined())
			}
			raw[i] = res.Stdout
			outs[i] = comparableDescribe(res.Stdout, r.jobs.Namespace, r.name)
		}
		if diff := cmp.Diff(outs[0], outs[1]); diff != "" {
			t.Errorf("kubectl describe job on kube-apiserver (-) vs kubectl bjob describe (+), normalized:\n%s\nkubectl describe job:\n%s\nkubectl bjob describe:\n%s", diff, raw[0], raw[1])
		}
		// Our lines are there too.
		mustContain(t, raw[1], "Pod Replacement Policy:  TerminatingOrFailed", "Terminating:             0",
			"Complete            True    CompletionsReached  Reached expected number of succeeded pods")
	})

	t.Run("logs --index", func(t *testing.T) {
		t.Parallel()
		r := newJobRun(t, controllers[1], "bjob-logs")
		r.create(newJob(2, 2, indexed))
		pods := r.activePods(2)
		r.run(pods...)
		// The host cluster has no kubelet: kube-apiserver answers a Pod
		// without a node with no lines. The request goes through, and a
		// container that does not exist names the Pod the plugin chose.
		res := bjob(t, r.jobs.Namespace, "logs", r.name, "--index", "1")
		want := framework.Result{Stderr: "Defaulted container \"main\" out of: main, setup (init)\n"}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("logs --index 1, -want +got:\n%s", diff)
		}
		res = bjob(t, r.jobs.Namespace, "logs", r.name, "--index", "1", "-c", "nope")
		want = framework.Result{Stderr: "error: container nope is not valid for pod " + pods[1].Name + " out of: main, setup (init)\n", ExitCode: 1}
		if diff := cmp.Diff(want, res); diff != "" {
			t.Errorf("logs --index 1 -c nope, -want +got:\n%s", diff)
		}
		res = bjob(t, r.jobs.Namespace, "logs", r.name, "--index", "5")
		if want := "error: job bjob-logs has no Pods of index 5\n"; res.ExitCode != 1 || res.Stderr != want {
			t.Errorf("want exit 1 and %q: %s", want, res.Combined())
		}
		r.succeed(pods...)
	})

	t.Run("wait and retry", func(t *testing.T) {
		t.Parallel()
		ok := newJobRun(t, controllers[1], "bjob-wait")
		ok.create(newJob(1, 1))
		ok.succeed(ok.activePods(1)...)
		res := bjob(t, ok.jobs.Namespace, "wait", ok.name, "--timeout=2m")
		if diff := cmp.Diff(framework.Result{Stdout: "job.batch.jobs.dev/bjob-wait Complete: CompletionsReached: Reached expected number of succeeded pods\n"}, res); diff != "" {
			t.Errorf("wait for a Complete Job, -want +got:\n%s", diff)
		}

		bad := newJobRun(t, controllers[1], "bjob-failed")
		bad.create(newJob(1, 1, func(j *batchv1.Job) { j.Spec.BackoffLimit = ptr.To[int32](0) }))
		bad.fail(bad.activePods(1)[0], "main", 3)
		res = bjob(t, bad.jobs.Namespace, "wait", bad.name, "--timeout=2m")
		if diff := cmp.Diff(framework.Result{Stdout: "job.batch.jobs.dev/bjob-failed Failed: BackoffLimitExceeded: Job has reached the specified backoff limit\n", ExitCode: 1}, res); diff != "" {
			t.Errorf("wait for a Failed Job, -want +got:\n%s", diff)
		}

		res = bjob(t, bad.jobs.Namespace, "retry", bad.name, "--name", "bjob-failed-2")
		if diff := cmp.Diff(framework.Result{Stdout: "job.batch.jobs.dev/bjob-failed-2 created\n"}, res); diff != "" {
			t.Errorf("retry, -want +got:\n%s", diff)
		}
		// The copy runs: its own selector, its own Pod.
		if _, err := framework.WaitForActivePods(context.Background(), bad.client, bad.jobs.Namespace, "bjob-failed-2", 1, podsTimeout); err != nil {
			t.Fatal(err)
		}

		stuck := newJobRun(t, controllers[1], "bjob-timeout")
		stuck.create(newJob(1, 1, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) }))
		res = bjob(t, stuck.jobs.Namespace, "wait", stuck.name, "--timeout=2s")
		if diff := cmp.Diff(framework.Result{Stdout: "job.batch.jobs.dev/bjob-timeout timed out after 2s: 0 Active / 0 Succeeded / 0 Failed\n", ExitCode: 2}, res); diff != "" {
			t.Errorf("wait past the timeout, -want +got:\n%s", diff)
		}
	})
}
