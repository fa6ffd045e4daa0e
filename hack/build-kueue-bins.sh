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

# Builds Kueue's manager (sigs.k8s.io/kueue/cmd/kueue, the version
# cmd/batch-kueue/go.mod pins, a tool line of that module) and our
# integration batch-kueue into _output/bin, in one go build so that the
# two share their compiled packages. The Go build cache makes a second run
# a link only, so there is no stamp: a change to cmd/batch-kueue is always
# picked up.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

MODULE_DIR="cmd/batch-kueue"
BIN_DIR="${REPO_ROOT}/_output/bin"

export GOWORK=off
export CGO_ENABLED=0

log() { echo "+++ [build-kueue-bins] $*"; }
now_ms() { date +%s%3N; }
fmt_ms() { printf '%d.%03ds' $(($1 / 1000)) $(($1 % 1000)); }

KUEUE_VERSION="$(awk '$1 == "sigs.k8s.io/kueue" { print $2 } $1 == "require" && $2 == "sigs.k8s.io/kueue" { print $3 }' "${MODULE_DIR}/go.mod")"
mkdir -p "${BIN_DIR}"
log "go build -C ${MODULE_DIR} -trimpath -o _output/bin/ . sigs.k8s.io/kueue/cmd/kueue (kueue ${KUEUE_VERSION})"
start="$(now_ms)"
go build -C "${MODULE_DIR}" -trimpath -ldflags "-s -w" -o "${BIN_DIR}/" . sigs.k8s.io/kueue/cmd/kueue
log "built batch-kueue and kueue in $(fmt_ms $(($(now_ms) - start)))"
