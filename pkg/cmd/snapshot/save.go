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
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd"
)

// etcdDialTimeout bounds the connection to the running server's etcd.
const etcdDialTimeout = 10 * time.Second

// SaveOptions says what Save snapshots and where it writes.
type SaveOptions struct {
	// DataDir is the running standalone server's --data-dir.
	DataDir string
	// File is where the snapshot goes. An existing file is replaced only
	// once the new snapshot is whole and verified.
	File string
}

// SaveResult describes a snapshot Save wrote.
type SaveResult struct {
	Status
	// File is the absolute path of the snapshot.
	File string
	// Duration is how long the save took, verification included.
	Duration time.Duration
}

// Save streams a snapshot of the etcd of the standalone server running on
// opts.DataDir, through etcd's snapshot API: the database as of one
// revision, while the server keeps serving. It writes to a temporary file
// beside opts.File, verifies it (Verify), syncs it to disk and only then
// renames it to opts.File: on any error no file is left behind, and an
// earlier file of that name is untouched.
func Save(ctx context.Context, opts SaveOptions) (*SaveResult, error) {
	start := time.Now()
	if opts.File == "" {
		return nil, fmt.Errorf("snapshot save: %w: a file to write is required", ErrInvalidOptions)
	}
	file, err := filepath.Abs(opts.File)
	if err != nil {
		return nil, fmt.Errorf("snapshot file %s: %w", opts.File, err)
	}
	dataDir, err := filepath.Abs(opts.DataDir)
	if err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", opts.DataDir, err)
	}
	// Absolute: the socket becomes a unix:// URL.
	etcdDir := filepath.Join(dataDir, etcdSubdir)
	running, err := embeddedetcd.InUse(etcdDir)
	if err != nil {
		return nil, err
	}
	if !running {
		return nil, fmt.Errorf("--data-dir %s: %w (snapshot save reads a running server; a stopped server's data dir can be copied as it is)",
			opts.DataDir, ErrServerNotRunning)
	}
	socket, err := embeddedetcd.ClientSocket(etcdDir)
	if err != nil {
		return nil, err
	}

	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".part-*")
	if err != nil {
		return nil, fmt.Errorf("creating the snapshot file: %w", err)
	}
	// Until the rename, every failure removes the partial file.
	keep := false
	defer func() {
		if !keep {
			_ = tmp.Close()
			_ = os.Remove(tmp.Name())
		}
	}()
	if err := streamSnapshot(ctx, "unix://"+socket, tmp); err != nil {
		return nil, fmt.Errorf("--data-dir %s: %w", opts.DataDir, err)
	}
	if err := tmp.Sync(); err != nil {
		return nil, fmt.Errorf("syncing %s: %w", tmp.Name(), err)
	}
	if err := tmp.Close(); err != nil {
		return nil, fmt.Errorf("closing %s: %w", tmp.Name(), err)
	}
	status, err := Verify(tmp.Name())
	if err != nil {
		return nil, fmt.Errorf("the snapshot etcd streamed does not verify: %w", err)
	}
	if err := os.Rename(tmp.Name(), file); err != nil {
		return nil, fmt.Errorf("renaming the snapshot into place: %w", err)
	}
	keep = true
	if err := syncDir(filepath.Dir(file)); err != nil {
		return nil, err
	}
	return &SaveResult{Status: status, File: file, Duration: time.Since(start)}, nil
}

// streamSnapshot copies etcd's snapshot stream from endpoint to w. A
// stream that breaks off is an error, never a short copy.
func streamSnapshot(ctx context.Context, endpoint string, w io.Writer) error {
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{endpoint},
		DialTimeout: etcdDialTimeout,
		// The errors come back here; the client would log them too.
		Logger: zap.NewNop(),
	})
	if err != nil {
		return fmt.Errorf("connecting to etcd at %s: %w", endpoint, err)
	}
	defer client.Close()
	resp, err := client.SnapshotWithVersion(ctx)
	if err != nil {
		return fmt.Errorf("starting the etcd snapshot: %w", err)
	}
	defer resp.Snapshot.Close()
	if _, err := io.Copy(w, resp.Snapshot); err != nil {
		return fmt.Errorf("receiving the etcd snapshot: %w", err)
	}
	return nil
}

// syncDir makes a rename or a new entry in dir durable.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("opening %s to sync it: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("syncing %s: %w", dir, err)
	}
	return nil
}
