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

// Command image builds batch-apiserver's container image from a static
// binary, without a container daemon and without pulling a base image: one
// layer on the empty image holding the binary, /etc/passwd and /etc/group
// naming the non-root user 65532, and the directories the server writes to.
// There is no shell and nothing else.
//
// It writes one tar file that is at once an OCI image layout (oci-layout,
// index.json, blobs/sha256/...) and a `docker save` archive (manifest.json
// naming the same blobs), as Docker 25 and later save images: `docker load`,
// `podman load`, `kind load image-archive` and OCI tools (crane, skopeo
// oci-archive:) all read it.
//
// Every timestamp is --created and every entry is written in a fixed order,
// so the same binary and flags give the same bytes and the same digest.
package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path"
	"sort"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

const (
	// User is the numeric user and group the image runs as: the "nonroot"
	// of distroless images, and what artifacts/deploy/deployment.yaml sets.
	User = "65532:65532"
	// BinaryPath is where the binary sits in the image; it is the entrypoint.
	BinaryPath = "/usr/local/bin/batch-apiserver"
	// WorkingDir holds the standalone mode's ./data (embedded etcd,
	// certificates, kubeconfig), owned by User.
	WorkingDir = "/var/lib/batch-apiserver"
)

// Options are what the image is built from.
type Options struct {
	// Binary is the path of the static batch-apiserver binary.
	Binary string
	// Tag is the reference `docker load` gives the image, e.g.
	// batch-apiserver:v0.1.0.
	Tag string
	// Version and Revision are the git version and commit, written into the
	// OCI labels.
	Version  string
	Revision string
	// Source is the repository URL for org.opencontainers.image.source.
	Source string
	// Created is the time of every timestamp in the image: the commit time,
	// for reproducibility.
	Created time.Time
	// OS and Arch are the platform of Binary.
	OS, Arch string
}

// Result describes a written image.
type Result struct {
	// Digest is the digest of the image manifest: what a registry reports
	// after a push of the image.
	Digest v1.Hash
	// Size is the size of the written tar file in bytes.
	Size int64
}

func main() {
	var o Options
	var created int64
	var out string
	flag.StringVar(&o.Binary, "binary", "", "static batch-apiserver binary to put in the image (required)")
	flag.StringVar(&out, "output", "", "tar file to write (required)")
	flag.StringVar(&o.Tag, "tag", "batch-apiserver:latest", "reference docker load gives the image")
	flag.StringVar(&o.Version, "version", "", "git version, for org.opencontainers.image.version (required)")
	flag.StringVar(&o.Revision, "revision", "", "git commit, for org.opencontainers.image.revision")
	flag.StringVar(&o.Source, "source", "https://github.com/batch-apiserver/batch-apiserver", "repository URL, for org.opencontainers.image.source")
	flag.Int64Var(&created, "created", 0, "seconds since the epoch of every timestamp in the image (the commit time)")
	flag.StringVar(&o.OS, "os", "linux", "operating system of the binary")
	flag.StringVar(&o.Arch, "arch", "amd64", "architecture of the binary")
	flag.Parse()
	o.Created = time.Unix(created, 0).UTC()
	if o.Binary == "" || out == "" || o.Version == "" {
		fmt.Fprintln(os.Stderr, "image: --binary, --output and --version are required")
		flag.Usage()
		os.Exit(2)
	}
	res, err := Build(o, out)
	if err != nil {
		fmt.Fprintf(os.Stderr, "image: %v\n", err)
		os.Exit(1)
	}
	fmt.Printf("%s %s digest=%s size=%d\n", out, o.Tag, res.Digest, res.Size)
}

// Build writes the image to the tar file out.
func Build(o Options, out string) (Result, error) {
	img, err := Image(o)
	if err != nil {
		return Result{}, err
	}
	f, err := os.Create(out)
	if err != nil {
		return Result{}, err
	}
	if err := WriteArchive(f, img, o.Tag, o.Created); err != nil {
		f.Close()
		return Result{}, fmt.Errorf("writing %s: %w", out, err)
	}
	size, err := f.Seek(0, io.SeekCurrent)
	if err != nil {
		f.Close()
		return Result{}, err
	}
	if err := f.Close(); err != nil {
		return Result{}, err
	}
	digest, err := img.Digest()
	if err != nil {
		return Result{}, err
	}
	return Result{Digest: digest, Size: size}, nil
}

// Image builds the image in memory: the empty image, its configuration, and
// one layer.
func Image(o Options) (v1.Image, error) {
	binary, err := os.ReadFile(o.Binary)
	if err != nil {
		return nil, fmt.Errorf("reading the binary: %w", err)
	}
	layerTar, err := rootFS(binary, o.Created)
	if err != nil {
		return nil, fmt.Errorf("building the layer: %w", err)
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, fmt.Errorf("building the layer: %w", err)
	}

	created := v1.Time{Time: o.Created}
	labels := map[string]string{
		"org.opencontainers.image.title":       "batch-apiserver",
		"org.opencontainers.image.description": "Kubernetes aggregated API server for batch.jobs.dev Jobs (batch/v1 Job semantics)",
		"org.opencontainers.image.source":      o.Source,
		"org.opencontainers.image.version":     o.Version,
		"org.opencontainers.image.revision":    o.Revision,
		"org.opencontainers.image.created":     o.Created.Format(time.RFC3339),
		"org.opencontainers.image.licenses":    "Apache-2.0",
	}
	base := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	base = mutate.ConfigMediaType(base, types.OCIConfigJSON)
	base, err = mutate.ConfigFile(base, &v1.ConfigFile{
		Architecture: o.Arch,
		OS:           o.OS,
		Created:      created,
		Config: v1.Config{
			User:         User,
			Entrypoint:   []string{BinaryPath},
			WorkingDir:   WorkingDir,
			Env:          []string{"PATH=/usr/local/bin"},
			ExposedPorts: map[string]struct{}{"8443/tcp": {}},
			Labels:       labels,
		},
		RootFS: v1.RootFS{Type: "layers"},
	})
	if err != nil {
		return nil, err
	}
	// AppendLayers would add a history entry without a time; give it ours.
	return mutate.Append(base, mutate.Addendum{
		Layer: layer,
		History: v1.History{
			Created:   created,
			CreatedBy: "hack/image: batch-apiserver " + o.Version,
			Comment:   "static binary, passwd and group for user 65532, /tmp, " + WorkingDir,
		},
	})
}

// rootFS is the tar of the image's only layer.
func rootFS(binary []byte, mtime time.Time) ([]byte, error) {
	const nonroot = 65532
	type entry struct {
		name     string
		mode     int64
		uid, gid int
		data     []byte // nil for a directory
	}
	passwd := "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n"
	group := "root:x:0:\nnonroot:x:65532:\n"
	entries := []entry{
		{name: "etc/", mode: 0o755},
		{name: "etc/group", mode: 0o644, data: []byte(group)},
		{name: "etc/passwd", mode: 0o644, data: []byte(passwd)},
		{name: "home/", mode: 0o755},
		{name: "home/nonroot/", mode: 0o700, uid: nonroot, gid: nonroot},
		{name: "tmp/", mode: 0o1777},
		{name: "usr/", mode: 0o755},
		{name: "usr/local/", mode: 0o755},
		{name: "usr/local/bin/", mode: 0o755},
		{name: BinaryPath[1:], mode: 0o755, data: binary},
		{name: "var/", mode: 0o755},
		{name: "var/lib/", mode: 0o755},
		{name: WorkingDir[1:] + "/", mode: 0o700, uid: nonroot, gid: nonroot},
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, e := range entries {
		h := &tar.Header{
			Name:    e.name,
			Mode:    e.mode,
			Uid:     e.uid,
			Gid:     e.gid,
			ModTime: mtime,
			Format:  tar.FormatPAX,
		}
		if e.data == nil {
			h.Typeflag = tar.TypeDir
		} else {
			h.Typeflag = tar.TypeReg
			h.Size = int64(len(e.data))
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(e.data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// dockerManifest is one entry of a `docker save` archive's manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
	Layers   []string
}

// WriteArchive writes img as an OCI image layout that is also a `docker
// save` archive, every entry with the time mtime.
func WriteArchive(w io.Writer, img v1.Image, tag string, mtime time.Time) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	manifestDigest, err := img.Digest()
	if err != nil {
		return err
	}
	mediaType, err := img.MediaType()
	if err != nil {
		return err
	}
	config, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	configDigest, err := img.ConfigName()
	if err != nil {
		return err
	}
	blobs := map[string][]byte{
		blobPath(manifestDigest): manifest,
		blobPath(configDigest):   config,
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	var layerPaths []string
	for _, l := range layers {
		digest, err := l.Digest()
		if err != nil {
			return err
		}
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		blobs[blobPath(digest)] = data
		layerPaths = append(layerPaths, blobPath(digest))
	}

	index, err := json.Marshal(v1.IndexManifest{
		SchemaVersion: 2,
		MediaType:     types.OCIImageIndex,
		Manifests: []v1.Descriptor{{
			MediaType: mediaType,
			Digest:    manifestDigest,
			Size:      int64(len(manifest)),
			Annotations: map[string]string{
				// containerd and Docker name the loaded image from this one,
				"io.containerd.image.name": tag,
				// OCI tools from this one (the tag alone).
				"org.opencontainers.image.ref.name": refName(tag),
			},
		}},
	})
	if err != nil {
		return err
	}
	dockerManifests, err := json.Marshal([]dockerManifest{{
		Config:   blobPath(configDigest),
		RepoTags: []string{tag},
		Layers:   layerPaths,
	}})
	if err != nil {
		return err
	}

	tw := tar.NewWriter(w)
	file := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeReg, Name: name, Mode: 0o644, Size: int64(len(data)),
			ModTime: mtime, Format: tar.FormatPAX,
		}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	dir := func(name string) error {
		return tw.WriteHeader(&tar.Header{
			Typeflag: tar.TypeDir, Name: name, Mode: 0o755, ModTime: mtime, Format: tar.FormatPAX,
		})
	}
	if err := errors.Join(dir("blobs/"), dir("blobs/sha256/")); err != nil {
		return err
	}
	names := make([]string, 0, len(blobs))
	for name := range blobs {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := file(name, blobs[name]); err != nil {
			return err
		}
	}
	if err := file("index.json", index); err != nil {
		return err
	}
	if err := file("manifest.json", dockerManifests); err != nil {
		return err
	}
	if err := file("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	return tw.Close()
}

func blobPath(h v1.Hash) string {
	return path.Join("blobs", h.Algorithm, h.Hex)
}

// refName is the tag of a reference (what follows the last ':' after the
// last '/'), or the whole reference when it has none.
func refName(ref string) string {
	for i := len(ref) - 1; i >= 0 && ref[i] != '/'; i-- {
		if ref[i] == ':' {
			return ref[i+1:]
		}
	}
	return ref
}
