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

# The staticcheck part of make lint: staticcheck (hack/tools/staticcheck,
# built by hack/build-lint-tools.sh) over every package and test of the main
# module and of cmd/batch-kueue, with the checks staticcheck.conf at the
# root of the repository names.
#
# Generated code is not linted, as Kubernetes leaves its own out: whatever
# is reported in pkg/generated/ or in a zz_generated.*.go file is dropped,
# since it is fixed by changing or upgrading the generator, never by hand.
# staticcheck still loads those packages, so a finding in our code about
# how it uses them stays.
#
# A finding that is wrong where it is reported is suppressed where it is,
# with a reason on the same comment:
#
#   //lint:ignore SA1019 the generic server's filters still require it
#
# Exit status 1 when any finding remains.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"

MODULES=(. cmd/batch-kueue)
STATICCHECK="${REPO_ROOT}/_output/bin/staticcheck"

export GOWORK=off
# Packages load as make build and the test tiers compile them (no cgo,
# -trimpath), so the export data go list builds comes from the same cache.
export CGO_ENABLED=0
export GOFLAGS="${GOFLAGS:+${GOFLAGS} }-trimpath"

log() { echo "+++ [lint] $*"; }

bash hack/build-lint-tools.sh staticcheck

# drop_generated reads staticcheck's text output and leaves out the findings
# located in generated files, with their indented follow-up lines.
drop_generated() {
	awk '
		/^[^ \t]/ { skip = ($0 ~ /(^|\/)pkg\/generated\// || $0 ~ /(^|\/)zz_generated\.[^\/:]*\.go:/) }
		!skip { print }
	'
}

status=0
for module in "${MODULES[@]}"; do
	log "staticcheck ./... in $(cd "${module}" && go list -m)"
	# staticcheck exits 1 on any finding, generated code's included; what
	# is left after the filter decides.
	out="$(cd "${module}" && "${STATICCHECK}" ./... 2>&1)" || true
	out="$(drop_generated <<<"${out}")"
	if [[ -n "${out}" ]]; then
		printf '%s\n' "${out}"
		status=1
	fi
done

if [[ "${status}" -ne 0 ]]; then
	echo "!!! [lint] staticcheck findings above: fix them, or suppress one that does not apply with a //lint:ignore CHECK reason" >&2
	exit 1
fi
log "staticcheck: no findings"
