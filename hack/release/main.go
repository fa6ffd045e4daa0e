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

// Command release is the part of hack/release.sh (make release
// VERSION=vX.Y.Z, docs/releasing.md) that is easier in Go: it reads
// CHANGELOG.md, renders the install manifests with kustomize, writes the
// kubectl-bjob archive and SHA256SUMS, and checks a release directory.
//
//	go run ./hack/release notes -version v0.2.0
//	go run ./hack/release assemble -version v0.2.0 -out _output/release/v0.2.0 \
//		-server-image ... -kueue-image ... -bjob ... -epoch 1796000000
//	go run ./hack/release verify -version v0.2.0 -dir _output/release/v0.2.0
package main

import (
	"flag"
	"fmt"
	"os"
	"runtime"
	"time"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: release notes|assemble|verify -version vX.Y.Z [flags]")
		os.Exit(2)
	}
	if err := run(os.Args[1], os.Args[2:]); err != nil {
		fmt.Fprintf(os.Stderr, "release %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

func run(command string, args []string) error {
	fs := flag.NewFlagSet(command, flag.ExitOnError)
	version := fs.String("version", "", "the release, vX.Y.Z[-pre] (required)")
	changelog := fs.String("changelog", "CHANGELOG.md", "the changelog")
	var in Inputs
	var out, dir string
	var epoch int64
	switch command {
	case "notes":
	case "assemble":
		fs.StringVar(&out, "out", "", "the release directory to write (required)")
		fs.StringVar(&in.Artifacts, "artifacts", "artifacts", "the manifests: DIR/deploy, DIR/kueue")
		fs.StringVar(&in.ServerImage, "server-image", "", "batch-apiserver image tarball (required)")
		fs.StringVar(&in.KueueImage, "kueue-image", "", "batch-kueue image tarball (required)")
		fs.StringVar(&in.Bjob, "bjob", "", "kubectl-bjob binary (required)")
		fs.StringVar(&in.BjobCompletion, "bjob-completion", "cmd/kubectl-bjob/kubectl_complete-bjob", "kubectl's completion helper for the plugin")
		fs.StringVar(&in.License, "license", "LICENSE", "the license shipped with the binary")
		fs.StringVar(&in.OS, "os", "linux", "operating system of the binaries")
		fs.StringVar(&in.Arch, "arch", runtime.GOARCH, "architecture of the binaries")
		fs.Int64Var(&epoch, "epoch", 0, "the commit time, seconds since the epoch (required)")
	case "verify":
		fs.StringVar(&dir, "dir", "", "the release directory (required)")
	default:
		return fmt.Errorf("unknown command (want notes, assemble or verify)")
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *version == "" {
		return fmt.Errorf("-version is required")
	}

	switch command {
	case "notes":
		// Prints the section, so that the script fails before it builds
		// anything when there is none.
		raw, err := os.ReadFile(*changelog)
		if err != nil {
			return err
		}
		s, err := FindSection(raw, *version)
		if err != nil {
			return fmt.Errorf("%s: %w", *changelog, err)
		}
		fmt.Print(ReleaseNotes(s, Unreleased))
	case "assemble":
		if out == "" || in.ServerImage == "" || in.KueueImage == "" || in.Bjob == "" || epoch == 0 {
			return fmt.Errorf("-out, -server-image, -kueue-image, -bjob and -epoch are required")
		}
		in.Version, in.Changelog, in.Epoch = *version, *changelog, time.Unix(epoch, 0).UTC()
		if err := Assemble(in, out); err != nil {
			return err
		}
		fmt.Printf("wrote and verified %s\n", out)
	case "verify":
		if dir == "" {
			return fmt.Errorf("-dir is required")
		}
		if err := Verify(dir, *version); err != nil {
			return err
		}
		fmt.Printf("%s: %s verifies; the manifests and images name %s\n", dir, ChecksumsFile, *version)
	}
	return nil
}
