package artifacts

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

const (
	// kustomizationFile makes artifacts/deploy a kustomize base.
	kustomizationFile = "kustomization.yaml"
	// caBundlePatchFile is the patch hack/render-apiservice.sh --kustomize
	// prints; the base applies it to both APIServices.
	caBundlePatchFile = "apiservice-cabundle.json"
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
	Patches    []struct {
		Path   string `json:"path"`
		Target struct {
			Group   string `json:"group"`
			Version string `json:"version"`
			Kind    string `json:"kind"`
		} `json:"target"`
	} `json:"patches"`
}

// TestKustomization checks that the kustomize base lists every manifest of
// artifacts/deploy, so that `kubectl apply -k` installs what the README's
// step-by-step installation installs, and patches the APIServices' caBundle.
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
	if len(k.Patches) != 1 || k.Patches[0].Path != caBundlePatchFile ||
		k.Patches[0].Target.Group != apiServiceGVK.Group || k.Patches[0].Target.Kind != apiServiceGVK.Kind {
		t.Errorf("patches of %s = %+v, want only %s on every APIService", kustomizationFile, k.Patches, caBundlePatchFile)
	}
}

// kubectlPath is the kubectl that `make e2e-bins` builds (or $KUBECTL).
func kubectlPath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("KUBECTL")
	if path == "" {
		var err error
		if path, err = filepath.Abs(filepath.Join(repoRoot, "_output", "bin", "kubectl")); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := os.Stat(path); err != nil {
		// make test builds it (e2e-bins) before the unit tier.
		if os.Getenv("CI") == "true" {
			t.Fatalf("no kubectl at %s: %v", path, err)
		}
		t.Skipf("no kubectl at %s to run `kubectl kustomize` (make e2e-bins builds it; make test does): %v", path, err)
	}
	return path
}

// TestKustomizeBuild builds the base with `kubectl kustomize` and the
// caBundle patch rendered by hack/render-apiservice.sh --kustomize from a CA
// of hack/gen-certs.sh: it holds every object of the manifests, unchanged but
// for the APIServices' caBundle, which is the CA. Without the patch the
// build fails rather than install the placeholder.
func TestKustomizeBuild(t *testing.T) {
	t.Parallel()
	requireTools(t)
	kubectl := kubectlPath(t)

	base := t.TempDir()
	src := filepath.Join(repoRoot, "artifacts", "deploy")
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		// A patch rendered in the work tree for a real cluster is not ours.
		if e.IsDir() || e.Name() == caBundlePatchFile {
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

	build := func() ([]byte, string, error) {
		cmd := exec.CommandContext(t.Context(), kubectl, "kustomize", base)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		return out, stderr.String(), err
	}
	if _, _, err := build(); err == nil {
		t.Errorf("kubectl kustomize without %s succeeded; it must fail rather than install the placeholder", caBundlePatchFile)
	}

	certs := filepath.Join(t.TempDir(), "certs")
	runScript(t, nil, "gen-certs.sh", certs)
	ca, err := os.ReadFile(filepath.Join(certs, "ca.crt"))
	if err != nil {
		t.Fatal(err)
	}
	patch := runScript(t, nil, "render-apiservice.sh", "--kustomize", certs)
	if err := os.WriteFile(filepath.Join(base, caBundlePatchFile), patch, 0o600); err != nil {
		t.Fatal(err)
	}
	out, stderr, err := build()
	if err != nil {
		t.Fatalf("kubectl kustomize: %v\n%s", err, stderr)
	}
	if bytes.Contains(out, []byte(caPlaceholder)) {
		t.Errorf("the build still holds %s", caPlaceholder)
	}
	builtPath := filepath.Join(t.TempDir(), "built.yaml")
	if err := os.WriteFile(builtPath, out, 0o600); err != nil {
		t.Fatal(err)
	}
	docs, err := decodeFile(builtPath, "kubectl kustomize output")
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
		if want.obj == nil { // APIService: only the caBundle changes.
			bundle, _, _ := unstructured.NestedString(got.u.Object, "spec", "caBundle")
			if decoded, err := base64.StdEncoding.DecodeString(bundle); err != nil || string(decoded) != string(ca) {
				t.Errorf("%s: caBundle is not the base64 of the CA (%v)", key, err)
			}
			gotU := got.u.DeepCopy()
			if err := unstructured.SetNestedField(gotU.Object, caPlaceholder, "spec", "caBundle"); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.u.Object, gotU.Object); diff != "" {
				t.Errorf("%s changed by the build beyond caBundle (-manifest +build):\n%s", key, diff)
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
