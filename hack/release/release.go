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
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/kustomize/kyaml/kio"
)

// The files of a release directory, beside the kubectl-bjob archive
// (bjobArchiveName).
const (
	ServerImageFile    = "batch-apiserver.tar"
	KueueImageFile     = "batch-kueue.tar"
	ServerManifestFile = "batch-apiserver.yaml"
	KueueManifestFile  = "batch-kueue.yaml"
	NotesFile          = "RELEASE_NOTES.md"
	ChecksumsFile      = "SHA256SUMS"

	// ServerImage and KueueImage are the image names the manifests of
	// artifacts/ use, and the repositories of the release's image tags.
	ServerImage = "batch-apiserver"
	KueueImage  = "batch-kueue"

	// Unreleased is the date of a CHANGELOG.md section not dated yet.
	Unreleased = "unreleased"

	versionLabel = "org.opencontainers.image.version"
	// maxMetadataSize bounds the files of an image tarball read whole.
	maxMetadataSize = 1 << 20
)

// Errors callers tell apart.
var (
	// ErrNoSection: the changelog has no section for the version.
	ErrNoSection = errors.New("no changelog section")
	// ErrEmptySection: the version's section says nothing.
	ErrEmptySection = errors.New("empty changelog section")
	// ErrImage: an image tarball or a manifest names another image.
	ErrImage = errors.New("wrong image")
)

// HeadingError is a second-level heading of a changelog that is not a
// release's heading, or a second one for the same release.
type HeadingError struct {
	Line    int
	Heading string
	Reason  string
}

func (e *HeadingError) Error() string {
	return fmt.Sprintf("line %d: %q: %s", e.Line, e.Heading, e.Reason)
}

// headingRE is a release's heading in CHANGELOG.md.
var headingRE = regexp.MustCompile(`^## (v[0-9][^ ]*) - ([0-9]{4}-[0-9]{2}-[0-9]{2}|` + Unreleased + `)$`)

// Section is one release's part of CHANGELOG.md.
type Section struct {
	Version string
	// Date is YYYY-MM-DD, or Unreleased.
	Date string
	// Body is the text under the heading, trimmed.
	Body string
}

// ParseChangelog returns the sections of a changelog in the order they
// appear. Every second-level heading must be a release's heading: a
// misspelt one would otherwise hide its release.
func ParseChangelog(changelog []byte) ([]Section, error) {
	var sections []Section
	var body []string
	flush := func() {
		if len(sections) > 0 {
			sections[len(sections)-1].Body = strings.TrimSpace(strings.Join(body, "\n"))
		}
		body = nil
	}
	sc := bufio.NewScanner(bytes.NewReader(changelog))
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimRight(sc.Text(), " \t\r")
		if !strings.HasPrefix(line, "## ") {
			body = append(body, line)
			continue
		}
		m := headingRE.FindStringSubmatch(line)
		if m == nil {
			return nil, &HeadingError{Line: n, Heading: line, Reason: "not a release heading (## vX.Y.Z - YYYY-MM-DD, or - " + Unreleased + ")"}
		}
		if m[2] != Unreleased {
			if _, err := time.Parse(time.DateOnly, m[2]); err != nil {
				return nil, &HeadingError{Line: n, Heading: line, Reason: "not a date: " + err.Error()}
			}
		}
		flush()
		for _, s := range sections {
			if s.Version == m[1] {
				return nil, &HeadingError{Line: n, Heading: line, Reason: "a second section for " + m[1]}
			}
		}
		sections = append(sections, Section{Version: m[1], Date: m[2]})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	flush()
	return sections, nil
}

// FindSection returns version's section of a changelog, or an error when
// it has none or it is empty.
func FindSection(changelog []byte, version string) (Section, error) {
	sections, err := ParseChangelog(changelog)
	if err != nil {
		return Section{}, err
	}
	for _, s := range sections {
		if s.Version != version {
			continue
		}
		if s.Body == "" {
			return Section{}, fmt.Errorf("%w: the section of %s says nothing", ErrEmptySection, version)
		}
		return s, nil
	}
	return Section{}, fmt.Errorf("%w: no '## %s - ...' (write what %s changes for users first)", ErrNoSection, version, version)
}

// ReleaseNotes is the text of RELEASE_NOTES.md: the section under a title,
// dated buildDate when the section is not dated yet.
func ReleaseNotes(s Section, buildDate string) string {
	date := s.Date
	if date == Unreleased {
		date = buildDate
	}
	return fmt.Sprintf("# batch-apiserver %s (%s)\n\n%s\n", s.Version, date, s.Body)
}

// RenderManifests renders the kustomize base artifactsDir/deploy and the
// component artifactsDir/kueue, each on its own, with their images tagged
// tag, as `kubectl kustomize` of an overlay setting `images:` would: with
// the kustomize library kubectl embeds and kubectl's default options. It
// returns the YAML of each, keyed by its file name in a release.
func RenderManifests(artifactsDir, tag string) (map[string][]byte, error) {
	fs := filesys.MakeFsInMemory()
	for _, dir := range []string{"deploy", "kueue"} {
		files, err := filepath.Glob(filepath.Join(artifactsDir, dir, "*.yaml"))
		if err != nil {
			return nil, err
		}
		if len(files) == 0 {
			return nil, fmt.Errorf("no manifests in %s", filepath.Join(artifactsDir, dir))
		}
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				return nil, err
			}
			if err := fs.WriteFile(path.Join("/artifacts", dir, filepath.Base(f)), data); err != nil {
				return nil, err
			}
		}
	}
	overlays := map[string]string{
		ServerManifestFile: "resources:\n- ../../artifacts/deploy\nimages:\n- name: " + ServerImage + "\n  newTag: " + tag + "\n",
		KueueManifestFile:  "components:\n- ../../artifacts/kueue\nimages:\n- name: " + KueueImage + "\n  newTag: " + tag + "\n",
	}
	out := map[string][]byte{}
	for file, kustomization := range overlays {
		dir := path.Join("/release", strings.TrimSuffix(file, ".yaml"))
		header := "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\n"
		if err := fs.WriteFile(path.Join(dir, "kustomization.yaml"), []byte(header+kustomization)); err != nil {
			return nil, err
		}
		resources, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(fs, dir)
		if err != nil {
			return nil, fmt.Errorf("rendering %s: %w", file, err)
		}
		yaml, err := resources.AsYaml()
		if err != nil {
			return nil, fmt.Errorf("rendering %s: %w", file, err)
		}
		out[file] = yaml
	}
	return out, nil
}

// ContainerImages returns the image of every container and init container
// of the objects in a multi-document YAML, in order.
func ContainerImages(manifests []byte) ([]string, error) {
	nodes, err := kio.FromBytes(manifests)
	if err != nil {
		return nil, err
	}
	var images []string
	var walk func(v any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			for _, key := range []string{"initContainers", "containers"} {
				list, _ := v[key].([]any)
				for _, c := range list {
					if c, ok := c.(map[string]any); ok {
						if image, ok := c["image"].(string); ok {
							images = append(images, image)
						}
					}
				}
			}
			for _, key := range slices.Sorted(maps.Keys(v)) {
				walk(v[key])
			}
		case []any:
			for _, e := range v {
				walk(e)
			}
		}
	}
	for _, n := range nodes {
		obj, err := n.Map()
		if err != nil {
			return nil, err
		}
		walk(obj)
	}
	return images, nil
}

// splitImage splits an image reference into its repository and tag ("" when
// it has none).
func splitImage(ref string) (repo, tag string) {
	ref, _, _ = strings.Cut(ref, "@")
	slash := strings.LastIndex(ref, "/")
	if colon := strings.LastIndex(ref, ":"); colon > slash {
		return ref[:colon], ref[colon+1:]
	}
	return ref, ""
}

// CheckManifestImages checks that a rendered manifest names image:tag and
// no other tag of image.
func CheckManifestImages(manifests []byte, image, tag string) error {
	images, err := ContainerImages(manifests)
	if err != nil {
		return err
	}
	found := false
	for _, ref := range images {
		repo, t := splitImage(ref)
		if path.Base(repo) != image {
			continue
		}
		if t != tag {
			return fmt.Errorf("%w: a container runs %s, not %s:%s", ErrImage, ref, image, tag)
		}
		found = true
	}
	if !found {
		return fmt.Errorf("%w: no container runs %s:%s (images: %s)", ErrImage, image, tag, strings.Join(images, ", "))
	}
	return nil
}

// dockerManifest is an entry of a docker save archive's manifest.json.
type dockerManifest struct {
	Config   string
	RepoTags []string
}

// CheckImageArchive checks that the image tarball of hack/image at file is
// tagged ref alone and labelled with version.
func CheckImageArchive(file, ref, version string) error {
	entries, err := readTar(file, func(name string) bool { return name == "manifest.json" || strings.HasPrefix(name, "blobs/") })
	if err != nil {
		return err
	}
	var manifests []dockerManifest
	if err := json.Unmarshal(entries["manifest.json"], &manifests); err != nil {
		return fmt.Errorf("%s: manifest.json: %w", file, err)
	}
	if len(manifests) != 1 {
		return fmt.Errorf("%s: %d images, want 1", file, len(manifests))
	}
	if !slices.Equal(manifests[0].RepoTags, []string{ref}) {
		return fmt.Errorf("%w: %s is tagged %v, want [%s]", ErrImage, file, manifests[0].RepoTags, ref)
	}
	var config struct {
		Config struct{ Labels map[string]string }
	}
	raw, ok := entries[manifests[0].Config]
	if !ok {
		return fmt.Errorf("%s: no configuration %s", file, manifests[0].Config)
	}
	if err := json.Unmarshal(raw, &config); err != nil {
		return fmt.Errorf("%s: configuration: %w", file, err)
	}
	if got := config.Config.Labels[versionLabel]; got != version {
		return fmt.Errorf("%w: %s has the label %s=%q, want %q", ErrImage, file, versionLabel, got, version)
	}
	return nil
}

// readTar returns the contents of the regular files of a tar that keep
// says to keep, by name.
func readTar(file string, keep func(string) bool) (map[string][]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(f)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		// Manifests and configurations are small; the layers are skipped.
		if h.Typeflag != tar.TypeReg || h.Size > maxMetadataSize || !keep(h.Name) {
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return nil, fmt.Errorf("reading %s: %w", file, err)
		}
		out[h.Name] = data
	}
}

// BjobArchiveName is the name of the kubectl-bjob archive of a release.
func BjobArchiveName(version, goos, goarch string) string {
	return fmt.Sprintf("kubectl-bjob-%s-%s-%s.tar.gz", version, goos, goarch)
}

// archiveFile is a file to put into an archive.
type archiveFile struct {
	name string
	src  string
	mode int64
}

// WriteArchive writes a gzipped tar of files: owned by root, every time
// mtime, no gzip name or time, so that the same inputs give the same bytes.
func WriteArchive(out string, files []archiveFile, mtime time.Time) error {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, f := range files {
		data, err := os.ReadFile(f.src)
		if err != nil {
			return err
		}
		h := &tar.Header{
			Typeflag: tar.TypeReg,
			Name:     f.name,
			Mode:     f.mode,
			Size:     int64(len(data)),
			ModTime:  mtime,
			Format:   tar.FormatUSTAR,
		}
		if err := tw.WriteHeader(h); err != nil {
			return fmt.Errorf("%s: %w", f.name, err)
		}
		if _, err := tw.Write(data); err != nil {
			return err
		}
	}
	if err := tw.Close(); err != nil {
		return err
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(out, buf.Bytes(), 0o644)
}

// WriteChecksums writes dir/SHA256SUMS over every other file of dir, in the
// format `sha256sum -c` reads.
func WriteChecksums(dir string) error {
	names, err := releaseFiles(dir)
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	for _, name := range names {
		sum, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		fmt.Fprintf(&buf, "%s  %s\n", sum, name)
	}
	return os.WriteFile(filepath.Join(dir, ChecksumsFile), buf.Bytes(), 0o644)
}

// VerifyChecksums checks dir/SHA256SUMS: every file it lists has its sum,
// and it lists every other file of dir.
func VerifyChecksums(dir string) error {
	raw, err := os.ReadFile(filepath.Join(dir, ChecksumsFile))
	if err != nil {
		return err
	}
	listed := map[string]bool{}
	for _, line := range strings.Split(strings.TrimSuffix(string(raw), "\n"), "\n") {
		sum, name, ok := strings.Cut(line, "  ")
		if !ok {
			return fmt.Errorf("%s: malformed line %q", ChecksumsFile, line)
		}
		got, err := fileSHA256(filepath.Join(dir, name))
		if err != nil {
			return err
		}
		if got != sum {
			return fmt.Errorf("%s: sha256 %s, %s says %s", name, got, ChecksumsFile, sum)
		}
		listed[name] = true
	}
	names, err := releaseFiles(dir)
	if err != nil {
		return err
	}
	for _, name := range names {
		if !listed[name] {
			return fmt.Errorf("%s is not in %s", name, ChecksumsFile)
		}
	}
	return nil
}

// releaseFiles lists the files of a release directory but SHA256SUMS,
// sorted; a directory or anything but a regular file there is an error.
func releaseFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var names []string
	for _, e := range entries {
		if !e.Type().IsRegular() {
			return nil, fmt.Errorf("%s: %s is not a regular file", dir, e.Name())
		}
		if e.Name() != ChecksumsFile {
			names = append(names, e.Name())
		}
	}
	return names, nil
}

func fileSHA256(file string) (string, error) {
	f, err := os.Open(file)
	if err != nil {
		return "", err
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

func copyFile(dst, src string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// Inputs are what a release directory is made of: what hack/release.sh
// built, and the sources of the repository.
type Inputs struct {
	// Version is the release, vX.Y.Z[-pre]; also the images' tag.
	Version string
	// Epoch is the commit time: the time of every file in the archive.
	Epoch time.Time
	// OS and Arch are the platform of the binaries.
	OS, Arch string
	// Changelog and Artifacts are CHANGELOG.md and the artifacts directory.
	Changelog, Artifacts string
	// ServerImage and KueueImage are the image tarballs.
	ServerImage, KueueImage string
	// Bjob, BjobCompletion and License go into the kubectl-bjob archive.
	Bjob, BjobCompletion, License string
}

// Assemble writes the release directory out from in. It writes into a
// sibling directory first and renames it at the end, so that out is
// either the whole release or what it was before.
func Assemble(in Inputs, out string) error {
	changelog, err := os.ReadFile(in.Changelog)
	if err != nil {
		return err
	}
	section, err := FindSection(changelog, in.Version)
	if err != nil {
		return fmt.Errorf("%s: %w", in.Changelog, err)
	}
	images := []struct{ src, file, ref string }{
		{in.ServerImage, ServerImageFile, ServerImage + ":" + in.Version},
		{in.KueueImage, KueueImageFile, KueueImage + ":" + in.Version},
	}
	for _, img := range images {
		if err := CheckImageArchive(img.src, img.ref, in.Version); err != nil {
			return err
		}
	}
	manifests, err := RenderManifests(in.Artifacts, in.Version)
	if err != nil {
		return err
	}

	tmp := out + ".tmp"
	if err := os.RemoveAll(tmp); err != nil {
		return err
	}
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		return err
	}
	for _, img := range images {
		if err := copyFile(filepath.Join(tmp, img.file), img.src); err != nil {
			return err
		}
	}
	for file, data := range manifests {
		if err := os.WriteFile(filepath.Join(tmp, file), data, 0o644); err != nil {
			return err
		}
	}
	notes := ReleaseNotes(section, in.Epoch.UTC().Format(time.DateOnly))
	if err := os.WriteFile(filepath.Join(tmp, NotesFile), []byte(notes), 0o644); err != nil {
		return err
	}
	err = WriteArchive(filepath.Join(tmp, BjobArchiveName(in.Version, in.OS, in.Arch)), []archiveFile{
		{name: "kubectl-bjob", src: in.Bjob, mode: 0o755},
		{name: "kubectl_complete-bjob", src: in.BjobCompletion, mode: 0o755},
		{name: "LICENSE", src: in.License, mode: 0o644},
	}, in.Epoch)
	if err != nil {
		return err
	}
	if err := WriteChecksums(tmp); err != nil {
		return err
	}
	if err := os.RemoveAll(out); err != nil {
		return err
	}
	if err := os.Rename(tmp, out); err != nil {
		return err
	}
	return Verify(out, in.Version)
}

// Verify checks a release directory: SHA256SUMS, the manifests' images,
// the images' tags and version label.
func Verify(dir, version string) error {
	if err := VerifyChecksums(dir); err != nil {
		return err
	}
	for file, image := range map[string]string{ServerManifestFile: ServerImage, KueueManifestFile: KueueImage} {
		data, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			return err
		}
		if err := CheckManifestImages(data, image, version); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
	}
	for file, image := range map[string]string{ServerImageFile: ServerImage, KueueImageFile: KueueImage} {
		if err := CheckImageArchive(filepath.Join(dir, file), image+":"+version, version); err != nil {
			return err
		}
	}
	return nil
}
