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

# Puts promtool (checks and unit tests of the rules in artifacts/monitoring)
# in _output/bin/promtool. PROMTOOL_FROM says from where:
#
#   debian  the promtool of the Debian archive's prometheus package: the .deb
#           `apt-get download` fetches (running `apt-get update` first when
#           root and apt has no package lists), unpacked with dpkg-deb; nothing
#           is installed. Seconds, where a cold build of Prometheus takes
#           close to eight minutes of a cold make test on a two-core machine.
#   source  built from the github.com/prometheus/prometheus version pinned in
#           hack/tools/promtool/go.mod.
#   auto    (default) debian where apt-get and dpkg-deb are and the download
#           works, source otherwise.
#
# Either way it is skipped when _output/bin/.promtool-version names what
# would be fetched or built and the binary exists. FORCE=1 redoes it.

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

FROM="${PROMTOOL_FROM:-auto}"
case "${FROM}" in
auto | debian | source) ;;
*) die "PROMTOOL_FROM=${FROM}: want auto, debian or source" ;;
esac

up_to_date() {
	[[ "${FORCE:-}" != "1" && -x "${BIN_DIR}/promtool" && -f "${STAMP}" && "$(cat "${STAMP}")" == "$1" ]]
}

# The candidate version of Debian's prometheus package, empty when apt
# knows none.
debian_candidate() {
	apt-cache policy prometheus 2>/dev/null | awk '$1 == "Candidate:" && $2 != "(none)" { print $2 }'
}

# Fetches the package and keeps its promtool; returns non-zero, having
# changed nothing, when any step fails.
from_debian() {
	command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || return 1
	local version
	version="$(debian_candidate)"
	if [[ -z "${version}" && "$(id -u)" == "0" ]]; then
		log "apt has no package lists: apt-get update"
		apt-get update -qq >/dev/null 2>&1 || return 1
		version="$(debian_candidate)"
	fi
	[[ -n "${version}" ]] || return 1
	local want="debian prometheus ${version}"
	if up_to_date "${want}"; then
		log "up to date: promtool of Debian's prometheus ${version} in ${BIN_DIR} (FORCE=1 to fetch again)"
		return 0
	fi
	local tmp
	tmp="$(mktemp -d)"
	# apt's download sandbox user must be able to write here.
	chmod 755 "${tmp}"
	log "apt-get download prometheus=${version}; dpkg-deb -x; keeping usr/bin/promtool"
	if ! (cd "${tmp}" && apt-get download -qq "prometheus=${version}" >/dev/null 2>&1 &&
		dpkg-deb -x prometheus_*.deb root && "root/usr/bin/promtool" --version >/dev/null 2>&1); then
		rm -rf "${tmp}"
		return 1
	fi
	mkdir -p "${BIN_DIR}"
	rm -f "${STAMP}"
	mv "${tmp}/root/usr/bin/promtool" "${BIN_DIR}/promtool"
	rm -rf "${tmp}"
	printf '%s\n' "${want}" >"${STAMP}"
	log "promtool of Debian's prometheus ${version} in ${BIN_DIR}"
}

if [[ "${FROM}" != "source" ]]; then
	from_debian && exit 0
	[[ "${FROM}" == "debian" ]] && die "could not fetch Debian's prometheus package (PROMTOOL_FROM=auto builds from source instead)"
	log "Debian's prometheus package is out of reach here: building promtool from source"
fi

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

if up_to_date "${WANT_STAMP}"; then
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
