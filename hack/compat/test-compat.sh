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

# Runs the aggregation and controller e2e scenarios against every host
# version make compat-bins built (and the 1.37 host of _output/bin), then
# writes _output/compat/results.json and prints host version x scenario
# (with the hosts of earlier runs kept in _output/compat, newest run each).
# make test-compat runs it after building everything; docs/compatibility.md
# says what the rows mean.
#
#   hack/compat/test-compat.sh                  every hack/compat/v1.* host and 1.37
#   COMPAT_HOSTS="v1.34 v1.37" hack/compat/test-compat.sh
#
# On the hosts of KUEUE_HOSTS (default v1.34) it also runs the
# single-cluster Kueue scenarios of test/e2e/kueue (kueue-bins).
#
# BATCH_APISERVER_BIN and E2E_BIN_DIR (kubectl, and the 1.37 host) are
# those of make test-e2e. A failing scenario does not stop the other hosts;
# the script exits non-zero when any scenario failed.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "${REPO_ROOT}"

OUT="${REPO_ROOT}/_output/compat"
BIN_DIR="${E2E_BIN_DIR:-${REPO_ROOT}/_output/bin}"
export BATCH_APISERVER_BIN="${BATCH_APISERVER_BIN:-${BIN_DIR}/batch-apiserver}"
export E2E_BIN_DIR="${BIN_DIR}"

# The scenarios of the table (hack/compat/report lists them by test).
TESTS='^(TestAPIServicesAvailable|TestKubectlThroughAggregator|TestSecurityThroughAggregator|TestServiceAccountPermissions|TestStatusAndSpecPermissionsAreSeparate|TestJobController)$'
# The single-cluster Kueue scenarios (test/e2e/kueue), run on the hosts of
# KUEUE_HOSTS among those selected: a host older than 1.36 has no
# MutatingAdmissionPolicy, so there a queued Job is suspended by
# batch-kueue's webhook alone, which batch-apiserver calls on every host.
KUEUE_TESTS='^(TestSingleCluster|TestJobsWithoutQueueName|TestDefaultLocalQueue)$'
KUEUE_HOSTS="${KUEUE_HOSTS:-v1.34}"

log() { echo "+++ [test-compat] $*"; }
die() { echo "!!! [test-compat] $*" >&2; exit 1; }

# The reference host is the one hack/tools pins.
reference="$(awk -F' ' '/^k8s\.io\/kubernetes /{print $2}' "${BIN_DIR}/.version" 2>/dev/null || true)"
[[ -n "${reference}" ]] || die "no ${BIN_DIR}/.version: run make e2e-bins"
reference_minor="${reference%.*}"

hosts=(${COMPAT_HOSTS:-})
if [[ ${#hosts[@]} -eq 0 ]]; then
	for d in hack/compat/v1.*/; do
		hosts+=("$(basename "${d}")")
	done
	hosts+=("${reference_minor}")
fi

status=0
for minor in "${hosts[@]}"; do
	if [[ "${minor}" == "${reference_minor}" ]]; then
		version="${reference}"
		host_dir=""
	else
		mod="hack/compat/${minor}/go.mod"
		[[ -f "${mod}" ]] || die "no host ${minor}: no ${mod}"
		version="$(awk '$1 == "k8s.io/kubernetes" && $2 ~ /^v1\./ { print $2 }' "${mod}")"
		host_dir="${OUT}/${version}"
		[[ -x "${host_dir}/kube-apiserver" ]] || die "no ${host_dir}/kube-apiserver: run make compat-bins"
	fi
	mkdir -p "${OUT}/${version}"
	json="${OUT}/${version}/e2e.json"
	log "host ${version}: go test -run '${TESTS}' ./test/e2e/ > ${json#"${REPO_ROOT}/"}"
	start="$(date +%s)"
	if E2E_HOST_BIN_DIR="${host_dir}" go test -count=1 -json -timeout 30m -run "${TESTS}" ./test/e2e/ >"${json}" 2>"${OUT}/${version}/e2e.stderr"; then
		log "host ${version}: passed in $(($(date +%s) - start))s"
	else
		status=1
		log "host ${version}: failed in $(($(date +%s) - start))s (stderr in ${OUT#"${REPO_ROOT}/"}/${version}/e2e.stderr)"
	fi
	if [[ " ${KUEUE_HOSTS} " == *" ${minor} "* ]]; then
		kjson="${OUT}/${version}/kueue.json"
		log "host ${version}: go test -run '${KUEUE_TESTS}' ./test/e2e/kueue/ > ${kjson#"${REPO_ROOT}/"}"
		start="$(date +%s)"
		if E2E_HOST_BIN_DIR="${host_dir}" go test -count=1 -json -timeout 30m -run "${KUEUE_TESTS}" ./test/e2e/kueue/ >"${kjson}" 2>"${OUT}/${version}/kueue.stderr"; then
			log "host ${version}: Kueue scenarios passed in $(($(date +%s) - start))s"
		else
			status=1
			log "host ${version}: Kueue scenarios failed in $(($(date +%s) - start))s (go test -json output in ${kjson#"${REPO_ROOT}/"})"
		fi
	fi
done

# The table has a column for every host with a run in _output/compat, so
# that a COMPAT_HOSTS run replaces only its own hosts' columns.
report_args=()
for json in $(ls "${OUT}"/v1.*/e2e.json | sort -V); do
	report_args+=("$(basename "$(dirname "${json}")")=${json}")
done
go run ./hack/compat/report -o "${OUT}/results.json" "${report_args[@]}"
go run ./hack/compat/report -markdown "${report_args[@]}" >"${OUT}/results.md"
log "results in ${OUT#"${REPO_ROOT}/"}/results.json (and as Markdown in results.md)"
exit "${status}"
