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

# Builds etcdctl and etcdutl of the etcd release pinned in
# hack/tools/etcd/go.mod (the one the server embeds) into _output/bin, for
# the e2e test of the external-etcd backup and restore route
# (docs/operations.md). Nothing is rebuilt while _output/bin/.etcd-tools-version
# names the same release and go.mod/go.sum hash and both binaries exist;
# FORCE=1 rebuilds.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

MODULE_DIR="hack/tools/etcd"
OUT="${REPO_ROOT}/_output/bin"
STAMP="${OUT}/.etcd-tools-version"

# The tools module stands alone: no workspace, no cgo (etcd's own
# release binaries are static too).
export GOWORK=off CGO_ENABLED=0

say() { echo "+++ [build-etcd-tools] $*"; }

release="$(awk '$1 == "go.etcd.io/etcd/etcdutl/v3" && $2 ~ /^v/ { print $2; exit }' "${MODULE_DIR}/go.mod")"
if [[ ! "${release}" =~ ^v3\.[0-9]+\.[0-9]+$ ]]; then
	echo "!!! [build-etcd-tools] no etcdutl release in ${MODULE_DIR}/go.mod (found '${release}')" >&2
	exit 1
fi
want="etcd ${release} $(cat "${MODULE_DIR}/go.mod" "${MODULE_DIR}/go.sum" | sha256sum | cut -d' ' -f1)"

if [[ "${FORCE:-}" != 1 && -x "${OUT}/etcdctl" && -x "${OUT}/etcdutl" && "$(cat "${STAMP}" 2>/dev/null)" == "${want}" ]]; then
	say "etcdctl and etcdutl ${release} are current in ${OUT}"
	exit 0
fi

mkdir -p "${OUT}"
rm -f "${STAMP}"
began="$(date +%s)"
for tool in etcdctl etcdutl; do
	say "building ${tool} ${release}"
	go build -C "${MODULE_DIR}" -trimpath -ldflags "-s -w" -o "${OUT}/${tool}" "go.etcd.io/etcd/${tool}/v3"
done
say "built in $(($(date +%s) - began))s"
echo "${want}" >"${STAMP}"
