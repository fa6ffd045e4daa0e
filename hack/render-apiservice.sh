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

# Only for a serving certificate of your own (docs/certificates.md): with
# the self-managed one, batch-apiserver writes the caBundle itself.
#
# Prints artifacts/deploy/apiservice.yaml with a caBundle, the base64 of the
# CA certificate that signed batch-apiserver's serving certificate:
#
#   hack/render-apiservice.sh [CA] [APISERVICE_YAML] | kubectl apply -f -
#
# or, with --kustomize, the JSON patch that sets that caBundle, for an
# overlay of artifacts/deploy to apply to both APIServices:
#
#   hack/render-apiservice.sh --kustomize [CA] > my-overlay/apiservice-cabundle.json
#
# CA is a PEM file or a directory holding ca.crt (default _output/certs, as
# written by hack/gen-certs.sh). APISERVICE_YAML defaults to the repository's
# artifacts/deploy/apiservice.yaml. Nothing is written to disk.

set -euo pipefail

REPO_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

KUSTOMIZE=false
if [[ "${1:-}" == "--kustomize" ]]; then
    KUSTOMIZE=true
    shift
fi
CA="${1:-_output/certs}"
TEMPLATE="${2:-${REPO_ROOT}/artifacts/deploy/apiservice.yaml}"

die() { echo "!!! [render-apiservice] $*" >&2; exit 1; }

if [[ -d "${CA}" ]]; then
    CA="${CA}/ca.crt"
fi
[[ -s "${CA}" ]] || die "CA certificate ${CA} not found or empty (run hack/gen-certs.sh first)"
[[ -s "${TEMPLATE}" ]] || die "APIService template ${TEMPLATE} not found or empty"
command -v openssl >/dev/null 2>&1 || die "openssl not found in PATH"

# Refuse anything that is not a certificate: a wrong file here only shows up
# later as an APIService that never becomes Available.
openssl x509 -in "${CA}" -noout >/dev/null 2>&1 || die "${CA} is not a PEM certificate"
grep -qxF "spec:" "${TEMPLATE}" || die "${TEMPLATE} has no top-level spec: line"

# openssl base64 -A: one line, the same on Linux and macOS (unlike base64 -w0).
CA_BUNDLE="$(openssl base64 -A -in "${CA}")"

if [[ "${KUSTOMIZE}" == "true" ]]; then
    # Base64 needs no JSON escaping. "add" sets the field whether or not
    # it is there.
    printf '[{"op": "add", "path": "/spec/caBundle", "value": "%s"}]\n' "${CA_BUNDLE}"
    exit 0
fi

# caBundle goes first in every object's spec; a caBundle already there is
# dropped, so the output holds exactly one.
while IFS= read -r line || [[ -n "${line}" ]]; do
    [[ "${line}" == "  caBundle:"* ]] && continue
    printf '%s\n' "${line}"
    if [[ "${line}" == "spec:" ]]; then
        printf '  caBundle: %s\n' "${CA_BUNDLE}"
    fi
done <"${TEMPLATE}"
