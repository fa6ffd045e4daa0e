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

# Prints the version of the source tree, as Kubernetes' hack/lib/version.sh
# does for its components:
#
#   hack/version.sh [--ldflags]   -X flags stamping k8s.io/component-base/version
#   hack/version.sh --version     the git version, e.g. v0.1.0-3e7feff
#   hack/version.sh --image-tag   the git version as an image tag
#   hack/version.sh --commit      the full commit
#   hack/version.sh --tree-state  clean or dirty
#   hack/version.sh --build-date  the build date (ISO 8601, UTC)
#   hack/version.sh --epoch       the build date in seconds since the epoch
#
# The git version is `git describe --tags` of the nearest v* tag, or
# ${BASE_VERSION}-<short commit> when there is none, with -dirty appended
# when tracked or untracked files differ from the commit.
#
# A release build sets RELEASE_VERSION (make release VERSION=vX.Y.Z does,
# docs/releasing.md): the git version is then exactly that, whatever tags
# the clone has, after three checks that fail the script: the version is
# vMAJOR.MINOR.PATCH with an optional -prerelease (semver 2.0, no build
# metadata: an image tag cannot hold its '+'); the tree is clean; a tag of
# that name, if there is one, is on this commit. The build date is
# the commit time (or SOURCE_DATE_EPOCH when set), never the wall clock, so
# that the same commit always builds the same binary and image.
#
# gitMajor and gitMinor are NOT the git version's: they are the Kubernetes
# release whose API the binary serves (1.37 for k8s.io/component-base
# v0.37.x in go.mod), as in a kube-apiserver binary. The generic apiserver
# decides from them whether an API version is deprecated (v1beta1 is, since
# 1.37); pkg/apiserver refuses to start when they disagree with the API.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

# The version of an untagged tree; also the tag of the first release, which
# artifacts/deploy/deployment.yaml names.
BASE_VERSION="v0.1.0"
VERSION_PKG="k8s.io/component-base/version"

die() { echo "!!! [version] $*" >&2; exit 1; }

# A semver 2.0 pre-release identifier: digits without a leading zero, or
# alphanumerics and hyphens with at least one non-digit.
PRE_ID='(0|[1-9][0-9]*|[0-9]*[A-Za-z-][0-9A-Za-z-]*)'
SEMVER_RE="^v(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)\\.(0|[1-9][0-9]*)(-${PRE_ID}(\\.${PRE_ID})*)?\$"

# check_release_version dies unless $1 may stamp a release of HEAD.
check_release_version() {
	local v="$1" tagged
	[[ "${v}" =~ ${SEMVER_RE} ]] ||
		die "RELEASE_VERSION=${v} is not a release version: want vMAJOR.MINOR.PATCH or vMAJOR.MINOR.PATCH-PRERELEASE (e.g. v0.2.0, v1.0.0-rc.1)"
	[[ "${GIT_TREE_STATE}" == "clean" ]] ||
		die "RELEASE_VERSION=${v}: the tree differs from commit ${GIT_COMMIT:0:12} (git status --porcelain); a release is built from a commit, nothing else"
	if tagged="$(git rev-parse -q --verify "refs/tags/${v}^{commit}")"; then
		[[ "${tagged}" == "${GIT_COMMIT}" ]] ||
			die "RELEASE_VERSION=${v}: tag ${v} names commit ${tagged:0:12}, not this one (${GIT_COMMIT:0:12})"
	fi
}

component_base="$(awk '$1 == "k8s.io/component-base" { print $2; exit }' go.mod)"
[[ "${component_base}" =~ ^v0\.([0-9]+)\.[0-9]+$ ]] ||
	die "cannot read the k8s.io/component-base requirement from go.mod (got '${component_base}')"
KUBE_MAJOR="1"
KUBE_MINOR="${BASH_REMATCH[1]}"

if git rev-parse --git-dir >/dev/null 2>&1; then
	GIT_COMMIT="$(git rev-parse HEAD)"
	if [[ -z "$(git status --porcelain 2>/dev/null)" ]]; then
		GIT_TREE_STATE="clean"
	else
		GIT_TREE_STATE="dirty"
	fi
	if ! GIT_VERSION="$(git describe --tags --match 'v[0-9]*' --abbrev=7 HEAD 2>/dev/null)"; then
		GIT_VERSION="${BASE_VERSION}-$(git rev-parse --short=7 HEAD)"
	fi
	if [[ "${GIT_TREE_STATE}" == "dirty" ]]; then
		GIT_VERSION+="-dirty"
	fi
	EPOCH="${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct HEAD)}"
	if [[ -n "${RELEASE_VERSION:-}" ]]; then
		check_release_version "${RELEASE_VERSION}"
		GIT_VERSION="${RELEASE_VERSION}"
	fi
else
	[[ -z "${RELEASE_VERSION:-}" ]] ||
		die "RELEASE_VERSION=${RELEASE_VERSION}: a release is built from a git clone (its commit and tags are checked)"

	# A source archive without .git: no commit to name.
	GIT_COMMIT=""
	GIT_TREE_STATE=""
	GIT_VERSION="${BASE_VERSION}"
	EPOCH="${SOURCE_DATE_EPOCH:-0}"
fi
[[ "${EPOCH}" =~ ^[0-9]+$ ]] || die "SOURCE_DATE_EPOCH must be seconds since the epoch (got '${EPOCH}')"
BUILD_DATE="$(date -u -d "@${EPOCH}" +%Y-%m-%dT%H:%M:%SZ 2>/dev/null || date -u -r "${EPOCH}" +%Y-%m-%dT%H:%M:%SZ)"

ldflags() {
	local flags=(
		"-X ${VERSION_PKG}.gitMajor=${KUBE_MAJOR}"
		"-X ${VERSION_PKG}.gitMinor=${KUBE_MINOR}"
		"-X ${VERSION_PKG}.gitVersion=${GIT_VERSION}"
		"-X ${VERSION_PKG}.gitCommit=${GIT_COMMIT}"
		"-X ${VERSION_PKG}.gitTreeState=${GIT_TREE_STATE}"
		"-X ${VERSION_PKG}.buildDate=${BUILD_DATE}"
	)
	echo "${flags[*]}"
}

case "${1:---ldflags}" in
--ldflags) ldflags ;;
--version) echo "${GIT_VERSION}" ;;
# Image tags allow [A-Za-z0-9_.-]; a git version never holds anything else
# but the '+' of build metadata.
--image-tag) echo "${GIT_VERSION//+/_}" ;;
--commit) echo "${GIT_COMMIT}" ;;
--tree-state) echo "${GIT_TREE_STATE}" ;;
--build-date) echo "${BUILD_DATE}" ;;
--epoch) echo "${EPOCH}" ;;
--base-version) echo "${BASE_VERSION}" ;;
*) die "unknown option $1 (see the comment at the top of $0)" ;;
esac
