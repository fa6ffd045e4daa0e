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
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/snapshot"
)

// run runs `snapshot args...` and returns what it printed.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := snapshot.NewCommand(&out)
	cmd.SetArgs(args)
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(t.Context())
	return out.String(), err
}

// The commands save and restore as their functions do, print one summary
// line each, and pass the functions' errors through unchanged.
func TestCommands(t *testing.T) {
	dir := t.TempDir()
	m := startMember(t, filepath.Join(dir, "data"))
	m.put(t, "/registry/a", "a")
	file := filepath.Join(dir, "backup.db")

	out, err := run(t, "save", file, "--data-dir", m.dataDir)
	if err != nil {
		t.Fatalf("save: %v", err)
	}
	if !regexp.MustCompile(`^Saved snapshot \S+backup\.db: .*, revision 2, 1 key, `).MatchString(out) {
		t.Errorf("save printed %q", out)
	}
	m.stop()

	if _, err := run(t, "save", file, "--data-dir", m.dataDir); !errors.Is(err, snapshot.ErrServerNotRunning) {
		t.Errorf("save of a stopped server: %v, want %v", err, snapshot.ErrServerNotRunning)
	}
	if _, err := run(t, "restore", file); err == nil {
		t.Errorf("restore without --data-dir succeeded")
	}
	if _, err := os.Stat(filepath.Join(dir, "data-restored")); !os.IsNotExist(err) {
		t.Errorf("restore without --data-dir left %v", err)
	}

	restored := filepath.Join(dir, "data-restored")
	out, err = run(t, "restore", file, "--data-dir", restored, "--bump-revision", "100", "--certs-from", "")
	if err != nil {
		t.Fatalf("restore: %v", err)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 2 || !strings.Contains(lines[0], "revision 2 -> 102 (compacted), new certificates at the first start") {
		t.Errorf("restore printed %q", out)
	}
	if diff := cmp.Diff("Start the server with --data-dir "+restored, lines[len(lines)-1]); diff != "" {
		t.Errorf("restore's last line (-want +got):\n%s", diff)
	}
	if _, err := run(t, "restore", file, "--data-dir", restored); !errors.Is(err, snapshot.ErrDataDirNotEmpty) {
		t.Errorf("a second restore into the same directory: %v, want %v", err, snapshot.ErrDataDirNotEmpty)
	}
}
