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

package embeddedetcd

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"go.etcd.io/etcd/client/pkg/v3/fileutil"
	"go.etcd.io/etcd/server/v3/embed"
)

// What tools that work on a member's data directory from outside the
// member (batch-apiserver snapshot save and restore) need to know of it.

// socketPointerFileName is the file in the data directory that names the
// socket when it lives in a private temporary directory (the data
// directory's path is too long for a socket path).
const socketPointerFileName = "etcd.sock.path"

// Bootstrap is the one-member cluster Start bootstraps in a new data
// directory. A tool that writes a data directory itself (a snapshot
// restore) gives it the same member, so that Start finds what it would
// have written.
type Bootstrap struct {
	// Name is the member name.
	Name string
	// PeerURLs are the peer URLs the member advertises. Without a
	// Config.PeerURL it listens on none; they only name it.
	PeerURLs []string
	// InitialCluster is the initial cluster, name=peerURL.
	InitialCluster string
	// InitialClusterToken is the cluster token.
	InitialClusterToken string
}

// LoneMemberBootstrap returns the cluster Start bootstraps when Config.PeerURL
// is empty, the standalone server's.
func LoneMemberBootstrap() Bootstrap {
	ec := embed.NewConfig()
	ec.Name = memberName
	var peers []string
	for _, u := range ec.AdvertisePeerUrls {
		peers = append(peers, u.String())
	}
	return Bootstrap{
		Name:                memberName,
		PeerURLs:            peers,
		InitialCluster:      ec.InitialClusterFromName(memberName),
		InitialClusterToken: ec.InitialClusterToken,
	}
}

// InUse reports whether a member, in this process or another one, runs on
// dataDir. It neither creates nor changes anything in dataDir: a directory
// without the lock file (never started, or not a data directory at all) is
// not in use.
func InUse(dataDir string) (bool, error) {
	lockPath := filepath.Join(dataDir, lockFileName)
	// Without O_CREATE: probing must not leave a lock file behind.
	lock, err := fileutil.TryLockFile(lockPath, os.O_WRONLY, 0o600)
	switch {
	case errors.Is(err, fileutil.ErrLocked):
		return true, nil
	case errors.Is(err, fs.ErrNotExist):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("checking whether %s is locked: %w", lockPath, err)
	}
	if err := lock.Close(); err != nil {
		return false, fmt.Errorf("releasing %s: %w", lockPath, err)
	}
	return false, nil
}

// ClientSocket returns the unix socket a member running on dataDir with no
// Config.ClientURL serves clients on, for a client in another process. The
// socket exists only while the member runs.
func ClientSocket(dataDir string) (string, error) {
	socketPath := filepath.Join(dataDir, socketFileName)
	if len(socketPath) <= maxSocketPathLength {
		return socketPath, nil
	}
	pointer := filepath.Join(dataDir, socketPointerFileName)
	data, err := os.ReadFile(pointer)
	if err != nil {
		return "", fmt.Errorf("finding the etcd socket of %s (its own path would be too long for a socket): %w", dataDir, err)
	}
	return strings.TrimSpace(string(data)), nil
}

// writeSocketPointer records in dataDir where the socket is when it is not
// in dataDir itself, for ClientSocket.
func writeSocketPointer(dataDir, socketPath string) error {
	pointer := filepath.Join(dataDir, socketPointerFileName)
	if err := os.WriteFile(pointer, []byte(socketPath+"\n"), 0o600); err != nil {
		return fmt.Errorf("recording the etcd socket path in %s: %w", pointer, err)
	}
	return nil
}

// removeSocketPointer removes what writeSocketPointer wrote, if anything.
func removeSocketPointer(dataDir string) {
	_ = os.Remove(filepath.Join(dataDir, socketPointerFileName))
}
