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
	"compress/gzip"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// repoRoot is the repository root, seen from this package's directory.
var repoRoot = filepath.Join("..", "..")

func TestParseChangelog(t *testing.T) {
	cases := []struct {
		name      string
		changelog string
		want      []Section
		// wantLine is the line of the HeadingError, 0 for none.
		wantLine int
	}{{
		name: "two releases under a preamble",
		changelog: "# Changelog\n\nintro\n\n## v0.2.0 - unreleased\n\n- new\n\n### Fixed\n\n- old bug\n\n" +
			"## v0.1.0 - 2026-12-07\n\nfirst\n",
		want: []Section{
			{Version: "v0.2.0", Date: Unreleased, Body: "- new\n\n### Fixed\n\n- old bug"},
			{Version: "v0.1.0", Date: "2026-12-07", Body: "first"},
		},
	}, {
		name:      "pre-release, trailing spaces",
		changelog: "## v1.0.0-rc.1 - 2027-01-31  \nrc\n",
		want:      []Section{{Version: "v1.0.0-rc.1", Date: "2027-01-31", Body: "rc"}},
	}, {
		name:      "empty section",
		changelog: "## v0.1.0 - 2026-12-07\n\n",
		want:      []Section{{Version: "v0.1.0", Date: "2026-12-07"}},
	}, {
		name:      "no version",
		changelog: "## v0.1.0 - 2026-12-07\nx\n## Unreleased\n",
		wantLine:  3,
	}, {
		name:      "another dash",
		changelog: "## v0.1.0 – 2026-12-07\n",
		wantLine:  1,
	}, {
		name:      "no v",
		changelog: "## 0.1.0 - 2026-12-07\n",
		wantLine:  1,
	}, {
		name:      "not a date",
		changelog: "\n## v0.1.0 - 2026-13-07\n",
		wantLine:  2,
	}, {
		name:      "two sections of one version",
		changelog: "## v0.1.0 - unreleased\na\n## v0.1.0 - 2026-12-07\nb\n",
		wantLine:  3,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseChangelog([]byte(tc.changelog))
			var he *HeadingError
			gotLine := 0
			if errors.As(err, &he) {
				gotLine = he.Line
			} else if err != nil {
				t.Fatalf("unexpected error: %v", err)
			}
			if gotLine != tc.wantLine {
				t.Fatalf("heading error at line %d, want %d (%v)", gotLine, tc.wantLine, err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("sections (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFindSection(t *testing.T) {
	changelog := []byte("## v0.3.0 - unreleased\n\n## v0.2.0 - 2027-01-02\n- two\n## v0.1.0 - 2026-12-07\n- one\n")
	cases := []struct {
		version string
		want    Section
		wantErr error
	}{
		{version: "v0.2.0", want: Section{Version: "v0.2.0", Date: "2027-01-02", Body: "- two"}},
		{version: "v0.1.0", want: Section{Version: "v0.1.0", Date: "2026-12-07", Body: "- one"}},
		{version: "v0.3.0", wantErr: ErrEmptySection},
		{version: "v0.1.1", wantErr: ErrNoSection},
		{version: "v0.1", wantErr: ErrNoSection},
	}
	for _, tc := range cases {
		t.Run(tc.version, func(t *testing.T) {
			got, err := FindSection(changelog, tc.version)
			if !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
				t.Fatalf("error %v, want %v", err, tc.wantErr)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("section (-want +got):\n%s", diff)
			}
		})
	}
}

// semver is a release version's precedence, enough to order a changelog.
type semver struct {
	core [3]int
	pre  string
}

var semverRE = regexp.MustCompile(`^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(?:-([0-9A-Za-z.-]+))?$`)

func parseSemver(t *testing.T, v string) semver {
	t.Helper()
	m := semverRE.FindStringSubmatch(v)
	if m == nil {
		t.Fatalf("%s is not vMAJOR.MINOR.PATCH[-PRE]", v)
	}
	var s semver
	for i := range 3 {
		s.core[i], _ = strconv.Atoi(m[i+1])
	}
	s.pre = m[4]
	return s
}

// less orders by the core version, then a pre-release before its release
// (and pre-releases by their text, which is enough for rc.1 < rc.2).
func (a semver) less(b semver) bool {
	if c := slices.Compare(a.core[:], b.core[:]); c != 0 {
		return c < 0
	}
	switch {
	case a.pre == b.pre:
		return false
	case a.pre == "":
		return false
	case b.pre == "":
		return true
	}
	return a.pre < b.pre
}

// TestRepoChangelog checks CHANGELOG.md itself: it parses, each version is
// one make release takes, newest first, only the newest may be undated,
// dates never go backwards, every section says something, and the first
// release is there.
func TestRepoChangelog(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join(repoRoot, "CHANGELOG.md"))
	if err != nil {
		t.Fatal(err)
	}
	sections, err := ParseChangelog(raw)
	if err != nil {
		t.Fatalf("CHANGELOG.md: %v", err)
	}
	if len(sections) == 0 || sections[len(sections)-1].Version != "v0.1.0" {
		t.Fatalf("CHANGELOG.md: the last section is not v0.1.0: %+v", sections)
	}
	for i, s := range sections {
		if s.Body == "" {
			t.Errorf("%s: empty section", s.Version)
		}
		if s.Date == Unreleased && i > 0 {
			t.Errorf("%s is undated below %s: only the newest section may be unreleased", s.Version, sections[0].Version)
		}
		if i == 0 {
			parseSemver(t, s.Version)
			continue
		}
		prev := sections[i-1]
		if !parseSemver(t, s.Version).less(parseSemver(t, prev.Version)) {
			t.Errorf("%s is listed below %s: newest first", s.Version, prev.Version)
		}
		if prev.Date != Unreleased && prev.Date < s.Date {
			t.Errorf("%s (%s) is dated before %s (%s)", prev.Version, prev.Date, s.Version, s.Date)
		}
	}
}

func TestCheckManifestImages(t *testing.T) {
	deployment := func(images ...string) string {
		var b strings.Builder
		b.WriteString("apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: x\nspec:\n  template:\n    spec:\n      initContainers:\n      - name: init\n        image: busybox:1.36\n      containers:\n")
		for i, image := range images {
			b.WriteString("      - name: c" + strconv.Itoa(i) + "\n        image: " + image + "\n")
		}
		return b.String()
	}
	cases := []struct {
		name      string
		manifests string
		wantErr   error
	}{
		{name: "the tag", manifests: deployment("batch-apiserver:v1.2.3")},
		{name: "a registry with a port", manifests: deployment("localhost:5000/team/batch-apiserver:v1.2.3")},
		{name: "beside other images, in a second document", manifests: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n---\n" + deployment("registry.k8s.io/etcd:3.7.0-0", "batch-apiserver:v1.2.3")},
		{name: "another tag", manifests: deployment("batch-apiserver:v1.2.3", "batch-apiserver:v0.1.0"), wantErr: ErrImage},
		{name: "no tag", manifests: deployment("batch-apiserver"), wantErr: ErrImage},
		{name: "a digest only", manifests: deployment("batch-apiserver@sha256:0123"), wantErr: ErrImage},
		{name: "not there", manifests: deployment("batch-kueue:v1.2.3"), wantErr: ErrImage},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckManifestImages([]byte(tc.manifests), ServerImage, "v1.2.3")
			if !errors.Is(err, tc.wantErr) || (err != nil) != (tc.wantErr != nil) {
				t.Errorf("error %v, want %v", err, tc.wantErr)
			}
		})
	}
}

// writeImageArchive writes a tarball shaped as hack/image's docker save
// view: manifest.json naming the tag and the configuration blob with the
// version label (no layer: nothing here reads one).
func writeImageArchive(t *testing.T, file, tag, version string) {
	t.Helper()
	config, err := json.Marshal(map[string]any{"config": map[string]any{"Labels": map[string]string{versionLabel: version}}})
	if err != nil {
		t.Fatal(err)
	}
	configPath := "blobs/sha256/" + strings.Repeat("c", 64)
	manifest, err := json.Marshal([]map[string]any{{"Config": configPath, "RepoTags": []string{tag}, "Layers": []string{}}})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range []struct {
		name string
		data []byte
	}{{configPath, config}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data))}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(f.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testInputs are the inputs of a release of version in dir: image
// tarballs as make release tags them, a stand-in binary, a changelog with
// the section, and the repository's own manifests, completion helper and
// license.
func testInputs(t *testing.T, dir, version string) Inputs {
	t.Helper()
	in := Inputs{
		Version:        version,
		Epoch:          time.Date(2027, 1, 2, 3, 4, 5, 0, time.UTC),
		OS:             "linux",
		Arch:           "amd64",
		Changelog:      filepath.Join(dir, "CHANGELOG.md"),
		Artifacts:      filepath.Join(repoRoot, "artifacts"),
		ServerImage:    filepath.Join(dir, "server.tar"),
		KueueImage:     filepath.Join(dir, "kueue.tar"),
		Bjob:           filepath.Join(dir, "kubectl-bjob"),
		BjobCompletion: filepath.Join(repoRoot, "cmd", "kubectl-bjob", "kubectl_complete-bjob"),
		License:        filepath.Join(repoRoot, "LICENSE"),
	}
	writeImageArchive(t, in.ServerImage, ServerImage+":"+version, version)
	writeImageArchive(t, in.KueueImage, KueueImage+":"+version, version)
	if err := os.WriteFile(in.Bjob, []byte("#!/bin/sh\necho kubectl-bjob "+version+"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	changelog := "# Changelog\n\n## " + version + " - unreleased\n\n- a change\n\n## v0.1.0 - 2026-12-07\n\n- first\n"
	if err := os.WriteFile(in.Changelog, []byte(changelog), 0o644); err != nil {
		t.Fatal(err)
	}
	return in
}

// sha256sumCheck runs `sha256sum -c SHA256SUMS` in dir, as docs/releasing.md
// tells a user to, and returns its error.
func sha256sumCheck(t *testing.T, dir string) error {
	t.Helper()
	if _, err := exec.LookPath("sha256sum"); err != nil {
		t.Skipf("sha256sum not in PATH: %v", err)
	}
	cmd := exec.CommandContext(t.Context(), "sha256sum", "-c", "--quiet", ChecksumsFile)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Logf("sha256sum -c: %s", out)
	}
	return err
}

// TestAssemble writes a release directory from stand-in images and
// binary and the repository's manifests, and checks what a user checks:
// the files, SHA256SUMS with sha256sum -c (and that it catches a changed
// file), the images the manifests name, the notes, the plugin archive.
func TestAssemble(t *testing.T) {
	const version = "v9.8.7-rc.1"
	in := testInputs(t, t.TempDir(), version)
	out := filepath.Join(t.TempDir(), version)
	if err := Assemble(in, out); err != nil {
		t.Fatalf("Assemble: %v", err)
	}

	entries, err := os.ReadDir(out)
	if err != nil {
		t.Fatal(err)
	}
	var files []string
	for _, e := range entries {
		files = append(files, e.Name())
	}
	want := []string{
		NotesFile, ChecksumsFile, ServerImageFile, ServerManifestFile, KueueImageFile, KueueManifestFile,
		"kubectl-bjob-" + version + "-linux-amd64.tar.gz",
	}
	if diff := cmp.Diff(slices.Sorted(slices.Values(want)), files); diff != "" {
		t.Errorf("release files (-want +got):\n%s", diff)
	}
	if _, err := os.Stat(out + ".tmp"); !os.IsNotExist(err) {
		t.Errorf("the staging directory is left behind: %v", err)
	}

	if err := sha256sumCheck(t, out); err != nil {
		t.Errorf("sha256sum -c SHA256SUMS: %v", err)
	}

	ours := func(file string) []string {
		data, err := os.ReadFile(filepath.Join(out, file))
		if err != nil {
			t.Fatal(err)
		}
		images, err := ContainerImages(data)
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		var refs []string
		for _, ref := range images {
			if repo, _ := splitImage(ref); path.Base(repo) == ServerImage || path.Base(repo) == KueueImage {
				refs = append(refs, ref)
			}
		}
		return refs
	}
	if diff := cmp.Diff([]string{"batch-apiserver:" + version}, ours(ServerManifestFile)); diff != "" {
		t.Errorf("%s images (-want +got):\n%s", ServerManifestFile, diff)
	}
	if diff := cmp.Diff([]string{"batch-kueue:" + version}, ours(KueueManifestFile)); diff != "" {
		t.Errorf("%s images (-want +got):\n%s", KueueManifestFile, diff)
	}

	notes, err := os.ReadFile(filepath.Join(out, NotesFile))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff("# batch-apiserver "+version+" (2027-01-02)\n\n- a change\n", string(notes)); diff != "" {
		t.Errorf("%s (-want +got):\n%s", NotesFile, diff)
	}

	type member struct {
		Name    string
		Mode    int64
		ModTime time.Time
	}
	var members []member
	f, err := os.Open(filepath.Join(out, BjobArchiveName(version, "linux", "amd64")))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		members = append(members, member{h.Name, h.Mode, h.ModTime.UTC()})
	}
	wantMembers := []member{
		{"kubectl-bjob", 0o755, in.Epoch},
		{"kubectl_complete-bjob", 0o755, in.Epoch},
		{"LICENSE", 0o644, in.Epoch},
	}
	if diff := cmp.Diff(wantMembers, members); diff != "" {
		t.Errorf("plugin archive (-want +got):\n%s", diff)
	}

	// The same inputs give the same files.
	again := filepath.Join(t.TempDir(), version)
	if err := Assemble(in, again); err != nil {
		t.Fatalf("Assemble again: %v", err)
	}
	for _, dir := range []string{out, again} {
		sums, err := os.ReadFile(filepath.Join(dir, ChecksumsFile))
		if err != nil {
			t.Fatal(err)
		}
		want, _ := os.ReadFile(filepath.Join(out, ChecksumsFile))
		if diff := cmp.Diff(string(want), string(sums)); diff != "" {
			t.Errorf("a second release from the same inputs differs (-first +second):\n%s", diff)
		}
	}

	// A changed file or one SHA256SUMS does not list is caught.
	if err := os.WriteFile(filepath.Join(again, "extra"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := VerifyChecksums(again); err == nil {
		t.Errorf("VerifyChecksums passed with a file SHA256SUMS does not list")
	}
	kueue := filepath.Join(out, KueueManifestFile)
	data, err := os.ReadFile(kueue)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kueue, bytes.Replace(data, []byte(version), []byte("v0.1.0"), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	if sha256sumCheck(t, out) == nil {
		t.Errorf("sha256sum -c passed on a changed %s", KueueManifestFile)
	}
	if err := Verify(out, version); err == nil {
		t.Errorf("Verify passed on a changed %s", KueueManifestFile)
	}
}

// TestAssembleRefuses: a release whose images or changelog do not match
// its version is not written, and an earlier release directory stays.
func TestAssembleRefuses(t *testing.T) {
	const version = "v9.8.7"
	cases := []struct {
		name    string
		modify  func(t *testing.T, in *Inputs)
		wantErr error
	}{{
		name: "server image tagged with another version",
		modify: func(t *testing.T, in *Inputs) {
			writeImageArchive(t, in.ServerImage, ServerImage+":v0.1.0-3e7feff", version)
		},
		wantErr: ErrImage,
	}, {
		name: "kueue image labelled with another version",
		modify: func(t *testing.T, in *Inputs) {
			writeImageArchive(t, in.KueueImage, KueueImage+":"+version, "v0.1.0-3e7feff")
		},
		wantErr: ErrImage,
	}, {
		name: "images swapped",
		modify: func(t *testing.T, in *Inputs) {
			in.ServerImage, in.KueueImage = in.KueueImage, in.ServerImage
		},
		wantErr: ErrImage,
	}, {
		name: "no changelog section",
		modify: func(t *testing.T, in *Inputs) {
			in.Version = "v9.8.8"
			writeImageArchive(t, in.ServerImage, ServerImage+":v9.8.8", "v9.8.8")
			writeImageArchive(t, in.KueueImage, KueueImage+":v9.8.8", "v9.8.8")
		},
		wantErr: ErrNoSection,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := testInputs(t, t.TempDir(), version)
			out := filepath.Join(t.TempDir(), "release")
			if err := os.MkdirAll(out, 0o755); err != nil {
				t.Fatal(err)
			}
			earlier := filepath.Join(out, "earlier")
			if err := os.WriteFile(earlier, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			tc.modify(t, &in)
			if err := Assemble(in, out); !errors.Is(err, tc.wantErr) {
				t.Fatalf("Assemble: %v, want %v", err, tc.wantErr)
			}
			if _, err := os.Stat(earlier); err != nil {
				t.Errorf("the earlier directory is gone: %v", err)
			}
		})
	}
}

// gitRepo is a scratch git repository holding hack/version.sh and go.mod,
// so that tags and commits can be made without touching this one.
type gitRepo struct {
	t   *testing.T
	dir string
	env []string
}

func newGitRepo(t *testing.T) *gitRepo {
	t.Helper()
	for _, tool := range []string{"git", "bash"} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("%s not in PATH: %v", tool, err)
		}
	}
	r := &gitRepo{t: t, dir: t.TempDir(), env: append(os.Environ(),
		"GIT_CONFIG_GLOBAL=/dev/null", "GIT_CONFIG_NOSYSTEM=1",
		"GIT_AUTHOR_NAME=test", "GIT_AUTHOR_EMAIL=test@example.com",
		"GIT_COMMITTER_NAME=test", "GIT_COMMITTER_EMAIL=test@example.com",
		"RELEASE_VERSION=", "SOURCE_DATE_EPOCH=",
	)}
	for _, f := range []string{"hack/version.sh", "go.mod"} {
		data, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		r.write(f, string(data))
	}
	r.git("init", "-q", "-b", "main")
	r.commit("first")
	return r
}

func (r *gitRepo) write(file, data string) {
	r.t.Helper()
	p := filepath.Join(r.dir, file)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		r.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
		r.t.Fatal(err)
	}
}

func (r *gitRepo) git(args ...string) string {
	r.t.Helper()
	cmd := exec.CommandContext(r.t.Context(), "git", args...)
	cmd.Dir, cmd.Env = r.dir, r.env
	out, err := cmd.CombinedOutput()
	if err != nil {
		r.t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return strings.TrimSpace(string(out))
}

func (r *gitRepo) commit(msg string) {
	r.t.Helper()
	r.git("add", "-A")
	r.git("-c", "commit.gpgsign=false", "commit", "-q", "--allow-empty", "-m", msg)
}

// version runs hack/version.sh --version with RELEASE_VERSION set to
// release (none when empty) and returns what it printed and whether it
// succeeded; a refusal prints nothing on standard output.
func (r *gitRepo) version(release string) (string, bool) {
	r.t.Helper()
	cmd := exec.CommandContext(r.t.Context(), "bash", "hack/version.sh", "--version")
	cmd.Dir, cmd.Env = r.dir, append(slices.Clone(r.env), "RELEASE_VERSION="+release)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		r.t.Fatalf("hack/version.sh: %v", err)
	}
	if err != nil && len(out) > 0 {
		r.t.Errorf("hack/version.sh failed and printed %q", out)
	}
	return strings.TrimSpace(string(out)), err == nil
}

// TestVersionScheme runs hack/version.sh in a scratch repository through
// a release's life: development builds, a release build, the tag, the
// commits after it.
func TestVersionScheme(t *testing.T) {
	r := newGitRepo(t)
	short := func() string { return r.git("rev-parse", "--short=7", "HEAD") }

	type row struct {
		release string // RELEASE_VERSION, "" for a development build
		want    string // "" for refused
	}
	check := func(step string, rows ...row) {
		t.Helper()
		for _, tc := range rows {
			got, ok := r.version(tc.release)
			if want := tc.want; got != want || ok != (want != "") {
				t.Errorf("%s, RELEASE_VERSION=%q: got %q (ok %v), want %q (refused if empty)", step, tc.release, got, ok, want)
			}
		}
	}

	check("untagged, clean",
		row{"", "v0.1.0-" + short()},
		row{"v0.2.0", "v0.2.0"},
		row{"v1.0.0-rc.1", "v1.0.0-rc.1"},
		row{"v0.2.0-alpha.0.x-y", "v0.2.0-alpha.0.x-y"},
		row{"v10.20.30", "v10.20.30"},
	)
	for _, bad := range []string{"0.2.0", "v0.2", "v0.2.0.1", "v00.2.0", "v0.02.0", "v0.2.0-", "v0.2.0-01", "v0.2.0-rc..1", "v0.2.0+build.1", "v0.2.0 ", "V0.2.0", "v0.2.0-rc_1"} {
		check("invalid version", row{bad, ""})
	}

	r.write("untracked", "x")
	check("untagged, an untracked file", row{"", "v0.1.0-" + short() + "-dirty"}, row{"v0.2.0", ""})
	r.commit("second")

	r.git("tag", "v0.2.0")
	check("tagged v0.2.0 here", row{"", "v0.2.0"}, row{"v0.2.0", "v0.2.0"}, row{"v0.2.1", "v0.2.1"})

	r.commit("third")
	check("a commit after v0.2.0",
		row{"", "v0.2.0-1-g" + short()},
		row{"v0.2.0", ""},
		row{"v0.2.1", "v0.2.1"},
	)

	r.git("tag", "-a", "-m", "annotated", "v0.2.1")
	check("annotated tag v0.2.1 here", row{"", "v0.2.1"}, row{"v0.2.1", "v0.2.1"}, row{"v0.2.0", ""})
}

// TestVersionScriptStampsRelease checks that the -ldflags and the image
// tag of a release build carry the release version.
func TestVersionScriptStampsRelease(t *testing.T) {
	r := newGitRepo(t)
	for option, want := range map[string]string{
		"--ldflags":   "-X k8s.io/component-base/version.gitVersion=v0.2.0 ",
		"--image-tag": "v0.2.0",
	} {
		cmd := exec.CommandContext(t.Context(), "bash", "hack/version.sh", option)
		cmd.Dir, cmd.Env = r.dir, append(slices.Clone(r.env), "RELEASE_VERSION=v0.2.0")
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("hack/version.sh %s: %v", option, err)
		}
		if got := string(out); !strings.Contains(got, want) && strings.TrimSpace(got) != want {
			t.Errorf("hack/version.sh %s printed %q, want it to hold %q", option, got, want)
		}
	}
}
