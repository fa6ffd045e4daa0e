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

# Protobuf: generated.proto and generated.pb.go next to the external types,
# and the protobuf struct tags in their types.go, by go-to-protobuf as for
# k8s.io/api. The field numbers are those of the protobuf tags already in
# types.go (upstream's batch/v1 numbers); a new field gets the next free one.
# go-to-protobuf runs `protoc` with code-generator's protoc-gen-gogo, and
# `goimports`: protoc is hack/protoc, a pure-Go protoc (bufbuild/protocompile)
# built from Go modules like everything else here, so no system protoc is
# needed; goimports is pinned in hack/protoc/go.mod.
(
    cd "${ROOT}/hack/protoc"
    GOWORK=off go build -o "${GOBIN}/protoc" .
    GOWORK=off go build -o "${GOBIN}/goimports" golang.org/x/tools/cmd/goimports
)
(
    # Built in code-generator's own module, as kube_codegen.sh builds the
    # other generators, so gogo/protobuf never enters our go.mod.
    cd "${CODEGEN_PKG}"
    GO111MODULE=on go install k8s.io/code-generator/cmd/go-to-protobuf k8s.io/code-generator/cmd/go-to-protobuf/protoc-gen-gogo
)
# protoc finds an imported .proto by its Go import path under an -I
# directory, as in a GOPATH: a scratch tree links each import path to its
# module (ours, k8s.io/api, k8s.io/apimachinery, and gogo/protobuf for the
# gogo.proto the intermediate IDL imports). Only our packages are written;
# the packages prefixed with '-' are read for their types and their existing
# generated.proto, never regenerated.
# (`go list -m` names a module's directory only once it is downloaded.)
go mod download k8s.io/api k8s.io/apimachinery
(cd "${CODEGEN_PKG}" && go mod download github.com/gogo/protobuf)
PROTO_SRC="$(mktemp -d)"
trap 'rm -rf "${PROTO_SRC}"' EXIT
mkdir -p "${PROTO_SRC}/k8s.io" "${PROTO_SRC}/github.com/gogo" "${PROTO_SRC}/$(dirname "${MODULE}")"
proto_link() { # proto_link IMPORT_PATH DIR
    if [ -z "$2" ] || [ ! -d "$2" ]; then
        echo "update-codegen: no module directory for $1" >&2
        exit 1
    fi
    ln -s "$2" "${PROTO_SRC}/$1"
}
proto_link "${MODULE}" "${ROOT}"
proto_link k8s.io/api "$(go list -m -f '{{.Dir}}' k8s.io/api)"
proto_link k8s.io/apimachinery "$(go list -m -f '{{.Dir}}' k8s.io/apimachinery)"
proto_link github.com/gogo/protobuf "$(cd "${CODEGEN_PKG}" && go list -m -f '{{.Dir}}' github.com/gogo/protobuf)"
PROTO_APIMACHINERY_PKGS=(
    -k8s.io/apimachinery/pkg/util/intstr
    -k8s.io/apimachinery/pkg/api/resource
    -k8s.io/apimachinery/pkg/runtime/schema
    -k8s.io/apimachinery/pkg/runtime
    -k8s.io/apimachinery/pkg/apis/meta/v1
)
PROTO_PKGS=(
    -k8s.io/api/core/v1
    -k8s.io/api/scheduling/v1alpha3
    "${MODULE}/pkg/apis/batch/v1"
    "${MODULE}/pkg/apis/batch/v1beta1"
)
PATH="${GOBIN}:${PATH}" "${GOBIN}/go-to-protobuf" \
    --go-header-file "${BOILERPLATE}" \
    --output-dir "${PROTO_SRC}" \
    --proto-import "${PROTO_SRC}" \
    --apimachinery-packages "$(IFS=, ; echo "${PROTO_APIMACHINERY_PKGS[*]}")" \
    --packages "$(IFS=, ; echo "${PROTO_PKGS[*]}")"

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
KUBE_CODEGEN_READONLY_PKGS+=(k8s.io/api/core/v1 k8s.io/api/scheduling/v1alpha3)
kube::codegen::gen_openapi \
    --boilerplate "${BOILERPLATE}" \
    --output-dir "${ROOT}/pkg/generated/openapi" \
    --output-pkg "${MODULE}/pkg/generated/openapi" \
    --output-model-name-file zz_generated.model_name.go \
    --report-filename "${ROOT}/hack/api-rules-violations.list" \
    --update-report \
    --extra-pkgs k8s.io/api/core/v1 \
    --extra-pkgs k8s.io/api/scheduling/v1alpha3 \
    --extra-pkgs k8s.io/apimachinery/pkg/util/intstr \
    "${ROOT}/pkg/apis"

kube::codegen::gen_client \
    --boilerplate "${BOILERPLATE}" \
    --output-dir "${ROOT}/pkg/generated" \
    --output-pkg "${MODULE}/pkg/generated" \
    --with-watch \
    --with-applyconfig \
    --applyconfig-externals "k8s.io/api/core/v1.PodTemplateSpec:k8s.io/client-go/applyconfigurations/core/v1,k8s.io/api/scheduling/v1alpha3.WorkloadPodGroupSchedulingPolicy:k8s.io/client-go/applyconfigurations/scheduling/v1alpha3,k8s.io/api/scheduling/v1alpha3.WorkloadPodGroupSchedulingConstraints:k8s.io/client-go/applyconfigurations/scheduling/v1alpha3,k8s.io/api/scheduling/v1alpha3.WorkloadPodGroupDisruptionMode:k8s.io/client-go/applyconfigurations/scheduling/v1alpha3,k8s.io/api/scheduling/v1alpha3.WorkloadPodGroupResourceClaim:k8s.io/client-go/applyconfigurations/scheduling/v1alpha3" \
    "${ROOT}/pkg/apis"

# The Kueue integration is a module of its own (cmd/batch-kueue, at Kueue's
# k8s.io version): its Job type's deep copies come from that module's own
# deepcopy-gen (a tool line of its go.mod).
(
    cd "${ROOT}/cmd/batch-kueue"
    GOWORK=off go tool deepcopy-gen \
        --go-header-file "${BOILERPLATE}" \
        --output-file zz_generated.deepcopy.go \
        ./api/v1
)
