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

# make vulncheck: govulncheck over both modules' source (the main module
# and cmd/batch-kueue) and over the binaries we ship, against a local Go
# vulnerability database.
#
#   hack/vulncheck.sh BINARY...
#
# The database is made here, with no network but the Go module proxy: the
# proxy serves the golang.org/x/vulndb module, whose data/osv holds every
# published entry as OSV JSON, and indexdb (that module's own generator,
# built by hack/build-lint-tools.sh) writes from it the layout govulncheck
# reads with -db file:// (index/db.json, index/modules.json,
# index/vulns.json, ID/<id>.json). It is kept in _output/vulndb/<version>,
# so a run against a version already built only resolves the version.
#
# VULNDB_VERSION picks the golang.org/x/vulndb version: "latest" (the
# default: the newest entries the proxy serves) or a version, e.g. to run
# again against the database of an earlier run, which the output names.
#
# It fails when govulncheck finds a vulnerability our code reaches: a
# vulnerable function called from the source (symbol level), or present in a
# binary. Vulnerabilities only in a package we import or a module we
# require, which nothing calls, are listed and do not fail. A reached one
# that does not apply to us is accepted by a row of the table in
# SECURITY.md that starts with its ID and says why.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

BIN_DIR="${REPO_ROOT}/_output/bin"
DB_ROOT="${REPO_ROOT}/_output/vulndb"
VULNDB_VERSION="${VULNDB_VERSION:-latest}"
MODULES=(. cmd/batch-kueue)

export GOWORK=off
# Packages load as make build and the test tiers compile them (no cgo,
# -trimpath), so the export data go list builds comes from the same cache.
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+${GOFLAGS} }-trimpath"

log() { echo "+++ [vulncheck] $*"; }
die() { echo "!!! [vulncheck] $*" >&2; exit 1; }

bash hack/build-lint-tools.sh govulncheck indexdb

# The module's files: outside any module, so no go.mod is touched.
log "resolving golang.org/x/vulndb@${VULNDB_VERSION} through the module proxy"
download="$(cd "$(mktemp -d)" && go mod download -json "golang.org/x/vulndb@${VULNDB_VERSION}")" ||
	die "go mod download golang.org/x/vulndb@${VULNDB_VERSION} failed: ${download}"
version="$(sed -n 's/^[[:space:]]*"Version": "\(.*\)",$/\1/p' <<<"${download}")"
src="$(sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p' <<<"${download}")"
info="$(sed -n 's/^[[:space:]]*"Info": "\(.*\)",$/\1/p' <<<"${download}")"
[[ -n "${version}" && -f "${info}" && -d "${src}/data/osv" ]] || die "no data/osv in golang.org/x/vulndb@${VULNDB_VERSION} (${src})"

db="${DB_ROOT}/${version}"
if [[ -f "${db}/index/db.json" ]]; then
	log "database of golang.org/x/vulndb ${version} already in ${db#"${REPO_ROOT}/"}"
else
	log "building the database of golang.org/x/vulndb ${version} into ${db#"${REPO_ROOT}/"}"
	rm -rf "${DB_ROOT}"
	mkdir -p "${DB_ROOT}"
	rm -rf "${db}.tmp"
	"${BIN_DIR}/indexdb" -vulns "${src}/data/osv" -out "${db}.tmp"
	# The OSV files of the module carry no times (the live database takes
	# them from the git history of each report), so indexdb dates the
	# database 0001-01-01. Its date is that of the commit the module
	# version was cut from, which the proxy's .info gives.
	commit_time="$(sed -n 's/.*"Time":"\([^"]*\)".*/\1/p' "${info}")"
	[[ -n "${commit_time}" ]] || die "no commit time in ${info}"
	printf '{"modified":"%s"}' "${commit_time}" >"${db}.tmp/index/db.json"
	gzip -n -c "${db}.tmp/index/db.json" >"${db}.tmp/index/db.json.gz"
	mv "${db}.tmp" "${db}"
fi
modified="$(sed -n 's/.*"modified":"\([^"]*\)".*/\1/p' "${db}/index/db.json")"
entries="$(find "${db}/ID" -name '*.json' | wc -l)"
log "vulnerability database: golang.org/x/vulndb ${version}, ${entries} entries, as of ${modified}"

# govulncheck's JSON goes through hack/tools/govulncheck/report, which
# groups the findings and decides: govulncheck in JSON mode exits 0 whatever
# it found, and has no way to accept a finding.
REPORT="${BIN_DIR}/vulncheck-report"
go build -C hack/tools/govulncheck -o "${REPORT}" ./report

failed=()
scan() {
	local what="$1"
	shift
	log "govulncheck ${what}"
	local json rc=0
	json="$("${BIN_DIR}/govulncheck" -db "file://${db}" -format json "$@")" ||
		die "govulncheck ${what} failed"
	"${REPORT}" -accepted SECURITY.md <<<"${json}" || rc=$?
	case "${rc}" in
	0) ;;
	3) failed+=("${what}") ;;
	*) die "reading govulncheck's findings for ${what} failed" ;;
	esac
}

for module in "${MODULES[@]}"; do
	scan "source of module $(cd "${module}" && go list -m)" -C "${module}" ./...
done
for binary in "$@"; do
	[[ -f "${binary}" ]] || die "no binary ${binary} (make build, make kueue-bins)"
	scan "binary ${binary#"${REPO_ROOT}/"}" -mode binary "${binary}"
done

if [[ ${#failed[@]} -gt 0 ]]; then
	echo "!!! [vulncheck] a known vulnerability reaches our code in:" >&2
	printf '!!!   %s\n' "${failed[@]}" >&2
	echo "!!! [vulncheck] upgrade the module that fixes it, or say in SECURITY.md why it does not apply" >&2
	exit 1
fi
log "no known vulnerability reaches our code (vulnerability database of ${modified})"
