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

package framework

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// kubectlTimeout bounds one kubectl command; kubectl's own request timeout
// is shorter so that a hung server is reported by kubectl itself.
const kubectlTimeout = 90 * time.Second

// Kubectl runs the kubectl binary with one kubeconfig.
type Kubectl struct {
	Bin        string
	Kubeconfig string
	// Namespace, when set, is passed as --namespace.
	Namespace string
}

// In returns the same kubectl working in namespace ns.
func (k Kubectl) In(ns string) Kubectl {
	k.Namespace = ns
	return k
}

func (k Kubectl) globalArgs() []string {
	args := []string{"--kubeconfig", k.Kubeconfig}
	if k.Namespace != "" {
		args = append(args, "--namespace", k.Namespace)
	}
	return args
}

func (k Kubectl) args(args []string) []string {
	return append(append(k.globalArgs(), "--request-timeout=60s"), args...)
}

// Run runs kubectl to completion. A non-zero exit code is in the result.
func (k Kubectl) Run(args ...string) (Result, error) {
	return run(kubectlTimeout, nil, k.Bin, k.args(args)...)
}

// RunStdin runs kubectl with stdin.
func (k Kubectl) RunStdin(stdin string, args ...string) (Result, error) {
	return run(kubectlTimeout, strings.NewReader(stdin), k.Bin, k.args(args)...)
}

// MustRun runs kubectl and fails the test unless it exits 0; it returns stdout.
func (k Kubectl) MustRun(t testing.TB, args ...string) string {
	t.Helper()
	return k.MustRunStdin(t, "", args...)
}

// MustRunStdin is MustRun with stdin.
func (k Kubectl) MustRunStdin(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	res, err := k.RunStdin(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	if res.ExitCode != 0 {
		t.Fatalf("kubectl %s: %s", strings.Join(args, " "), res.Combined())
	}
	return res.Stdout
}

// MustFail runs kubectl, fails the test unless it exits non-zero, and
// returns the result.
func (k Kubectl) MustFail(t testing.TB, args ...string) Result {
	t.Helper()
	return k.MustFailStdin(t, "", args...)
}

// MustFailStdin is MustFail with stdin.
func (k Kubectl) MustFailStdin(t testing.TB, stdin string, args ...string) Result {
	t.Helper()
	res, err := k.RunStdin(stdin, args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v", strings.Join(args, " "), err)
	}
	if res.ExitCode == 0 {
		t.Fatalf("kubectl %s succeeded, want a failure: %s", strings.Join(args, " "), res.Combined())
	}
	return res
}

// Stream is a kubectl command running in the background (get --watch)
// whose stdout is read line by line.
type Stream struct {
	cmd    *exec.Cmd
	lines  chan string
	stderr strings.Builder
	mu     sync.Mutex
	seen   []string
	done   chan struct{}
}

// Start starts kubectl in the background; it is killed after timeout or
// when Stop is called, whichever comes first.
func (k Kubectl) Start(timeout time.Duration, args ...string) (*Stream, error) {
	cmd := exec.Command(k.Bin, append(k.globalArgs(), args...)...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	s := &Stream{cmd: cmd, lines: make(chan string, 100), done: make(chan struct{})}
	cmd.Stderr = &lockedWriter{mu: &s.mu, w: &s.stderr}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kubectl: %w", err)
	}
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			s.lines <- sc.Text()
		}
		close(s.lines)
	}()
	go func() {
		select {
		case <-time.After(timeout):
			_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		case <-s.done:
		}
	}()
	return s, nil
}

// WaitForLine waits until a line of output satisfies match and returns it.
func (s *Stream) WaitForLine(ctx context.Context, match func(string) bool) (string, error) {
	for {
		select {
		case line, ok := <-s.lines:
			if !ok {
				return "", fmt.Errorf("kubectl ended before the expected line; output:\n%s\nstderr:\n%s", s.Output(), s.Stderr())
			}
			s.mu.Lock()
			s.seen = append(s.seen, line)
			s.mu.Unlock()
			if match(line) {
				return line, nil
			}
		case <-ctx.Done():
			return "", fmt.Errorf("no expected line before %v; output:\n%s\nstderr:\n%s", ctx.Err(), s.Output(), s.Stderr())
		}
	}
}

// Output returns the lines read so far.
func (s *Stream) Output() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return strings.Join(s.seen, "\n")
}

// Stderr returns what kubectl wrote to stderr so far.
func (s *Stream) Stderr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.stderr.String()
}

// Stop kills kubectl and waits for it.
func (s *Stream) Stop() {
	select {
	case <-s.done:
		return
	default:
	}
	close(s.done)
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	// Drain so that the reader goroutine ends and Wait can return.
	go func() {
		for range s.lines {
		}
	}()
	_ = s.cmd.Wait()
}

type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
