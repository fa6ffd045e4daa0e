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

// Package framework runs the e2e host cluster: an embedded etcd, a real
// kube-apiserver and kube-controller-manager, and batch-apiserver registered
// into it through APIServices, every one of them on 127.0.0.1 only. It also
// runs batch-apiserver standalone and wraps the kubectl binary.
package framework

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
)

// Environment variables the Makefile's test-e2e target sets.
const (
	// EnvBatchAPIServerBin is the batch-apiserver binary under test. When it
	// is unset the framework builds one from the working tree.
	EnvBatchAPIServerBin = "BATCH_APISERVER_BIN"
	// EnvBinDir holds kube-apiserver, kube-controller-manager and kubectl.
	EnvBinDir = "E2E_BIN_DIR"
	// EnvHostBinDir, when set, holds the host's kube-apiserver and
	// kube-controller-manager instead of EnvBinDir: an older host for
	// make test-compat (kubectl still comes from EnvBinDir).
	EnvHostBinDir = "E2E_HOST_BIN_DIR"
)

// Binaries are the programs the e2e tier runs.
type Binaries struct {
	RepoRoot              string
	KubeAPIServer         string
	KubeControllerManager string
	Kubectl               string
	BatchAPIServer        string
	// HostVersion is the version kube-apiserver reports (--version).
	HostVersion *version.Version
}

// FindBinaries locates the host-cluster binaries (E2E_BIN_DIR, default
// <repo>/_output/bin) and batch-apiserver (BATCH_APISERVER_BIN, or built into
// buildDir from the working tree). It fails with the command that builds
// whatever is missing.
func FindBinaries(buildDir string) (*Binaries, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, err
	}
	binDir := os.Getenv(EnvBinDir)
	if binDir == "" {
		binDir = filepath.Join(root, "_output", "bin")
	}
	hostDir := binDir
	if d := os.Getenv(EnvHostBinDir); d != "" {
		hostDir = d
	}
	b := &Binaries{
		RepoRoot:              root,
		KubeAPIServer:         filepath.Join(hostDir, "kube-apiserver"),
		KubeControllerManager: filepath.Join(hostDir, "kube-controller-manager"),
		Kubectl:               filepath.Join(binDir, "kubectl"),
	}
	var missing []string
	for _, bin := range []string{b.KubeAPIServer, b.KubeControllerManager, b.Kubectl} {
		if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			missing = append(missing, bin)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("e2e host binaries missing: %s\nbuild them with `make e2e-bins` (or run the tier with `make test-e2e`, which builds them first; `make compat-bins` for %s); %s selects another directory",
			strings.Join(missing, ", "), EnvHostBinDir, EnvBinDir)
	}
	if b.HostVersion, err = hostVersion(b.KubeAPIServer); err != nil {
		return nil, err
	}

	b.BatchAPIServer = os.Getenv(EnvBatchAPIServerBin)
	if b.BatchAPIServer != "" {
		if _, err := os.Stat(b.BatchAPIServer); err != nil {
			return nil, fmt.Errorf("%s=%s: %w (build it with `make build`)", EnvBatchAPIServerBin, b.BatchAPIServer, err)
		}
		return b, nil
	}
	// Without the variable, build the working tree so that a plain `go test`
	// never runs a stale binary.
	b.BatchAPIServer = filepath.Join(buildDir, "batch-apiserver")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", b.BatchAPIServer, "./cmd/batch-apiserver")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("building batch-apiserver (set %s to use a built one): %w\n%s", EnvBatchAPIServerBin, err, out)
	}
	fmt.Fprintf(os.Stderr, "e2e: built batch-apiserver in %v\n", time.Since(start).Round(time.Millisecond))
	return b, nil
}

// repoRoot walks up from the working directory to the directory of go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}
