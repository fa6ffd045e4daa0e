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

// Package scale runs Jobs at scale on simulated nodes (KWOK) under
// kube-controller-manager's Job controller (batch/v1) and under ours
// (batch.jobs.dev/v1), each on a fresh host cluster: TestScaleSmall is the
// correctness test of `make test`, TestBenchScale the benchmark of
// `make bench-scale`. Neither asserts a time.
package scale

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

func TestMain(m *testing.M) {
	// Each side's etcd is a copy of this binary.
	if ran, code := framework.RunEtcdMemberIfAsked(); ran {
		os.Exit(code)
	}
	os.Exit(m.Run())
}

// stop stops the side's processes now (the test's cleanups would do it
// at the end), so that the next side has the machine to itself.
func (s *side) stop() {
	s.cluster.Stop()
	s.etcd.Stop()
}

// wantFailureStatuses are the final statuses of failureJobs' four kinds,
// the same under both controllers.
var wantFailureStatuses = []finalStatus{
	{Conditions: []string{"Complete/CompletionsReached", "SuccessCriteriaMet/CompletionsReached"}, Succeeded: 5, CompletedIndexes: "0-4"},
	{Conditions: []string{"Complete/CompletionsReached", "SuccessCriteriaMet/CompletionsReached"}, Succeeded: 5, Failed: 1, CompletedIndexes: "0-4"},
	{Conditions: []string{"Failed/FailedIndexes", "FailureTarget/FailedIndexes"}, Succeeded: 4, Failed: 1, CompletedIndexes: "0,1,3,4", FailedIndexes: "2"},
	{Conditions: []string{"Failed/FailedIndexes", "FailureTarget/FailedIndexes"}, Succeeded: 4, Failed: 2, CompletedIndexes: "1-4", FailedIndexes: "0"},
}

// TestScaleSmall runs a small batch mix (18 Jobs, 155 Pods) and 8
// Jobs with failures on 20 simulated nodes under each controller, and
// checks that no Job is lost or stuck, no Pod keeps a tracking finalizer,
// every Job of the mix is Complete and the Jobs with failures end as
// designed, the same under both.
func TestScaleSmall(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two host clusters with kube-scheduler and kwok")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	e := newEnv(t, 20)
	mix := batchMix("mix", 150, [3]int32{5, 20, 40}, time.Second)
	failures := failureJobs("fail", 8, time.Second)
	statuses := map[string]map[string]finalStatus{}
	for _, name := range []string{sideKCM, sideOurs} {
		s := e.startSide(ctx, t, name, rateDefaults)
		s.newNamespace(ctx, t, "mix")
		out := s.runJobs(ctx, t, "mix", mix, 10, 3*time.Minute)
		checkOutcome(t, name+" mix", out, len(mix), true)
		s.newNamespace(ctx, t, "failures")
		out = s.runJobs(ctx, t, "failures", failures, 10, 3*time.Minute)
		checkOutcome(t, name+" failures", out, len(failures), false)
		statuses[name] = out.Statuses
		for i, spec := range failures {
			if diff := cmp.Diff(wantFailureStatuses[i%4], out.Statuses[spec.name]); diff != "" {
				t.Errorf("%s: final status of %s (-want +got):\n%s", name, spec.name, diff)
			}
		}
		if t.Failed() {
			s.cluster.DumpLogs(os.Stderr, 40)
		}
		s.stop()
	}
	if diffs := compareStatuses(statuses[sideKCM], statuses[sideOurs]); len(diffs) > 0 {
		t.Errorf("final statuses differ between the controllers:\n%v", diffs)
	}
}

// checkOutcome fails the test when a Job was lost or stuck, a Pod kept
// its tracking finalizer after its Job finished, or (allComplete) a Job
// did not complete.
func checkOutcome(t *testing.T, what string, out runOutcome, want int, allComplete bool) {
	t.Helper()
	got := runOutcome{Created: out.Created, Lost: out.Lost, Stuck: out.Stuck, PodsLeftWithFinalizer: out.PodsLeftWithFinalizer,
		FinalizersAtFinish: out.FinalizersAtFinish}
	wantOut := runOutcome{Created: want}
	if !allComplete {
		got.NotComplete = 0
	} else {
		got.NotComplete = out.NotComplete
	}
	if diff := cmp.Diff(wantOut, got, cmp.FilterPath(func(p cmp.Path) bool {
		switch p.Last().String() {
		case ".Statuses", ".Wall", ".P50", ".P99", ".PodsSucceeded":
			return true
		}
		return false
	}, cmp.Ignore())); diff != "" {
		t.Errorf("%s: outcome (-want +got):\n%s", what, diff)
	}
}
