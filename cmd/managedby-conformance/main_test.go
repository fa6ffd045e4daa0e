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

package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/batch-apiserver/batch-apiserver/pkg/conformance/managedby"
)

func TestLoadTemplate(t *testing.T) {
	cases := []struct {
		name    string
		content string
		want    *unstructured.Unstructured
	}{
		{
			name: "yaml",
			content: `apiVersion: example.com/v1
kind: Widget
spec:
  size: 3
`,
			want: &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.com/v1",
				"kind":       "Widget",
				"spec":       map[string]any{"size": int64(3)},
			}},
		},
		{
			name:    "json",
			content: `{"apiVersion": "example.com/v1", "kind": "Widget"}`,
			want: &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "example.com/v1",
				"kind":       "Widget",
			}},
		},
		{name: "empty", content: ""},
		{name: "not an object", content: "- a\n- b\n"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "template.yaml")
			if err := os.WriteFile(path, []byte(tc.content), 0o600); err != nil {
				t.Fatal(err)
			}
			got, err := loadTemplate(path)
			if (err != nil) != (tc.want == nil) {
				t.Fatalf("loadTemplate error %v, want an error: %t", err, tc.want == nil)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("template (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteRow(t *testing.T) {
	row := managedby.Row{
		Resource: "jobs.v1.batch",
		Cells: managedby.Cells{
			OpenSet: "y", MaxLength63: "y", Format: "y", Immutable: "n",
			ImmutableStatus: "y", ValidatesStatus: "y", SkipsReconcile: "not measured",
		},
		Evidence: map[string][]managedby.Evidence{
			"immutable": {{Probe: "update (PUT)", Result: "accepted", Detail: "write taken", Expect: "refused"}},
		},
	}
	cases := []struct {
		format string
		want   string
	}{
		{"markdown", "| resource | openSet | maxLength63 | format | immutable | immutableStatus | validatesStatus | skipsReconcile |\n" +
			"|---|---|---|---|---|---|---|---|\n" +
			"| jobs.v1.batch | y | y | y | n | y | y | not measured |\n"},
		{"json", `{
  "resource": "jobs.v1.batch",
  "cells": {
    "openSet": "y",
    "maxLength63": "y",
    "format": "y",
    "immutable": "n",
    "immutableStatus": "y",
    "validatesStatus": "y",
    "skipsReconcile": "not measured"
  },
  "evidence": {
    "immutable": [
      {
        "probe": "update (PUT)",
        "result": "accepted",
        "detail": "write taken",
        "expect": "refused"
      }
    ]
  }
}
`},
	}
	for _, tc := range cases {
		t.Run(tc.format, func(t *testing.T) {
			var out bytes.Buffer
			if err := writeRow(&out, tc.format, row); err != nil {
				t.Fatalf("writeRow: %v", err)
			}
			if diff := cmp.Diff(tc.want, out.String()); diff != "" {
				t.Errorf("output (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCommandRefusesUnknownOutput checks that a bad -o stops the command
// before it loads a kubeconfig or reaches a cluster.
func TestCommandRefusesUnknownOutput(t *testing.T) {
	var out bytes.Buffer
	cmd := newCommand(&out)
	cmd.SetArgs([]string{"--resource", "jobs.v1.batch", "-o", "yaml", "--kubeconfig", filepath.Join(t.TempDir(), "missing")})
	err := cmd.Execute()
	if err == nil {
		t.Fatalf("the command accepted -o yaml")
	}
	if diff := cmp.Diff("", out.String()); diff != "" {
		t.Errorf("output (-want +got):\n%s", diff)
	}
}
