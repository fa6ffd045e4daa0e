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

# Builds kube-apiserver, kube-controller-manager and kube-scheduler (for the Kueue scenarios, whose Pods it places) of older host versions for
# make test-compat (docs/compatibility.md), one per module under hack/compat/
# (hack/compat/v1.34, ...), into _output/compat/<version>/, e.g.
# _output/compat/v1.34.4/kube-apiserver.
#
#   hack/build-compat-bins.sh                 every module under hack/compat/
#   hack/build-compat-bins.sh v1.34 v1.36     only these minors
#
# A version is skipped when its .version stamp matches the pinned version and
# the hash of its go.mod + go.sum and all the binaries exist; FORCE=1 rebuilds.
# kubectl and batch-apiserver are not built here: the compat runs use the ones
# in _output/bin (hack/build-e2e-bins.sh, make build).

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

COMPAT_DIR="hack/compat"
OUT_ROOT="${REPO_ROOT}/_output/compat"
BINARIES=(kube-apiserver kube-controller-manager kube-scheduler)

export GOWORK=off
export CGO_ENABLED=0

log() { echo "+++ [build-compat-bins] $*"; }
die() { echo "!!! [build-compat-bins] $*" >&2; exit 1; }
now_ms() { date +%s%3N; }
fmt_ms() { printf '%d.%03ds' $(($1 / 1000)) $(($1 % 1000)); }

# build_minor builds the binaries of one module, hack/compat/v1.NN.
build_minor() {
	local mod_dir="${COMPAT_DIR}/$1"
	if [[ ! -f "${mod_dir}/go.mod" ]]; then
		# The e2e host's own minor (COMPAT_HOSTS may name it) is built by
		# hack/build-e2e-bins.sh from hack/tools.
		if grep -q "^[[:space:]]*k8s.io/kubernetes $1\." hack/tools/go.mod; then
			log "$1 is the e2e host of hack/tools (make e2e-bins), nothing to build here"
			return 0
		fi
		die "no module ${mod_dir}/go.mod"
	fi

	local version
	version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2 } $1 == "require" && $2 == "k8s.io/kubernetes" { print $3 }' "${mod_dir}/go.mod")"
	[[ "${version}" =~ ^v1\.([0-9]+)\.([0-9]+)$ ]] ||
		die "cannot find a release requirement on k8s.io/kubernetes in ${mod_dir}/go.mod (got '${version}')"
	local minor="${BASH_REMATCH[1]}"
	local staging="v0.${BASH_REMATCH[1]}.${BASH_REMATCH[2]}"
	[[ "$1" == "v1.${minor}" ]] || die "${mod_dir} pins k8s.io/kubernetes ${version}, which is not a $1 release"

	local stale
	stale="$(awk -v want="${staging}" '$2 == "=>" && $1 ~ /^k8s\.io\// && $4 != want { print "  " $0 }' "${mod_dir}/go.mod")"
	[[ -z "${stale}" ]] ||
		die "replace directives in ${mod_dir}/go.mod do not match k8s.io/kubernetes ${version} (want ${staging}):"$'\n'"${stale}"

	local out_dir="${OUT_ROOT}/${version}"
	local stamp="${out_dir}/.version"
	local hash
	hash="$(cat "${mod_dir}/go.mod" "${mod_dir}/go.sum" | sha256sum | cut -d' ' -f1)"
	local want_stamp="k8s.io/kubernetes ${version}
${mod_dir} go.mod+go.sum sha256 ${hash}"

	local built=1 b
	for b in "${BINARIES[@]}"; do
		[[ -x "${out_dir}/${b}" ]] || built=0
	done
	if [[ "${FORCE:-}" != "1" && -f "${stamp}" && "$(cat "${stamp}")" == "${want_stamp}" && "${built}" == 1 ]]; then
		log "up to date: ${BINARIES[*]} at ${version} in _output/compat/${version} (FORCE=1 to rebuild)"
		return 0
	fi

	log "building ${BINARIES[*]} from k8s.io/kubernetes ${version} ($(go version | cut -d' ' -f3)) into _output/compat/${version}"
	mkdir -p "${out_dir}"
	rm -f "${stamp}"

	# The variables upstream's hack/lib/version.sh sets, so that --version and
	# /version report the host version the harness then adjusts for.
	local build_date
	build_date="$(go list -C "${mod_dir}" -m -f '{{with .Time}}{{.UTC.Format "2006-01-02T15:04:05Z"}}{{end}}' k8s.io/kubernetes 2>/dev/null || true)"
	local vars=("gitVersion=${version}" "gitMajor=1" "gitMinor=${minor}" "gitTreeState=clean")
	[[ -n "${build_date}" ]] && vars+=("buildDate=${build_date}")
	local ldflags="-s -w" kv
	for kv in "${vars[@]}"; do
		ldflags+=" -X k8s.io/client-go/pkg/version.${kv} -X k8s.io/component-base/version.${kv}"
	done

	local start t0
	start="$(now_ms)"
	for b in "${BINARIES[@]}"; do
		log "go build -C ${mod_dir} -trimpath -o _output/compat/${version}/${b} k8s.io/kubernetes/cmd/${b}"
		t0="$(now_ms)"
		go build -C "${mod_dir}" -trimpath -ldflags "${ldflags}" -o "${out_dir}/${b}" "k8s.io/kubernetes/cmd/${b}"
		log "built ${b} ${version} in $(fmt_ms $(($(now_ms) - t0))) ($(du -h "${out_dir}/${b}" | cut -f1))"
	done

	local got
	for b in "${BINARIES[@]}"; do
		got="$("${out_dir}/${b}" --version)"
		[[ "${got}" == "Kubernetes ${version}" ]] || die "${b} --version printed '${got}', want 'Kubernetes ${version}'"
	done

	printf '%s\n' "${want_stamp}" >"${stamp}.tmp"
	mv "${stamp}.tmp" "${stamp}"
	log "${version} done in $(fmt_ms $(($(now_ms) - start)))"
}

minors=("$@")
if [[ ${#minors[@]} -eq 0 ]]; then
	for d in "${COMPAT_DIR}"/v1.*/; do
		minors+=("$(basename "${d}")")
	done
fi
for m in "${minors[@]}"; do
	build_minor "${m}"
done
