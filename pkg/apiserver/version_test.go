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
