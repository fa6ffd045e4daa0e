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

package main

import (
	"archive/tar"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

func testOptions(t *testing.T) Options {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "batch-apiserver")
	if err := os.WriteFile(bin, []byte("not really a binary"), 0o755); err != nil {
		t.Fatal(err)
	}
	return Options{
		Binary: bin, Tag: "batch-apiserver:v0.1.0-abcdef0", Version: "v0.1.0-abcdef0",
		Revision: "abcdef0123", Source: "https://example.com/batch-apiserver",
		Created: time.Unix(1700000000, 0).UTC(), OS: "linux", Arch: "amd64",
	}
}

// TestReproducible builds the same image twice: same bytes, same digest; a
// different commit time gives another digest.
func TestReproducible(t *testing.T) {
	o := testOptions(t)
	dir := t.TempDir()
	a, err := Build(o, filepath.Join(dir, "a.tar"))
	if err != nil {
		t.Fatal(err)
	}
	b, err := Build(o, filepath.Join(dir, "b.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if a != b {
		t.Errorf("two builds of the same inputs: %+v and %+v", a, b)
	}
	ra, _ := os.ReadFile(filepath.Join(dir, "a.tar"))
	rb, _ := os.ReadFile(filepath.Join(dir, "b.tar"))
	if !bytes.Equal(ra, rb) {
		t.Error("two builds of the same inputs wrote different archives")
	}
	o.Created = o.Created.Add(time.Second)
	c, err := Build(o, filepath.Join(dir, "c.tar"))
	if err != nil {
		t.Fatal(err)
	}
	if c.Digest == a.Digest {
		t.Errorf("another commit time gave the same digest %s", c.Digest)
	}
}

// TestArchiveLayout checks that the archive is both an OCI layout and a
// docker save archive whose every named blob is present.
func TestArchiveLayout(t *testing.T) {
	o := testOptions(t)
	out := filepath.Join(t.TempDir(), "img.tar")
	if _, err := Build(o, out); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	files := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		if !h.ModTime.Equal(o.Created) {
			t.Errorf("%s: time %v, want %v", h.Name, h.ModTime, o.Created)
		}
		data, _ := io.ReadAll(tr)
		files[h.Name] = data
	}
	for _, name := range []string{"oci-layout", "index.json", "manifest.json"} {
		if _, ok := files[name]; !ok {
			t.Errorf("no %s in the archive", name)
		}
	}
	var dm []dockerManifest
	if err := json.Unmarshal(files["manifest.json"], &dm); err != nil || len(dm) != 1 {
		t.Fatalf("manifest.json: %v, %d entries", err, len(dm))
	}
	if !slices.Equal(dm[0].RepoTags, []string{o.Tag}) {
		t.Errorf("RepoTags = %q, want %q", dm[0].RepoTags, o.Tag)
	}
	for _, blob := range append([]string{dm[0].Config}, dm[0].Layers...) {
		if _, ok := files[blob]; !ok {
			t.Errorf("manifest.json names %s, not in the archive", blob)
		}
	}
}

func TestRefName(t *testing.T) {
	for ref, want := range map[string]string{
		"batch-apiserver:v1":               "v1",
		"registry:5000/batch-apiserver:v1": "v1",
		"registry:5000/batch-apiserver":    "registry:5000/batch-apiserver",
		"batch-apiserver":                  "batch-apiserver",
	} {
		if got := refName(ref); got != want {
			t.Errorf("refName(%q) = %q, want %q", ref, got, want)
		}
	}
}
