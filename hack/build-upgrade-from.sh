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

# Builds the server of the previous version, the one hack/upgrade-from
# pins, from this repository's own git history:
#
#   _output/upgrade/<version>-<commit>/batch-apiserver
#
# The commit's tree is exported with `git archive` (no checkout, the work
# tree is left alone) and built as `make build` builds (static, -trimpath)
# with the same Go caches, so that only our own packages compile when the
# dependencies did not change. It prints the binary's path on its last
# line. A binary already built for the pinned commit is reused; FORCE=1
# rebuilds it. Runs of it take turns (flock on _output/upgrade/.lock), so
# make test can start it in the background early and test-upgrade waits
# for that build instead of starting a second one.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

log() { echo "+++ [build-upgrade-from] $*" >&2; }
die() { echo "!!! [build-upgrade-from] $*" >&2; exit 1; }

read -r VERSION COMMIT < <(grep -v -e '^#' -e '^[[:space:]]*$' hack/upgrade-from | head -n1) ||
	die "hack/upgrade-from names no version and commit"
[[ "${VERSION}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
	die "hack/upgrade-from: '${VERSION}' is not a version vMAJOR.MINOR.PATCH"
[[ "${COMMIT}" =~ ^[0-9a-f]{40}$ ]] ||
	die "hack/upgrade-from: '${COMMIT}' is not a full commit hash"
git cat-file -e "${COMMIT}^{commit}" 2>/dev/null ||
	die "commit ${COMMIT} (${VERSION}) is not in this clone's history (a shallow clone? run: git fetch --unshallow)"

mkdir -p "${REPO_ROOT}/_output/upgrade"
exec 9>"${REPO_ROOT}/_output/upgrade/.lock"
if ! flock -n 9; then
	log "another build of ${VERSION} is running: waiting for it"
	flock 9
fi

OUT="${REPO_ROOT}/_output/upgrade/${VERSION}-${COMMIT:0:12}"
BIN="${OUT}/batch-apiserver"
if [[ "${FORCE:-}" != "1" && -x "${BIN}" ]]; then
	log "up to date: ${VERSION} (${COMMIT:0:12}) in ${OUT} (FORCE=1 to rebuild)"
	echo "${BIN}"
	exit 0
fi

SRC="${OUT}/src"
rm -rf "${OUT}"
mkdir -p "${SRC}"
git archive --format=tar "${COMMIT}" | tar -x -C "${SRC}"

# The exported tree has no .git, so its own hack/version.sh cannot name the
# commit: stamp the pinned version and commit, dated at the commit's time,
# as a release build of that commit would be.
EPOCH="$(git log -1 --format=%ct "${COMMIT}")"
LDFLAGS="$(cd "${SRC}" && SOURCE_DATE_EPOCH="${EPOCH}" bash hack/version.sh --ldflags)"
LDFLAGS="$(sed -E \
	-e "s#(component-base/version\.gitVersion=)[^ ]*#\1${VERSION}#" \
	-e "s#(component-base/version\.gitCommit=)[^ ]*#\1${COMMIT}#" \
	-e "s#(component-base/version\.gitTreeState=)[^ ]*#\1clean#" <<<"${LDFLAGS}")"

log "building ${VERSION} (${COMMIT:0:12}) into ${OUT}"
start="$(date +%s)"
(cd "${SRC}" && GOWORK=off CGO_ENABLED=0 go build -trimpath -buildvcs=false -ldflags "-s -w ${LDFLAGS}" -o "${BIN}" ./cmd/batch-apiserver)
rm -rf "${SRC}"
log "built in $(($(date +%s) - start))s: $("${BIN}" --version 2>/dev/null || echo '?')"
echo "${BIN}"
