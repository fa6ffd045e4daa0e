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

package main

import (
	"path/filepath"
	"testing"
)

func TestDefaultKubeconfig(t *testing.T) {
	t.Setenv("KUBECONFIG", "/a/config"+string(filepath.ListSeparator)+"/b/config")
	if got := defaultKubeconfig(); got != "/a/config" {
		t.Errorf("defaultKubeconfig() = %q, want the first file of $KUBECONFIG", got)
	}
	t.Setenv("KUBECONFIG", "")
	t.Setenv("HOME", "/home/someone")
	if got, want := defaultKubeconfig(), filepath.Join("/home/someone", ".kube", "config"); got != want {
		t.Errorf("defaultKubeconfig() = %q, want %q", got, want)
	}
}
