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

// Package image tests the container image `make image` writes
// (_output/images/batch-apiserver.tar) by reading the archive with the
// standard library alone, not with the builder's own library: both the OCI
// layout and the docker save views, the configuration, the one layer's
// files, and the binary in it, which must run and report the version the
// image is labelled with.
package image

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// imagePath is the archive under test: $BATCH_APISERVER_IMAGE, or what
// `make image` writes.
func imagePath(t *testing.T) string {
	t.Helper()
	path := os.Getenv("BATCH_APISERVER_IMAGE")
	if path == "" {
		path = filepath.Join("..", "..", "_output", "images", "batch-apiserver.tar")
	}
	if _, err := os.Stat(path); err != nil {
		// make test builds the image before the unit tier; CI must never
		// skip this.
		if os.Getenv("CI") == "true" {
			t.Fatalf("no image at %s: %v", path, err)
		}
		t.Skipf("no image at %s (run `make image`; `make test` does): %v", path, err)
	}
	return path
}

// readArchive returns every regular file of a tar stream by name.
func readArchive(t *testing.T, r io.Reader) (map[string][]byte, map[string]*tar.Header) {
	t.Helper()
	files := map[string][]byte{}
	headers := map[string]*tar.Header{}
	tr := tar.NewReader(r)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return files, headers
		}
		if err != nil {
			t.Fatalf("reading tar: %v", err)
		}
		headers[h.Name] = h
		if h.Typeflag == tar.TypeReg {
			data, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			files[h.Name] = data
		}
	}
}

type descriptor struct {
	MediaType   string            `json:"mediaType"`
	Digest      string            `json:"digest"`
	Size        int64             `json:"size"`
	Annotations map[string]string `json:"annotations"`
}

type imageConfig struct {
	Architecture string `json:"architecture"`
	OS           string `json:"os"`
	Config       struct {
		User         string              `json:"User"`
		Entrypoint   []string            `json:"Entrypoint"`
		Cmd          []string            `json:"Cmd"`
		WorkingDir   string              `json:"WorkingDir"`
		ExposedPorts map[string]struct{} `json:"ExposedPorts"`
		Labels       map[string]string   `json:"Labels"`
	} `json:"config"`
	RootFS struct {
		DiffIDs []string `json:"diff_ids"`
	} `json:"rootfs"`
}

func TestImage(t *testing.T) {
	f, err := os.Open(imagePath(t))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files, _ := readArchive(t, f)

	// Every blob is named by its digest.
	blob := func(digest string) []byte {
		t.Helper()
		name := "blobs/" + strings.Replace(digest, ":", "/", 1)
		data, ok := files[name]
		if !ok {
			t.Fatalf("blob %s not in the archive", digest)
		}
		if sum := sha256.Sum256(data); "sha256:"+hex.EncodeToString(sum[:]) != digest {
			t.Fatalf("blob %s has another digest", digest)
		}
		return data
	}
	decode := func(name string, data []byte, into any) {
		t.Helper()
		if err := json.Unmarshal(data, into); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}

	// The OCI layout view.
	if got := string(files["oci-layout"]); got != `{"imageLayoutVersion":"1.0.0"}` {
		t.Errorf("oci-layout = %q", got)
	}
	var index struct{ Manifests []descriptor }
	decode("index.json", files["index.json"], &index)
	if len(index.Manifests) != 1 {
		t.Fatalf("index.json has %d manifests, want 1", len(index.Manifests))
	}
	var manifest struct {
		MediaType string
		Config    descriptor
		Layers    []descriptor
	}
	decode("manifest", blob(index.Manifests[0].Digest), &manifest)
	if len(manifest.Layers) != 1 {
		t.Fatalf("the manifest has %d layers, want 1 (no base image)", len(manifest.Layers))
	}
	t.Logf("image digest %s", index.Manifests[0].Digest)

	// The docker save view names the same blobs.
	var dockerManifests []struct {
		Config   string
		RepoTags []string
		Layers   []string
	}
	decode("manifest.json", files["manifest.json"], &dockerManifests)
	if len(dockerManifests) != 1 {
		t.Fatalf("manifest.json has %d images, want 1", len(dockerManifests))
	}
	dm := dockerManifests[0]
	wantDocker := []string{"blobs/" + strings.Replace(manifest.Config.Digest, ":", "/", 1), "blobs/" + strings.Replace(manifest.Layers[0].Digest, ":", "/", 1)}
	if diff := cmp.Diff(wantDocker, append([]string{dm.Config}, dm.Layers...)); diff != "" {
		t.Errorf("manifest.json config and layers (-OCI manifest +docker):\n%s", diff)
	}

	var config imageConfig
	decode("config", blob(manifest.Config.Digest), &config)
	labels := config.Config.Labels
	version := labels["org.opencontainers.image.version"]
	// The tag is the version unless `make image IMAGE_TAG=...` chose another.
	if len(dm.RepoTags) != 1 || !strings.HasPrefix(dm.RepoTags[0], "batch-apiserver:") {
		t.Errorf("RepoTags = %q, want one batch-apiserver:<tag>", dm.RepoTags)
	}
	if got := index.Manifests[0].Annotations["io.containerd.image.name"]; len(dm.RepoTags) == 1 && got != dm.RepoTags[0] {
		t.Errorf("index.json names the image %q, manifest.json %q", got, dm.RepoTags)
	}

	type runtimeConfig struct {
		OS, User, WorkingDir string
		Entrypoint, Cmd      []string
		Ports                []string
		Source               string
		HasVersion, HasRev   bool
	}
	var ports []string
	for p := range config.Config.ExposedPorts {
		ports = append(ports, p)
	}
	got := runtimeConfig{
		OS: config.OS, User: config.Config.User, WorkingDir: config.Config.WorkingDir,
		Entrypoint: config.Config.Entrypoint, Cmd: config.Config.Cmd, Ports: ports,
		Source:     labels["org.opencontainers.image.source"],
		HasVersion: version != "", HasRev: labels["org.opencontainers.image.revision"] != "",
	}
	want := runtimeConfig{
		OS: "linux", User: "65532:65532", WorkingDir: "/var/lib/batch-apiserver",
		Entrypoint: []string{"/usr/local/bin/batch-apiserver"}, Ports: []string{"8443/tcp"},
		Source:     "https://github.com/batch-apiserver/batch-apiserver",
		HasVersion: true, HasRev: true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("image configuration (-want +got):\n%s", diff)
	}

	// The layer: exactly these entries; no shell, nothing else to run.
	compressed := blob(manifest.Layers[0].Digest)
	zr, err := gzip.NewReader(bytes.NewReader(compressed))
	if err != nil {
		t.Fatalf("layer: %v", err)
	}
	uncompressed, err := io.ReadAll(zr)
	if err != nil {
		t.Fatalf("layer: %v", err)
	}
	if sum := sha256.Sum256(uncompressed); len(config.RootFS.DiffIDs) != 1 || config.RootFS.DiffIDs[0] != "sha256:"+hex.EncodeToString(sum[:]) {
		t.Errorf("rootfs diff_ids %q do not match the layer", config.RootFS.DiffIDs)
	}
	layerFiles, headers := readArchive(t, bytes.NewReader(uncompressed))
	type entry struct {
		Mode     int64
		UID, GID int
	}
	gotEntries := map[string]entry{}
	for name, h := range headers {
		gotEntries[name] = entry{h.Mode, h.Uid, h.Gid}
	}
	wantEntries := map[string]entry{
		"etc/":                          {0o755, 0, 0},
		"etc/group":                     {0o644, 0, 0},
		"etc/passwd":                    {0o644, 0, 0},
		"home/":                         {0o755, 0, 0},
		"home/nonroot/":                 {0o700, 65532, 65532},
		"tmp/":                          {0o1777, 0, 0},
		"usr/":                          {0o755, 0, 0},
		"usr/local/":                    {0o755, 0, 0},
		"usr/local/bin/":                {0o755, 0, 0},
		"usr/local/bin/batch-apiserver": {0o755, 0, 0},
		"var/":                          {0o755, 0, 0},
		"var/lib/":                      {0o755, 0, 0},
		"var/lib/batch-apiserver/":      {0o700, 65532, 65532},
	}
	if diff := cmp.Diff(wantEntries, gotEntries); diff != "" {
		t.Errorf("layer entries (-want +got):\n%s", diff)
	}
	if !strings.Contains(string(layerFiles["etc/passwd"]), "nonroot:x:65532:65532:") {
		t.Errorf("/etc/passwd does not name user 65532:\n%s", layerFiles["etc/passwd"])
	}

	// The binary runs on its own (static) and is the version of the labels.
	if config.Architecture != runtime.GOARCH || runtime.GOOS != "linux" {
		t.Skipf("image for %s/%s, cannot run its binary on %s/%s", config.OS, config.Architecture, runtime.GOOS, runtime.GOARCH)
	}
	bin := filepath.Join(t.TempDir(), "batch-apiserver")
	if err := os.WriteFile(bin, layerFiles["usr/local/bin/batch-apiserver"], 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(t.Context(), bin, "--version")
	cmd.Env = []string{} // nothing from this environment, as in the image
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("the image's binary --version: %v", err)
	}
	if got, want := string(out), "batch-apiserver "+version+"\n"; got != want {
		t.Errorf("the image's binary --version printed %q, want %q (the version label)", got, want)
	}
	raw, err := exec.CommandContext(t.Context(), bin, "--version=raw").Output()
	if err != nil {
		t.Fatalf("the image's binary --version=raw: %v", err)
	}
	if rev := labels["org.opencontainers.image.revision"]; !strings.Contains(string(raw), `GitCommit:"`+rev+`"`) {
		t.Errorf("the image's binary is not stamped with the revision label %s: %s", rev, raw)
	}
	// Sorted for a stable log line.
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, k+"="+labels[k])
	}
	sort.Strings(names)
	t.Logf("image %s, %d bytes compressed layer, labels %q", dm.RepoTags, len(compressed), names)
}
