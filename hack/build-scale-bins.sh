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

# Builds kwok (simulated nodes and Pod lifecycles for make bench-scale and
# make test-scale) from the sigs.k8s.io/kwok version pinned in
# hack/tools/kwok/go.mod into _output/bin/kwok. kube-scheduler and the other
# Kubernetes binaries come from hack/build-e2e-bins.sh.
#
# Skipped when _output/bin/.kwok-version matches the pinned version and the
# hash of hack/tools/kwok/go.mod + go.sum and the binary exists. FORCE=1
# rebuilds anyway.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

TOOLS_DIR="hack/tools/kwok"
BIN_DIR="${REPO_ROOT}/_output/bin"
STAMP="${BIN_DIR}/.kwok-version"

export GOWORK=off
export CGO_ENABLED=0

log() { echo "+++ [build-scale-bins] $*"; }
die() { echo "!!! [build-scale-bins] $*" >&2; exit 1; }
now_ms() { date +%s%3N; }
fmt_ms() { printf '%d.%03ds' $(($1 / 1000)) $(($1 % 1000)); }

KWOK_VERSION="$(awk '$1 == "sigs.k8s.io/kwok" { print $2 }' "${TOOLS_DIR}/go.mod")"
[[ "${KWOK_VERSION}" =~ ^v[0-9]+\.[0-9]+\.[0-9]+$ ]] ||
	die "cannot find a release requirement on sigs.k8s.io/kwok in ${TOOLS_DIR}/go.mod (got '${KWOK_VERSION}')"

TOOLS_HASH="$(cat "${TOOLS_DIR}/go.mod" "${TOOLS_DIR}/go.sum" | sha256sum | cut -d' ' -f1)"
WANT_STAMP="sigs.k8s.io/kwok ${KWOK_VERSION}
hack/tools/kwok go.mod+go.sum sha256 ${TOOLS_HASH}"

if [[ "${FORCE:-}" != "1" && -x "${BIN_DIR}/kwok" && -f "${STAMP}" && "$(cat "${STAMP}")" == "${WANT_STAMP}" ]]; then
	log "up to date: kwok ${KWOK_VERSION} in ${BIN_DIR} (FORCE=1 to rebuild)"
	exit 0
fi

mkdir -p "${BIN_DIR}"
rm -f "${STAMP}"
log "go build -C ${TOOLS_DIR} -trimpath -o _output/bin/kwok sigs.k8s.io/kwok/cmd/kwok (${KWOK_VERSION})"
start="$(now_ms)"
go build -C "${TOOLS_DIR}" -trimpath -ldflags "-s -w" -o "${BIN_DIR}/kwok" sigs.k8s.io/kwok/cmd/kwok
log "built kwok in $(fmt_ms $(($(now_ms) - start))) ($(du -h "${BIN_DIR}/kwok" | cut -f1))"

printf '%s\n' "${WANT_STAMP}" >"${STAMP}.tmp"
mv "${STAMP}.tmp" "${STAMP}"
