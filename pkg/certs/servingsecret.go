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
	"bytes"
	"crypto/x509"
	"fmt"
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The keys of a self-managed serving Secret. tls.crt, tls.key and ca.crt
// are the keys every consumer of a kubernetes.io/tls Secret knows (ca.crt
// as cert-manager fills it); the others are ours.
const (
	// SecretCertKey holds the serving certificate.
	SecretCertKey = corev1.TLSCertKey
	// SecretKeyKey holds the serving certificate's key.
	SecretKeyKey = corev1.TLSPrivateKeyKey
	// SecretCABundleKey holds every CA a client must trust to reach any
	// replica: the APIServices' caBundle.
	SecretCABundleKey = "ca.crt"
	// SecretSigningCAKeyKey holds the key of the CA that signs the serving
	// certificate. A Secret without it is not ours and is used as is.
	SecretSigningCAKeyKey  = "signing-ca.key"
	secretSigningCACertKey = "signing-ca.crt"
	// The CA that will sign next, trusted but not yet signing.
	secretNextCACertKey = "next-ca.crt"
	secretNextCAKeyKey  = "next-ca.key"
	// The CA that signed before, still trusted until every certificate it
	// signed has expired.
	secretPreviousCACertKey = "previous-ca.crt"
)

// The annotations of a self-managed serving Secret.
const (
	// AnnotationCABundleRevision counts the changes of ca.crt, so that a
	// replica with an old copy of the Secret never puts an older bundle
	// back into an APIService.
	AnnotationCABundleRevision = "batch.jobs.dev/ca-bundle-revision"
	// annotationNextCATrustedSince is when a replica first saw every
	// APIService trust the next CA.
	annotationNextCATrustedSince = "batch.jobs.dev/next-ca-trusted-since"
	// annotationPreviousCATrustedUntil is when the last certificate of the
	// previous CA expires; the previous CA leaves the bundle then.
	annotationPreviousCATrustedUntil = "batch.jobs.dev/previous-ca-trusted-until"
)

// clockSkew backdates the certificates of a serving Secret, so that a
// replica or an aggregator whose clock is a little behind the one that
// issued them does not find them not yet valid.
const clockSkew = time.Minute

// ServingSecretConfig says what a self-managed serving Secret holds and
// when its certificates change.
//
// The Secret goes through these steps, each taken by whichever replica
// gets there first (a replica writes the Secret only with the
// resourceVersion it read, so two never take the same step twice):
//
//  1. Created with a CA (valid CALifetime) and a serving certificate for
//     DNSNames (valid CertLifetime); ca.crt is that CA.
//  2. The serving certificate is reissued by the same CA once less than a
//     third of its life is left; nothing else changes.
//  3. Once less than a third of the CA's life is left, a next CA is made
//     and added to ca.crt. It signs nothing yet.
//  4. When every APIService trusts the next CA, a replica records the
//     time; TrustGrace after it the next CA signs a new serving
//     certificate and the CA before it becomes the previous one.
//  5. The previous CA stays in ca.crt until the last certificate it signed
//     has expired: no replica can still serve one that a client accepts.
//
// So ca.crt never lacks the CA of a certificate a replica may serve.
type ServingSecretConfig struct {
	// Namespace and Name name the Secret.
	Namespace, Name string
	// CommonName is the serving certificate's subject.
	CommonName string
	// DNSNames are the names the serving certificate is valid for.
	DNSNames []string
	// CALifetime and CertLifetime are the lifetimes of new CAs and
	// serving certificates; CALifetime must be at least three times
	// CertLifetime, so that a certificate issued before a CA rotation
	// starts is never cut short by its CA.
	CALifetime, CertLifetime time.Duration
	// TrustGrace is how long a next CA waits after every APIService trusts
	// it before it signs: the time the aggregator takes to see an
	// APIService change.
	TrustGrace time.Duration
	// Labels are put on a Secret the server creates.
	Labels map[string]string
	// ClientAuth makes the certificate good for client authentication
	// too, as an etcd member's and its clients' certificate must be.
	ClientAuth bool
}

// Validate checks the lifetimes.
func (c ServingSecretConfig) Validate() error {
	switch {
	case c.CertLifetime <= 0:
		return fmt.Errorf("serving certificate lifetime %v must be positive", c.CertLifetime)
	case c.CALifetime < 3*c.CertLifetime:
		return fmt.Errorf("serving CA lifetime %v must be at least three times the serving certificate lifetime %v", c.CALifetime, c.CertLifetime)
	case c.TrustGrace < 0:
		return fmt.Errorf("serving CA trust grace %v must not be negative", c.TrustGrace)
	}
	return nil
}

// SelfManaged reports whether the server manages secret: it holds the key
// of the CA that signs. Any other Secret (cert-manager's, an operator's) is
// served as is, and the APIServices are left alone.
func SelfManaged(secret *corev1.Secret) bool {
	return secret != nil && len(secret.Data[SecretSigningCAKeyKey]) > 0
}

// PendingCA returns the next CA of a self-managed Secret that waits for
// every APIService to trust it, or nil when there is none.
func PendingCA(secret *corev1.Secret) *x509.Certificate {
	if secret == nil {
		return nil
	}
	next, err := ParseKeyPair(secret.Data[secretNextCACertKey], secret.Data[secretNextCAKeyKey])
	if err != nil {
		return nil
	}
	if _, trusted := secret.Annotations[annotationNextCATrustedSince]; trusted {
		return nil
	}
	return next.Cert
}

// CABundleRevision is the revision of the Secret's ca.crt, 0 when it has
// none.
func CABundleRevision(secret *corev1.Secret) int64 {
	n, _ := strconv.ParseInt(secret.Annotations[AnnotationCABundleRevision], 10, 64)
	return n
}

// BundleContains reports whether the PEM bundle holds cert.
func BundleContains(bundle []byte, cert *x509.Certificate) bool {
	certs, err := ParseCertificates(bundle)
	if err != nil {
		return false
	}
	return slices.ContainsFunc(certs, cert.Equal)
}

// Plan returns the self-managed Secret as it should be at now: current
// (nil when there is none yet) with the step of the rotation due, if any,
// taken. pendingTrusted says whether every APIService trusts PendingCA.
// current is not changed.
func (c ServingSecretConfig) Plan(current *corev1.Secret, now time.Time, pendingTrusted bool) (*corev1.Secret, error) {
	s := current.DeepCopy()
	if s == nil {
		s = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: c.Namespace, Name: c.Name, Labels: c.Labels},
			Type:       corev1.SecretTypeTLS,
		}
	}
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}

	signing, err := ParseKeyPair(s.Data[secretSigningCACertKey], s.Data[SecretSigningCAKeyKey])
	if err != nil {
		// New, or damaged beyond use: start over. Clients trusting the old
		// bundle fail until the APIServices get the new one.
		for _, k := range []string{secretSigningCACertKey, SecretSigningCAKeyKey, secretNextCACertKey, secretNextCAKeyKey, secretPreviousCACertKey, SecretCertKey, SecretKeyKey} {
			delete(s.Data, k)
		}
		delete(s.Annotations, annotationNextCATrustedSince)
		delete(s.Annotations, annotationPreviousCATrustedUntil)
		if signing, err = c.newCA(now); err != nil {
			return nil, err
		}
		setPair(s, secretSigningCACertKey, SecretSigningCAKeyKey, signing)
	}
	leaf, _ := ParseKeyPair(s.Data[SecretCertKey], s.Data[SecretKeyKey])

	// Step 5: retire the previous CA.
	if _, err := ParseCertificates(s.Data[secretPreviousCACertKey]); err == nil {
		until, err := time.Parse(time.RFC3339, s.Annotations[annotationPreviousCATrustedUntil])
		if err != nil || !now.Before(until) {
			delete(s.Data, secretPreviousCACertKey)
			delete(s.Annotations, annotationPreviousCATrustedUntil)
		}
	} else {
		delete(s.Data, secretPreviousCACertKey)
		delete(s.Annotations, annotationPreviousCATrustedUntil)
	}

	// Step 4: the next CA starts signing.
	next, err := ParseKeyPair(s.Data[secretNextCACertKey], s.Data[secretNextCAKeyKey])
	if err != nil {
		delete(s.Data, secretNextCACertKey)
		delete(s.Data, secretNextCAKeyKey)
		delete(s.Annotations, annotationNextCATrustedSince)
		next = nil
	}
	if next != nil {
		since, err := time.Parse(time.RFC3339, s.Annotations[annotationNextCATrustedSince])
		switch {
		case err != nil && pendingTrusted:
			s.Annotations[annotationNextCATrustedSince] = now.UTC().Format(time.RFC3339)
		case err == nil && !now.Before(since.Add(c.TrustGrace)) && len(s.Data[secretPreviousCACertKey]) == 0:
			// One previous CA at a time: a rotation waits for the one
			// before it to end.
			until := now
			if leaf != nil && leaf.Cert.CheckSignatureFrom(signing.Cert) == nil {
				until = leaf.Cert.NotAfter
			}
			s.Data[secretPreviousCACertKey] = signing.CertPEM
			s.Annotations[annotationPreviousCATrustedUntil] = until.UTC().Format(time.RFC3339)
			signing = next
			setPair(s, secretSigningCACertKey, SecretSigningCAKeyKey, signing)
			delete(s.Data, secretNextCACertKey)
			delete(s.Data, secretNextCAKeyKey)
			delete(s.Annotations, annotationNextCATrustedSince)
			next = nil
		}
	}

	// Step 3: make the next CA.
	if next == nil && signing.Cert.NotAfter.Sub(now) <= c.CALifetime/3 {
		if next, err = c.newCA(now); err != nil {
			return nil, err
		}
		setPair(s, secretNextCACertKey, secretNextCAKeyKey, next)
	}

	// Step 2 (and 1, and after 4): the serving certificate.
	if leaf == nil || !c.leafUsable(leaf.Cert, signing.Cert, now) {
		// Backdated by clockSkew, with its lifetime counted from now.
		if leaf, err = NewLeaf(signing, c.spec(), now.Add(-clockSkew), c.CertLifetime+clockSkew); err != nil {
			return nil, err
		}
		setPair(s, SecretCertKey, SecretKeyKey, leaf)
	}

	var trusted []*x509.Certificate
	if prev, err := ParseCertificates(s.Data[secretPreviousCACertKey]); err == nil {
		trusted = append(trusted, prev...)
	}
	trusted = append(trusted, signing.Cert)
	if next != nil {
		trusted = append(trusted, next.Cert)
	}
	bundle, err := EncodeCertificates(trusted...)
	if err != nil {
		return nil, fmt.Errorf("encoding CA bundle: %w", err)
	}
	if !bytes.Equal(bundle, s.Data[SecretCABundleKey]) {
		s.Data[SecretCABundleKey] = bundle
		s.Annotations[AnnotationCABundleRevision] = strconv.FormatInt(CABundleRevision(s)+1, 10)
	}
	return s, nil
}

func (c ServingSecretConfig) spec() LeafSpec {
	spec := ServingSpec(c.CommonName, c.DNSNames...)
	spec.AlsoClientAuth = c.ClientAuth
	return spec
}

func (c ServingSecretConfig) newCA(now time.Time) (*KeyPair, error) {
	return NewCA(fmt.Sprintf("%s-ca@%d", c.CommonName, now.Unix()), now.Add(-clockSkew), c.CALifetime+clockSkew)
}

// leafUsable reports whether leaf is signed by ca for the configured names
// and has more than a third of its life left. Unlike LeafMatches it does
// not look at NotBefore: a replica whose clock is behind must not reissue a
// certificate another replica just issued.
func (c ServingSecretConfig) leafUsable(leaf, ca *x509.Certificate, now time.Time) bool {
	spec := c.spec()
	return leaf.CheckSignatureFrom(ca) == nil &&
		leaf.NotAfter.Sub(now) > c.CertLifetime/3 &&
		leaf.Subject.CommonName == spec.CommonName &&
		slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageServerAuth) &&
		slices.Contains(leaf.ExtKeyUsage, x509.ExtKeyUsageClientAuth) == spec.AlsoClientAuth &&
		sameNames(leaf.DNSNames, spec.DNSNames) &&
		sameNames(ipStrings(leaf.IPAddresses), ipStrings(spec.IPs))
}

func setPair(s *corev1.Secret, certKey, keyKey string, kp *KeyPair) {
	s.Data[certKey] = kp.CertPEM
	s.Data[keyKey] = kp.KeyPEM
}
