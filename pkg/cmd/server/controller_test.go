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

package server

import (
	"bufio"
	"bytes"
	"context"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	componentbaseconfig "k8s.io/component-base/config"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	versionedfake "github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned/fake"
)

// parseOptions parses args with the server's own flags and completes the
// options.
func parseOptions(t *testing.T, args ...string) *Options {
	t.Helper()
	o := NewOptions(io.Discard)
	cmd := &cobra.Command{}
	o.AddFlags(cmd)
	if err := cmd.ParseFlags(args); err != nil {
		t.Fatalf("parsing %q: %v", args, err)
	}
	if err := o.Complete(); err != nil {
		t.Fatalf("Complete: %v", err)
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
			o := parseOptions(t, tc.args...)
			got := result{Enabled: o.Controller.JobControllerEnabled(), Errors: len(o.Controller.Validate())}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("--controllers (-want +got):\n%s", diff)
			}
		})
	}
}

func TestJobControllerPlan(t *testing.T) {
	const noCluster = "Job controller: off (no cluster to run Pods in); Jobs are stored but not run. Pass --kubeconfig <host cluster kubeconfig> to run them."
	const disabled = "Job controller: off (--controllers disables job); Jobs are stored but not run. Pass --controllers=* to run them."
	cases := map[string]struct {
		args []string
		want jobControllerPlan
	}{
		"standalone without kubeconfig": {
			want: jobControllerPlan{Off: noCluster},
		},
		"standalone with kubeconfig": {
			args: []string{"--kubeconfig=/host/kubeconfig"},
			want: jobControllerPlan{Run: true, Kubeconfig: "/host/kubeconfig", DeletePodsOfDeletedJobs: true},
		},
		"standalone with kubeconfig, -job": {
			args: []string{"--kubeconfig=/host/kubeconfig", "--controllers=-job"},
			want: jobControllerPlan{Off: disabled},
		},
		"standalone without kubeconfig, job": {
			args: []string{"--controllers=job"},
			want: jobControllerPlan{Off: noCluster},
		},
		"aggregated, in-cluster": {
			args: []string{"--etcd-servers=http://etcd:2379"},
			want: jobControllerPlan{Run: true, WaitForLegacyLease: true},
		},
		"aggregated with kubeconfig": {
			args: []string{"--etcd-servers=http://etcd:2379", "--kubeconfig=/host/kubeconfig"},
			want: jobControllerPlan{Run: true, Kubeconfig: "/host/kubeconfig", WaitForLegacyLease: true},
		},
		"aggregated, -job": {
			args: []string{"--etcd-servers=http://etcd:2379", "--controllers=-job"},
			want: jobControllerPlan{Off: disabled},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			o := parseOptions(t, tc.args...)
			if diff := cmp.Diff(tc.want, o.jobControllerPlan()); diff != "" {
				t.Errorf("plan (-want +got):\n%s", diff)
			}
		})
	}
}

// TestStandaloneKubeconfigWithoutDelegatedAuth checks that --kubeconfig in
// standalone mode only names the controller's cluster: the server still
// authenticates and authorizes on its own.
func TestStandaloneKubeconfigWithoutDelegatedAuth(t *testing.T) {
	o := parseOptions(t, "--kubeconfig=/host/kubeconfig")
	ro := o.RecommendedOptions
	got := []bool{o.Standalone(), ro.CoreAPI == nil, ro.Authentication == nil, ro.Authorization == nil, ro.Admission == nil}
	if diff := cmp.Diff([]bool{true, true, true, true, true}, got); diff != "" {
		t.Errorf("standalone, CoreAPI, Authentication, Authorization, Admission nil (-want +got):\n%s", diff)
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
			o := parseOptions(t, tc.args...)
			if diff := cmp.Diff(tc.want, o.Controller.LeaderElection); diff != "" {
				t.Errorf("leader election (-want +got):\n%s", diff)
			}
			if errs := o.Controller.Validate(); len(errs) != 0 {
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
			o := parseOptions(t, tc.args...)
			got := []int{int(o.Controller.ConcurrentJobSyncs), len(o.Controller.Validate())}
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
			o := parseOptions(t, tc.args...)
			got := result{QPS: o.Controller.KubeAPIQPS, Burst: o.Controller.KubeAPIBurst, Errors: len(o.Controller.Validate())}
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
			o := parseOptions(t, tc.args...)
			cfg := &rest.Config{}
			withContentType(cfg, o.Controller.KubeAPIContentType)
			got := result{ContentType: cfg.ContentType, Accept: cfg.AcceptContentTypes, Errors: len(o.Controller.Validate())}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

// TestControllerClientBudgets checks that the controller's host writes,
// its Job status writes and its informers each draw on a limiter of their
// own, all at --kube-api-qps, or on none when it is negative.
func TestControllerClientBudgets(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["host"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "sa"}
	cfg.CurrentContext = "host"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		qps       float32
		burst     int32
		wantLimit bool
	}{
		"limited":   {qps: 7, burst: 9, wantLimit: true},
		"unlimited": {qps: -1, burst: 0, wantLimit: false},
	} {
		t.Run(name, func(t *testing.T) {
			opts := NewControllerOptions()
			opts.LeaderElection.LeaderElect = false
			opts.KubeAPIQPS, opts.KubeAPIBurst = tc.qps, tc.burst
			r, err := newJobControllerRunner(opts, jobControllerPlan{Run: true, Kubeconfig: kubeconfig, Identity: "id"})
			if err != nil {
				t.Fatal(err)
			}
			writes := r.kubeClient.CoreV1().RESTClient().GetRateLimiter()
			informers := r.informerClient.CoreV1().RESTClient().GetRateLimiter()
			if !tc.wantLimit {
				if r.writes != nil || r.statusWrites != nil || writes != nil || informers != nil {
					t.Fatalf("limiters: writes %v, status writes %v, host client %v, informers %v; want none",
						r.writes, r.statusWrites, writes, informers)
				}
				return
			}
			if r.writes == nil || writes != r.writes {
				t.Fatalf("host client's limiter %p, writes %p: want the writes' one", writes, r.writes)
			}
			if r.statusWrites == nil || r.statusWrites == r.writes || informers == nil || informers == r.writes || informers == r.statusWrites {
				t.Fatalf("limiters: host writes %p, status writes %p, informers %p; want three", r.writes, r.statusWrites, informers)
			}
			if got := []float32{writes.QPS(), r.statusWrites.QPS(), informers.QPS()}; !cmp.Equal(got, []float32{tc.qps, tc.qps, tc.qps}) {
				t.Errorf("QPS of host writes, status writes, informers = %v, want %v each", got, tc.qps)
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
			o := parseOptions(t, tc.args...)
			if errs := o.Controller.Validate(); len(errs) != tc.wantErrors {
				t.Errorf("Validate returned %d errors, want %d: %v", len(errs), tc.wantErrors, errs)
			}
		})
	}
}

func TestLeaseNamespace(t *testing.T) {
	cases := map[string]struct {
		flag string
		env  string
		file string // empty: no file
		want string
	}{
		"flag wins":                     {flag: "flag-ns", env: "env-ns", file: "file-ns", want: "flag-ns"},
		"POD_NAMESPACE":                 {env: "env-ns", file: "file-ns", want: "env-ns"},
		"in-cluster ServiceAccount":     {file: "file-ns\n", want: "file-ns"},
		"empty ServiceAccount file":     {file: " \n", want: "default"},
		"outside a cluster: default ns": {want: "default"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			getenv := func(key string) string {
				if key == "POD_NAMESPACE" {
					return tc.env
				}
				return ""
			}
			readFile := func(path string) ([]byte, error) {
				if path != "/var/run/secrets/kubernetes.io/serviceaccount/namespace" || tc.file == "" {
					return nil, fs.ErrNotExist
				}
				return []byte(tc.file), nil
			}
			if got := leaseNamespace(tc.flag, getenv, readFile); got != tc.want {
				t.Errorf("leaseNamespace = %q, want %q", got, tc.want)
			}
		})
	}
}

var (
	sectionLine = regexp.MustCompile(`^(\S.*) flags:$`)
	flagLine    = regexp.MustCompile(`^\s+(?:-\S, )?--([a-z0-9-]+)`)
)

// TestHelpSections prints --help and checks its sections, and that every
// flag the command accepts is printed in exactly one of them.
func TestHelpSections(t *testing.T) {
	var out bytes.Buffer
	cmd := NewCommand(context.Background(), &out, io.Discard)
	cmd.SetArgs([]string{"--help"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("--help: %v", err)
	}

	var sections []string
	sectionOf := map[string][]string{}
	scanner := bufio.NewScanner(&out)
	for scanner.Scan() {
		line := scanner.Text()
		if m := sectionLine.FindStringSubmatch(line); m != nil {
			sections = append(sections, m[1])
			continue
		}
		if m := flagLine.FindStringSubmatch(line); m != nil && len(sections) > 0 {
			sectionOf[m[1]] = append(sectionOf[m[1]], sections[len(sections)-1])
		}
	}
	if err := scanner.Err(); err != nil {
		t.Fatal(err)
	}

	wantSections := []string{
		"Generic", "Etcd", "Secure serving", "Auditing", "Features", "Authentication", "Authorization",
		"Egress selector", "Admission", "Metrics", "Logs", "Traces", "Standalone", "Controller", "Global",
	}
	if diff := cmp.Diff(wantSections, sections); diff != "" {
		t.Errorf("sections (-want +got):\n%s", diff)
	}

	var problems []string
	cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Hidden {
			return
		}
		if got := sectionOf[f.Name]; len(got) != 1 {
			problems = append(problems, "--"+f.Name+" printed in "+formatList(got))
		}
	})
	for name := range sectionOf {
		if cmd.Flags().Lookup(name) == nil {
			problems = append(problems, "--"+name+" printed but not a flag")
		}
	}
	slices.Sort(problems)
	if len(problems) != 0 {
		t.Errorf("flags not in exactly one section:\n%s", formatList(problems))
	}

	// A few flags in the section a reader looks for them in.
	want := map[string][]string{
		"controllers":           {"Controller"},
		"concurrent-job-syncs":  {"Controller"},
		"kube-api-qps":          {"Controller"},
		"kube-api-burst":        {"Controller"},
		"kube-api-content-type": {"Controller"},
		"leader-elect":          {"Controller"},
		"kubeconfig":            {"Generic"},
		"data-dir":              {"Standalone"},
		"feature-gates":         {"Features"},
		"etcd-servers":          {"Etcd"},
		"help":                  {"Global"},
		"v":                     {"Logs"},
	}
	got := map[string][]string{}
	for name := range want {
		got[name] = sectionOf[name]
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sections of flags (-want +got):\n%s", diff)
	}
}

// TestModeOnlyFlagsSaySo checks that flags meaningful in one mode only say
// which.
func TestModeOnlyFlagsSaySo(t *testing.T) {
	fss := NewOptions(io.Discard).Flags()
	aggregated := regexp.MustCompile(`Aggregated mode only`)
	standalone := regexp.MustCompile(`Standalone mode only`)
	var missing []string
	check := func(set string, re *regexp.Regexp) {
		fss.FlagSets[set].VisitAll(func(f *pflag.Flag) {
			if !re.MatchString(f.Usage) {
				missing = append(missing, set+": --"+f.Name)
			}
		})
	}
	check("authentication", aggregated)
	check("authorization", aggregated)
	check("admission", aggregated)
	check("standalone", standalone)
	if len(missing) != 0 {
		t.Errorf("flags not saying their mode:\n%s", formatList(missing))
	}
}

func formatList(items []string) string {
	if len(items) == 0 {
		return "no section"
	}
	return strings.Join(items, ", ")
}

// TestStartJobControllerOff checks that a server without a cluster prints
// exactly one line and registers no hook.
func TestStartJobControllerOff(t *testing.T) {
	plan := planJobController(true, true, "")
	var lines []string
	wait, err := startJobController(context.Background(), nil, NewControllerOptions(), plan, func(l string) { lines = append(lines, l) })
	if err != nil {
		t.Fatalf("startJobController: %v", err)
	}
	wait()
	if diff := cmp.Diff([]string{plan.Off}, lines); diff != "" {
		t.Errorf("printed lines (-want +got):\n%s", diff)
	}
}

// TestStartJobControllerBadKubeconfig checks that a kubeconfig that cannot
// be loaded fails the server at startup, not later in a hook.
func TestStartJobControllerBadKubeconfig(t *testing.T) {
	plan := planJobController(true, true, t.TempDir()+"/missing")
	plan.Identity = "0b5c7a4e-5d7e-4c39-9f1e-3a2b1c0d9e8f"
	_, err := startJobController(context.Background(), nil, NewControllerOptions(), plan, func(string) {})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("startJobController error = %v, want one wrapping fs.ErrNotExist", err)
	}
}

// TestStartJobControllerWithoutIdentity checks that the controller never
// starts without the server identity, which its Pods and Lease need.
func TestStartJobControllerWithoutIdentity(t *testing.T) {
	plan := planJobController(true, true, t.TempDir()+"/missing")
	_, err := startJobController(context.Background(), nil, NewControllerOptions(), plan, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "no server identity") {
		t.Errorf("startJobController error = %v, want one saying there is no server identity", err)
	}
}

// TestLeaseName checks the Lease's name: the flag's when given, else one
// of its own per server identity, valid as a Lease name.
func TestLeaseName(t *testing.T) {
	const identity = "0b5c7a4e-5d7e-4c39-9f1e-3a2b1c0d9e8f"
	type result struct {
		Name   string
		Errors []string
	}
	cases := map[string]struct {
		flag string
		want result
	}{
		"default: named after the identity": {want: result{Name: "batch-apiserver-job-controller-" + identity}},
		"explicit name kept":                {flag: "batch-apiserver-job-controller", want: result{Name: "batch-apiserver-job-controller"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := leaseName(tc.flag, identity)
			if diff := cmp.Diff(tc.want, result{Name: got, Errors: validation.IsDNS1123Subdomain(got)}); diff != "" {
				t.Errorf("leaseName(%q, %q) (-want +got):\n%s", tc.flag, identity, diff)
			}
		})
	}
}

// TestServerPodsSelector checks that the Pod informer's selector takes the
// Pods of this server only: not another server's, not Pods without the
// label.
func TestServerPodsSelector(t *testing.T) {
	const identity = "0b5c7a4e-5d7e-4c39-9f1e-3a2b1c0d9e8f"
	sel, err := labels.Parse(serverPodsSelector(identity))
	if err != nil {
		t.Fatalf("parsing %q: %v", serverPodsSelector(identity), err)
	}
	pods := map[string]labels.Set{
		"ours":          {"batch.jobs.dev/server-identity": identity, "job-name": "j"},
		"another's":     {"batch.jobs.dev/server-identity": "6f1d2c3b-0a9e-4d8c-8b7a-1e2f3a4b5c6d", "job-name": "j"},
		"without label": {"job-name": "j"},
	}
	var got []string
	for name, l := range pods {
		if sel.Matches(l) {
			got = append(got, name)
		}
	}
	if diff := cmp.Diff([]string{"ours"}, got); diff != "" {
		t.Errorf("Pods the selector %q takes (-want +got):\n%s", sel, diff)
	}
}

// TestJobInformerTrimsJobs checks that the controller's Job informer
// applies the controller's transform: a Job the controller runs is cached
// without managedFields (with 150 000 Jobs stored, the entries of their
// creators and status writers are a copy the controller never reads) and
// with its Pod template, and one another controller manages is cached as
// a stand-in of a few fields, not as a Job (what the stand-in keeps is
// tested with the controller).
func TestJobInformerTrimsJobs(t *testing.T) {
	managedFields := []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch.jobs.dev/v1", FieldsType: "FieldsV1",
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{"f:completions":{}}}`)}},
		{Manager: "dispatcher", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch.jobs.dev/v1", Subresource: "status",
			FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:status":{"f:succeeded":{}}}`)}},
	}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
	job := func(name string, managedBy *string) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: name, ResourceVersion: "7", Labels: map[string]string{"team": "a"},
				ManagedFields: managedFields,
			},
			Spec:   batchv1.JobSpec{Completions: ptr.To[int32](3), ManagedBy: managedBy, Template: template},
			Status: batchv1.JobStatus{Succeeded: 1},
		}
	}
	ours, external := job("ours", nil), job("external", ptr.To("example.com/dispatcher"))
	factory := newJobInformerFactory(versionedfake.NewClientset(ours.DeepCopy(), external.DeepCopy()))
	indexer := factory.Batch().V1().Jobs().Informer().GetIndexer()
	ctx, cancel := context.WithCancel(context.Background())
	// Shutdown waits for the informers, which stop when ctx ends.
	defer factory.Shutdown()
	defer cancel()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	wantOurs := ours.DeepCopy()
	wantOurs.ManagedFields = nil
	got, _, err := indexer.GetByKey("ns/ours")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(any(wantOurs), got); diff != "" {
		t.Errorf("Job ours in the controller's cache (-want +got):\n%s", diff)
	}
	got, found, err := indexer.GetByKey("ns/external")
	if err != nil || !found {
		t.Fatalf("external Job in the controller's cache: found %v, %v", found, err)
	}
	if _, isJob := got.(*batchv1.Job); isJob {
		t.Errorf("the external Job is cached whole as a %T; want the controller's stand-in", got)
	}
	m, err := meta.Accessor(got)
	if err != nil {
		t.Fatalf("the cached stand-in of the external Job has no metadata: %v", err)
	}
	if m.GetNamespace() != "ns" || m.GetName() != "external" || m.GetResourceVersion() != "7" {
		t.Errorf("cached stand-in is %s/%s at %s; want ns/external at 7", m.GetNamespace(), m.GetName(), m.GetResourceVersion())
	}
}

// TestPodInformerAsksForNoGzip checks that the Pod informer's client does
// not accept gzip (the host would compress its watch of every Pod update)
// while the host client it is made from still does, as client-go's default.
func TestPodInformerAsksForNoGzip(t *testing.T) {
	got := map[string]string{}
	var mu sync.Mutex
	host := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[path.Base(r.UserAgent())] = r.Header.Get("Accept-Encoding")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`)
	}))
	defer host.Close()
	// Over TLS, as every host is: client-go shares one transport, which
	// keeps its own compression setting, for every plain-HTTP config.
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: host.Certificate().Raw})
	hostConfig := &rest.Config{Host: host.URL, UserAgent: "host", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	for _, cfg := range []*rest.Config{hostConfig, hostInformerConfig(hostConfig)} {
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"host": "gzip", "job-controller-informers": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Accept-Encoding by user agent (-want +got):\n%s", diff)
	}
}
