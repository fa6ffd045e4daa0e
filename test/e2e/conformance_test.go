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
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/batch-apiserver/batch-apiserver/pkg/conformance/managedby"
)

// conformanceDir holds the expected rows, the templates and the CRD of the
// resource without validation.
const conformanceDir = "testdata/conformance"

// conformanceTimeout bounds one target: installing its CRD and the kit's
// probes, of which the reconcile probes watch for managedby.DefaultReconcileWait.
const conformanceTimeout = 3 * time.Minute

// releasedCRD is a CRD file inside a released Go module, which the test
// fetches through the module cache (and the module proxy on a cold cache).
type releasedCRD struct {
	module, version, file string
}

// conformanceTarget is one row of the table.
type conformanceTarget struct {
	// name names the subtest and the expected row, <name>.json.
	name     string
	resource string
	field    string
	reserved string
	// template is a file under conformanceDir; the kit's built-in Job
	// template when empty.
	template string
	// crd is installed before the run and removed after it: a file under
	// conformanceDir, or one of a released module.
	crd      string
	released *releasedCRD
	// reconcile is set when a controller of the resource runs in the host
	// cluster; ourController when that controller is batch-apiserver's.
	reconcile, ourController bool
}

var conformanceTargets = []conformanceTarget{
	{
		name:          "batch-apiserver",
		resource:      "jobs.v1.batch.jobs.dev",
		reconcile:     true,
		ourController: true,
	},
	{
		name:      "kube-apiserver",
		resource:  "jobs.v1.batch",
		reconcile: true,
	},
	{
		name:     "noval",
		resource: "novaljobs.v1.noval.conformance.test",
		template: "noval.yaml",
		crd:      "noval-crd.yaml",
	},
	{
		name:     "kuberay-rayjob",
		resource: "rayjobs.v1.ray.io",
		field:    "spec.managedBy",
		reserved: "ray.io/kuberay-operator",
		template: "rayjob.yaml",
		released: &releasedCRD{
			module:  "github.com/ray-project/kuberay/ray-operator",
			version: "v1.5.0",
			file:    "config/crd/bases/ray.io_rayjobs.yaml",
		},
	},
	{
		name:     "kubeflow-trainjob",
		resource: "trainjobs.v1alpha1.trainer.kubeflow.org",
		field:    "spec.managedBy",
		reserved: "trainer.kubeflow.org/trainjob-controller",
		template: "trainjob.yaml",
		released: &releasedCRD{
			module:  "github.com/kubeflow/trainer/v2",
			version: "v2.0.0",
			file:    "manifests/base/crds/trainer.kubeflow.org_trainjobs.yaml",
		},
	},
}

// TestManagedByConformance runs the managedBy conformance kit against our
// Jobs through the aggregator, kube-apiserver's Jobs, a Job-shaped custom
// resource without validation, and the released CRDs of KubeRay's RayJob and
// Kubeflow Trainer's TrainJob, and compares each row's cells with the
// expected row in testdata/conformance.
func TestManagedByConformance(t *testing.T) {
	for _, target := range conformanceTargets {
		t.Run(target.name, func(t *testing.T) {
			t.Parallel()
			want := readExpectedCells(t, target.name)
			ctx, cancel := context.WithTimeout(context.Background(), conformanceTimeout)
			defer cancel()

			switch {
			case target.crd != "":
				installCRD(t, filepath.Join(conformanceDir, target.crd), target.resource)
			case target.released != nil:
				installCRD(t, target.released.path(ctx, t), target.resource)
			}
			if target.ourController {
				skipWithoutOurController(t)
			}

			cfg := managedby.Config{
				Resource:  target.resource,
				Field:     target.field,
				Reserved:  target.reserved,
				Reconcile: target.reconcile,
			}
			if target.template != "" {
				cfg.Template = readTemplate(t, filepath.Join(conformanceDir, target.template))
			}
			cfg.Dynamic, cfg.Discovery = conformanceClients(t)

			row, err := managedby.Run(ctx, cfg)
			if err != nil {
				t.Errorf("the kit could not measure %s: %v", target.resource, err)
			}
			evidence, _ := json.MarshalIndent(row.Evidence, "", "  ")
			t.Logf("%s%sevidence: %s", managedby.MarkdownHeader(), row.Markdown(), evidence)
			if diff := cmp.Diff(want, row.Cells); diff != "" {
				t.Errorf("cells of %s (-want +got):\n%s", target.resource, diff)
			}
		})
	}
}

// readExpectedCells reads testdata/conformance/<name>.json, which holds the
// expected row's cells and nothing else.
func readExpectedCells(t *testing.T, name string) managedby.Cells {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(conformanceDir, name+".json"))
	if err != nil {
		t.Fatalf("reading the expected row: %v", err)
	}
	var want struct {
		Cells managedby.Cells `json:"cells"`
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&want); err != nil {
		t.Fatalf("decoding the expected row %s.json: %v", name, err)
	}
	return want.Cells
}

// readTemplate reads a YAML object; whole numbers stay int64, as
// unstructured objects hold them.
func readTemplate(t *testing.T, path string) *unstructured.Unstructured {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading the template: %v", err)
	}
	data, err = utilyaml.ToJSON(data)
	if err != nil {
		t.Fatalf("converting the template %s to JSON: %v", path, err)
	}
	obj := &unstructured.Unstructured{}
	if err := utiljson.Unmarshal(data, &obj.Object); err != nil {
		t.Fatalf("decoding the template %s: %v", path, err)
	}
	return obj
}

// conformanceClients are the admin user's dynamic and discovery clients of
// kube-apiserver, with room for the kit's bursts of requests.
func conformanceClients(t *testing.T) (dynamic.Interface, discovery.DiscoveryInterface) {
	t.Helper()
	cfg := rest.CopyConfig(cluster.Admin)
	cfg.QPS, cfg.Burst = 50, 100
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("building the dynamic client: %v", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatalf("building the discovery client: %v", err)
	}
	return dyn, disc
}

// path returns the CRD file in the module's directory, downloading the
// module when the cache lacks it. It runs outside any module, so that our
// go.mod and go.work play no part.
func (r *releasedCRD) path(ctx context.Context, t *testing.T) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, "go", "mod", "download", "-json", r.module+"@"+r.version)
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		var stderr []byte
		if exit, ok := err.(*exec.ExitError); ok {
			stderr = exit.Stderr
		}
		t.Fatalf("go mod download %s@%s: %v\n%s%s", r.module, r.version, err, out, stderr)
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal(out, &mod); err != nil {
		t.Fatalf("decoding go mod download's answer %s: %v", out, err)
	}
	if mod.Error != "" || mod.Dir == "" {
		t.Fatalf("go mod download %s@%s: no directory (%s)", r.module, r.version, mod.Error)
	}
	return filepath.Join(mod.Dir, r.file)
}

// installCRD applies the CRD in file, waits until it is Established and its
// resource is discoverable, and deletes it when the test ends.
func installCRD(t *testing.T, file, resource string) {
	t.Helper()
	k := cluster.Kubectl()
	name := strings.TrimSpace(k.MustRun(t, "apply", "--server-side", "-f", file, "-o", "name"))
	t.Cleanup(func() {
		res, err := k.Run("delete", "--ignore-not-found", "--timeout=60s", name)
		if err != nil || res.ExitCode != 0 {
			t.Errorf("deleting %s: %v %s", name, err, res.Combined())
		}
	})
	// Not kubectl wait: right after the apply the CRD may have no
	// conditions yet, which kubectl wait reports as an error.
	eventually(t, time.Minute, name+" Established", func() (bool, string) {
		res, err := k.Run("get", name, "-o", `jsonpath={.status.conditions[?(@.type=="Established")].status}`)
		if err != nil {
			return false, err.Error()
		}
		return res.ExitCode == 0 && strings.TrimSpace(res.Stdout) == "True", res.Combined()
	})
	// Established says the resource is served; the kit finds it through
	// discovery, which may follow a moment later.
	gvr, _ := schema.ParseResourceArg(resource)
	_, disc := conformanceClients(t)
	eventually(t, time.Minute, resource+" in discovery", func() (bool, string) {
		list, err := disc.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
		if err != nil {
			return false, err.Error()
		}
		for _, r := range list.APIResources {
			if r.Name == gvr.Resource {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%s serves %d resources, not %s", gvr.GroupVersion(), len(list.APIResources), gvr.Resource)
	})
}
