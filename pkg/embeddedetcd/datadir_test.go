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

package embeddedetcd_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd/etcdtest"
)

// dirEntries lists the names under dir, recursively, to show that a probe
// changed nothing.
func dirEntries(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		names = append(names, rel)
		return err
	})
	if err != nil && !os.IsNotExist(err) {
		t.Fatalf("walking %s: %v", dir, err)
	}
	return names
}

// InUse sees a member of this process (a lock of another open file is
// refused as another process's would be), and creates nothing when it
// probes a directory that holds no member.
func TestInUse(t *testing.T) {
	cfg := etcdtest.TestConfig(t)
	empty := t.TempDir()
	for name, dir := range map[string]string{"empty": empty, "missing": filepath.Join(empty, "missing")} {
		before := dirEntries(t, dir)
		inUse, err := embeddedetcd.InUse(dir)
		if err != nil || inUse {
			t.Errorf("%s: InUse = %v, %v; want false, nil", name, inUse, err)
		}
		if diff := cmp.Diff(before, dirEntries(t, dir)); diff != "" {
			t.Errorf("%s: InUse changed the directory (-before +after):\n%s", name, diff)
		}
	}

	s, err := embeddedetcd.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	if inUse, err := embeddedetcd.InUse(cfg.DataDir); err != nil || !inUse {
		t.Errorf("running member: InUse = %v, %v; want true, nil", inUse, err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if inUse, err := embeddedetcd.InUse(cfg.DataDir); err != nil || inUse {
		t.Errorf("stopped member: InUse = %v, %v; want false, nil", inUse, err)
	}
}

// ClientSocket finds the socket of a running member from its data dir
// alone, also when the socket lives in a private directory because the
// data dir's path is too long.
func TestClientSocket(t *testing.T) {
	for name, sub := range map[string]string{
		"short": "",
		"long":  filepath.Join(strings.Repeat("d", 60), strings.Repeat("e", 60)),
	} {
		t.Run(name, func(t *testing.T) {
			cfg := etcdtest.TestConfig(t)
			cfg.DataDir = filepath.Join(cfg.DataDir, sub)
			s, err := embeddedetcd.Start(t.Context(), cfg)
			if err != nil {
				t.Fatalf("Start: %v", err)
			}
			defer s.Close()
			socket, err := embeddedetcd.ClientSocket(cfg.DataDir)
			if err != nil {
				t.Fatalf("ClientSocket: %v", err)
			}
			if diff := cmp.Diff(s.Endpoints(), []string{"unix://" + socket}); diff != "" {
				t.Errorf("ClientSocket (-endpoints +socket):\n%s", diff)
			}
			put(t, []string{"unix://" + socket}, "k", "v")
		})
	}
}

// The bootstrap a restore writes is the member Start makes: the name and
// peer URL etcd keeps in the data dir.
func TestLoneMemberBootstrap(t *testing.T) {
	got := embeddedetcd.LoneMemberBootstrap()
	want := embeddedetcd.Bootstrap{
		Name:                "batch-apiserver",
		PeerURLs:            []string{"http://localhost:2380"},
		InitialCluster:      "batch-apiserver=http://localhost:2380",
		InitialClusterToken: "etcd-cluster",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("LoneMemberBootstrap (-want +got):\n%s", diff)
	}
}
