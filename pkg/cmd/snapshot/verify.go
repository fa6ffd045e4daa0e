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
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"

	etcdutlsnapshot "go.etcd.io/etcd/etcdutl/v3/snapshot"
	"go.uber.org/zap"
)

// Errors the commands wrap, for callers (and tests) to tell them apart
// with errors.Is. A missing snapshot file wraps fs.ErrNotExist; a data
// directory with a running server wraps embeddedetcd.ErrDataDirInUse.
var (
	// ErrInvalidOptions: a required option is missing or out of range.
	ErrInvalidOptions = errors.New("invalid options")
	// ErrCorruptSnapshot: the file is not a whole etcd snapshot (a
	// truncated copy, a checksum that does not match, a database that
	// fails its own consistency check, not a snapshot at all).
	ErrCorruptSnapshot = errors.New("not a valid etcd snapshot")
	// ErrServerNotRunning: snapshot save found no server running on the
	// data directory.
	ErrServerNotRunning = errors.New("no batch-apiserver is running on the data directory")
	// ErrDataDirNotEmpty: restore was asked to write into a directory
	// that already holds something.
	ErrDataDirNotEmpty = errors.New("data directory is not empty")
	// ErrNotADataDir: --certs-from names a directory without the
	// standalone server's certificates.
	ErrNotADataDir = errors.New("not a batch-apiserver data directory")
)

// Status describes a verified snapshot file.
type Status struct {
	// Size is the file's size in bytes, checksum included.
	Size int64
	// Revision is the etcd revision the snapshot was taken at.
	Revision int64
	// Keys is the number of etcd keys in it (Jobs and the server's own
	// keys).
	Keys int
	// StorageVersion is the etcd storage version that wrote it.
	StorageVersion string
}

// Verify checks that path holds a whole etcd snapshot, as the snapshot API
// streams it: the database followed by the SHA-256 of the database, a
// database that passes its own consistency check. Every failure but a
// file that cannot be read wraps ErrCorruptSnapshot.
func Verify(path string) (Status, error) {
	f, err := os.Open(path)
	if err != nil {
		return Status{}, fmt.Errorf("opening snapshot: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Status{}, fmt.Errorf("reading snapshot %s: %w", path, err)
	}
	if !info.Mode().IsRegular() {
		return Status{}, fmt.Errorf("snapshot %s: %w: not a regular file", path, ErrCorruptSnapshot)
	}
	size := info.Size()
	// The database is a whole number of pages (bbolt pages are multiples
	// of 512 bytes); the snapshot API appends the digest to it. A size of
	// any other form is a cut or padded copy, or a copy of the database
	// file without the digest (etcdutl's --skip-hash-check case, which
	// proves nothing about the copy).
	if size < sha256.Size || size%512 != sha256.Size {
		return Status{}, fmt.Errorf("snapshot %s: %w: %d bytes is not a database followed by its SHA-256 (truncated, or not a snapshot)",
			path, ErrCorruptSnapshot, size)
	}
	h := sha256.New()
	if _, err := io.CopyN(h, f, size-sha256.Size); err != nil {
		return Status{}, fmt.Errorf("reading snapshot %s: %w", path, err)
	}
	want := make([]byte, sha256.Size)
	if _, err := io.ReadFull(f, want); err != nil {
		return Status{}, fmt.Errorf("reading snapshot %s: %w", path, err)
	}
	if got := h.Sum(nil); !bytes.Equal(got, want) {
		return Status{}, fmt.Errorf("snapshot %s: %w: SHA-256 of the database is %x, the snapshot says %x", path, ErrCorruptSnapshot, got, want)
	}
	// The digest proves the copy; bbolt's own check and a walk of every
	// key prove the database etcd streamed.
	st, err := databaseStatus(path)
	if err != nil {
		return Status{}, fmt.Errorf("snapshot %s: %w: %w", path, ErrCorruptSnapshot, err)
	}
	return Status{Size: size, Revision: st.Revision, Keys: st.TotalKey, StorageVersion: st.Version}, nil
}

// databaseStatus reads the snapshot's database with etcdutl. bbolt panics
// on some damaged pages instead of returning an error; such a file is
// corrupt too.
func databaseStatus(path string) (st etcdutlsnapshot.Status, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("reading the database: %v", r)
		}
	}()
	return etcdutlsnapshot.NewV3(zap.NewNop()).Status(path)
}
