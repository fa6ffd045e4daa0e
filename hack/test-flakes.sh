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

# Runs tests with -race -count=N while every core is kept busy, to find the
# tests that depend on timing or goroutine scheduling:
#
#   hack/test-flakes.sh [PACKAGE...]
#
# FLAKES_COUNT (default 20) is the -count; FLAKES_LOAD (default: the number
# of cores) how many busy loops run beside the tests; FLAKES_TIMEOUT
# (default 60m) go test's -timeout. Without packages it runs the unit tier
# at FLAKES_COUNT, then the integration tier at FLAKES_INTEGRATION_COUNT
# (default 3): each of its runs starts etcd and servers for every test and
# takes minutes under -race on a loaded machine, so twenty would take hours;
# three runs of it under load still put every test's waits through a slow
# scheduler. The busy loops are started here and killed on exit, however
# the tests end. It passes -short: the tests that check random cases by
# the hundred (differential, round trip, encoder) check fewer, since a
# repeat finds a timing problem, not a new case.

set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

count="${FLAKES_COUNT:-20}"
integration_count="${FLAKES_INTEGRATION_COUNT:-3}"
load="${FLAKES_LOAD:-$(getconf _NPROCESSORS_ONLN)}"
timeout="${FLAKES_TIMEOUT:-60m}"
go="${GO:-go}"

integration=()
if [[ $# -gt 0 ]]; then
	pkgs=("$@")
else
	mapfile -t pkgs < <("${go}" list ./... | grep -v -e /test/e2e -e /test/scale -e /test/integration)
	mapfile -t integration < <("${go}" list ./test/integration/...)
fi

# Build first, with the cores free, so that the load is on the tests and
# not on the compiler.
"${go}" test -race -count=1 -run '^$' "${pkgs[@]}" "${integration[@]}" >/dev/null

busy=()
stop_load() {
	for pid in "${busy[@]}"; do
		kill "${pid}" 2>/dev/null || true
	done
}
trap stop_load EXIT
for ((i = 0; i < load; i++)); do
	# A loop of builtins only: one core's worth of work, no forks.
	bash -c 'while :; do :; done' &
	busy+=("$!")
done

echo "test-flakes: -race -count=${count}, ${load} busy loops, packages: ${pkgs[*]}"
"${go}" test -race -short -count="${count}" -timeout "${timeout}" "${pkgs[@]}"
if [[ ${#integration[@]} -gt 0 ]]; then
	echo "test-flakes: -race -count=${integration_count}, ${load} busy loops, packages: ${integration[*]}"
	"${go}" test -race -short -count="${integration_count}" -timeout "${timeout}" "${integration[@]}"
fi
