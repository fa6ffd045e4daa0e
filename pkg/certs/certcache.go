/*
Copyright The batch-apiserver Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package certs

import (
	"crypto/sha256"
	"crypto/x509"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticator"
	x509request "k8s.io/apiserver/pkg/authentication/request/x509"
	"k8s.io/utils/clock"
)

// verifiedCertCacheTTL bounds how long a verified client certificate chain
// is trusted without verifying it again.
const verifiedCertCacheTTL = time.Minute

// verifiedCertCacheSize bounds the number of chains remembered; the cache
// starts over when it is full.
const verifiedCertCacheSize = 1024

// cachingCertAuthenticator remembers, for a while, the users of client
// certificate chains the wrapped x509 authenticator accepted, so that a
// client's requests do not each pay for verifying its chain (an ECDSA or
// RSA signature check per certificate: 6% of the standalone server's CPU
// under 32 concurrent creates). A chain is verified again when the CA
// bundle changes, after verifiedCertCacheTTL, and never trusted past its
// leaf's NotAfter; refusals are not remembered.
type cachingCertAuthenticator struct {
	delegate      authenticator.Request
	verifyOptions x509request.VerifyOptionFunc
	clock         clock.PassiveClock

	mu      sync.Mutex
	entries map[verifiedChain]verifiedUser
}

type verifiedChain struct {
	chain [sha256.Size]byte
	roots *x509.CertPool
}

type verifiedUser struct {
	response *authenticator.Response
	until    time.Time
}

// NewCachingCertAuthenticator returns an authenticator that asks delegate
// about a client certificate chain it has not seen accepted lately, and
// answers from its cache otherwise; verifyOptions gives the CA bundle in
// use, and a chain is verified again under a new one.
func NewCachingCertAuthenticator(delegate authenticator.Request, verifyOptions x509request.VerifyOptionFunc, clk clock.PassiveClock) authenticator.Request {
	return &cachingCertAuthenticator{delegate: delegate, verifyOptions: verifyOptions, clock: clk, entries: map[verifiedChain]verifiedUser{}}
}

// AuthenticateRequest answers from the cache for a chain verified before
// against the same CA bundle, and asks the delegate otherwise.
func (a *cachingCertAuthenticator) AuthenticateRequest(req *http.Request) (*authenticator.Response, bool, error) {
	if req.TLS == nil || len(req.TLS.PeerCertificates) == 0 {
		return a.delegate.AuthenticateRequest(req)
	}
	opts, ok := a.verifyOptions()
	if !ok {
		return a.delegate.AuthenticateRequest(req)
	}
	key := verifiedChain{chain: chainDigest(req.TLS.PeerCertificates), roots: opts.Roots}
	now := a.clock.Now()
	a.mu.Lock()
	entry, found := a.entries[key]
	a.mu.Unlock()
	if found && now.Before(entry.until) {
		response := *entry.response
		return &response, true, nil
	}
	response, ok, err := a.delegate.AuthenticateRequest(req)
	if err != nil || !ok {
		return response, ok, err
	}
	until := now.Add(verifiedCertCacheTTL)
	if leaf := req.TLS.PeerCertificates[0]; leaf.NotAfter.Before(until) {
		until = leaf.NotAfter
	}
	a.mu.Lock()
	if len(a.entries) >= verifiedCertCacheSize {
		clear(a.entries)
	}
	a.entries[key] = verifiedUser{response: response, until: until}
	a.mu.Unlock()
	copied := *response
	return &copied, true, nil
}

// chainDigest identifies a presented chain by all its certificates.
func chainDigest(certs []*x509.Certificate) [sha256.Size]byte {
	h := sha256.New()
	for _, c := range certs {
		fmt.Fprintf(h, "%d:", len(c.Raw))
		h.Write(c.Raw)
	}
	var sum [sha256.Size]byte
	h.Sum(sum[:0])
	return sum
}
