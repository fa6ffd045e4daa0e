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

package upgrade

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// standaloneNamespace holds the standalone data set.
const standaloneNamespace = "upgrade"

// TestStandaloneUpgradeAndRollback writes the data set with the previous
// version, starts this version on the same data directory and reads every
// Job back equal; this version then writes (the data set again, and an
// update of every old Job), and the previous version, started again on
// what it wrote, reads all of it back equal and can still update it.
func TestStandaloneUpgradeAndRollback(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	root := t.TempDir()
	dataDir := filepath.Join(root, "data")
	step := 0
	// start runs bin on the data directory, each start with a log
	// directory of its own.
	start := func(bin, name string) (*framework.Standalone, versioned.Interface) {
		t.Helper()
		step++
		logDir := filepath.Join(root, "logs", name)
		if err := os.MkdirAll(logDir, 0o700); err != nil {
			t.Fatal(err)
		}
		// Each start writes a kubeconfig for its own port, and
		// StartStandalone waits for that one.
		if err := os.Remove(filepath.Join(dataDir, "kubeconfig")); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		s, err := framework.StartStandalone(ctx, bin, dataDir, logDir)
		if err != nil {
			t.Fatalf("step %d, starting %s: %v", step, name, err)
		}
		t.Cleanup(s.Stop)
		cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := versioned.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		wantVersion(ctx, t, cs, name, map[string]string{"old": vers.OldName, "new": vers.NewName, "old-again": vers.OldName}[name])
		return s, cs
	}
	read := func(cs versioned.Interface) served {
		t.Helper()
		s, err := readServed(ctx, cs, standaloneNamespace)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}

	old, cs := start(vers.Old, "old")
	writeDataSet(ctx, t, cs, standaloneNamespace, "old-")
	wroteOld := read(cs)
	old.Stop()

	upgraded, cs := start(vers.New, "new")
	if diff := diffServed(wroteOld, read(cs)); diff != "" {
		t.Errorf("upgrade: this version serves the previous version's Jobs differently (-previous +this):\n%s", diff)
	}
	writeDataSet(ctx, t, cs, standaloneNamespace, "new-")
	touchAll(ctx, t, cs, "old-", "upgraded")
	wroteNew := read(cs)
	upgraded.Stop()

	_, cs = start(vers.Old, "old-again")
	if diff := diffServed(wroteNew, read(cs)); diff != "" {
		t.Errorf("rollback: the previous version serves what this version wrote differently (-this +previous):\n%s", diff)
	}
	// Rolled back, the previous version still updates what this one wrote.
	touchAll(ctx, t, cs, "new-", "rolled-back")
	t.Logf("standalone: %d Jobs (v1 and v1beta1 views) written by %s, read back equal by %s; %d written by %s, read back equal and updated by %s",
		len(wroteOld.V1), vers.OldName, vers.NewName, len(wroteNew.V1), vers.NewName, vers.OldName)
}

// touchAll labels every Job whose name starts with prefix, through the
// spec endpoint, so that the server writes each one again.
func touchAll(ctx context.Context, t *testing.T, cs versioned.Interface, prefix, label string) {
	t.Helper()
	list, err := cs.BatchV1().Jobs(standaloneNamespace).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": map[string]string{"upgrade.batch.jobs.dev/" + label: "true"}}})
	if err != nil {
		t.Fatal(err)
	}
	touched := 0
	for _, j := range list.Items {
		if len(j.Name) < len(prefix) || j.Name[:len(prefix)] != prefix {
			continue
		}
		if _, err := cs.BatchV1().Jobs(standaloneNamespace).Patch(ctx, j.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Errorf("labelling Job %s %s: %v", j.Name, label, err)
		}
		touched++
	}
	if touched == 0 {
		t.Errorf("no Job named %s* to label", prefix)
	}
}

// wantVersion checks that the server answering cs is the build the step
// means to run.
func wantVersion(ctx context.Context, t *testing.T, cs versioned.Interface, step, want string) {
	t.Helper()
	info, err := cs.Discovery().ServerVersion()
	if err != nil {
		t.Fatalf("%s: /version: %v", step, err)
	}
	if got := info.GitVersion; got != want {
		t.Fatalf("%s: the server is %q, want %q", step, got, want)
	}
	_ = ctx
}
