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
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// gangJobYAML is a batch/v1 Job with the given spec.scheduling lines
// (indented under scheduling:) and parallelism.
func gangJobYAML(name, parallelism string, scheduling ...string) string {
	lines := []string{"parallelism: " + parallelism, "scheduling:"}
	for _, l := range scheduling {
		lines = append(lines, "  "+l)
	}
	return upstream(jobYAML(name, nil, lines...))
}

// TestSchedulingAPIParity sends the same spec.scheduling requests to
// kube-apiserver's batch/v1 and to ours, on a host of its own where both
// serve the field (WorkloadWithJob on): valid gang and basic Jobs come back
// alike, invalid ones are refused with the same messages, and a created
// gang Job takes the same changes (gang.minCount within parallelism) and
// refuses the same others.
func TestSchedulingAPIParity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	host, err := framework.StartClusterWith(ctx, bins, filepath.Join(t.TempDir(), "host"), framework.ClusterOptions{
		KubeAPIServerArgs:  []string{workloadGates},
		BatchAPIServerArgs: []string{workloadGates},
	})
	if err != nil {
		if host != nil {
			host.DumpLogs(os.Stderr, 40)
		}
		t.Fatal(err)
	}
	t.Cleanup(host.Stop)
	const ns = "scheduling-api"
	host.Kubectl().MustRun(t, "create", "namespace", ns)
	p := parityPair{k: host.Kubectl().In(ns)}

	t.Run("valid on create", func(t *testing.T) {
		for name, manifest := range map[string]string{
			"gang": gangJobYAML("gang", "3",
				"schedulingPolicy: {gang: {minCount: 2}}",
				"disruptionMode: {all: {}}",
				"schedulingConstraints: {topology: [{key: topology.kubernetes.io/zone}]}",
				"resourceClaims: [{name: gpus, resourceClaimTemplateName: gpus}]"),
			"gang without minCount": gangJobYAML("gang-default", "3", "schedulingPolicy: {gang: {}}"),
			"basic":                 gangJobYAML("basic", "2", "schedulingPolicy: {basic: {}}", "disruptionMode: {single: {}}"),
		} {
			t.Run(name, func(t *testing.T) {
				res := p.both(t, manifest, "create", "--dry-run=server", "-o", "json", "-f", "-")
				for i, r := range res {
					if r.ExitCode != 0 {
						t.Fatalf("%s: %s", servers[i].name, r.Combined())
					}
				}
				up, ours := objectFields(t, res[0].Stdout), objectFields(t, res[1].Stdout)
				if up["spec"].(map[string]any)["scheduling"] == nil {
					t.Fatalf("kube-apiserver dropped spec.scheduling: is WorkloadWithJob on? %s", res[0].Stdout)
				}
				if diff := cmp.Diff(up, ours); diff != "" {
					t.Errorf("spec and status differ (-kube-apiserver +batch-apiserver):\n%s", diff)
				}
				if diff := cmp.Diff(warnings(res[0].Stderr), warnings(res[1].Stderr)); diff != "" {
					t.Errorf("warnings differ (-kube-apiserver +batch-apiserver):\n%s", diff)
				}
			})
		}
	})

	t.Run("invalid on create", func(t *testing.T) {
		for name, manifest := range map[string]string{
			"minCount above parallelism": gangJobYAML("bad", "2", "schedulingPolicy: {gang: {minCount: 3}}"),
			"minCount 0":                 gangJobYAML("bad", "2", "schedulingPolicy: {gang: {minCount: 0}}"),
			"basic and gang":             gangJobYAML("bad", "2", "schedulingPolicy: {basic: {}, gang: {}}"),
			"all with basic":             gangJobYAML("bad", "2", "disruptionMode: {all: {}}"),
			"two topology keys":          gangJobYAML("bad", "2", "schedulingConstraints: {topology: [{key: a}, {key: b}]}"),
			"claims": gangJobYAML("bad", "2", "resourceClaims: [{name: a, resourceClaimName: a}, {name: a, resourceClaimName: b},"+
				" {name: c}, {name: D, resourceClaimName: d}, {name: e, resourceClaimName: e}]"),
		} {
			t.Run(name, func(t *testing.T) {
				res := p.both(t, manifest, "create", "--dry-run=server", "-f", "-")
				if res[0].ExitCode == 0 || res[1].ExitCode == 0 {
					t.Fatalf("accepted:\nkube-apiserver: %s\nbatch-apiserver: %s", res[0].Combined(), res[1].Combined())
				}
				if diff := cmp.Diff(normalize(res[0].Stderr), normalize(res[1].Stderr)); diff != "" {
					t.Errorf("errors differ (-kube-apiserver +batch-apiserver):\n%s", diff)
				}
			})
		}
	})

	t.Run("changes after creation", func(t *testing.T) {
		p.both(t, gangJobYAML("running", "3", "schedulingPolicy: {gang: {minCount: 2}}"), "create", "-f", "-")
		steps := []struct {
			name, patch string
			accepted    bool
		}{
			{"minCount raised to parallelism", `{"spec":{"scheduling":{"schedulingPolicy":{"gang":{"minCount":3}}}}}`, true},
			{"minCount above parallelism", `{"spec":{"scheduling":{"schedulingPolicy":{"gang":{"minCount":4}}}}}`, false},
			{"parallelism below minCount", `{"spec":{"parallelism":2}}`, false},
			{"gang to basic", `{"spec":{"scheduling":{"schedulingPolicy":{"gang":null,"basic":{}}}}}`, false},
			{"disruption mode added", `{"spec":{"scheduling":{"disruptionMode":{"single":{}}}}}`, false},
			{"policy removed", `{"spec":{"scheduling":{"schedulingPolicy":null}}}`, false},
			{"scheduling removed", `{"spec":{"scheduling":null}}`, false},
			{"parallelism and minCount lowered together", `{"spec":{"parallelism":1,"scheduling":{"schedulingPolicy":{"gang":{"minCount":1}}}}}`, true},
		}
		for _, s := range steps {
			t.Run(s.name, func(t *testing.T) {
				res := p.both(t, "", "patch", "{resource}", "running", "--type=merge", "-p", s.patch, "-o", "json")
				for i, r := range res {
					if (r.ExitCode == 0) != s.accepted {
						t.Fatalf("%s: accepted %v, want %v: %s", servers[i].name, r.ExitCode == 0, s.accepted, r.Combined())
					}
				}
				if s.accepted {
					if diff := cmp.Diff(objectFields(t, res[0].Stdout)["spec"], objectFields(t, res[1].Stdout)["spec"]); diff != "" {
						t.Errorf("spec differs (-kube-apiserver +batch-apiserver):\n%s", diff)
					}
					return
				}
				if diff := cmp.Diff(normalize(res[0].Stderr), normalize(res[1].Stderr)); diff != "" {
					t.Errorf("errors differ (-kube-apiserver +batch-apiserver):\n%s", diff)
				}
				if !strings.Contains(res[0].Stderr, "spec.") {
					t.Errorf("kube-apiserver's refusal names no field: %s", res[0].Stderr)
				}
			})
		}
	})
}
