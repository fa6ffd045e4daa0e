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

package jobhost

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	componentbaseconfig "k8s.io/component-base/config"
)

// parseFlags parses args with the controller's flags, as the server's
// command line adds them.
func parseFlags(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions()
	fs := pflag.NewFlagSet("controller", pflag.ContinueOnError)
	o.AddFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	return o
}

func TestControllersFlag(t *testing.T) {
	type result struct {
		Enabled bool
		Errors  int
	}
	cases := map[string]struct {
		args []string
		want result
	}{
		"default is *":           {want: result{Enabled: true}},
		"*":                      {args: []string{"--controllers=*"}, want: result{Enabled: true}},
		"job":                    {args: []string{"--controllers=job"}, want: result{Enabled: true}},
		"-job":                   {args: []string{"--controllers=-job"}, want: result{Enabled: false}},
		"* and -job":             {args: []string{"--controllers=*,-job"}, want: result{Enabled: false}},
		"first naming one wins":  {args: []string{"--controllers=job,-job"}, want: result{Enabled: true}},
		"empty: only named ones": {args: []string{"--controllers="}, want: result{Enabled: false}},
		"unknown":                {args: []string{"--controllers=*,cronjob"}, want: result{Enabled: true, Errors: 1}},
		"unknown disabled":       {args: []string{"--controllers=-cronjob"}, want: result{Enabled: false, Errors: 1}},
		"two unknown":            {args: []string{"--controllers=jobs,-"}, want: result{Enabled: false, Errors: 2}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parseFlags(t, tc.args...)
			got := result{Enabled: o.JobControllerEnabled(), Errors: len(o.Validate())}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("--controllers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestLeaderElectionFlags(t *testing.T) {
	cases := map[string]struct {
		args []string
		want componentbaseconfig.LeaderElectionConfiguration
	}{
		"defaults as kube-controller-manager": {
			want: componentbaseconfig.LeaderElectionConfiguration{
				LeaderElect:   true,
				LeaseDuration: metav1.Duration{Duration: 15 * time.Second},
				RenewDeadline: metav1.Duration{Duration: 10 * time.Second},
				RetryPeriod:   metav1.Duration{Duration: 2 * time.Second},
				ResourceLock:  "leases",
				// Named after the server identity once it is read.
				ResourceName: "",
			},
		},
		"every flag": {
			args: []string{
				"--leader-elect=false", "--leader-elect-lease-duration=30s", "--leader-elect-renew-deadline=20s",
				"--leader-elect-retry-period=5s", "--leader-elect-resource-name=other", "--leader-elect-resource-namespace=ns",
			},
			want: componentbaseconfig.LeaderElectionConfiguration{
				LeaderElect:       false,
				LeaseDuration:     metav1.Duration{Duration: 30 * time.Second},
				RenewDeadline:     metav1.Duration{Duration: 20 * time.Second},
				RetryPeriod:       metav1.Duration{Duration: 5 * time.Second},
				ResourceLock:      "leases",
				ResourceName:      "other",
				ResourceNamespace: "ns",
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parseFlags(t, tc.args...)
			if diff := cmp.Diff(tc.want, o.LeaderElection); diff != "" {
				t.Errorf("leader election (-want +got):\n%s", diff)
			}
			if errs := o.Validate(); len(errs) != 0 {
				t.Errorf("Validate: %v", errs)
			}
		})
	}
}

func TestConcurrentJobSyncsFlag(t *testing.T) {
	cases := map[string]struct {
		args       []string
		want       int32
		wantErrors int
	}{
		"default as kube-controller-manager": {want: 5},
		"set":                                {args: []string{"--concurrent-job-syncs=20"}, want: 20},
		"1, the smallest":                    {args: []string{"--concurrent-job-syncs=1"}, want: 1},
		"0":                                  {args: []string{"--concurrent-job-syncs=0"}, want: 0, wantErrors: 1},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parseFlags(t, tc.args...)
			got := []int{int(o.ConcurrentJobSyncs), len(o.Validate())}
			if diff := cmp.Diff([]int{int(tc.want), tc.wantErrors}, got); diff != "" {
				t.Errorf("concurrent-job-syncs, errors (-want +got):\n%s", diff)
			}
		})
	}
}

// TestKubeAPIRateFlags checks --kube-api-qps and --kube-api-burst: their
// defaults (KEP-2307's 100 QPS, not kube-controller-manager's 20/30) and
// what Validate refuses.
func TestKubeAPIRateFlags(t *testing.T) {
	type result struct {
		QPS    float32
		Burst  int32
		Errors int
	}
	cases := map[string]struct {
		args []string
		want result
	}{
		"defaults":                     {want: result{QPS: 100, Burst: 200}},
		"kube-controller-manager's":    {args: []string{"--kube-api-qps=20", "--kube-api-burst=30"}, want: result{QPS: 20, Burst: 30}},
		"fractional qps":               {args: []string{"--kube-api-qps=0.5", "--kube-api-burst=1"}, want: result{QPS: 0.5, Burst: 1}},
		"no limit":                     {args: []string{"--kube-api-qps=-1", "--kube-api-burst=0"}, want: result{QPS: -1, Burst: 0}},
		"qps 0 would be client-go's 5": {args: []string{"--kube-api-qps=0"}, want: result{QPS: 0, Burst: 200, Errors: 1}},
		"burst 0 with a limit":         {args: []string{"--kube-api-burst=0"}, want: result{QPS: 100, Burst: 0, Errors: 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parseFlags(t, tc.args...)
			got := result{QPS: o.KubeAPIQPS, Burst: o.KubeAPIBurst, Errors: len(o.Validate())}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestKubeAPIContentTypeFlag checks --kube-api-content-type: protobuf by
// default, as kube-controller-manager's, JSON on request, nothing else,
// and what the clients then send and accept.
func TestKubeAPIContentTypeFlag(t *testing.T) {
	type result struct {
		ContentType, Accept string
		Errors              int
	}
	cases := map[string]struct {
		args []string
		want result
	}{
		"default": {want: result{ContentType: "application/vnd.kubernetes.protobuf", Accept: "application/vnd.kubernetes.protobuf,application/json"}},
		"json":    {args: []string{"--kube-api-content-type=application/json"}, want: result{ContentType: "application/json", Accept: "application/json"}},
		"yaml":    {args: []string{"--kube-api-content-type=application/yaml"}, want: result{ContentType: "application/yaml", Accept: "application/yaml,application/json", Errors: 1}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parseFlags(t, tc.args...)
			cfg := &rest.Config{}
			withContentType(cfg, o.KubeAPIContentType)
			got := result{ContentType: cfg.ContentType, Accept: cfg.AcceptContentTypes, Errors: len(o.Validate())}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestValidateLeaderElection(t *testing.T) {
	cases := map[string]struct {
		args       []string
		wantErrors int
	}{
		"renew deadline just inside the lease duration": {
			args: []string{"--leader-elect-lease-duration=15s", "--leader-elect-renew-deadline=14s"},
		},
		"renew deadline equal to the lease duration": {
			args:       []string{"--leader-elect-lease-duration=10s", "--leader-elect-renew-deadline=10s"},
			wantErrors: 1,
		},
		"renew deadline not above 1.2 retry periods": {
			args:       []string{"--leader-elect-renew-deadline=6s", "--leader-elect-retry-period=5s"},
			wantErrors: 1,
		},
		"zero retry period": {
			args:       []string{"--leader-elect-retry-period=0s"},
			wantErrors: 1,
		},
		"endpoints lock": {
			args:       []string{"--leader-elect-resource-lock=endpoints"},
			wantErrors: 1,
		},
		"empty lease name: the default, named after the identity": {
			args: []string{"--leader-elect-resource-name="},
		},
		"bad durations without leader election are not checked": {
			args: []string{"--leader-elect=false", "--leader-elect-lease-duration=1s"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parseFlags(t, tc.args...)
			if errs := o.Validate(); len(errs) != tc.wantErrors {
				t.Errorf("Validate returned %d errors, want %d: %v", len(errs), tc.wantErrors, errs)
			}
		})
	}
}
