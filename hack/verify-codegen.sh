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

# Regenerates everything `make update` produces in a scratch copy of the tree
# and fails when anything differs from the work tree: stale generated code,
# files that need gofmt, or a go.mod/go.sum that `go mod tidy` would change.
# It never touches the work tree, so it runs the same on a dirty checkout.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

SCRATCH="$(mktemp -d)"
trap 'rm -rf "${SCRATCH}"' EXIT

# The tracked and the untracked-but-not-ignored files, as they are now.
git ls-files -z --cached --others --exclude-standard | while IFS= read -r -d '' f; do
    [ -e "$f" ] && printf '%s\0' "$f"
done | tar --null -T - -cf - | tar -C "${SCRATCH}" -xf -
# Reuse the generator binaries already built for this tree.
mkdir -p "${ROOT}/_output/codegen-bin" "${SCRATCH}/_output"
ln -s "${ROOT}/_output/codegen-bin" "${SCRATCH}/_output/codegen-bin"

(
    cd "${SCRATCH}"
    bash hack/update-codegen.sh >/dev/null
    gofmt -w $(find . -name '*.go' -not -path './pkg/generated/*' -not -name 'zz_generated*' -not -path './_output/*' -not -path './hack/tools/*')
    go mod tidy
    (cd cmd/batch-kueue && GOWORK=off go mod tidy)
)

fail=0
for p in pkg go.mod go.sum cmd/batch-kueue; do
    if ! diff -r -u "${ROOT}/${p}" "${SCRATCH}/${p}" >"${SCRATCH}/.diff" 2>&1; then
        fail=1
        head -n 60 "${SCRATCH}/.diff" >&2
    fi
done
if [ "${fail}" -ne 0 ]; then
    echo "verify-codegen: generated code, formatting or go.mod are stale; run 'make update'" >&2
    exit 1
fi
echo "verify-codegen: up to date"
