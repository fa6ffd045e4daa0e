#!/usr/bin/env bash
# Regenerates every generated file: deepcopy, defaulters, conversions (next to
# the types), OpenAPI definitions and the clientset, listers, informers and
# applyconfigurations under pkg/generated. The generators are the versions
# pinned in go.mod (k8s.io/code-generator, and through it k8s.io/kube-openapi).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "${ROOT}"
MODULE="github.com/batch-apiserver/batch-apiserver"
BOILERPLATE="${ROOT}/hack/boilerplate.go.txt"
# On a fresh module cache `go list -m` knows the module but not its directory
# until it is downloaded.
go mod download k8s.io/code-generator
CODEGEN_PKG="$(go list -m -f '{{.Dir}}' k8s.io/code-generator)"

# Install the generators into a project-local bin so that a stale global
# install never leaks into the output.
export GOBIN="${ROOT}/_output/codegen-bin"
mkdir -p "${GOBIN}"

# shellcheck source=/dev/null
source "${CODEGEN_PKG}/kube_codegen.sh"

kube::codegen::gen_helpers \
    --boilerplate "${BOILERPLATE}" \
    "${ROOT}/pkg/apis"

# The pod template is a core/v1 PodTemplateSpec: its defaults are kube's own
# SetDefaults_* functions in k8s.io/kubernetes/pkg/apis/core/v1, which the
# generated SetObjectDefaults_Job must call, as in upstream's
# pkg/apis/batch/v1. gen_helpers passes extra peers to conversion-gen only,
# so the defaulters are generated again here with the peer package.
"${GOBIN}/defaulter-gen" \
    --output-file zz_generated.defaults.go \
    --go-header-file "${BOILERPLATE}" \
    --extra-peer-dirs k8s.io/kubernetes/pkg/apis/core/v1 \
    "${MODULE}/pkg/apis/batch/v1" \
    "${MODULE}/pkg/apis/batch/v1beta1"

# The deprecation of v1beta1 (the Warning header clients get) comes from the
# prerelease-lifecycle tags on its types.
go build -o "${GOBIN}/prerelease-lifecycle-gen" k8s.io/code-generator/cmd/prerelease-lifecycle-gen
"${GOBIN}/prerelease-lifecycle-gen" \
    --output-file zz_generated.prerelease-lifecycle.go \
    --go-header-file "${BOILERPLATE}" \
    "${MODULE}/pkg/apis/batch/v1beta1"

# The OpenAPI definitions cover our versions and every type they reference
# (the core/v1 pod template and what it pulls in).
rm -f "${ROOT}/pkg/apis/batch/v1/zz_generated.model_name.go" "${ROOT}/pkg/apis/batch/v1beta1/zz_generated.model_name.go"
# Packages of other modules are inputs only: openapi-gen must never write
# their model-name files into the module cache.
KUBE_CODEGEN_READONLY_PKGS+=(k8s.io/api/core/v1)
kube::codegen::gen_openapi \
    --boilerplate "${BOILERPLATE}" \
    --output-dir "${ROOT}/pkg/generated/openapi" \
    --output-pkg "${MODULE}/pkg/generated/openapi" \
    --output-model-name-file zz_generated.model_name.go \
    --report-filename "${ROOT}/hack/api-rules-violations.list" \
    --update-report \
    --extra-pkgs k8s.io/api/core/v1 \
    --extra-pkgs k8s.io/apimachinery/pkg/util/intstr \
    "${ROOT}/pkg/apis"

kube::codegen::gen_client \
    --boilerplate "${BOILERPLATE}" \
    --output-dir "${ROOT}/pkg/generated" \
    --output-pkg "${MODULE}/pkg/generated" \
    --with-watch \
    --with-applyconfig \
    --applyconfig-externals "k8s.io/api/core/v1.PodTemplateSpec:k8s.io/client-go/applyconfigurations/core/v1" \
    "${ROOT}/pkg/apis"
