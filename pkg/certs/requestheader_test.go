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
	"crypto/x509"
	"testing"

	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/authentication/request/headerrequest"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
)

// caBundle is a CAContentProvider whose bundle the test sets; empty is
// what the configmap controller serves before its first read.
type caBundle []byte

func (b caBundle) Name() string                              { return "test-ca" }
func (b caBundle) CurrentCABundleContent() []byte            { return b }
func (b caBundle) VerifyOptions() (x509.VerifyOptions, bool) { return x509.VerifyOptions{}, len(b) > 0 }
func (b caBundle) AddListener(dynamiccertificates.Listener)  {}

func TestRequestHeaderReady(t *testing.T) {
	headers := headerrequest.StaticStringSlice{"X-Remote-User"}
	cases := map[string]struct {
		config    *authenticatorfactory.RequestHeaderConfig
		noChecker bool
		wantReady bool
	}{
		"no front proxy configured": {noChecker: true},
		"no CA provider":            {config: &authenticatorfactory.RequestHeaderConfig{UsernameHeaders: headers}, noChecker: true},
		"CA not loaded yet": {
			config: &authenticatorfactory.RequestHeaderConfig{CAContentProvider: caBundle(nil), UsernameHeaders: headers},
		},
		"CA loaded, header names not yet": {
			config: &authenticatorfactory.RequestHeaderConfig{CAContentProvider: caBundle("PEM"), UsernameHeaders: headerrequest.StaticStringSlice{}},
		},
		"CA loaded, no header provider": {
			config: &authenticatorfactory.RequestHeaderConfig{CAContentProvider: caBundle("PEM")},
		},
		"both loaded": {
			config:    &authenticatorfactory.RequestHeaderConfig{CAContentProvider: caBundle("PEM"), UsernameHeaders: headers},
			wantReady: true,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			check := RequestHeaderReady(tc.config)
			if tc.noChecker {
				if check != nil {
					t.Fatalf("RequestHeaderReady = %s, want no check", check.Name())
				}
				return
			}
			if check == nil {
				t.Fatal("RequestHeaderReady = nil, want a check")
			}
			if check.Name() != "requestheader-client-ca" {
				t.Errorf("check name %q, want requestheader-client-ca", check.Name())
			}
			if err := check.Check(nil); (err == nil) != tc.wantReady {
				t.Errorf("Check() = %v, want ready %v", err, tc.wantReady)
			}
		})
	}
}
