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

# Builds promtool (checks and unit tests of the rules in
# artifacts/monitoring) from the github.com/prometheus/prometheus version
# pinned in hack/tools/promtool/go.mod into _output/bin/promtool.
#
# Skipped when _output/bin/.promtool-version matches the pinned version and
# the hash of hack/tools/promtool/go.mod + go.sum and the binary exists.
# FORCE=1 rebuilds anyway.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

TOOLS_DIR="hack/tools/promtool"
BIN_DIR="${REPO_ROOT}/_output/bin"
STAMP="${BIN_DIR}/.promtool-version"

export GOWORK=off
export CGO_ENABLED=0

log() { echo "+++ [build-promtool] $*"; }
die() { echo "!!! [build-promtool] $*" >&2; exit 1; }

VERSION="$(awk '$1 == "github.com/prometheus/prometheus" { print $2 }' "${TOOLS_DIR}/go.mod")"
[[ "${VERSION}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
	die "cannot find a release requirement on github.com/prometheus/prometheus in ${TOOLS_DIR}/go.mod (got '${VERSION}')"

# The rules only need promtool's check and test commands: Prometheus's build
# tag remove_all_sd leaves out the cloud service-discovery plugins (AWS,
# Azure, GCE and the rest) and their SDKs, a fifth of the packages a cold
# build compiles.
TAGS="remove_all_sd"
TOOLS_HASH="$(cat "${TOOLS_DIR}/go.mod" "${TOOLS_DIR}/go.sum" | sha256sum | cut -d' ' -f1)"
WANT_STAMP="github.com/prometheus/prometheus ${VERSION} -tags ${TAGS}
hack/tools/promtool go.mod+go.sum sha256 ${TOOLS_HASH}"

if [[ "${FORCE:-}" != "1" && -x "${BIN_DIR}/promtool" && -f "${STAMP}" && "$(cat "${STAMP}")" == "${WANT_STAMP}" ]]; then
	log "up to date: promtool ${VERSION} in ${BIN_DIR} (FORCE=1 to rebuild)"
	exit 0
fi

mkdir -p "${BIN_DIR}"
rm -f "${STAMP}"
log "go build -C ${TOOLS_DIR} -trimpath -tags ${TAGS} -o _output/bin/promtool github.com/prometheus/prometheus/cmd/promtool (${VERSION})"
start="$(date +%s)"
go build -C "${TOOLS_DIR}" -trimpath -tags "${TAGS}" -ldflags "-s -w" -o "${BIN_DIR}/promtool" github.com/prometheus/prometheus/cmd/promtool
log "built promtool in $(($(date +%s) - start))s ($(du -h "${BIN_DIR}/promtool" | cut -f1))"

printf '%s\n' "${WANT_STAMP}" >"${STAMP}.tmp"
mv "${STAMP}.tmp" "${STAMP}"
