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
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/batch-apiserver/batch-apiserver/pkg/conformance/managedby"
	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// TestManagedByConformance runs the managedBy conformance kit against the
// server, without the reconcile probes (no controller runs in this tier):
// every other cell is y, each probe saw what a conforming server answers,
// and the kit leaves no Job behind. The server serves no namespaces, so the
// kit only picks a fresh namespace name and has none to delete.
func TestManagedByConformance(t *testing.T) {
	ts := framework.StartServer(t)
	ctx := testContext(t)
	cfg := rest.CopyConfig(ts.ClientConfig)
	cfg.QPS = -1
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("building the dynamic client: %v", err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatalf("building the discovery client: %v", err)
	}

	for _, resource := range []string{"jobs.v1.batch.jobs.dev", "jobs.v1beta1.batch.jobs.dev"} {
		t.Run(resource, func(t *testing.T) {
			row, err := managedby.Run(ctx, managedby.Config{Dynamic: dyn, Discovery: disc, Resource: resource})
			if err != nil {
				t.Fatalf("running the kit: %v", err)
			}
			want := managedby.Row{
				Resource: resource,
				Cells: managedby.Cells{
					OpenSet:         managedby.Yes,
					MaxLength63:     managedby.Yes,
					Format:          managedby.Yes,
					Immutable:       managedby.Yes,
					ImmutableStatus: managedby.Yes,
					ValidatesStatus: managedby.Yes,
					SkipsReconcile:  managedby.NotMeasured,
				},
				Evidence: wantConformanceEvidence(),
			}
			t.Logf("row:\n%s%s", managedby.MarkdownHeader(), row.Markdown())
			// The details quote the server's messages and the stored values;
			// the results are what this test pins.
			if diff := cmp.Diff(want, row, cmpopts.IgnoreFields(managedby.Evidence{}, "Detail")); diff != "" {
				t.Errorf("row (-want +got):\n%s", diff)
			}

			list, err := ts.Client.BatchV1().Jobs(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatalf("listing jobs: %v", err)
			}
			var left []string
			for _, job := range list.Items {
				left = append(left, job.Namespace+"/"+job.Name)
			}
			if diff := cmp.Diff([]string(nil), left); diff != "" {
				t.Errorf("jobs left behind (-want +got):\n%s", diff)
			}
		})
	}
}

// wantConformanceEvidence is what each probe sees on a server that serves
// the Job API as kube-apiserver 1.37 does.
func wantConformanceEvidence() map[string][]managedby.Evidence {
	ev := func(probe, result, expect string) managedby.Evidence {
		return managedby.Evidence{Probe: probe, Result: result, Expect: expect}
	}
	const (
		accepted = managedby.Accepted
		refused  = managedby.Refused
	)
	return map[string][]managedby.Evidence{
		managedby.CellOpenSet: {
			ev("unknown value example.com/conformance", accepted, accepted),
			ev("reserved value kubernetes.io/job-controller", accepted, ""),
			ev("created without the field", managedby.NotDefaulted, ""),
		},
		managedby.CellMaxLength63: {
			ev("63 characters", accepted, accepted),
			ev("64 characters", refused, refused),
		},
		managedby.CellFormat: {
			ev(`no domain prefix "foo"`, refused, refused),
			ev(`upper case "Example.com/Foo"`, refused, refused),
			ev(`empty path "example.com/"`, refused, refused),
			ev(`empty string ""`, refused, refused),
			ev(`several path segments "example.com/a/b"`, accepted, ""),
		},
		managedby.CellImmutable: {
			ev("update (PUT)", refused, refused),
			ev("JSON merge patch", refused, refused),
			ev("JSON patch", refused, refused),
			ev("strategic merge patch", refused, refused),
			ev("server-side apply", refused, refused),
			ev("set on an object created without it (update)", refused, refused),
		},
		managedby.CellImmutableStatus: {
			ev("status subresource update (PUT /status)", managedby.Ignored, managedby.RefusedOrIgnored),
		},
		managedby.CellValidatesStatus: {
			ev("succeeded decreases (2 to 1)", refused, refused),
			ev("Complete=True removed", refused, refused),
			ev("completionTime before startTime", refused, refused),
			ev("Complete and Failed together", refused, refused),
			ev("Failed without FailureTarget", refused, refused),
			ev("Complete without SuccessCriteriaMet", refused, refused),
		},
		managedby.CellSkipsReconcile: {
			ev("reconcile", managedby.NotMeasured, ""),
		},
	}
}
