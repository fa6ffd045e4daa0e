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

# Makes a CA and a serving certificate for batch-apiserver with openssl, for
# an installation that brings its own serving certificate instead of the one
# batch-apiserver makes and rotates itself (docs/certificates.md):
#
#   hack/gen-certs.sh [OUT_DIR]        (default _output/certs)
#
# writes, in OUT_DIR:
#
#   ca.crt, ca.key    the CA; ca.crt is what goes into the APIService caBundle
#                     (hack/render-apiservice.sh)
#   tls.crt, tls.key  the serving certificate and key for the
#                     batch-apiserver-serving Secret, valid for
#                     <service>.<namespace>.svc and .svc.cluster.local
#
# Idempotent: an existing CA is kept, and an existing serving certificate is
# kept while it is signed by that CA, has every name asked for and is valid
# for at least 30 more days. Otherwise the serving certificate is reissued.
#
# Environment:
#   SERVICE_NAME   Service name (default batch-apiserver)
#   NAMESPACE      its namespace (default batch-system)
#   EXTRA_SANS     more subjectAltName entries, comma separated, in openssl
#                  syntax, e.g. "DNS:localhost,IP:127.0.0.1"
#   CA_DAYS        CA validity in days (default 3650)
#   CERT_DAYS      serving certificate validity in days (default 365)

set -euo pipefail

OUT_DIR="${1:-_output/certs}"
SERVICE_NAME="${SERVICE_NAME:-batch-apiserver}"
NAMESPACE="${NAMESPACE:-batch-system}"
EXTRA_SANS="${EXTRA_SANS:-}"
CA_DAYS="${CA_DAYS:-3650}"
CERT_DAYS="${CERT_DAYS:-365}"
# Reissue the serving certificate when it expires within this many seconds.
RENEW_BEFORE_SECONDS=$((30 * 24 * 3600))

log() { echo "+++ [gen-certs] $*" >&2; }
die() { echo "!!! [gen-certs] $*" >&2; exit 1; }

command -v openssl >/dev/null 2>&1 || die "openssl not found in PATH"

SVC_DNS="${SERVICE_NAME}.${NAMESPACE}.svc"
SANS="DNS:${SVC_DNS},DNS:${SVC_DNS}.cluster.local"
if [[ -n "${EXTRA_SANS}" ]]; then
    SANS="${SANS},${EXTRA_SANS}"
fi

mkdir -p "${OUT_DIR}"
# Private keys are readable by the owner only.
umask 077

WORK="$(mktemp -d)"
trap 'rm -rf "${WORK}"' EXIT

CA_CRT="${OUT_DIR}/ca.crt"
CA_KEY="${OUT_DIR}/ca.key"
TLS_CRT="${OUT_DIR}/tls.crt"
TLS_KEY="${OUT_DIR}/tls.key"

# A config file instead of -addext keeps this working with OpenSSL 1.1, 3.x
# and LibreSSL alike.
cat >"${WORK}/openssl.cnf" <<EOF
[ req ]
distinguished_name = dn
prompt             = no

[ dn ]
CN = ${SERVICE_NAME}-ca

[ v3_ca ]
basicConstraints       = critical, CA:TRUE, pathlen:0
keyUsage               = critical, keyCertSign, cRLSign
subjectKeyIdentifier   = hash

[ v3_serving ]
basicConstraints       = critical, CA:FALSE
keyUsage               = critical, digitalSignature, keyEncipherment
extendedKeyUsage       = serverAuth
subjectKeyIdentifier   = hash
authorityKeyIdentifier = keyid
subjectAltName         = ${SANS}
EOF

# Writes to a temporary name and moves into place, so that an interrupted run
# never leaves a half-written file behind.
install_file() { # src dst mode
    chmod "$3" "$1"
    mv -f "$1" "$2"
}

if [[ -s "${CA_CRT}" && -s "${CA_KEY}" ]]; then
    log "keeping the CA in ${CA_CRT}"
else
    log "creating a CA in ${CA_CRT}"
    openssl genrsa -out "${WORK}/ca.key" 2048 2>/dev/null
    openssl req -x509 -new -sha256 -days "${CA_DAYS}" \
        -config "${WORK}/openssl.cnf" -extensions v3_ca \
        -key "${WORK}/ca.key" -out "${WORK}/ca.crt"
    install_file "${WORK}/ca.key" "${CA_KEY}" 600
    install_file "${WORK}/ca.crt" "${CA_CRT}" 644
    # A new CA invalidates whatever serving certificate was there.
    rm -f "${TLS_CRT}" "${TLS_KEY}"
fi

# serving_cert_ok reports whether tls.crt/tls.key can be kept.
serving_cert_ok() {
    [[ -s "${TLS_CRT}" && -s "${TLS_KEY}" ]] || return 1
    openssl verify -CAfile "${CA_CRT}" "${TLS_CRT}" >/dev/null 2>&1 || return 1
    openssl x509 -in "${TLS_CRT}" -noout -checkend "${RENEW_BEFORE_SECONDS}" >/dev/null 2>&1 || return 1
    # The key must belong to the certificate.
    local crt_pub key_pub
    crt_pub="$(openssl x509 -in "${TLS_CRT}" -noout -pubkey 2>/dev/null)" || return 1
    key_pub="$(openssl pkey -in "${TLS_KEY}" -pubout 2>/dev/null)" || return 1
    [[ "${crt_pub}" == "${key_pub}" ]] || return 1
    # Every name asked for must be in the certificate.
    local text san
    text="$(openssl x509 -in "${TLS_CRT}" -noout -text 2>/dev/null)" || return 1
    local IFS=','
    for san in ${SANS}; do
        # openssl prints "DNS:x" as is and "IP:x" as "IP Address:x".
        san="${san/#IP:/IP Address:}"
        grep -qF "${san}" <<<"${text}" || return 1
    done
    return 0
}

if serving_cert_ok; then
    log "keeping the serving certificate in ${TLS_CRT} (${SANS})"
else
    log "issuing a serving certificate in ${TLS_CRT} for ${SANS}"
    openssl genrsa -out "${WORK}/tls.key" 2048 2>/dev/null
    openssl req -new -sha256 -key "${WORK}/tls.key" -subj "/CN=${SVC_DNS}" -out "${WORK}/tls.csr"
    openssl x509 -req -sha256 -days "${CERT_DAYS}" \
        -in "${WORK}/tls.csr" -CA "${CA_CRT}" -CAkey "${CA_KEY}" \
        -set_serial "0x$(openssl rand -hex 16)" \
        -extfile "${WORK}/openssl.cnf" -extensions v3_serving \
        -out "${WORK}/tls.crt" 2>/dev/null
    install_file "${WORK}/tls.key" "${TLS_KEY}" 600
    install_file "${WORK}/tls.crt" "${TLS_CRT}" 644
fi

log "done: ${OUT_DIR}/{ca.crt,ca.key,tls.crt,tls.key}"
