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

package integration

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
)

// TestCertWriter: the directory holds what the Secret holds, once the
// rotator has filled it; an empty Secret (as the component ships it)
// writes nothing, and a renewal replaces both files.
func TestCertWriter(t *testing.T) {
	steps := []struct {
		name string
		data map[string][]byte
		want map[string]string
	}{
		{name: "empty Secret", want: map[string]string{}},
		{name: "filled", data: map[string][]byte{"ca.crt": []byte("ca"), certFile: []byte("cert-1"), keyFile: []byte("key-1")},
			want: map[string]string{certFile: "cert-1", keyFile: "key-1"}},
		{name: "the same again", data: map[string][]byte{certFile: []byte("cert-1"), keyFile: []byte("key-1")},
			want: map[string]string{certFile: "cert-1", keyFile: "key-1"}},
		{name: "renewed", data: map[string][]byte{certFile: []byte("cert-2"), keyFile: []byte("key-2")},
			want: map[string]string{certFile: "cert-2", keyFile: "key-2"}},
		{name: "a key without a certificate", data: map[string][]byte{keyFile: []byte("key-3")},
			want: map[string]string{certFile: "cert-2", keyFile: "key-2"}},
	}
	dir := filepath.Join(t.TempDir(), "certs")
	w := &certWriter{dir: dir}
	for _, step := range steps {
		if err := w.write(&corev1.Secret{Data: step.data}); err != nil {
			t.Fatalf("%s: %v", step.name, err)
		}
		got := map[string]string{}
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			got[e.Name()] = string(data)
		}
		if diff := cmp.Diff(step.want, got); diff != "" {
			t.Errorf("%s: the directory (-want,+got):\n%s", step.name, diff)
		}
	}
}
