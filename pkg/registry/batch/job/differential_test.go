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

package job

import (
	"errors"
	"fmt"
	"math/rand"
	"testing"

	"github.com/google/go-cmp/cmp"
	apitestingfuzzer "k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	runtimeserializer "k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/util/validation/field"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/randfill"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchfuzzer "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/fuzzer"
	"github.com/batch-apiserver/batch-apiserver/pkg/features"
)

// differentialCases is how many fuzzed Jobs each differential test checks:
// a thousand, or fifty with -short (make test-flakes runs the tests twenty
// times under -race, where a thousand take a minute a run).
func differentialCases() int {
	if testing.Short() {
		return 50
	}
	return 1000
}

// newDifferentialFiller returns a filler for Jobs from our fuzzer, seeded so
// that a failure names the seed that reproduces it. Few elements per list
// and some nils keep the Jobs small and varied, so that a difference is
// readable and many kinds of template get through.
func newDifferentialFiller(seed int64) *randfill.Filler {
	funcs := apitestingfuzzer.MergeFuzzerFuncs(metafuzzer.Funcs, batchfuzzer.Funcs)
	return apitestingfuzzer.FuzzerFor(funcs, rand.NewSource(seed), runtimeserializer.NewCodecFactory(ourScheme)).
		NilChance(0.4).NumElements(0, 2)
}

// sameErrors fails when ours and upstream's errors differ by type and path.
// It reports whether there was something to compare: on inputs where
// kube-apiserver's validation panics there is not, and ours must merely not
// panic.
func sameErrors(t *testing.T, what string, seed int64, ours, upstream field.ErrorList, upstreamErr error) bool {
	t.Helper()
	if upstreamErr != nil {
		if !errors.Is(upstreamErr, errUpstreamPanicked) {
			t.Fatalf("%s, seed %d: %v", what, seed, upstreamErr)
		}
		t.Logf("%s, seed %d: skipped, %v", what, seed, upstreamErr)
		return false
	}
	if diff := cmp.Diff(rendered(ourPaths(upstream)), rendered(ours)); diff != "" {
		t.Errorf("%s, seed %d: errors differ from kube-apiserver's (-kube-apiserver,+ours):\n%s", what, seed, diff)
	}
	return true
}

// fuzzedJob returns a fuzzed Job: for even seeds filled whole, for odd seeds
// a valid Job with one part of its template filled, so that templates that
// are valid, or refused by a single rule family, get through as well as
// wholly random ones.
func fuzzedJob(seed int64) *batch.Job {
	f := newDifferentialFiller(seed)
	if seed%2 == 0 {
		job := &batch.Job{}
		f.Fill(job)
		return job
	}
	job := testJob("j").Internal()
	s := &job.Spec.Template.Spec
	c := &s.Containers[0]
	parts := []any{
		&s.Volumes, &c.VolumeMounts, &c.VolumeDevices, &c.Ports, &c.LivenessProbe, &c.ReadinessProbe, &c.StartupProbe,
		&c.Lifecycle, &c.SecurityContext, &s.SecurityContext, &c.Resources, &s.Resources, &c.Env, &c.EnvFrom,
		&s.DNSPolicy, &s.DNSConfig, &s.Tolerations, &s.Affinity, &s.TopologySpreadConstraints, &s.InitContainers,
		&s.HostAliases, &s.Overhead, &s.EphemeralContainers, &s.ImagePullSecrets, &s.SchedulingGates, &s.ResourceClaims,
		&s.OS, &s.ReadinessGates, &job.Spec.Template.Annotations, &c.ResizePolicy, &c.RestartPolicy,
	}
	f.Fill(parts[seed/2%int64(len(parts))])
	return job
}

// setWorkloadWithJob sets the WorkloadWithJob gate, and GenericWorkload,
// which it needs, for the test. Both strategies read the same process-wide
// gate.
func setWorkloadWithJob(t *testing.T, on bool) {
	featuregatetesting.SetFeatureGatesDuringTest(t, utilfeature.DefaultFeatureGate, featuregatetesting.FeatureOverrides{
		features.GenericWorkload: on,
		features.WorkloadWithJob: on,
	})
}

// withAndWithoutWorkloadWithJob runs test with the WorkloadWithJob gate off
// (the default) and on.
func withAndWithoutWorkloadWithJob(t *testing.T, test func(t *testing.T)) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("WorkloadWithJob=%v", on), func(t *testing.T) {
			setWorkloadWithJob(t, on)
			test(t)
		})
	}
}

// TestDifferentialCreate validates fuzzed Jobs on create with our strategy
// and with kube-apiserver's, after each side decoded and defaulted them.
func TestDifferentialCreate(t *testing.T) {
	withAndWithoutWorkloadWithJob(t, testDifferentialCreate)
}

func testDifferentialCreate(t *testing.T) {
	compared, invalid := 0, 0
	for seed := int64(0); seed < int64(differentialCases()); seed++ {
		ours, upstream := decodedPair(t, fuzzedJob(seed))
		gotOurs, gotUpstream, err := createErrors(ours, upstream)
		if sameErrors(t, "create", seed, gotOurs, gotUpstream, err) {
			compared++
			if len(gotUpstream) > 0 {
				invalid++
			}
		}
	}
	t.Logf("%d fuzzed Jobs compared on create, %d of them refused", compared, invalid)
	if compared < differentialCases()*9/10 {
		t.Errorf("only %d of %d cases compared", compared, differentialCases())
	}
}

// fuzzedUpdate returns an old Job and an update of it: sometimes an
// unrelated Job, more often the old one with a part refilled, so that both
// the immutability rules and the rules an unchanged field is exempt from
// (ratcheting) are reached.
func fuzzedUpdate(seed int64) (old, job *batch.Job) {
	f := newDifferentialFiller(seed)
	old = &batch.Job{}
	f.Fill(old)
	if seed%3 == 0 {
		// A suspended Job that never started may change its template.
		old.Spec.Suspend = ptr.To(true)
		old.Status.StartTime = nil
		old.Status.Active = 0
	}
	job = old.DeepCopy()
	switch seed % 6 {
	case 0:
		job = &batch.Job{}
		f.Fill(job)
	case 1:
		f.Fill(&job.Spec.Template)
	case 2:
		f.Fill(&job.Spec.Template.Spec.Containers)
		f.Fill(&job.Spec.Template.Spec.NodeSelector)
	case 3:
		f.Fill(&job.Spec.Parallelism)
		f.Fill(&job.Spec.Completions)
		f.Fill(&job.Spec.Suspend)
	case 4:
		f.Fill(&job.Status)
	case 5:
		f.Fill(&job.Spec.Scheduling)
	}
	return old, job
}

// TestDifferentialUpdate validates fuzzed spec updates with our strategy and
// with kube-apiserver's.
func TestDifferentialUpdate(t *testing.T) {
	withAndWithoutWorkloadWithJob(t, testDifferentialUpdate)
}

func testDifferentialUpdate(t *testing.T) {
	compared := 0
	for seed := int64(0); seed < int64(differentialCases()); seed++ {
		old, job := fuzzedUpdate(seed)
		oldOurs, oldUpstream := decodedPair(t, old)
		ours, upstream := decodedPair(t, job)
		gotOurs, gotUpstream, err := updateErrors(ours, oldOurs, upstream, oldUpstream)
		if sameErrors(t, fmt.Sprintf("update (variant %d)", seed%6), seed, gotOurs, gotUpstream, err) {
			compared++
		}
	}
	t.Logf("%d fuzzed updates compared", compared)
	if compared < differentialCases()*9/10 {
		t.Errorf("only %d of %d cases compared", compared, differentialCases())
	}
}

// TestDifferentialStatusUpdate validates fuzzed status updates with our
// status strategy and with kube-apiserver's.
func TestDifferentialStatusUpdate(t *testing.T) {
	withAndWithoutWorkloadWithJob(t, testDifferentialStatusUpdate)
}

func testDifferentialStatusUpdate(t *testing.T) {
	compared := 0
	for seed := int64(0); seed < int64(differentialCases()); seed++ {
		old, job := fuzzedUpdate(seed)
		oldOurs, oldUpstream := decodedPair(t, old)
		ours, upstream := decodedPair(t, job)
		gotOurs, gotUpstream, err := statusUpdateErrors(ours, oldOurs, upstream, oldUpstream)
		if sameErrors(t, fmt.Sprintf("status update (variant %d)", seed%6), seed, gotOurs, gotUpstream, err) {
			compared++
		}
	}
	t.Logf("%d fuzzed status updates compared", compared)
	if compared < differentialCases()*9/10 {
		t.Errorf("only %d of %d cases compared", compared, differentialCases())
	}
}
