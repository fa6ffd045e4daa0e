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

// Package artifacts holds the unit tests of the installation manifests in
// artifacts/ and of the certificate scripts in hack/: every document decodes
// strictly into its Kubernetes type, and the properties the installation
// depends on (names, RBAC, replicas, probes, the APIService's TLS settings)
// hold.
package artifacts
