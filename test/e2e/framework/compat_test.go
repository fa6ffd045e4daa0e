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

package framework

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/util/version"
)

func TestHostLacks(t *testing.T) {
	gap := HostGap{Since: 36, Missing: "no X"}
	cases := []struct {
		name, host string
		want       string
		wantArgs   []string
	}{
		{name: "reference host", host: "1.37.2"},
		{name: "first host that has it", host: "1.36.0"},
		{name: "one minor older", host: "1.35.4", want: "host v1.35.4 is older than 1.36: no X"},
		{name: "oldest tested", host: "1.34.4", want: "host v1.34.4 is older than 1.36: no X"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &Binaries{HostVersion: version.MustParseSemantic(tc.host)}
			if got := b.HostLacks(gap); got != tc.want {
				t.Errorf("HostLacks = %q, want %q", got, tc.want)
			}
			if diff := cmp.Diff(tc.wantArgs, b.hostBatchArgs()); diff != "" {
				t.Errorf("hostBatchArgs (-want +got):\n%s", diff)
			}
		})
	}
}

func TestHostVersion(t *testing.T) {
	cases := []struct {
		name, printed string
		want          string
		wantErr       bool
	}{
		{name: "stamped", printed: "Kubernetes v1.34.4", want: "1.34.4"},
		{name: "not stamped", printed: "Kubernetes v0.0.0-master+$Format:%H$", wantErr: true},
		{name: "not kubernetes", printed: "hello", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			bin := filepath.Join(t.TempDir(), "kube-apiserver")
			script := "#!/bin/sh\necho '" + tc.printed + "'\n"
			if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
				t.Fatal(err)
			}
			v, err := hostVersion(bin)
			if (err != nil) != tc.wantErr {
				t.Fatalf("hostVersion: %v, want error %v", err, tc.wantErr)
			}
			if err == nil && v.String() != tc.want {
				t.Errorf("hostVersion = %s, want %s", v, tc.want)
			}
		})
	}
}
