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
