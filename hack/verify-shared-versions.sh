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

# The host binaries (hack/tools) and the etcd tools (hack/tools/etcd) share
# most of their packages with the server: k8s.io/apimachinery, client-go,
# apiserver, etcd's client, grpc, golang.org/x/... A package compiles once
# for all of them only when it is the same module version built by the same
# toolchain with the same flags; one differing golang.org/x/sys and every
# package above it compiles twice, which is most of a cold make test.
#
# This fails when a module both build graphs use resolves to an older
# version in the tool module than in the main module (a newer one is what
# the tool requires, and cannot be lowered), or when the toolchains differ,
# and prints the go get that aligns it.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
export GOWORK=off

TOOL_MODULES=(hack/tools hack/tools/etcd hack/tools/kwok)

# module -> version of what the module graph selects, replacements resolved.
selected() {
	go list -C "$1" -m -f '{{.Path}} {{with .Replace}}{{.Version}}{{else}}{{.Version}}{{end}}' all | sort
}
toolchain() {
	awk '$1 == "toolchain" { print $2 }' "$1/go.mod"
}

main_versions="$(selected .)"
main_toolchain="$(toolchain .)"
status=0
for m in "${TOOL_MODULES[@]}"; do
	if [[ "$(toolchain "${m}")" != "${main_toolchain}" ]]; then
		echo "${m}/go.mod: toolchain '$(toolchain "${m}")', the main module's is '${main_toolchain}'; run: go mod edit -C ${m} -toolchain=${main_toolchain}" >&2
		status=1
	fi
	# Only the modules the tool's binaries compile count: a module in the
	# graph but in no package built changes nothing.
	built="$(go list -C "${m}" -deps -f '{{with .Module}}{{.Path}}{{end}}' tool | sort -u)"
	differ="$(join <(printf '%s\n' "${main_versions}") <(selected "${m}") |
		awk '$2 != $3 && $2 != "" && $3 != ""' |
		join - <(printf '%s\n' "${built}") |
		while read -r mod main_v tool_v; do
			# Only where the main module's version sorts last.
			[[ "$(printf '%s\n%s\n' "${tool_v}" "${main_v}" | sort -V | tail -n1)" == "${main_v}" ]] &&
				echo "${mod} ${main_v} ${tool_v}"
		done || true)"
	if [[ -n "${differ}" ]]; then
		echo "${m}: modules at another version than in the main module (module main ${m}):" >&2
		printf '  %s\n' "${differ}" >&2
		echo "  run: (cd ${m} && go get $(awk '{ printf "%s@%s ", $1, $2 }' <<<"${differ}")&& go mod tidy)" >&2
		status=1
	fi
done
if [[ "${status}" -ne 0 ]]; then
	echo "verify-shared-versions: the tool modules would compile their shared packages a second time" >&2
	exit 1
fi
echo "verify-shared-versions: ${TOOL_MODULES[*]} share the main module's versions and toolchain"
