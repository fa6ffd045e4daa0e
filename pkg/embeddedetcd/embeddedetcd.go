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

// Package embeddedetcd runs a single-member etcd inside the current process.
// It backs the standalone run mode of batch-apiserver and the storage and
// integration tests.
//
// By default the member serves its clients on a unix socket inside its data
// directory, which is mode 0700, and has no peer listener at all: only the
// user running the server can reach it, and nobody on the network can. A
// loopback TCP client URL can be asked for (tests that let other processes,
// such as a kube-apiserver, share the member do); it serves plain HTTP with
// no authentication, so only such tests should use it.
package embeddedetcd

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/client/pkg/v3/logutil"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
)

const (
	// memberName is the etcd member name. It is stored in the data directory,
	// so it must not change between releases.
	memberName = "batch-apiserver"

	// DefaultStartTimeout is how long Start waits for etcd to become ready
	// when Config.StartTimeout is zero.
	DefaultStartTimeout = 60 * time.Second

	// DefaultLogLevel is etcd's log level when Config.LogLevel is empty:
	// only errors, so that etcd does not drown the API server's own logs.
	DefaultLogLevel = "error"

	// serveStoppedMessage is what etcd logs, at error level, for each of its
	// listeners when they close, including on a clean shutdown.
	serveStoppedMessage = "setting up serving from embedded etcd failed."

	// storageVersionMessage is what etcd logs, at error level, when it
	// cannot record its storage version yet: right after a new member
	// first leads, before its backend holds the raft term ("missing term
	// information"), or while it closes. It tries again a few seconds
	// later, or on the next start.
	storageVersionMessage = "failed to update storage version"

	// storageVersionTooEarly is the error of storageVersionMessage before
	// the backend holds the raft term.
	storageVersionTooEarly = "missing term information"

	// lockFileName is the file in the data directory that a running member
	// holds locked.
	lockFileName = "embedded-etcd.lock"

	// maxPortAttempts bounds the retries when a port chosen for us is taken
	// by another process between choosing it and etcd binding it.
	maxPortAttempts = 5

	// socketFileName is the unix socket the member serves clients on, in the
	// data directory, when Config.ClientURL is empty.
	socketFileName = "etcd.sock"

	// maxSocketPathLength is the longest unix socket path bind accepts on
	// Linux (sun_path is 108 bytes with the terminating NUL). Longer data
	// directory paths get their socket in a private temporary directory.
	maxSocketPathLength = 107

	// MaxRequestBytes is the largest request the member accepts. etcd's
	// default, 1.5 MiB, is below the API's 3 MiB request body limit, which
	// made etcd, not the API, refuse large objects; this sits above it.
	MaxRequestBytes = 4 << 20

	// LoneMemberSnapshotCount and LoneMemberSnapshotCatchUpEntries bound
	// the raft log a lone member keeps in memory: from 500 to 2500 writes
	// instead of etcd's 5000 to 15000 (about 50 MiB of 3.5 KiB Jobs).
	LoneMemberSnapshotCount          = 2000
	LoneMemberSnapshotCatchUpEntries = 500
)

// Config describes an embedded etcd member. The zero value is not usable:
// DataDir is required. Every other field has a default suited to the
// standalone server.
type Config struct {
	// DataDir is the etcd data directory. It is created with mode 0700 if it
	// does not exist. Starting again on the same directory keeps the data.
	// Only one member at a time can use it; Start fails with
	// ErrDataDirInUse otherwise.
	DataDir string

	// ClientURL is the URL etcd serves clients on. Empty means a unix socket
	// in DataDir (see Endpoints), reachable only by the user running the
	// member. "http://127.0.0.1:0" means loopback TCP on a free port, and
	// "http://127.0.0.1:2379" that port: plain HTTP without authentication
	// that every local user can reach, for tests that share the member with
	// another process. The host must be a loopback IP address.
	ClientURL string

	// PeerURL is the URL etcd listens on for raft peers. A single member never
	// talks to a peer: empty means no peer listener at all. The same rules as
	// for a TCP ClientURL apply.
	PeerURL string

	// Logger receives etcd's server logs. When nil, etcd logs JSON to stderr
	// at LogLevel.
	Logger *zap.Logger

	// LogLevel is etcd's log level (debug, info, warn, error, dpanic, panic
	// or fatal) when Logger is nil. Empty means DefaultLogLevel.
	LogLevel string

	// StartTimeout bounds how long Start waits for etcd to become ready.
	// Zero means DefaultStartTimeout.
	StartTimeout time.Duration

	// SnapshotCount is the number of committed transactions after which etcd
	// snapshots its state and trims the in-memory raft log. Zero means
	// LoneMemberSnapshotCount for a lone member and etcd's default (10000)
	// for a member with peers; tests use a smaller value to keep memory low.
	SnapshotCount uint64

	// QuotaBackendBytes is the maximum size of the backend database. Zero
	// means etcd's default (2 GiB). A smaller quota also shrinks the initial
	// memory map, which matters when many tests run an etcd each.
	QuotaBackendBytes int64

	// MaxRequestBytes is the largest request etcd accepts. Zero means
	// MaxRequestBytes (the constant); tests set a smaller value to act as an
	// external etcd with its own, smaller limit.
	MaxRequestBytes uint

	// UnsafeNoFsync disables fsync. It makes tests faster and loses data on a
	// machine crash; never set it for data you want to keep.
	UnsafeNoFsync bool
}

// Server is a running embedded etcd member.
type Server struct {
	etcd      *embed.Etcd
	lock      *fileutil.LockedFile
	endpoints []string
	closing   *atomic.Bool
	dataDir   string
	socketDir string
	closeOnce sync.Once
	closeErr  error
}

// ErrDataDirInUse is wrapped by the error Start returns when another member,
// in this process or another one, runs on the same data directory.
var ErrDataDirInUse = errors.New("etcd data directory is in use")

// errInvalidConfig is wrapped by every error about a Config that cannot work.
var errInvalidConfig = errors.New("invalid embedded etcd configuration")

// autoPortMu serializes choosing free ports and binding them within this
// process, so that two members started in parallel cannot pick the same port.
var autoPortMu sync.Mutex

// Start starts an etcd member as described by cfg and waits until it is ready
// to serve, at most cfg.StartTimeout or until ctx is done. The caller must
// Close the returned Server.
func Start(ctx context.Context, cfg Config) (*Server, error) {
	if cfg.DataDir == "" {
		return nil, fmt.Errorf("%w: data directory is required", errInvalidConfig)
	}
	dataDir, err := filepath.Abs(cfg.DataDir)
	if err != nil {
		return nil, fmt.Errorf("%w: data directory %s: %w", errInvalidConfig, cfg.DataDir, err)
	}
	cfg.DataDir = dataDir
	clientURL, err := parseLoopbackURL("client", cfg.ClientURL)
	if err != nil {
		return nil, err
	}
	peerURL, err := parseLoopbackURL("peer", cfg.PeerURL)
	if err != nil {
		return nil, err
	}
	closing := new(atomic.Bool)
	logger, err := etcdLogger(cfg, closing)
	if err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("starting embedded etcd in %s: %w", cfg.DataDir, err)
	}
	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("creating etcd data directory %s: %w", cfg.DataDir, err)
	}
	// MkdirAll leaves an existing directory's mode alone; the directory
	// guards the socket and the data, so no one else may enter it.
	if err := os.Chmod(cfg.DataDir, 0o700); err != nil {
		return nil, fmt.Errorf("restricting etcd data directory %s to its owner: %w", cfg.DataDir, err)
	}
	// etcd itself blocks forever, rather than failing, when another member
	// holds the data directory.
	lockPath := filepath.Join(cfg.DataDir, lockFileName)
	lock, err := fileutil.TryLockFile(lockPath, os.O_WRONLY|os.O_CREATE, 0o600)
	if errors.Is(err, fileutil.ErrLocked) {
		// The caller says which directory it asked for; name the lock file so
		// the message says what is held and by whom, and only once.
		return nil, fmt.Errorf("%w by another process (%s is locked)", ErrDataDirInUse, lockPath)
	}
	if err != nil {
		return nil, fmt.Errorf("locking %s: %w", lockPath, err)
	}

	var socketDir string
	if cfg.ClientURL == "" {
		socketPath := filepath.Join(cfg.DataDir, socketFileName)
		if len(socketPath) > maxSocketPathLength {
			// A private directory of our own, as closed as the data dir.
			if socketDir, err = os.MkdirTemp("", "batch-apiserver-etcd-"); err != nil {
				lock.Close()
				return nil, fmt.Errorf("creating a directory for the etcd socket: %w", err)
			}
			socketPath = filepath.Join(socketDir, socketFileName)
			// Clients in other processes (snapshot save) find it
			// through the data directory (ClientSocket).
			if err := writeSocketPointer(cfg.DataDir, socketPath); err != nil {
				lock.Close()
				removeSocketDir(cfg.DataDir, socketDir)
				return nil, err
			}
		}
		clientURL = &url.URL{Scheme: "unix", Path: socketPath}
	}
	e, err := startWithPorts(cfg, logger, clientURL, peerURL)
	if err != nil {
		lock.Close()
		removeSocketDir(cfg.DataDir, socketDir)
		return nil, err
	}
	stop := func() {
		closing.Store(true)
		e.Close()
		lock.Close()
		removeSocketDir(cfg.DataDir, socketDir)
	}

	timeout := cfg.StartTimeout
	if timeout == 0 {
		timeout = DefaultStartTimeout
	}
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case <-e.Server.ReadyNotify():
	case <-e.Server.StopNotify():
		stop()
		return nil, fmt.Errorf("embedded etcd in %s stopped before it became ready", cfg.DataDir)
	case err := <-e.Err():
		stop()
		if err == nil {
			return nil, fmt.Errorf("embedded etcd in %s stopped serving before it became ready", cfg.DataDir)
		}
		return nil, fmt.Errorf("embedded etcd in %s failed before it became ready: %w", cfg.DataDir, err)
	case <-timer.C:
		stop()
		return nil, fmt.Errorf("embedded etcd in %s did not become ready within %s", cfg.DataDir, timeout)
	case <-ctx.Done():
		stop()
		return nil, fmt.Errorf("waiting for embedded etcd in %s to become ready: %w", cfg.DataDir, ctx.Err())
	}

	s := &Server{etcd: e, lock: lock, closing: closing, dataDir: cfg.DataDir, socketDir: socketDir}
	for _, l := range e.Clients {
		addr := l.Addr()
		if addr.Network() != "unix" {
			s.endpoints = append(s.endpoints, "http://"+addr.String())
			continue
		}
		// The socket's mode follows the umask; the directory already keeps
		// others out, and the socket itself says the same.
		if err := os.Chmod(addr.String(), 0o600); err != nil {
			stop()
			return nil, fmt.Errorf("restricting etcd socket %s to its owner: %w", addr, err)
		}
		s.endpoints = append(s.endpoints, "unix://"+addr.String())
	}
	return s, nil
}

// removeSocketDir removes the private directory that held the socket, and
// the pointer to it in dataDir, if Start made one.
func removeSocketDir(dataDir, dir string) {
	if dir != "" {
		removeSocketPointer(dataDir)
		_ = os.RemoveAll(dir)
	}
}

// startWithPorts starts etcd, choosing a free port for a TCP client URL with
// port 0. When it chose a port and another process took it before etcd could
// bind it, it tries again with a new port.
func startWithPorts(cfg Config, logger *zap.Logger, clientURL, peerURL *url.URL) (*embed.Etcd, error) {
	if clientURL.Scheme == "unix" || clientURL.Port() != "0" {
		e, err := embed.StartEtcd(embedConfig(cfg, logger, *clientURL, peerURL))
		if err != nil {
			return nil, fmt.Errorf("starting embedded etcd in %s: %w", cfg.DataDir, err)
		}
		return e, nil
	}

	autoPortMu.Lock()
	defer autoPortMu.Unlock()
	var lastErr error
	for range maxPortAttempts {
		c, err := freeLoopbackURL(clientURL.Hostname())
		if err != nil {
			return nil, err
		}
		e, err := embed.StartEtcd(embedConfig(cfg, logger, *c, peerURL))
		if err == nil {
			return e, nil
		}
		if !errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("starting embedded etcd in %s: %w", cfg.DataDir, err)
		}
		lastErr = err
	}
	return nil, fmt.Errorf("starting embedded etcd in %s: no free port after %d attempts: %w", cfg.DataDir, maxPortAttempts, lastErr)
}

// embedConfig translates cfg into etcd's own configuration.
func embedConfig(cfg Config, logger *zap.Logger, clientURL url.URL, peerURL *url.URL) *embed.Config {
	ec := embed.NewConfig()
	ec.Name = memberName
	ec.Dir = cfg.DataDir
	ec.ListenClientUrls = []url.URL{clientURL}
	ec.AdvertiseClientUrls = []url.URL{clientURL}
	// A single member never dials a peer nor is dialed by one: without a
	// PeerURL it has no peer listener, and advertises etcd's default peer
	// URL, which only names the member in its own cluster.
	ec.ListenPeerUrls = nil
	if peerURL != nil {
		ec.ListenPeerUrls = []url.URL{*peerURL}
		ec.AdvertisePeerUrls = []url.URL{*peerURL}
	}
	ec.InitialCluster = ec.InitialClusterFromName(ec.Name)
	// A member alone elects itself after one election timeout: 100 ms
	// instead of etcd's 1 s makes a new data dir ready that much sooner.
	// With no peers the heartbeat only ticks the member's own raft.
	ec.TickMs = 10
	ec.ElectionMs = 100
	ec.MaxRequestBytes = MaxRequestBytes
	if cfg.MaxRequestBytes > 0 {
		ec.MaxRequestBytes = cfg.MaxRequestBytes
	}
	ec.UnsafeNoFsync = cfg.UnsafeNoFsync
	if peerURL == nil {
		// The raft log kept in memory serves followers that fall behind;
		// a lone member has none, so it keeps fewer entries (each holds a
		// whole write) and snapshots more often, which costs a backend
		// commit and a small snapshot file.
		ec.SnapshotCount = LoneMemberSnapshotCount
		ec.SnapshotCatchUpEntries = LoneMemberSnapshotCatchUpEntries
	}
	if cfg.SnapshotCount > 0 {
		ec.SnapshotCount = cfg.SnapshotCount
	}
	if cfg.QuotaBackendBytes > 0 {
		ec.QuotaBackendBytes = cfg.QuotaBackendBytes
	}
	ec.ZapLoggerBuilder = embed.NewZapLoggerBuilder(logger)
	return ec
}

// etcdLogger returns the logger etcd gets: cfg.Logger or a JSON logger to
// stderr at cfg.LogLevel, in both cases without the error etcd logs for every
// listener it closes once closing is set, so that a clean shutdown is silent.
func etcdLogger(cfg Config, closing *atomic.Bool) (*zap.Logger, error) {
	logger := cfg.Logger
	if logger == nil {
		levelName := cfg.LogLevel
		if levelName == "" {
			levelName = DefaultLogLevel
		}
		level, err := zapcore.ParseLevel(levelName)
		if err != nil {
			return nil, fmt.Errorf("%w: etcd log level: %w", errInvalidConfig, err)
		}
		if logger, err = logutil.CreateDefaultZapLogger(level); err != nil {
			return nil, fmt.Errorf("creating etcd logger: %w", err)
		}
	}
	return logger.WithOptions(zap.WrapCore(func(c zapcore.Core) zapcore.Core {
		return shutdownNoiseFilter{Core: c, closing: closing}
	})), nil
}

// shutdownNoiseFilter drops the entries etcd logs as errors while it shuts
// down on purpose.
type shutdownNoiseFilter struct {
	zapcore.Core
	closing *atomic.Bool
}

// With keeps the filter on loggers derived with fields.
func (f shutdownNoiseFilter) With(fields []zapcore.Field) zapcore.Core {
	return shutdownNoiseFilter{Core: f.Core.With(fields), closing: f.closing}
}

// Check drops serveStoppedMessage once closing is set, and leaves
// storageVersionMessage to Write, which sees its error.
func (f shutdownNoiseFilter) Check(ent zapcore.Entry, ce *zapcore.CheckedEntry) *zapcore.CheckedEntry {
	if ent.Message == serveStoppedMessage && f.closing.Load() {
		return ce
	}
	if ent.Message == storageVersionMessage {
		if f.Enabled(ent.Level) {
			return ce.AddCore(ent, f)
		}
		return ce
	}
	return f.Core.Check(ent, ce)
}

// Write drops storageVersionMessage while closing or when it is only too
// early, and writes everything else.
func (f shutdownNoiseFilter) Write(ent zapcore.Entry, fields []zapcore.Field) error {
	if ent.Message == storageVersionMessage {
		if f.closing.Load() {
			return nil
		}
		for _, field := range fields {
			if err, ok := field.Interface.(error); ok && field.Type == zapcore.ErrorType && strings.Contains(err.Error(), storageVersionTooEarly) {
				return nil
			}
		}
	}
	return f.Core.Write(ent, fields)
}

// parseLoopbackURL parses a client or peer URL. It returns nil for an empty
// string, which means a unix socket for the client and no listener for the
// peer. Port 0 means a free port.
func parseLoopbackURL(which, raw string) (*url.URL, error) {
	if raw == "" {
		return nil, nil
	}
	u, err := url.Parse(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: parsing etcd %s URL %q: %w", errInvalidConfig, which, raw, err)
	}
	if u.Scheme != "http" {
		return nil, fmt.Errorf("%w: etcd %s URL %q: scheme must be http", errInvalidConfig, which, raw)
	}
	host, port, err := net.SplitHostPort(u.Host)
	if err != nil {
		return nil, fmt.Errorf("%w: etcd %s URL %q: %w", errInvalidConfig, which, raw, err)
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return nil, fmt.Errorf("%w: etcd %s URL %q: host must be a loopback IP address", errInvalidConfig, which, raw)
	}
	if _, err := strconv.ParseUint(port, 10, 16); err != nil {
		return nil, fmt.Errorf("%w: etcd %s URL %q: invalid port: %w", errInvalidConfig, which, raw, err)
	}
	if (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.User != nil {
		return nil, fmt.Errorf("%w: etcd %s URL %q: must have no path, query or user", errInvalidConfig, which, raw)
	}
	return &url.URL{Scheme: u.Scheme, Host: u.Host}, nil
}

// freeLoopbackURL returns an http URL on host with a port that was free a
// moment ago.
func freeLoopbackURL(host string) (*url.URL, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return nil, fmt.Errorf("finding a free port on %s: %w", host, err)
	}
	addr := l.Addr().String()
	if err := l.Close(); err != nil {
		return nil, fmt.Errorf("releasing port %s: %w", addr, err)
	}
	return &url.URL{Scheme: "http", Host: addr}, nil
}

// Endpoints returns the client URLs of the member, for clientv3.Config or
// the API server's --etcd-servers: unix:///<data-dir>/etcd.sock by default,
// http://127.0.0.1:<port> for a TCP ClientURL.
func (s *Server) Endpoints() []string {
	return append([]string(nil), s.endpoints...)
}

// Err returns a channel that receives an error when one of etcd's serving
// goroutines fails while the member runs. A value on it means the member no
// longer serves; the channel is closed once Close has returned.
func (s *Server) Err() <-chan error {
	return s.etcd.Err()
}

// Close stops the member and waits until it has released its listeners and
// its data directory. It is safe to call more than once; every call returns
// the result of the first.
func (s *Server) Close() error {
	s.closeOnce.Do(func() {
		s.closing.Store(true)
		s.etcd.Close()
		if err := s.lock.Close(); err != nil {
			s.closeErr = fmt.Errorf("unlocking etcd data directory: %w", err)
		}
		removeSocketDir(s.dataDir, s.socketDir)
	})
	return s.closeErr
}
