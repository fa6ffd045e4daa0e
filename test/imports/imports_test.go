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

// Package imports guards the main module's dependency on k8s.io/kubernetes:
// only the core pod-template packages DESIGN.md lists may be imported.
package imports

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const kubernetes = "k8s.io/kubernetes"

// allowed are the k8s.io/kubernetes packages the main module's code may
// import: the pod template's validation, defaults, warnings, dropped fields
// and the feature gates they read (openshift-apiserver's route for pod
// templates), and the capabilities switch --allow-privileged sets. What
// they import in turn is theirs to choose.
var allowed = map[string]bool{
	"k8s.io/kubernetes/pkg/apis/core":            true,
	"k8s.io/kubernetes/pkg/apis/core/v1":         true,
	"k8s.io/kubernetes/pkg/apis/core/validation": true,
	"k8s.io/kubernetes/pkg/api/pod":              true,
	"k8s.io/kubernetes/pkg/features":             true,
	// The process-wide switch core validation reads for privileged
	// containers, set from --allow-privileged as kube-apiserver sets it.
	"k8s.io/kubernetes/pkg/capabilities": true,
}

// allowedInTests are the upstream packages test files may import on top of
// those: the Job API and strategy the differential tests compare ours with.
var allowedInTests = map[string]bool{
	"k8s.io/kubernetes/pkg/apis/batch":            true,
	"k8s.io/kubernetes/pkg/apis/batch/v1":         true,
	"k8s.io/kubernetes/pkg/apis/batch/validation": true,
	"k8s.io/kubernetes/pkg/registry/batch/job":    true,
}

// pkgImports is one package of the main module and its direct imports.
type pkgImports struct {
	path        string
	imports     []string
	testImports []string // of _test.go files, both in-package and external
}

// listPackages lists the main module's own packages (hack/tools is a module
// of its own and is not included) with their direct imports.
func listPackages(t *testing.T) []pkgImports {
	t.Helper()
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	// -e: a package someone is editing may not compile right now; its
	// imports are still listed.
	cmd := exec.Command("go", "list", "-e", "-f",
		`{{.ImportPath}}|{{join .Imports " "}}|{{join .TestImports " "}} {{join .XTestImports " "}}`, "./...")
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, stderr.String())
	}
	var pkgs []pkgImports
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.SplitN(line, "|", 3)
		if len(parts) != 3 {
			t.Fatalf("unexpected go list line %q", line)
		}
		pkgs = append(pkgs, pkgImports{path: parts[0], imports: strings.Fields(parts[1]), testImports: strings.Fields(parts[2])})
	}
	return pkgs
}

func isKubernetes(path string) bool {
	return path == kubernetes || strings.HasPrefix(path, kubernetes+"/")
}

// TestKubernetesImports fails on any direct import of k8s.io/kubernetes
// outside the allowed packages: in non-test code, the pod template packages
// only; in test files, also the upstream Job API the differential tests use.
func TestKubernetesImports(t *testing.T) {
	var forbidden []string
	used := map[string]bool{}
	pkgs := listPackages(t)
	for _, p := range pkgs {
		for _, imp := range p.imports {
			if !isKubernetes(imp) {
				continue
			}
			used[imp] = true
			if !allowed[imp] {
				forbidden = append(forbidden, p.path+" imports "+imp)
			}
		}
		for _, imp := range p.testImports {
			if isKubernetes(imp) && !allowed[imp] && !allowedInTests[imp] {
				forbidden = append(forbidden, p.path+" (tests) imports "+imp)
			}
		}
	}
	sort.Strings(forbidden)
	if diff := cmp.Diff([]string(nil), forbidden); diff != "" {
		t.Errorf("k8s.io/kubernetes imports outside the allowed list (-want,+got):\n%s", diff)
	}
	// The guard must see the packages it guards; an empty listing would
	// pass whatever the code imports.
	if len(pkgs) < 10 || !used["k8s.io/kubernetes/pkg/apis/core/validation"] {
		t.Errorf("go list saw %d packages and no import of core validation; the guard is not looking at the module", len(pkgs))
	}
}
