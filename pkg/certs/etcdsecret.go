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
	"fmt"
	"net/http"

	"k8s.io/apiserver/pkg/server/healthz"
)

// etcdCALiveness fails /livez once ca.crt of the etcd Secret holds a CA
// that the etcd client of this process does not trust: the client reads
// --etcd-cafile only when it starts, so after a new etcd CA appears the
// process must restart before that CA signs (within the trust grace).
type etcdCALiveness struct {
	syncer *SecretSyncer
	loaded []byte
}

// NewEtcdCALiveness returns the /livez check "etcd-ca" of the etcd
// client whose --etcd-cafile syncer writes. The CAs syncer holds now are
// the ones the client loaded: call it after the first sync, before the
// client starts.
func NewEtcdCALiveness(syncer *SecretSyncer) healthz.HealthChecker {
	return &etcdCALiveness{syncer: syncer, loaded: syncer.CurrentCA()}
}

// Name implements healthz.HealthChecker.
func (c *etcdCALiveness) Name() string { return "etcd-ca" }

// Check implements healthz.HealthChecker.
func (c *etcdCALiveness) Check(*http.Request) error {
	current := c.syncer.CurrentCA()
	cas, err := ParseCertificates(current)
	if err != nil {
		return nil
	}
	for _, ca := range cas {
		if !BundleContains(c.loaded, ca) {
			return fmt.Errorf("the etcd Secret trusts the CA %q, which this process loaded after its start; it must restart", ca.Subject.CommonName)
		}
	}
	return nil
}
