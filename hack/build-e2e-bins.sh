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

# Builds the host-cluster binaries the e2e tests and the scale benchmark run
# against (kube-apiserver, kube-controller-manager, kube-scheduler, kubectl)
# from the k8s.io/kubernetes version pinned in hack/tools/go.mod, into
# _output/bin/.
#
# The build is skipped when _output/bin/.version matches the pinned version and
# the hash of hack/tools/go.mod + go.sum and every binary exists. Set FORCE=1 to
# rebuild anyway.
#
# etcd is not built here: the e2e harness embeds it in-process
# (go.etcd.io/etcd/server/v3/embed).

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

TOOLS_DIR="hack/tools"
BIN_DIR="${REPO_ROOT}/_output/bin"
STAMP="${BIN_DIR}/.version"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler kubectl)

# A go.work higher up must not pull the tools module into a workspace (or the
# main module into this build).
export GOWORK=off
# Upstream builds these binaries statically.
export CGO_ENABLED=0

log() { echo "+++ [build-e2e-bins] $*"; }
die() { echo "!!! [build-e2e-bins] $*" >&2; exit 1; }
now_ms() { date +%s%3N; }
fmt_ms() { printf '%d.%03ds' $(($1 / 1000)) $(($1 % 1000)); }

# The pinned version is the k8s.io/kubernetes requirement of the tools module;
# read it from go.mod directly so that a no-op run needs neither the module
# cache nor the network.
KUBE_VERSION="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2 } $1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "${TOOLS_DIR}/go.mod")"
[[ "${KUBE_VERSION}" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] ||
	die "cannot find a release requirement on k8s.io/kubernetes in ${TOOLS_DIR}/go.mod (got '${KUBE_VERSION}')"
KUBE_MINOR="${BASH_REMATCH[1]}"
STAGING_VERSION="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"

# Every staging module must be replaced by the release matching k8s.io/kubernetes
# (v1.X.Y -> v0.X.Y); a stale replace after a bump would mix two Kubernetes
# versions in one binary.
stale="$(awk -v want="${STAGING_VERSION}" '$2 == "=>" && $1 ~ /^k8s\.io\// && $4 != want { print "  " $0 }' "${TOOLS_DIR}/go.mod")"
[[ -z "${stale}" ]] ||
	die "replace directives in ${TOOLS_DIR}/go.mod do not match k8s.io/kubernetes ${KUBE_VERSION} (want ${STAGING_VERSION}):"$'\n'"${stale}"

TOOLS_HASH="$(cat "${TOOLS_DIR}/go.mod" "${TOOLS_DIR}/go.sum" | sha256sum | cut -d' ' -f1)"
WANT_STAMP="k8s.io/kubernetes ${KUBE_VERSION}
hack/tools go.mod+go.sum sha256 ${TOOLS_HASH}"

up_to_date() {
	[[ -f "${STAMP}" && "$(cat "${STAMP}")" == "${WANT_STAMP}" ]] || return 1
	local b
	for b in "${BINARIES[@]}"; do
		[[ -x "${BIN_DIR}/${b}" ]] || return 1
	done
}

if [[ "${FORCE:-}" != "1" ]] && up_to_date; then
	log "up to date: ${BINARIES[*]} at k8s.io/kubernetes ${KUBE_VERSION} in ${BIN_DIR} (FORCE=1 to rebuild)"
	exit 0
fi

log "building ${BINARIES[*]} from k8s.io/kubernetes ${KUBE_VERSION} ($(go version | cut -d' ' -f3)) into ${BIN_DIR}"
mkdir -p "${BIN_DIR}"
# Drop the stamp first so an interrupted build never looks complete.
rm -f "${STAMP}"

# Same variables upstream's hack/lib/version.sh sets: client-go's copy feeds
# `kubectl version --client`, component-base's feeds the servers' --version and
# /version. buildDate is the release's publication time, so the binaries do not
# change from one build to the next.
build_date="$(go list -C "${TOOLS_DIR}" -m -f '{{with .Time}}{{.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes 2>/dev/null || true)"
version_vars=(
	"gitVersion=${KUBE_VERSION}"
	"gitMajor=1"
	"gitMinor=${KUBE_MINOR}"
	"gitTreeState=clean"
)
[[ -n "${build_date}" ]] && version_vars+=("buildDate=${build_date}")
ldflags="-s -w"
for kv in "${version_vars[@]}"; do
	ldflags+=" -X k8s.io/client-go/pkg/version.${kv} -X k8s.io/component-base/version.${kv}"
done

# One go build for all four: the packages they share (most of
# k8s.io/kubernetes) are compiled once, and the compiles and links of the
# four run side by side.
pkgs=()
for b in "${BINARIES[@]}"; do
	pkgs+=("k8s.io/kubernetes/cmd/${b}")
done
total_start="$(now_ms)"
log "go build -C ${TOOLS_DIR} -trimpath -o _output/bin/ ${pkgs[*]}"
go build -C "${TOOLS_DIR}" -trimpath -ldflags "${ldflags}" -o "${BIN_DIR}/" "${pkgs[@]}"
for b in "${BINARIES[@]}"; do
	log "built ${b} ($(du -h "${BIN_DIR}/${b}" | cut -f1))"
done

# Fail here, not in the e2e tests, if the version did not get stamped.
for b in kube-apiserver kube-controller-manager kube-scheduler; do
	out="$("${BIN_DIR}/${b}" --version)"
	[[ "${out}" == "Kubernetes ${KUBE_VERSION}" ]] || die "${b} --version printed '${out}', want 'Kubernetes ${KUBE_VERSION}'"
done
out="$("${BIN_DIR}/kubectl" version --client)"
grep -qx "Client Version: ${KUBE_VERSION}" <<<"${out}" || die "kubectl version --client printed '${out}', want 'Client Version: ${KUBE_VERSION}'"

printf '%s\n' "${WANT_STAMP}" >"${STAMP}.tmp"
mv "${STAMP}.tmp" "${STAMP}"
log "done in $(fmt_ms $(($(now_ms) - total_start))); stamp written to _output/bin/.version"
