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
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// stopGracePeriod is how long a process gets between SIGTERM and SIGKILL.
const stopGracePeriod = 10 * time.Second

// Process is a child process of the test, alone in its own process group,
// with its output in a log file.
type Process struct {
	Name    string
	LogFile string

	cmd  *exec.Cmd
	log  *os.File
	done chan struct{}
	err  error
}

// StartProcess starts bin with args in a new process group, stdout and
// stderr appended to <logDir>/<name>.log. The kernel kills it with SIGKILL
// if the test process dies first (a panic, a -timeout, a signal), so a
// crashed test run leaves nothing behind.
func StartProcess(logDir, name, bin string, args ...string) (*Process, error) {
	return StartProcessEnv(logDir, name, bin, nil, args...)
}

// StartProcessEnv is StartProcess with extra environment variables
// ("KEY=value") on top of the test's own environment.
func StartProcessEnv(logDir, name, bin string, env []string, args ...string) (*Process, error) {
	logFile := filepath.Join(logDir, name+".log")
	f, err := os.OpenFile(logFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening log of %s: %w", name, err)
	}
	fmt.Fprintf(f, "+ %s %s\n", bin, strings.Join(args, " "))
	cmd := exec.Command(bin, args...)
	if len(env) > 0 {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout = f
	cmd.Stderr = f
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	p := &Process{Name: name, LogFile: logFile, cmd: cmd, log: f, done: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	return p, nil
}

// PID is the process id, which is also its process group id.
func (p *Process) PID() int { return p.cmd.Process.Pid }

// Exited returns an error when the process has exited, nil while it runs.
func (p *Process) Exited() error {
	select {
	case <-p.done:
		return fmt.Errorf("%s (pid %d) exited: %v; log %s:\n%s", p.Name, p.PID(), p.err, p.LogFile, Tail(p.LogFile, 40))
	default:
		return nil
	}
}

// Stop sends SIGTERM to the process group, then SIGKILL after a grace
// period, and waits for the process to exit. It is safe to call twice.
func (p *Process) Stop() {
	pgid := p.PID()
	select {
	case <-p.done:
		// The leader is gone; make sure nothing it started survives.
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		return
	default:
	}
	_ = syscall.Kill(-pgid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(stopGracePeriod):
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-p.done
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// Kill sends SIGKILL to the process group, as a crash or an evicted node
// would end it (no graceful shutdown, no lease release), and waits for the
// process to exit.
func (p *Process) Kill() {
	_ = syscall.Kill(-p.PID(), syscall.SIGKILL)
	<-p.done
}

// clockTicksPerSecond is USER_HZ, the unit of the times in /proc/<pid>/stat;
// the kernel reports them in 1/100 s on every architecture Linux exports
// to user space, whatever CONFIG_HZ is.
const clockTicksPerSecond = 100

// CPUSeconds returns the user plus system CPU time the process has used so
// far (its own threads, not its children), from /proc/<pid>/stat.
func (p *Process) CPUSeconds() (float64, error) {
	return ProcessCPUSeconds(p.PID())
}

// ProcessCPUSeconds returns utime+stime of pid in seconds.
func ProcessCPUSeconds(pid int) (float64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the CPU time of pid %d: %w", pid, err)
	}
	// The command name (field 2) is in parentheses and may hold spaces;
	// the fields after its closing parenthesis start at field 3 (state).
	s := string(data)
	end := strings.LastIndexByte(s, ')')
	if end < 0 {
		return 0, fmt.Errorf("parsing /proc/%d/stat: no command name in %q", pid, s)
	}
	fields := strings.Fields(s[end+1:])
	// utime and stime are fields 14 and 15, so 11 and 12 after field 3.
	if len(fields) < 13 {
		return 0, fmt.Errorf("parsing /proc/%d/stat: %d fields after the command name", pid, len(fields))
	}
	var ticks float64
	for _, f := range fields[11:13] {
		v, err := strconv.ParseUint(f, 10, 64)
		if err != nil {
			return 0, fmt.Errorf("parsing /proc/%d/stat: %w", pid, err)
		}
		ticks += float64(v)
	}
	return ticks / clockTicksPerSecond, nil
}

// Tail returns the last n lines of a file, or a note why it cannot.
func Tail(path string, n int) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return fmt.Sprintf("(cannot read %s: %v)", path, err)
	}
	lines := bytes.Split(bytes.TrimRight(data, "\n"), []byte("\n"))
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return string(bytes.Join(lines, []byte("\n")))
}

// Result is the outcome of a command that ran to completion.
type Result struct {
	Stdout   string
	Stderr   string
	ExitCode int
}

// Combined returns stdout and stderr together, for messages.
func (r Result) Combined() string {
	return fmt.Sprintf("exit code %d\nstdout:\n%s\nstderr:\n%s", r.ExitCode, r.Stdout, r.Stderr)
}

// run runs a command to completion with an optional stdin and a timeout.
// A non-zero exit is a Result, not an error; an error means the command
// could not run or did not finish in time.
func run(timeout time.Duration, stdin io.Reader, bin string, args ...string) (Result, error) {
	cmd := exec.Command(bin, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr, cmd.Stdin = &stdout, &stderr, stdin
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		return Result{}, fmt.Errorf("starting %s: %w", bin, err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(timeout):
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		<-done
		return Result{Stdout: stdout.String(), Stderr: stderr.String(), ExitCode: -1},
			fmt.Errorf("%s %s did not finish within %v; stdout:\n%s\nstderr:\n%s", filepath.Base(bin), strings.Join(args, " "), timeout, stdout.String(), stderr.String())
	}
	res := Result{Stdout: stdout.String(), Stderr: stderr.String()}
	var exitErr *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exitErr):
		res.ExitCode = exitErr.ExitCode()
	default:
		return res, fmt.Errorf("running %s: %w", bin, err)
	}
	return res, nil
}
