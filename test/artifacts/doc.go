// Package artifacts holds the unit tests of the installation manifests in
// artifacts/ and of the certificate scripts in hack/: every document decodes
// strictly into its Kubernetes type, and the properties the installation
// depends on (names, RBAC, replicas, probes, the APIService's TLS settings)
// hold.
package artifacts
