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

// Package upgrade runs the previous version of batch-apiserver (the commit
// hack/upgrade-from pins, built from this repository's history) and this
// one on the same data, in both directions: a standalone data directory,
// and a rolling replacement of two aggregated replicas on a three-member
// etcd while clients write and Jobs run.
package upgrade

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// EnvUpgradeFromBin is the previous version's batch-apiserver binary (make
// test-upgrade sets it from hack/build-upgrade-from.sh). When it is unset
// the test runs that script itself.
const EnvUpgradeFromBin = "UPGRADE_FROM_BIN"

// versions are the two builds under test.
type versions struct {
	// Old is the previous version's binary, New this tree's.
	Old, New string
	// OldName and NewName are what each one's --version prints.
	OldName, NewName string
}

var (
	bins *framework.Binaries
	vers versions
)

func TestMain(m *testing.M) {
	// The rolling test runs etcd members as copies of this binary.
	if ran, code := framework.RunEtcdMemberIfAsked(); ran {
		os.Exit(code)
	}
	os.Exit(testMain(m))
}

func testMain(m *testing.M) int {
	dir, err := os.MkdirTemp("", "batch-apiserver-upgrade-bins-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "upgrade: %v\n", err)
		return 1
	}
	defer os.RemoveAll(dir)
	if bins, err = framework.FindBinaries(dir); err != nil {
		fmt.Fprintf(os.Stderr, "upgrade: %v\n", err)
		return 1
	}
	vers.New = bins.BatchAPIServer
	if vers.Old, err = oldBinary(bins.RepoRoot); err != nil {
		fmt.Fprintf(os.Stderr, "upgrade: %v\n", err)
		return 1
	}
	for _, v := range []struct {
		bin  string
		name *string
	}{{vers.Old, &vers.OldName}, {vers.New, &vers.NewName}} {
		out, err := exec.Command(v.bin, "--version").Output()
		if err != nil {
			fmt.Fprintf(os.Stderr, "upgrade: %s --version: %v\n", v.bin, err)
			return 1
		}
		// "batch-apiserver v0.1.0": the git version is the last word.
		fields := strings.Fields(string(out))
		if len(fields) == 0 {
			fmt.Fprintf(os.Stderr, "upgrade: %s --version printed nothing\n", v.bin)
			return 1
		}
		*v.name = fields[len(fields)-1]
	}
	fmt.Fprintf(os.Stderr, "upgrade: from %q (%s) to %q (%s)\n", vers.OldName, vers.Old, vers.NewName, vers.New)
	return m.Run()
}

// oldBinary returns $UPGRADE_FROM_BIN, or builds the pinned commit with
// hack/build-upgrade-from.sh, which prints the binary's path last.
func oldBinary(root string) (string, error) {
	if bin := os.Getenv(EnvUpgradeFromBin); bin != "" {
		if _, err := os.Stat(bin); err != nil {
			return "", fmt.Errorf("%s=%s: %w (build it with hack/build-upgrade-from.sh)", EnvUpgradeFromBin, bin, err)
		}
		return bin, nil
	}
	cmd := exec.Command("bash", filepath.Join(root, "hack", "build-upgrade-from.sh"))
	cmd.Dir = root
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("building the previous version (hack/build-upgrade-from.sh): %w", err)
	}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	return lines[len(lines)-1], nil
}
