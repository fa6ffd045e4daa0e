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

package apiserver

import (
	"testing"

	utilversion "k8s.io/apimachinery/pkg/util/version"
	apimachineryversion "k8s.io/apimachinery/pkg/version"
)

func TestCheckVersionStamp(t *testing.T) {
	served := utilversion.MustParse("1.37")
	cases := []struct {
		name         string
		major, minor string
		wantErr      bool
	}{
		{name: "unstamped", major: "", minor: ""},
		{name: "hack/version.sh", major: "1", minor: "37"},
		{name: "pre-release minor", major: "1", minor: "37+"},
		{name: "git version's major and minor", major: "0", minor: "1", wantErr: true},
		{name: "older release", major: "1", minor: "36", wantErr: true},
		{name: "not a number", major: "one", minor: "37", wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			info := apimachineryversion.Info{Major: tc.major, Minor: tc.minor, GitVersion: "v0.1.0-abcdef0"}
			err := checkVersionStamp(info, served)
			if gotErr := err != nil; gotErr != tc.wantErr {
				t.Errorf("checkVersionStamp(%s.%s) = %v, want error: %v", tc.major, tc.minor, err, tc.wantErr)
			}
		})
	}
}
