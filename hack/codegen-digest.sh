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

# Prints one sha256 over everything code generation reads and writes: the
# API packages the generators run over (pkg/apis/batch and its versions, and
# batch-kueue's API: types, hand-written conversions and defaults, and the
# code generated from them; test files aside), pkg/generated, the generator
# script, the boilerplate, the API rule report, and the go.mod/go.sum files
# that pin the generators and the upstream types they read. With --list it
# prints those files instead.
#
# make update records it in hack/codegen.sum after generating. make verify
# compares: the same digest means the files are exactly the ones a previous
# generation produced from exactly these inputs, so regenerating them (the
# slowest part of a cold make verify: every generator type-checks the API
# packages and their dependencies from source) can be skipped. Any edit to an
# input or an output changes the digest, and verify then regenerates in full.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

INPUTS=(
	':(glob)pkg/apis/batch/*.go'
	pkg/apis/batch/v1
	pkg/apis/batch/v1beta1
	pkg/generated
	cmd/batch-kueue/api
	cmd/batch-kueue/go.mod
	cmd/batch-kueue/go.sum
	hack/update-codegen.sh
	hack/boilerplate.go.txt
	hack/api-rules-violations.list
	hack/protoc
	go.mod
	go.sum
)

# The files as verify-codegen sees them: tracked, or untracked and not
# ignored; a deleted file no longer counts. With :(glob), pkg/apis/batch/*.go
# names the top-level files of the internal package only (* stops at /).
files() {
	git ls-files -z --cached --others --exclude-standard -- "${INPUTS[@]}" |
		while IFS= read -r -d '' f; do
			[[ -f "${f}" && "${f}" != *_test.go ]] && printf '%s\0' "${f}"
		done |
		LC_ALL=C sort -z -u
}

if [[ "${1:-}" == "--list" ]]; then
	files | tr '\0' '\n'
	exit 0
fi
files | xargs -0 sha256sum | sha256sum | cut -d' ' -f1
