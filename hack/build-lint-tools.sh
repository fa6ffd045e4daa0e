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

# Builds the checkers of make lint and make vulncheck into _output/bin from
# the versions their tools modules pin:
#
#   staticcheck   honnef.co/go/tools        hack/tools/staticcheck
#   govulncheck   golang.org/x/vuln         hack/tools/govulncheck
#   indexdb       golang.org/x/vulndb       hack/tools/govulncheck
#
#   hack/build-lint-tools.sh                  all three
#   hack/build-lint-tools.sh staticcheck      only the ones named
#
# A binary is rebuilt only when its stamp (_output/bin/.<name>-version: the
# module version and the hash of its tools module's go.mod + go.sum) has
# changed or the binary is missing; FORCE=1 rebuilds anyway.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

BIN_DIR="${REPO_ROOT}/_output/bin"

export GOWORK=off
export CGO_ENABLED=0

log() { echo "+++ [build-lint-tools] $*"; }
die() { echo "!!! [build-lint-tools] $*" >&2; exit 1; }

# build NAME TOOLS_DIR MODULE PACKAGE builds PACKAGE of MODULE, as required
# by TOOLS_DIR/go.mod, into _output/bin/NAME unless its stamp is current.
build() {
	local name="$1" tools_dir="$2" module="$3" pkg="$4"
	local version
	version="$(awk -v m="${module}" '$1 == m { print $2 }' "${tools_dir}/go.mod")"
	[[ -n "${version}" ]] || die "${tools_dir}/go.mod requires no ${module}"

	local stamp="${BIN_DIR}/.${name}-version" hash
	hash="$(cat "${tools_dir}/go.mod" "${tools_dir}/go.sum" | sha256sum | cut -d' ' -f1)"
	local want="${module} ${version}
${tools_dir} go.mod+go.sum sha256 ${hash}"

	if [[ "${FORCE:-}" != "1" && -x "${BIN_DIR}/${name}" && -f "${stamp}" && "$(cat "${stamp}")" == "${want}" ]]; then
		log "up to date: ${name} (${module} ${version})"
		return 0
	fi

	mkdir -p "${BIN_DIR}"
	rm -f "${stamp}"
	log "go build -C ${tools_dir} -o _output/bin/${name} ${pkg} (${version})"
	local start
	start="$(date +%s)"
	go build -C "${tools_dir}" -trimpath -ldflags "-s -w" -o "${BIN_DIR}/${name}" "${pkg}"
	log "built ${name} in $(($(date +%s) - start))s"
	printf '%s\n' "${want}" >"${stamp}.tmp"
	mv "${stamp}.tmp" "${stamp}"
}

tools=("$@")
[[ ${#tools[@]} -gt 0 ]] || tools=(staticcheck govulncheck indexdb)
for tool in "${tools[@]}"; do
	case "${tool}" in
	staticcheck) build staticcheck hack/tools/staticcheck honnef.co/go/tools honnef.co/go/tools/cmd/staticcheck ;;
	govulncheck) build govulncheck hack/tools/govulncheck golang.org/x/vuln golang.org/x/vuln/cmd/govulncheck ;;
	indexdb) build indexdb hack/tools/govulncheck golang.org/x/vulndb golang.org/x/vulndb/cmd/indexdb ;;
	*) die "unknown tool ${tool} (staticcheck, govulncheck, indexdb)" ;;
	esac
done
