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
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"
)

// FilePair names the PEM files of a certificate and its key. Certificates
// are written readable by everyone, keys with mode 0600.
type FilePair struct {
	CertFile string
	KeyFile  string
}

// Load reads the certificate and its key. Its error wraps fs.ErrNotExist
// when a file is missing and ErrUnusable when the files do not hold a
// matching certificate and key.
func (p FilePair) Load() (*KeyPair, error) {
	certPEM, err := os.ReadFile(p.CertFile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p.CertFile, err)
	}
	keyPEM, err := os.ReadFile(p.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", p.KeyFile, err)
	}
	kp, err := ParseKeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, fmt.Errorf("%s and %s: %w", p.CertFile, p.KeyFile, err)
	}
	return kp, nil
}

// Write writes the key first: if the process dies in between, the
// certificate no longer matches the key and Ensure replaces both.
func (p FilePair) Write(kp *KeyPair) error {
	if err := WriteFile(p.KeyFile, kp.KeyPEM, 0o600); err != nil {
		return err
	}
	return WriteFile(p.CertFile, kp.CertPEM, 0o644)
}

// loadForReuse returns the key pair in the files, nil if it has to be made
// anew, or an error that making it anew would not cure (such as a
// permission error).
func (p FilePair) loadForReuse() (*KeyPair, error) {
	kp, err := p.Load()
	switch {
	case err == nil:
		// An existing key might have been created or copied with a wider mode.
		if err := os.Chmod(p.KeyFile, 0o600); err != nil {
			return nil, fmt.Errorf("restricting permissions of %s: %w", p.KeyFile, err)
		}
		return kp, nil
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, ErrUnusable):
		return nil, nil
	default:
		return nil, err
	}
}

// EnsureCA returns the self-signed CA in the files, replacing it by a new
// one (ten years, client-go's default) when it is missing, unusable or
// expires within renewBefore.
func (p FilePair) EnsureCA(commonName string, now time.Time, renewBefore time.Duration) (*KeyPair, error) {
	kp, err := p.loadForReuse()
	if err != nil {
		return nil, err
	}
	if kp != nil && IsSelfSignedCA(kp.Cert) && RemainingAbove(kp.Cert, now, renewBefore) {
		return kp, nil
	}
	if kp, err = NewCA(commonName, now, 0); err != nil {
		return nil, fmt.Errorf("%s: %w", p.CertFile, err)
	}
	if err := p.Write(kp); err != nil {
		return nil, err
	}
	return kp, nil
}

// EnsureLeaf makes sure the files hold a certificate for spec signed by ca
// that does not expire within renewBefore, and issues one valid for
// lifetime otherwise.
func (p FilePair) EnsureLeaf(ca *KeyPair, spec LeafSpec, now time.Time, lifetime, renewBefore time.Duration) error {
	kp, err := p.loadForReuse()
	if err != nil {
		return err
	}
	if kp != nil && LeafMatches(kp.Cert, ca.Cert, spec, now) && RemainingAbove(kp.Cert, now, renewBefore) {
		return nil
	}
	if kp, err = NewLeaf(ca, spec, now, lifetime); err != nil {
		return fmt.Errorf("%s: %w", p.CertFile, err)
	}
	return p.Write(kp)
}

// WriteFile replaces path with data atomically, so that a reader (such as
// a dynamic certificate provider watching the file) never sees a partial
// file, and so that the result has mode perm even when path existed with
// another one.
func WriteFile(path string, data []byte, perm os.FileMode) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err := f.Chmod(perm); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	if err := os.Rename(f.Name(), path); err != nil {
		return fmt.Errorf("writing %s: %w", path, err)
	}
	return nil
}
