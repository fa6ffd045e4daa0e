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

package snapshot

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	etcdutlsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"

	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
)

const (
	// etcdSubdir and pkiSubdir are where the standalone server keeps its
	// etcd data and its certificates under --data-dir (pkg/cmd/server,
	// pkg/certs).
	etcdSubdir = "etcd"
	pkiSubdir  = "pki"

	// DefaultRevisionBump is how far restore moves the etcd revision past
	// the snapshot's: more than the writes a server makes between the
	// last snapshot and its loss (a billion: a thousand writes a second
	// for eleven days), the amount Kubernetes' documentation uses, and
	// still far from the end of an int64 after many restores.
	DefaultRevisionBump = 1_000_000_000
)

// caFiles are the certificate authorities of a standalone data directory;
// --certs-from refuses a directory without them. The leaf certificates
// beside them are copied too, and renewed at start when they no longer
// fit.
var caFiles = []string{"ca.crt", "ca.key", "serving-ca.crt", "serving-ca.key"}

// RestoreOptions says what Restore restores and where.
type RestoreOptions struct {
	// File is the snapshot, as Save (or etcdctl snapshot save) wrote it.
	File string
	// DataDir is the new --data-dir: it must not exist, or be empty.
	DataDir string
	// RevisionBump is how far the restored revision is moved past the
	// snapshot's; it must be positive. The restored revision is then
	// marked compacted.
	RevisionBump uint64
	// CertsFrom, when set, is the old data dir whose certificates (client
	// CA, serving CA and their certificates) the new one gets, so that
	// existing kubeconfigs and caBundles keep working. When empty the
	// server makes new ones at its first start.
	CertsFrom string
}

// RestoreResult describes a restored data directory.
type RestoreResult struct {
	// Snapshot is the verified snapshot.
	Snapshot Status
	// DataDir is the absolute path of the new data directory.
	DataDir string
	// Revision is the restored etcd revision, compacted: the snapshot's
	// plus the bump.
	Revision int64
	// CertsCopied says whether the certificates came from CertsFrom.
	CertsCopied bool
	// Duration is how long the restore took, verification included.
	Duration time.Duration
}

// Restore writes a new standalone data directory from a snapshot: etcd's
// data restored by etcdutl with the revision moved forward by
// opts.RevisionBump and marked compacted, so that no resourceVersion the
// old server handed out is handed out again and every watch from before
// the restore ends with 410 Gone, and with opts.CertsFrom's certificates
// when asked. The server's identity is in etcd, so it comes back with the
// snapshot.
//
// It checks everything first (the snapshot verifies, the data directory is
// free, the certificates are there), then writes into a temporary
// directory beside opts.DataDir and renames it into place. On any error
// opts.DataDir is as it was.
func Restore(opts RestoreOptions) (*RestoreResult, error) {
	start := time.Now()
	if opts.File == "" {
		return nil, fmt.Errorf("snapshot restore: %w: a snapshot file is required", ErrInvalidOptions)
	}
	if opts.DataDir == "" {
		return nil, fmt.Errorf("snapshot restore: %w: --data-dir is required: the new data directory", ErrInvalidOptions)
	}
	if opts.RevisionBump == 0 {
		return nil, fmt.Errorf("snapshot restore: %w: --bump-revision must be positive: a restore must not hand out resourceVersions again", ErrInvalidOptions)
	}
	status, err := Verify(opts.File)
	if err != nil {
		return nil, err
	}
	target, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", opts.DataDir, err)
	}
	if err := checkFreeDataDir(target); err != nil {
		return nil, err
	}
	var pkiFrom string
	if opts.CertsFrom != "" {
		if pkiFrom, err = checkCertsFrom(opts.CertsFrom, target); err != nil {
			return nil, err
		}
	}

	parent := filepath.Dir(target)
	if err := os.MkdirAll(parent, 0o700); err != nil {
		return nil, fmt.Errorf("creating %s: %w", parent, err)
	}
	staging, err := os.MkdirTemp(parent, "."+filepath.Base(target)+".restore-*")
	if err != nil {
		return nil, fmt.Errorf("creating a directory to restore into: %w", err)
	}
	restored := false
	defer func() {
		if !restored {
			_ = os.RemoveAll(staging)
		}
	}()

	member := embeddedetcd.LoneMemberBootstrap()
	err = etcdutlsnapshot.NewV3(zap.NewNop()).Restore(etcdutlsnapshot.RestoreConfig{
		SnapshotPath:        opts.File,
		Name:                member.Name,
		OutputDataDir:       filepath.Join(staging, etcdSubdir),
		PeerURLs:            member.PeerURLs,
		InitialCluster:      member.InitialCluster,
		InitialClusterToken: member.InitialClusterToken,
		RevisionBump:        opts.RevisionBump,
		MarkCompacted:       true,
	})
	if err != nil {
		return nil, fmt.Errorf("restoring %s: %w", opts.File, err)
	}
	if pkiFrom != "" {
		if err := copyDir(pkiFrom, filepath.Join(staging, pkiSubdir)); err != nil {
			return nil, fmt.Errorf("copying the certificates of --certs-from %s: %w", opts.CertsFrom, err)
		}
	}
	if err := syncDir(staging); err != nil {
		return nil, err
	}
	// rename(2) replaces an empty directory and fails on any other
	// (ENOTEMPTY, which is fs.ErrExist): a server that started on target
	// meanwhile keeps its data. os.Rename refuses every existing
	// directory, empty or not, so the system call it is.
	if err := syscall.Rename(staging, target); err != nil {
		err = &os.LinkError{Op: "rename", Old: staging, New: target, Err: err}
		if errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("--data-dir %s: %w: it was written to during the restore", opts.DataDir, ErrDataDirNotEmpty)
		}
		return nil, fmt.Errorf("moving the restored data into %s: %w", target, err)
	}
	restored = true
	if err := syncDir(parent); err != nil {
		return nil, err
	}
	return &RestoreResult{
		Snapshot:    status,
		DataDir:     target,
		Revision:    status.Revision + int64(opts.RevisionBump),
		CertsCopied: pkiFrom != "",
		Duration:    time.Since(start),
	}, nil
}

// checkFreeDataDir returns nil when dir does not exist or is an empty
// directory that no server runs on.
func checkFreeDataDir(dir string) error {
	info, err := os.Stat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("--data-dir %s: %w: it is a file", dir, ErrDataDirNotEmpty)
	}
	// A running server is the worst case of a directory in use; say so
	// rather than only that it is not empty.
	inUse, err := embeddedetcd.InUse(filepath.Join(dir, etcdSubdir))
	if err != nil {
		return fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	if inUse {
		return fmt.Errorf("--data-dir %s: %w by a running server; restore into a new directory, then start the server on it",
			dir, embeddedetcd.ErrDataDirInUse)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("--data-dir %s: %w", dir, err)
	}
	if len(entries) > 0 {
		return fmt.Errorf("--data-dir %s: %w (it holds %s): restore into a new or empty directory; nothing is overwritten",
			dir, ErrDataDirNotEmpty, entries[0].Name())
	}
	return nil
}

// checkCertsFrom checks that dataDir holds a standalone server's
// certificate authorities and returns its certificate directory.
func checkCertsFrom(dataDir, target string) (string, error) {
	abs, err := filepath.Abs(dataDir)
	if err != nil {
		return "", fmt.Errorf("--certs-from %s: %w", dataDir, err)
	}
	if abs == target {
		return "", fmt.Errorf("%w: --certs-from %s is the --data-dir being restored", ErrInvalidOptions, dataDir)
	}
	pki := filepath.Join(abs, pkiSubdir)
	for _, name := range caFiles {
		info, err := os.Stat(filepath.Join(pki, name))
		if err != nil || !info.Mode().IsRegular() {
			return "", fmt.Errorf("--certs-from %s: %w: no %s", dataDir, ErrNotADataDir, filepath.Join(pkiSubdir, name))
		}
	}
	return pki, nil
}

// copyDir copies the regular files of from into a new directory to, with
// their modes, and syncs them.
func copyDir(from, to string) error {
	entries, err := os.ReadDir(from)
	if err != nil {
		return err
	}
	if err := os.Mkdir(to, 0o700); err != nil {
		return err
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		if err := copyFile(filepath.Join(from, e.Name()), filepath.Join(to, e.Name())); err != nil {
			return err
		}
	}
	return syncDir(to)
}

// copyFile copies a regular file with its permission bits.
func copyFile(from, to string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	info, err := src.Stat()
	if err != nil {
		return err
	}
	dst, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
	if err != nil {
		return err
	}
	if _, err := io.Copy(dst, src); err != nil {
		dst.Close()
		return err
	}
	if err := dst.Sync(); err != nil {
		dst.Close()
		return err
	}
	return dst.Close()
}
