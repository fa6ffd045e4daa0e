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
	"bufio"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd/etcdtest"
)

// listeningTCPPorts returns the local ports of the TCP sockets in LISTEN
// state that this process holds (other test processes open and close
// their own listeners meanwhile).
func listeningTCPPorts(t *testing.T) []string {
	t.Helper()
	ours := map[string]bool{}
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatalf("reading /proc/self/fd: %v", err)
	}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", fd.Name()))
		if err == nil && strings.HasPrefix(target, "socket:[") {
			ours[strings.TrimSuffix(strings.TrimPrefix(target, "socket:["), "]")] = true
		}
	}
	var ports []string
	for _, file := range []string{"/proc/net/tcp", "/proc/net/tcp6"} {
		f, err := os.Open(file)
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			t.Fatalf("reading %s: %v", file, err)
		}
		s := bufio.NewScanner(f)
		s.Scan() // header
		for s.Scan() {
			fields := strings.Fields(s.Text())
			// local_address is fields[1] (hex ip:port), st is fields[3] (0A
			// is LISTEN), inode is fields[9].
			if len(fields) > 9 && fields[3] == "0A" && ours[fields[9]] {
				ports = append(ports, fields[1][strings.LastIndex(fields[1], ":")+1:])
			}
		}
		f.Close()
	}
	slices.Sort(ports)
	return ports
}

// Defect 1 of issue 9: the default member listened on plain HTTP loopback
// ports, client and peer, which any local user could reach. It must serve
// only a unix socket in its 0700 data directory, and have no peer listener.
func TestDefaultMemberIsPrivate(t *testing.T) {
	before := listeningTCPPorts(t)
	cfg := etcdtest.TestConfig(t)
	cfg.DataDir = filepath.Join(cfg.DataDir, "etcd")
	// Whatever the umask, nothing is for others.
	old := syscall.Umask(0)
	t.Cleanup(func() { syscall.Umask(old) })
	s, err := embeddedetcd.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	put(t, s.Endpoints(), "/registry/k", "v")

	socket := filepath.Join(cfg.DataDir, "etcd.sock")
	if diff := cmp.Diff([]string{"unix://" + socket}, s.Endpoints()); diff != "" {
		t.Errorf("Endpoints() mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(before, listeningTCPPorts(t)); diff != "" {
		t.Errorf("TCP listeners opened by the member (-before +after):\n%s", diff)
	}
	var open []string
	err = filepath.WalkDir(cfg.DataDir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		if info.Mode().Perm()&0o077 != 0 {
			open = append(open, fmt.Sprintf("%s %v", strings.TrimPrefix(path, cfg.DataDir), info.Mode()))
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walking the data dir: %v", err)
	}
	if diff := cmp.Diff([]string(nil), open); diff != "" {
		t.Errorf("files in the data dir that others may access (-want +got):\n%s", diff)
	}
}

// Another local user can neither connect to the socket nor read the data.
// Needs root to act as that user; CI runs as root.
func TestOtherUserCannotReachMember(t *testing.T) {
	if os.Getenv("EMBEDDEDETCD_PROBE") != "" {
		probeAsOtherUser()
		return
	}
	if os.Geteuid() != 0 {
		t.Skip("acting as another user needs root")
	}
	cfg := etcdtest.TestConfig(t)
	// A data dir someone made open to all, as an earlier release left it:
	// Start closes it.
	if err := os.Chmod(cfg.DataDir, 0o755); err != nil {
		t.Fatalf("chmod %s: %v", cfg.DataDir, err)
	}
	s, err := embeddedetcd.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	t.Cleanup(func() { s.Close() })
	// The temporary directories above the data dir are 0700 too; open them
	// so that only the data dir's own mode stands in the way.
	for dir := filepath.Dir(cfg.DataDir); dir != "/" && dir != os.TempDir(); dir = filepath.Dir(dir) {
		if err := os.Chmod(dir, 0o755); err != nil {
			t.Fatalf("chmod %s: %v", dir, err)
		}
	}

	// The test binary lives in the go command's private build directory;
	// the other user runs a copy.
	binDir, err := os.MkdirTemp("", "embeddedetcd-probe-")
	if err != nil {
		t.Fatalf("creating a directory for the probe: %v", err)
	}
	t.Cleanup(func() { os.RemoveAll(binDir) })
	self, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatalf("reading the test binary: %v", err)
	}
	probe := filepath.Join(binDir, "probe")
	if err := os.WriteFile(probe, self, 0o755); err != nil {
		t.Fatalf("writing the probe: %v", err)
	}
	if err := os.Chmod(binDir, 0o755); err != nil {
		t.Fatalf("chmod %s: %v", binDir, err)
	}

	cmd := exec.Command(probe, "-test.run=^TestOtherUserCannotReachMember$")
	cmd.Env = append(os.Environ(),
		"EMBEDDEDETCD_PROBE="+strings.TrimPrefix(s.Endpoints()[0], "unix://"),
		"EMBEDDEDETCD_PROBE_DIR="+cfg.DataDir)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("probe as uid 65534: %v\n%s", err, out)
	}
	want := "dial: permission denied\nreaddir: permission denied\n"
	if got := string(out[:strings.LastIndex(string(out), "\n")+1]); !strings.HasPrefix(got, want) {
		t.Errorf("probe as uid 65534 printed:\n%s\nwant it to start with:\n%s", got, want)
	}
}

// probeAsOtherUser runs in the child process of TestOtherUserCannotReachMember.
func probeAsOtherUser() {
	if c, err := net.Dial("unix", os.Getenv("EMBEDDEDETCD_PROBE")); err != nil {
		fmt.Println("dial:", errorText(err))
	} else {
		c.Close()
		fmt.Println("dial: connected")
	}
	if _, err := os.ReadDir(os.Getenv("EMBEDDEDETCD_PROBE_DIR")); err != nil {
		fmt.Println("readdir:", errorText(err))
	} else {
		fmt.Println("readdir: listed")
	}
}

func errorText(err error) string {
	if errorsIsPermission(err) {
		return "permission denied"
	}
	return err.Error()
}

func errorsIsPermission(err error) bool {
	var errno syscall.Errno
	for e := err; e != nil; {
		if en, ok := e.(syscall.Errno); ok {
			errno = en
			break
		}
		u, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		e = u.Unwrap()
	}
	return errno == syscall.EACCES || errno == syscall.EPERM
}

// A data dir whose socket path would exceed the kernel's limit gets its
// socket in a private temporary directory, removed on Close.
func TestLongDataDirGetsPrivateSocketDir(t *testing.T) {
	cfg := etcdtest.TestConfig(t)
	cfg.DataDir = filepath.Join(cfg.DataDir, strings.Repeat("d", 60), strings.Repeat("e", 60))
	s, err := embeddedetcd.Start(t.Context(), cfg)
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	put(t, s.Endpoints(), "k", "v")
	socket := strings.TrimPrefix(s.Endpoints()[0], "unix://")
	info, err := os.Stat(filepath.Dir(socket))
	if err != nil {
		t.Fatalf("stat socket dir: %v", err)
	}
	if info.Mode().Perm() != 0o700 {
		t.Errorf("socket dir mode = %v, want 0700", info.Mode().Perm())
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if _, err := os.Stat(filepath.Dir(socket)); !os.IsNotExist(err) {
		t.Errorf("socket dir after Close: %v, want it removed", err)
	}
}
