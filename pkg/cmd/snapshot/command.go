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

// Package snapshot is `batch-apiserver snapshot save|restore`: backup of
// the standalone server's embedded etcd while it runs, and restore into a
// new data directory. An external etcd is backed up and restored with
// etcdctl and etcdutl (docs/operations.md).
package snapshot

import (
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
)

// defaultDataDir is the server's own --data-dir default.
const defaultDataDir = "data"

// NewCommand returns the snapshot command and its save and restore
// subcommands; they print what they did to out.
func NewCommand(out io.Writer) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "snapshot",
		Short: "Save a snapshot of a running standalone server, or restore one into a new data directory",
		Long: `Backup and restore of the standalone server's embedded etcd.

  batch-apiserver snapshot save backup.db --data-dir data
  batch-apiserver snapshot restore backup.db --data-dir data-restored

Aggregated servers keep their data in an external etcd: back it up with
etcdctl snapshot save and restore it with etcdutl snapshot restore
--bump-revision --mark-compacted (docs/operations.md).`,
		Args: cobra.NoArgs,
	}
	// The server's own help prints its flags in named sections; these
	// commands have their own few flags and cobra's usual help.
	plain := &cobra.Command{}
	cmd.SetUsageFunc(plain.UsageFunc())
	cmd.SetHelpFunc(plain.HelpFunc())
	cmd.AddCommand(newSaveCommand(out), newRestoreCommand(out))
	return cmd
}

func newSaveCommand(out io.Writer) *cobra.Command {
	opts := SaveOptions{DataDir: defaultDataDir}
	cmd := &cobra.Command{
		Use:   "save FILE",
		Short: "Save a snapshot of the running standalone server's etcd to FILE",
		Long: `Save streams a consistent snapshot (one etcd revision) of the embedded etcd of
the standalone server running on --data-dir, without stopping it. The file
is written beside FILE, verified (SHA-256 and the database's own check),
synced, and only then renamed to FILE: a snapshot that cannot be taken
whole is an error, never a partial file.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			res, err := Save(cmd.Context(), opts)
			if err != nil {
				return err
			}
			_, err = fmt.Fprintf(out, "Saved snapshot %s: %s, revision %d, %s, etcd storage %s, in %s\n",
				res.File, byteSize(res.Size), res.Revision, keys(res.Keys), storageVersion(res.StorageVersion), res.Duration.Round(time.Millisecond))
			return err
		},
	}
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", opts.DataDir, "--data-dir of the running standalone server.")
	return cmd
}

func newRestoreCommand(out io.Writer) *cobra.Command {
	opts := RestoreOptions{RevisionBump: DefaultRevisionBump}
	cmd := &cobra.Command{
		Use:   "restore FILE --data-dir DIR",
		Short: "Restore a snapshot into a new data directory",
		Long: `Restore writes a new data directory DIR from the snapshot FILE; start the
server on it with --data-dir DIR. DIR must not exist or be empty: nothing is
ever overwritten, and on any error DIR is left as it was.

The etcd revision is moved forward by --bump-revision and marked compacted,
so no resourceVersion is handed out twice and every watch and informer
started before the restore relists (410 Gone) instead of missing changes.
The server identity is in the snapshot, so the Job controller finds the Pods
of its Jobs again. Certificates are not in the snapshot: the server makes new
ones at its first start on DIR (and a new admin kubeconfig), unless
--certs-from names the old data directory to copy them from, which keeps
existing kubeconfigs and caBundles valid.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.File = args[0]
			res, err := Restore(opts)
			if err != nil {
				return err
			}
			certs := "new certificates at the first start"
			if res.CertsCopied {
				certs = "certificates of " + opts.CertsFrom
			}
			_, err = fmt.Fprintf(out, "Restored %s into %s: %s, %s, revision %d -> %d (compacted), %s, in %s\n"+
				"Start the server with --data-dir %s\n",
				opts.File, res.DataDir, byteSize(res.Snapshot.Size), keys(res.Snapshot.Keys), res.Snapshot.Revision, res.Revision,
				certs, res.Duration.Round(time.Millisecond), opts.DataDir)
			return err
		},
	}
	cmd.Flags().StringVar(&opts.DataDir, "data-dir", "", "The new data directory to restore into: it must not exist, or be empty. Required.")
	cmd.Flags().Uint64Var(&opts.RevisionBump, "bump-revision", opts.RevisionBump,
		"How far to move the etcd revision past the snapshot's, then marked compacted: more than the writes made since the snapshot was taken.")
	cmd.Flags().StringVar(&opts.CertsFrom, "certs-from", "",
		"The old data directory to copy the certificates from (pki/), so that its kubeconfigs and caBundles stay valid. Empty: new certificates.")
	_ = cmd.MarkFlagRequired("data-dir")
	return cmd
}

// storageVersion prints an empty storage version (etcd before 3.6) as such.
func storageVersion(v string) string {
	if v == "" {
		return "version unknown"
	}
	return v
}

// byteSize prints n bytes in KiB or MiB, with the exact count.
func byteSize(n int64) string {
	switch {
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/(1<<20), n)
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/(1<<10), n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// keys prints a count of etcd keys.
func keys(n int) string {
	if n == 1 {
		return "1 key"
	}
	return fmt.Sprintf("%d keys", n)
}
