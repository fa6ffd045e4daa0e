#!/usr/bin/env bash
# Copyright The batch-apiserver Authors.
#
# Licensed under the Apache License, Version 2.0 (the "License");
# you may not use this file except in compliance with the License.
# You may obtain a copy of the License at
#
#     http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS,
# WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
# See the License for the specific language governing permissions and
# limitations under the License.

# Cuts release VERSION of this commit (make release VERSION=vX.Y.Z;
# docs/releasing.md says when and how):
#
#   hack/release.sh vX.Y.Z
#
# 1. Refuses, before building anything, unless hack/version.sh accepts
#    RELEASE_VERSION=VERSION (semver, a clean tree, no tag of that name on
#    another commit) and CHANGELOG.md has a section for VERSION.
# 2. Builds, stamped with VERSION, for linux and this machine's GOARCH:
#    batch-apiserver and kubectl-bjob with their image (make build image,
#    into _output/release-build/VERSION), batch-kueue alone (not Kueue's
#    manager, which only the tests run) and its image.
# 3. Writes _output/release/VERSION (go run ./hack/release assemble): the
#    two image tarballs, the manifests rendered with the release's tags,
#    the kubectl-bjob archive, RELEASE_NOTES.md, SHA256SUMS.
# 4. Checks what a user will: sha256sum -c SHA256SUMS, the images the
#    manifests name, each image's tag and version label, --version of both
#    binaries.
#
# It tags and pushes nothing: that is the release manager's, after
# reading the result.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

log() { echo "+++ [release] $*"; }
die() { echo "!!! [release] $*" >&2; exit 1; }

VERSION="${1:-}"
[[ -n "${VERSION}" ]] || die "usage: make release VERSION=vX.Y.Z (docs/releasing.md)"

start="$(date +%s)"
export GOWORK=off

# 1. Refuse early. version.sh prints why it refuses on standard error.
RELEASE_VERSION="${VERSION}" bash hack/version.sh --version >/dev/null ||
	die "hack/version.sh refuses ${VERSION} (above)"
log "checking CHANGELOG.md for ${VERSION}"
go run ./hack/release notes -version "${VERSION}" -changelog CHANGELOG.md >/dev/null ||
	die "CHANGELOG.md has no section for ${VERSION} (above); docs/releasing.md"

# Every hack/version.sh run from here on, the Makefile's included, stamps
# VERSION.
export RELEASE_VERSION="${VERSION}"
GOARCH="$(go env GOARCH)"
export GOOS=linux GOARCH
COMMIT="$(bash hack/version.sh --commit)"
EPOCH="$(bash hack/version.sh --epoch)"
[[ "$(bash hack/version.sh --version)" == "${VERSION}" ]] || die "hack/version.sh does not stamp ${VERSION}"

BUILD="_output/release-build/${VERSION}"
OUT="_output/release/${VERSION}"
rm -rf "${BUILD}"
mkdir -p "${BUILD}/bin" "${BUILD}/images"

# 2. Build.
log "building batch-apiserver, kubectl-bjob and the batch-apiserver image ${VERSION} (${COMMIT:0:12}, linux/${GOARCH})"
make --no-print-directory build image \
	BIN_DIR="${BUILD}/bin" IMAGE_DIR="${BUILD}/images" IMAGE_NAME=batch-apiserver IMAGE_TAG="${VERSION}"

log "building batch-kueue and its image ${VERSION}"
LDFLAGS="$(bash hack/version.sh --ldflags)"
CGO_ENABLED=0 go build -C cmd/batch-kueue -trimpath -ldflags "-s -w ${LDFLAGS}" \
	-o "${REPO_ROOT}/${BUILD}/bin/batch-kueue" .
(cd hack/image && go run . \
	--binary "${REPO_ROOT}/${BUILD}/bin/batch-kueue" --output "${REPO_ROOT}/${BUILD}/images/batch-kueue.tar" \
	--tag "batch-kueue:${VERSION}" --version "${VERSION}" --revision "${COMMIT}" \
	--created "${EPOCH}" --os linux --arch "${GOARCH}")

# 3. Assemble.
log "writing ${OUT}"
go run ./hack/release assemble -version "${VERSION}" -out "${OUT}" -epoch "${EPOCH}" \
	-os linux -arch "${GOARCH}" -changelog CHANGELOG.md -artifacts artifacts \
	-server-image "${BUILD}/images/batch-apiserver.tar" -kueue-image "${BUILD}/images/batch-kueue.tar" \
	-bjob "${BUILD}/bin/kubectl-bjob" -bjob-completion cmd/kubectl-bjob/kubectl_complete-bjob -license LICENSE

# 4. Check.
(cd "${OUT}" && sha256sum -c --quiet SHA256SUMS) || die "sha256sum -c ${OUT}/SHA256SUMS failed"
go run ./hack/release verify -version "${VERSION}" -dir "${OUT}"
for bin in batch-apiserver kubectl-bjob; do
	got="$("${BUILD}/bin/${bin}" --version)"
	[[ "${got}" == "${bin} ${VERSION}" ]] || die "${bin} --version printed '${got}', want '${bin} ${VERSION}'"
	log "${bin} --version: ${got}"
done
if grep -qx "## ${VERSION} - unreleased" CHANGELOG.md; then
	log "NOTE: CHANGELOG.md says ${VERSION} is unreleased; RELEASE_NOTES.md is dated with the commit ($(bash hack/version.sh --build-date | cut -dT -f1)). Date the section in the commit you tag (docs/releasing.md)."
fi

log "${OUT} ($(($(date +%s) - start)) s):"
(cd "${OUT}" && ls -l --time-style=+ | tail -n +2 | awk '{ printf "    %12d  %s\n", $5, $NF }')
