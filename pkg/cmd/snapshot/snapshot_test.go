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

package snapshot_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/snapshot"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd/etcdtest"
)

// member is an embedded etcd running on <dataDir>/etcd, where the
// standalone server runs its own: what snapshot save finds of a running
// server.
type member struct {
	dataDir string
	server  *embeddedetcd.Server
	client  *clientv3.Client
}

func startMember(t *testing.T, dataDir string) *member {
	t.Helper()
	cfg := etcdtest.TestConfig(t)
	cfg.DataDir = filepath.Join(dataDir, "etcd")
	s, err := embeddedetcd.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("starting etcd in %s: %v", dataDir, err)
	}
	c, err := clientv3.New(clientv3.Config{Endpoints: s.Endpoints(), Logger: zap.NewNop()})
	if err != nil {
		_ = s.Close()
		t.Fatalf("etcd client: %v", err)
	}
	m := &member{dataDir: dataDir, server: s, client: c}
	t.Cleanup(m.stop)
	return m
}

func (m *member) stop() {
	_ = m.client.Close()
	_ = m.server.Close()
}

// put writes key=value and returns the revision of the write.
func (m *member) put(t *testing.T, key, value string) int64 {
	t.Helper()
	resp, err := m.client.Put(t.Context(), key, value)
	if err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
	return resp.Header.Revision
}

// values returns every key under prefix with its value.
func (m *member) values(t *testing.T, prefix string) map[string]string {
	t.Helper()
	resp, err := m.client.Get(t.Context(), prefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("get %s: %v", prefix, err)
	}
	got := map[string]string{}
	for _, kv := range resp.Kvs {
		got[string(kv.Key)] = string(kv.Value)
	}
	return got
}

// tree is every path under dir with its mode and the SHA-256 of its
// content, to show that a failed command changed nothing.
func tree(t *testing.T, dir string) map[string]string {
	t.Helper()
	got := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		switch {
		case d.Type().IsRegular():
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			got[rel] = fmt.Sprintf("%v %x", info.Mode(), sha256.Sum256(data))
		case d.Type()&fs.ModeSocket != 0, d.Name() == "embedded-etcd.lock":
			// A running member's socket and lock file.
			got[rel] = info.Mode().Type().String()
		case d.IsDir() && strings.HasPrefix(rel, filepath.Join("running", "etcd")+string(filepath.Separator)):
			// A running member writes its own files meanwhile.
			return fs.SkipDir
		default:
			got[rel] = info.Mode().String()
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking %s: %v", dir, err)
	}
	return got
}

// saved starts a member with the given keys, saves a snapshot of it and
// stops it; it returns the snapshot file and the keys.
func saved(t *testing.T, n int) (file string, want map[string]string, rev int64) {
	t.Helper()
	dir := t.TempDir()
	m := startMember(t, filepath.Join(dir, "data"))
	want = map[string]string{}
	for i := range n {
		key := fmt.Sprintf("/registry/batch.jobs.dev/jobs/default/job-%d", i)
		want[key] = fmt.Sprintf("value %d", i)
		rev = m.put(t, key, want[key])
	}
	file = filepath.Join(dir, "backup.db")
	res, err := snapshot.Save(t.Context(), snapshot.SaveOptions{DataDir: m.dataDir, File: file})
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	if res.Revision != rev || res.Keys != n {
		t.Fatalf("Save: revision %d, %d keys; want revision %d, %d keys", res.Revision, res.Keys, rev, n)
	}
	m.stop()
	return file, want, rev
}

// Save of a running member writes a whole, verified snapshot at the
// member's revision, and nothing else in the target directory; a second
// save replaces the first.
func TestSave(t *testing.T) {
	dir := t.TempDir()
	m := startMember(t, filepath.Join(dir, "data"))
	rev := m.put(t, "/registry/a", "a")
	out := filepath.Join(dir, "out")
	if err := os.Mkdir(out, 0o700); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(out, "backup.db")
	// A relative --data-dir, as on a command line.
	t.Chdir(dir)
	first, err := snapshot.Save(t.Context(), snapshot.SaveOptions{DataDir: "data", File: file})
	if err != nil {
		t.Fatalf("Save: %v", err)
	}
	info, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		File           string
		Size, Revision int64
		Keys           int
	}
	if diff := cmp.Diff(result{file, info.Size(), rev, 1}, result{first.File, first.Size, first.Revision, first.Keys}); diff != "" {
		t.Errorf("Save (-want +got):\n%s", diff)
	}
	if got, err := snapshot.Verify(file); err != nil || got != first.Status {
		t.Errorf("Verify = %+v, %v; want %+v", got, err, first.Status)
	}

	rev = m.put(t, "/registry/b", "b")
	second, err := snapshot.Save(t.Context(), snapshot.SaveOptions{DataDir: "data", File: file})
	if err != nil {
		t.Fatalf("second Save: %v", err)
	}
	if second.Revision != rev || second.Keys != 2 {
		t.Errorf("second Save: revision %d, %d keys; want %d, 2", second.Revision, second.Keys, rev)
	}
	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if diff := cmp.Diff([]string{"backup.db"}, names); diff != "" {
		t.Errorf("files beside the snapshot (-want +got):\n%s", diff)
	}
}

// A save that cannot be made leaves no file, and an earlier snapshot of
// the same name as it was.
func TestSaveErrors(t *testing.T) {
	running := startMember(t, filepath.Join(t.TempDir(), "data"))
	running.put(t, "/registry/a", "a")
	stopped := filepath.Join(t.TempDir(), "data")
	startMember(t, stopped).stop()
	canceled, cancel := context.WithCancel(context.Background())
	cancel()

	for _, tc := range []struct {
		name    string
		ctx     context.Context
		dataDir string
		// file is relative to the test's directory.
		file    string
		wantErr error
	}{
		{name: "server stopped", dataDir: stopped, file: "backup.db", wantErr: snapshot.ErrServerNotRunning},
		{name: "no data dir", dataDir: filepath.Join(t.TempDir(), "none"), file: "backup.db", wantErr: snapshot.ErrServerNotRunning},
		{name: "target directory missing", dataDir: running.dataDir, file: "missing/backup.db", wantErr: fs.ErrNotExist},
		{name: "canceled", ctx: canceled, dataDir: running.dataDir, file: "backup.db", wantErr: context.Canceled},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			earlier := []byte("an earlier snapshot")
			if err := os.WriteFile(filepath.Join(dir, "backup.db"), earlier, 0o600); err != nil {
				t.Fatal(err)
			}
			before := tree(t, dir)
			ctx := tc.ctx
			if ctx == nil {
				ctx = t.Context()
			}
			_, err := snapshot.Save(ctx, snapshot.SaveOptions{DataDir: tc.dataDir, File: filepath.Join(dir, tc.file)})
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("Save error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(before, tree(t, dir)); diff != "" {
				t.Errorf("Save changed the target directory (-before +after):\n%s", diff)
			}
		})
	}
}

// Verify refuses every damaged or foreign file as corrupt, and a missing
// one as missing.
func TestVerifyErrors(t *testing.T) {
	file, _, _ := saved(t, 3)
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	// A file of the right form whose digest matches, but that is no
	// database: only bbolt's own check can refuse it.
	garbage := bytes.Repeat([]byte{0xa5}, 8192)
	digest := sha256.Sum256(garbage)
	garbage = append(garbage, digest[:]...)
	flipped := bytes.Clone(good)
	flipped[len(flipped)/2] ^= 0xff

	dir := t.TempDir()
	for _, tc := range []struct {
		name    string
		content []byte
		// dir makes the path a directory instead of a file.
		dir     bool
		missing bool
		wantErr error
	}{
		{name: "missing", missing: true, wantErr: fs.ErrNotExist},
		{name: "directory", dir: true, wantErr: snapshot.ErrCorruptSnapshot},
		{name: "empty", content: nil, wantErr: snapshot.ErrCorruptSnapshot},
		{name: "truncated", content: good[:len(good)-100], wantErr: snapshot.ErrCorruptSnapshot},
		{name: "cut at a page, digest gone", content: good[:len(good)-sha256.Size], wantErr: snapshot.ErrCorruptSnapshot},
		{name: "one byte changed", content: flipped, wantErr: snapshot.ErrCorruptSnapshot},
		{name: "digest of something else", content: append(bytes.Clone(good[:len(good)-sha256.Size]), digest[:]...), wantErr: snapshot.ErrCorruptSnapshot},
		{name: "not a database", content: garbage, wantErr: snapshot.ErrCorruptSnapshot},
		{name: "text", content: []byte("apiVersion: v1\nkind: List\n"), wantErr: snapshot.ErrCorruptSnapshot},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-"))
			switch {
			case tc.missing:
			case tc.dir:
				if err := os.Mkdir(path, 0o700); err != nil {
					t.Fatal(err)
				}
			default:
				if err := os.WriteFile(path, tc.content, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := snapshot.Verify(path); !errors.Is(err, tc.wantErr) {
				t.Errorf("Verify error = %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// Restore refuses bad input before it writes anything: the directory that
// holds the snapshot and the data dirs is the same afterwards, byte for
// byte.
func TestRestoreErrors(t *testing.T) {
	file, _, _ := saved(t, 2)
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		name string
		// setup prepares dir and returns the options, relative to dir.
		setup func(t *testing.T, dir string) snapshot.RestoreOptions
		// noBump leaves RevisionBump 0 instead of the default.
		noBump  bool
		wantErr error
	}{
		{
			name: "snapshot missing",
			setup: func(t *testing.T, dir string) snapshot.RestoreOptions {
				return snapshot.RestoreOptions{File: "none.db", DataDir: "new"}
			},
			wantErr: fs.ErrNotExist,
		},
		{
			name: "snapshot truncated",
			setup: func(t *testing.T, dir string) snapshot.RestoreOptions {
				writeFile(t, filepath.Join(dir, "cut.db"), good[:len(good)/2])
				return snapshot.RestoreOptions{File: "cut.db", DataDir: "new"}
			},
			wantErr: snapshot.ErrCorruptSnapshot,
		},
		{
			name: "snapshot hash mismatch",
			setup: func(t *testing.T, dir string) snapshot.RestoreOptions {
				bad := bytes.Clone(good)
				bad[100] ^= 1
				writeFile(t, filepath.Join(dir, "bad.db"), bad)
				return snapshot.RestoreOptions{File: "bad.db", DataDir: "new"}
			},
			wantErr: snapshot.ErrCorruptSnapshot,
		},
		{
			name: "data dir of a running server",
			setup: func(t *testing.T, dir string) snapshot.RestoreOptions {
				startMember(t, filepath.Join(dir, "running"))
				return snapshot.RestoreOptions{File: "backup.db", DataDir: "running"}
			},
			wantErr: embeddedetcd.ErrDataDirInUse,
		},
		{
			name: "data dir of a stopped server",
			setup: func(t *testing.T, dir string) snapshot.RestoreOptions {
				startMember(t, filepath.Join(dir, "old")).stop()
				return snapshot.RestoreOptions{File: "backup.db", DataDir: "old"}
			},
			wantErr: snapshot.ErrDataDirNotEmpty,
		},
		{
			name: "data dir with a file in it",
			setup: func(t *testing.T, dir string) snapshot.RestoreOptions {
				writeFile(t, filepath.Join(dir, "used", "notes.txt"), []byte("mine"))
				return snapshot.RestoreOptions{File: "backup.db", DataDir: "used"}
			},
			wantErr: snapshot.ErrDataDirNotEmpty,
		},
		{
			name: "data dir is a file",
			setup: func(t *testing.T, dir string) snapshot.RestoreOptions {
				writeFile(t, filepath.Join(dir, "afile"), []byte("mine"))
				return snapshot.RestoreOptions{File: "backup.db", DataDir: "afile"}
			},
			wantErr: snapshot.ErrDataDirNotEmpty,
		},
		{
			name: "certs-from without certificates",
			setup: func(t *testing.T, dir string) snapshot.RestoreOptions {
				writeFile(t, filepath.Join(dir, "old", "pki", "ca.crt"), []byte("only the CA certificate"))
				return snapshot.RestoreOptions{File: "backup.db", DataDir: "new", CertsFrom: "old"}
			},
			wantErr: snapshot.ErrNotADataDir,
		},
		{
			name: "no revision bump",
			setup: func(t *testing.T, dir string) snapshot.RestoreOptions {
				return snapshot.RestoreOptions{File: "backup.db", DataDir: "new"}
			},
			noBump:  true,
			wantErr: snapshot.ErrInvalidOptions,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeFile(t, filepath.Join(dir, "backup.db"), good)
			opts := tc.setup(t, dir)
			t.Chdir(dir)
			if !tc.noBump {
				opts.RevisionBump = snapshot.DefaultRevisionBump
			}
			before := tree(t, dir)
			_, err := snapshot.Restore(opts)
			if !errors.Is(err, tc.wantErr) {
				t.Errorf("Restore error = %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(before, tree(t, dir)); diff != "" {
				t.Errorf("Restore changed the directory (-before +after):\n%s", diff)
			}
		})
	}
}

func writeFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// A restored data dir starts with every key of the snapshot, a revision
// moved forward by the bump, the old revisions compacted (a read or a
// watch from one fails as compacted), and the certificates of --certs-from
// when given.
func TestRestore(t *testing.T) {
	file, want, rev := saved(t, 5)
	const bump = 1000
	for _, tc := range []struct {
		name      string
		certsFrom bool
		// empty makes the target an existing empty directory.
		empty bool
	}{
		{name: "new directory"},
		{name: "empty directory", empty: true},
		{name: "certificates copied", certsFrom: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			target := filepath.Join(dir, "parent", "restored")
			if tc.empty {
				if err := os.MkdirAll(target, 0o700); err != nil {
					t.Fatal(err)
				}
			}
			opts := snapshot.RestoreOptions{File: file, DataDir: target, RevisionBump: bump}
			wantPKI := map[string]string{}
			if tc.certsFrom {
				old := filepath.Join(dir, "old")
				for _, name := range []string{"ca.crt", "ca.key", "serving-ca.crt", "serving-ca.key", "serving.crt", "serving.key"} {
					writeFile(t, filepath.Join(old, "pki", name), []byte("content of "+name))
					if strings.HasSuffix(name, ".crt") {
						if err := os.Chmod(filepath.Join(old, "pki", name), 0o644); err != nil {
							t.Fatal(err)
						}
					}
				}
				wantPKI = tree(t, filepath.Join(old, "pki"))
				opts.CertsFrom = old
			}
			res, err := snapshot.Restore(opts)
			if err != nil {
				t.Fatalf("Restore: %v", err)
			}
			type result struct {
				DataDir     string
				Revision    int64
				CertsCopied bool
			}
			if diff := cmp.Diff(result{target, rev + bump, tc.certsFrom}, result{res.DataDir, res.Revision, res.CertsCopied}); diff != "" {
				t.Errorf("Restore (-want +got):\n%s", diff)
			}
			entries, err := os.ReadDir(filepath.Dir(target))
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 1 {
				t.Errorf("%s holds %d entries, want only the data dir (no staging directory left)", filepath.Dir(target), len(entries))
			}
			gotPKI := map[string]string{}
			if _, err := os.Stat(filepath.Join(target, "pki")); err == nil {
				gotPKI = tree(t, filepath.Join(target, "pki"))
			}
			if diff := cmp.Diff(wantPKI, gotPKI); diff != "" {
				t.Errorf("certificates in the restored data dir (-want +got):\n%s", diff)
			}

			m := startMember(t, target)
			if diff := cmp.Diff(want, m.values(t, "/registry/")); diff != "" {
				t.Errorf("restored keys (-want +got):\n%s", diff)
			}
			resp, err := m.client.Get(t.Context(), "/registry/none")
			if err != nil {
				t.Fatal(err)
			}
			if resp.Header.Revision != rev+bump {
				t.Errorf("restored revision %d, want %d", resp.Header.Revision, rev+bump)
			}
			if _, err := m.client.Get(t.Context(), "/registry/", clientv3.WithPrefix(), clientv3.WithRev(rev)); !errors.Is(err, rpctypes.ErrCompacted) {
				t.Errorf("read at the snapshot's revision %d: %v, want %v", rev, err, rpctypes.ErrCompacted)
			}
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			w := <-m.client.Watch(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithRev(rev))
			if w.CompactRevision != rev+bump {
				t.Errorf("watch from revision %d: compact revision %d (err %v), want %d", rev, w.CompactRevision, w.Err(), rev+bump)
			}
			if next := m.put(t, "/registry/new", "x"); next != rev+bump+1 {
				t.Errorf("first write after the restore at revision %d, want %d", next, rev+bump+1)
			}
		})
	}
}
