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

package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/utils/ptr"

	batchv1beta1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1beta1"
	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/server"
)

// repoRoot is the repository root, seen from this package's directory.
var repoRoot = filepath.Join("..", "..")

// versionScript runs hack/version.sh with one option and returns its output.
func versionScript(t *testing.T, option string) string {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), "bash", filepath.Join("hack", "version.sh"), option)
	cmd.Dir = repoRoot
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("hack/version.sh %s: %v\n%s", option, err, stderr.String())
	}
	return strings.TrimSpace(string(out))
}

// TestStampedBuild builds the binary stamped as `make build` stamps it (the
// -ldflags of hack/version.sh, a v0.x git version; without make's -trimpath
// and CGO_ENABLED=0, so that only the link is not in the build cache of the
// test's own compilation), runs it standalone, and checks
// what the stamp must and must not change: --version and /version report
// the stamp; the API still emulates Kubernetes 1.37 (v1beta1 deprecated,
// JobManagedBy on, the alpha JobStrictStatusValidation settable), as an
// unstamped build does.
func TestStampedBuild(t *testing.T) {
	// One run of the script: the tree may change between two (others commit).
	ldflags := versionScript(t, "--ldflags")
	stamp := map[string]string{}
	for _, field := range strings.Fields(ldflags) {
		if name, value, ok := strings.Cut(strings.TrimPrefix(field, "k8s.io/component-base/version."), "="); ok {
			stamp[name] = value
		}
	}
	wantVersion := stamp["gitVersion"]
	if !strings.HasPrefix(wantVersion, "v0.") {
		t.Logf("git version %s: the tree is tagged past v0", wantVersion)
	}

	dir := t.TempDir()
	bin := filepath.Join(dir, "batch-apiserver")
	// Built as make build builds (static, -trimpath): the packages make
	// build compiled are reused, not compiled again with other flags.
	build := exec.CommandContext(t.Context(), "go", "build", "-trimpath", "-ldflags", ldflags, "-o", bin, "./cmd/batch-apiserver")
	build.Dir = repoRoot
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}

	out, err := exec.CommandContext(t.Context(), bin, "--version").Output()
	if err != nil {
		t.Fatalf("batch-apiserver --version: %v", err)
	}
	if got, want := string(out), "batch-apiserver "+wantVersion+"\n"; got != want {
		t.Errorf("--version printed %q, want %q", got, want)
	}

	// A free port; the server listens on it a moment later.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()

	dataDir := filepath.Join(dir, "data")
	var logs bytes.Buffer
	srv := exec.Command(bin, "--data-dir", dataDir, "--secure-port", strconv.Itoa(port),
		"--feature-gates", "JobStrictStatusValidation=true")
	srv.Stdout, srv.Stderr = &logs, &logs
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- srv.Wait() }()
	t.Cleanup(func() {
		_ = srv.Process.Signal(syscall.SIGTERM)
		select {
		case <-exited:
		case <-time.After(time.Minute):
			_ = srv.Process.Kill()
			<-exited
		}
		if t.Failed() {
			t.Logf("server output:\n%s", logs.String())
		}
	})

	ctx := testContext(t)
	kubeconfig := filepath.Join(dataDir, server.KubeconfigFileName)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, testTimeout, true, func(ctx context.Context) (bool, error) {
		select {
		case err := <-exited:
			exited <- err
			return false, err
		default:
		}
		_, err := os.Stat(kubeconfig)
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("waiting for %s: %v", kubeconfig, err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	client, warnings := newTestClientWithWarnings(t, cfg)
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, testTimeout, true, func(ctx context.Context) (bool, error) {
		var code int
		client.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
		return code == 200, nil
	})
	if err != nil {
		t.Fatalf("waiting for /readyz: %v", err)
	}

	raw, err := client.Discovery().RESTClient().Get().AbsPath("/version").DoRaw(ctx)
	if err != nil {
		t.Fatalf("GET /version: %v", err)
	}
	var info apimachineryversion.Info
	if err := json.Unmarshal(raw, &info); err != nil {
		t.Fatalf("decoding /version %s: %v", raw, err)
	}
	type versions struct{ GitVersion, GitCommit, GitTreeState, BuildDate, Major, Minor, EmulationMajor, EmulationMinor string }
	got := versions{info.GitVersion, info.GitCommit, info.GitTreeState, info.BuildDate, info.Major, info.Minor, info.EmulationMajor, info.EmulationMinor}
	want := versions{
		GitVersion:   wantVersion,
		GitCommit:    stamp["gitCommit"],
		GitTreeState: stamp["gitTreeState"],
		BuildDate:    stamp["buildDate"],
		// The Kubernetes release whose API is served, not the git version.
		Major: "1", Minor: "37", EmulationMajor: "1", EmulationMinor: "37",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("/version (-want +got):\n%s", diff)
	}

	ns := "stamped"
	job := newTestJob(ns, "beta").Obj()
	beta := &batchv1beta1.Job{}
	convertTestJob(t, job, beta)
	if _, err := client.BatchV1beta1().Jobs(ns).Create(ctx, beta, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating a v1beta1 Job: %v", err)
	}
	if diff := cmp.Diff([]string{v1beta1DeprecationWarning}, warnings.take()); diff != "" {
		t.Errorf("warnings of a v1beta1 create (-want +got):\n%s", diff)
	}

	managed := newTestJob(ns, "managed").Obj()
	managed.Spec.ManagedBy = ptr.To("example.com/dispatcher")
	created, err := client.BatchV1().Jobs(ns).Create(ctx, managed, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating a Job with managedBy: %v", err)
	}
	if got := ptr.Deref(created.Spec.ManagedBy, ""); got != "example.com/dispatcher" {
		t.Errorf("spec.managedBy = %q after create, want it kept (JobManagedBy on)", got)
	}
}
