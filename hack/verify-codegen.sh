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
#
# When the digest of the generation's inputs and outputs
# (hack/codegen-digest.sh) is the one make update recorded in
# hack/codegen.sum, these exact files were generated from these exact inputs
# already, and only gofmt and go mod tidy are checked; FULL=1 regenerates
# anyway. A full run that finds everything current but a stale
# hack/codegen.sum fails too, so the record cannot drift.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"

recorded="$(awk '{ print $1 }' hack/codegen.sum 2>/dev/null || true)"
current="$(bash hack/codegen-digest.sh)"

# Files that carry generator markers must all be in the digest; a marker in
# a new package means generation reaches further than the digest looks.
unlisted_markers() {
    comm -23 \
        <(grep -rlE '^[[:space:]]*//[[:space:]]*\+(k8s:deepcopy-gen|k8s:conversion-gen|k8s:defaulter-gen|k8s:openapi-gen|genclient|groupName)' pkg cmd/batch-kueue --include='*.go' | LC_ALL=C sort) \
        <(bash hack/codegen-digest.sh --list | LC_ALL=C sort)
}

if [[ "${FULL:-}" != "1" && -n "${recorded}" && "${recorded}" == "${current}" && -z "$(unlisted_markers)" ]]; then
    fail=0
    unformatted="$(gofmt -l $(git ls-files --cached --others --exclude-standard -- pkg cmd/batch-kueue | grep '\.go$' | grep -v -e '^pkg/generated/' -e 'zz_generated') )"
    if [[ -n "${unformatted}" ]]; then
        echo "gofmt needed:" >&2
        printf '%s\n' "${unformatted}" >&2
        fail=1
    fi
    go mod tidy -diff >&2 || fail=1
    (cd cmd/batch-kueue && GOWORK=off go mod tidy -diff) >&2 || fail=1
    if [[ "${fail}" -ne 0 ]]; then
        echo "verify-codegen: formatting or go.mod are stale; run 'make update'" >&2
        exit 1
    fi
    echo "verify-codegen: up to date (generated code as make update recorded it in hack/codegen.sum; gofmt and go mod tidy checked; FULL=1 regenerates)"
    exit 0
fi

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
if [ "${recorded}" != "${current}" ]; then
    echo "verify-codegen: generated code is current but hack/codegen.sum does not record it (${recorded:-none} != ${current}); run 'make update'" >&2
    exit 1
fi
echo "verify-codegen: up to date"
