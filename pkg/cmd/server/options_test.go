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
	"io"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/batch-apiserver/batch-apiserver/pkg/controller/jobhost"
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

func TestJobControllerPlan(t *testing.T) {
	const noCluster = "Job controller: off (no cluster to run Pods in); Jobs are stored but not run. Pass --kubeconfig <host cluster kubeconfig> to run them."
	const disabled = "Job controller: off (--controllers disables job); Jobs are stored but not run. Pass --controllers=* to run them."
	cases := map[string]struct {
		args []string
		want jobhost.Plan
	}{
		"standalone without kubeconfig": {
			want: jobhost.Plan{Off: noCluster},
		},
		"standalone with kubeconfig": {
			args: []string{"--kubeconfig=/host/kubeconfig"},
			want: jobhost.Plan{Run: true, Kubeconfig: "/host/kubeconfig", DeletePodsOfDeletedJobs: true},
		},
		"standalone with kubeconfig, -job": {
			args: []string{"--kubeconfig=/host/kubeconfig", "--controllers=-job"},
			want: jobhost.Plan{Off: disabled},
		},
		"standalone without kubeconfig, job": {
			args: []string{"--controllers=job"},
			want: jobhost.Plan{Off: noCluster},
		},
		"aggregated, in-cluster": {
			args: []string{"--etcd-servers=http://etcd:2379"},
			want: jobhost.Plan{Run: true, WaitForLegacyLease: true},
		},
		"aggregated with kubeconfig": {
			args: []string{"--etcd-servers=http://etcd:2379", "--kubeconfig=/host/kubeconfig"},
			want: jobhost.Plan{Run: true, Kubeconfig: "/host/kubeconfig", WaitForLegacyLease: true},
		},
		"aggregated, -job": {
			args: []string{"--etcd-servers=http://etcd:2379", "--controllers=-job"},
			want: jobhost.Plan{Off: disabled},
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
