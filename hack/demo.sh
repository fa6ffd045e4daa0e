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

# make demo: a throwaway cluster on this machine (hack/demo), from the
# binaries of make build, make e2e-bins and make scale-bins in _output/bin,
# with the examples run to Complete, left running until Ctrl-C. Everything
# is under one temporary directory, removed on exit.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${REPO_ROOT}"
BIN_DIR="${E2E_BIN_DIR:-${REPO_ROOT}/_output/bin}"

go build -o "${BIN_DIR}/batch-demo" ./hack/demo
export E2E_BIN_DIR="${BIN_DIR}"
export BATCH_APISERVER_BIN="${BATCH_APISERVER_BIN:-${BIN_DIR}/batch-apiserver}"
exec "${BIN_DIR}/batch-demo"
