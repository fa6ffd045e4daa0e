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

package artifacts

import (
	"bytes"
	"encoding/json"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const (
	// kustomizationFile makes artifacts/deploy a kustomize base.
	kustomizationFile = "kustomization.yaml"
	// deploymentImage is the image deployment.yaml names: the base version
	// of hack/version.sh (TestDeploymentImageIsTheBaseVersion).
	deploymentImage = "batch-apiserver:v0.1.0"
)

// kustomization is the part of a kustomization.yaml this base uses; decoding
// fails on any other field.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

// TestKustomization checks that the kustomize base lists every manifest of
// artifacts/deploy and nothing else (no patch, no generated Secret): `kubectl
// apply -k` is the whole install.
func TestKustomization(t *testing.T) {
	dir := filepath.Join(repoRoot, "artifacts", "deploy")
	raw, err := os.ReadFile(filepath.Join(dir, kustomizationFile))
	if err != nil {
		t.Fatal(err)
	}
	js, err := utilyaml.ToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	var k kustomization
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&k); err != nil {
		t.Fatalf("%s: %v", kustomizationFile, err)
	}

	manifests, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range manifests {
		if name := filepath.Base(m); name != kustomizationFile {
			want = append(want, name)
		}
	}
	if diff := cmp.Diff(want, slices.Sorted(slices.Values(k.Resources))); diff != "" {
		t.Errorf("resources of %s (-manifests in artifacts/deploy +listed):\n%s", kustomizationFile, diff)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("%s is a %s %s", kustomizationFile, k.APIVersion, k.Kind)
	}
}

// TestKustomizeBuild builds the base from a copy of artifacts/deploy as
// `kubectl apply -k` does: with kustomize's library at the version kubectl
// v1.37 embeds (sigs.k8s.io/kustomize/api, required by k8s.io/kubectl) and
// kustomize's default options, which are kubectl's. The base builds with
// nothing rendered or generated first, and holds every object of the
// manifests unchanged, the APIServices without caBundle (the server writes
// it). The unit tier so needs no kubectl binary.
func TestKustomizeBuild(t *testing.T) {
	t.Parallel()

	base := t.TempDir()
	src := filepath.Join(repoRoot, "artifacts", "deploy")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		// Only what git tracks: the manifests and the kustomization.
		if e.IsDir() || filepath.Ext(e.Name()) != ".yaml" {
			continue
		}
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(base, e.Name()), data, 0o600); err != nil {
			t.Fatal(err)
		}
	}

	resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), base)
	if err != nil {
		t.Fatalf("kustomize build: %v", err)
	}
	out, err := resources.AsYaml()
	if err != nil {
		t.Fatalf("kustomize build output: %v", err)
	}
	builtPath := filepath.Join(t.TempDir(), "built.yaml")
	if err := os.WriteFile(builtPath, out, 0o600); err != nil {
		t.Fatal(err)
	}
	docs, err := decodeFile(builtPath, "kustomize build output")
	if err != nil {
		t.Fatal(err)
	}
	built := index(t, docs)
	files := deployObjects(t)

	if diff := cmp.Diff(slices.Sorted(maps.Keys(files)), slices.Sorted(maps.Keys(built))); diff != "" {
		t.Errorf("objects (-manifests +kustomize build):\n%s", diff)
	}
	for key, want := range files {
		got, ok := built[key]
		if !ok {
			continue
		}
		if want.obj == nil { // APIService
			if _, found, _ := unstructured.NestedFieldNoCopy(got.u.Object, "spec", "caBundle"); found {
				t.Errorf("%s: the build sets caBundle", key)
			}
			if diff := cmp.Diff(want.u.Object, got.u.Object); diff != "" {
				t.Errorf("%s changed by the build (-manifest +build):\n%s", key, diff)
			}
			continue
		}
		if !equality.Semantic.DeepEqual(want.obj, got.obj) {
			t.Errorf("%s changed by the build (-manifest +build):\n%s", key, cmp.Diff(want.u.Object, got.u.Object))
		}
	}
}

// TestDeploymentImageIsTheBaseVersion checks that the Deployment names the
// image `make image` builds from the tag of hack/version.sh's base version.
func TestDeploymentImageIsTheBaseVersion(t *testing.T) {
	requireTools(t)
	base := strings.TrimSpace(string(runScript(t, nil, "version.sh", "--base-version")))
	if want := "batch-apiserver:" + base; deploymentImage != want {
		t.Errorf("deployment.yaml names %s, but make image tags the base version %s", deploymentImage, want)
	}
}
