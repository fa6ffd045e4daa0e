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
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apimachinery/pkg/util/validation/field"
	upstreambatch "k8s.io/kubernetes/pkg/apis/batch"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// storedSchedulingJob starts a Job as it is stored: generated selector, a
// resourceVersion, running with one active Pod.
func storedSchedulingJob() *batchtesting.JobBuilder {
	return testJob("j").Generated().ResourceVersion("3").Parallelism(4).Do(running)
}

func gangMinCount(n int32) *batchv1.JobSchedulingConfiguration {
	return &batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{MinCount: ptr.To(n)},
	}}
}

func basicScheduling() *batchv1.JobSchedulingConfiguration {
	return &batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
		Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{},
	}}
}

// schedulingCase is one request about spec.scheduling, made to our
// strategy and to kube-apiserver's with the WorkloadWithJob gate as given.
type schedulingCase struct {
	name    string
	gate    bool
	op      string     // "create", "update" or "status"
	old     *batch.Job // the stored Job, for update and status
	job     *batch.Job
	refused bool // whether the request is refused
	kept    bool // whether spec.scheduling survives the strategy's preparation
}

// TestSchedulingLikeKubeAPIServer makes create, update and status requests
// with valid and invalid scheduling configurations, the gate off and on,
// and checks that our strategy answers each as kube-apiserver 1.37.2 does:
// the same field errors with the same messages, and spec.scheduling kept or
// dropped alike.
func TestSchedulingLikeKubeAPIServer(t *testing.T) {
	stored := func(s *batchv1.JobSchedulingConfiguration) *batch.Job {
		return storedSchedulingJob().Scheduling(s).Internal()
	}
	changed := func(s *batchv1.JobSchedulingConfiguration, f func(*batchv1.Job)) *batch.Job {
		return storedSchedulingJob().Scheduling(s).Do(f).Internal()
	}
	noChange := func(*batchv1.Job) {}
	allMode := &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
	withAll := func(s *batchv1.JobSchedulingConfiguration) *batchv1.JobSchedulingConfiguration {
		s.DisruptionMode = allMode
		return s
	}
	claims := func(n int) *batchv1.JobSchedulingConfiguration {
		s := gangMinCount(2)
		for i := range n {
			name := fmt.Sprintf("claim-%d", i)
			s.ResourceClaims = append(s.ResourceClaims, schedulingv1alpha3.WorkloadPodGroupResourceClaim{Name: name, ResourceClaimTemplateName: ptr.To(name)})
		}
		return s
	}
	cases := []schedulingCase{
		// Create.
		{name: "gate off: a gang Job is created without it", gate: false, op: "create",
			job: testJob("j").Parallelism(4).Scheduling(gangMinCount(9)).Internal()},
		{name: "a gang Job", gate: true, op: "create", kept: true,
			job: testJob("j").Parallelism(4).Scheduling(gangMinCount(4)).Internal()},
		{name: "a basic Job", gate: true, op: "create", kept: true,
			job: testJob("j").Scheduling(basicScheduling()).Internal()},
		{name: "a gang Job with every block", gate: true, op: "create", kept: true,
			job: testJob("j").Parallelism(4).Scheduling(func() *batchv1.JobSchedulingConfiguration {
				s := withAll(claims(4))
				s.SchedulingConstraints = &schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints{Topology: []schedulingv1alpha3.TopologyConstraint{{Key: "topology.kubernetes.io/zone"}}}
				return s
			}()).Internal()},
		{name: "minCount above parallelism", gate: true, op: "create", refused: true, kept: true,
			job: testJob("j").Parallelism(4).Scheduling(gangMinCount(5)).Internal()},
		{name: "minCount 0", gate: true, op: "create", refused: true, kept: true,
			job: testJob("j").Scheduling(gangMinCount(0)).Internal()},
		{name: "all with basic", gate: true, op: "create", refused: true, kept: true,
			job: testJob("j").Scheduling(withAll(basicScheduling())).Internal()},
		{name: "all without a policy", gate: true, op: "create", refused: true, kept: true,
			job: testJob("j").Scheduling(withAll(&batchv1.JobSchedulingConfiguration{})).Internal()},
		{name: "five claims", gate: true, op: "create", refused: true, kept: true,
			job: testJob("j").Parallelism(4).Scheduling(claims(5)).Internal()},
		{name: "an empty policy and a nameless claim", gate: true, op: "create", refused: true, kept: true,
			job: testJob("j").Scheduling(&batchv1.JobSchedulingConfiguration{
				SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{},
				ResourceClaims:   []schedulingv1alpha3.WorkloadPodGroupResourceClaim{{}, {}},
			}).Internal()},

		// Update while running.
		{name: "minCount raised to parallelism", gate: true, op: "update", kept: true,
			old: stored(gangMinCount(2)), job: changed(gangMinCount(4), noChange)},
		{name: "minCount raised above parallelism", gate: true, op: "update", refused: true, kept: true,
			old: stored(gangMinCount(2)), job: changed(gangMinCount(5), noChange)},
		{name: "parallelism lowered below minCount", gate: true, op: "update", refused: true, kept: true,
			old: stored(gangMinCount(3)), job: changed(gangMinCount(3), func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](2) })},
		{name: "parallelism raised", gate: true, op: "update", kept: true,
			old: stored(gangMinCount(3)), job: changed(gangMinCount(3), func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](8) })},
		{name: "basic to gang", gate: true, op: "update", refused: true, kept: true,
			old: stored(basicScheduling()), job: changed(gangMinCount(2), noChange)},
		{name: "scheduling added", gate: true, op: "update", refused: true, kept: true,
			old: stored(nil), job: changed(gangMinCount(2), noChange)},
		{name: "scheduling removed", gate: true, op: "update", refused: true,
			old: stored(gangMinCount(2)), job: changed(nil, noChange)},
		{name: "disruption mode added", gate: true, op: "update", refused: true, kept: true,
			old: stored(gangMinCount(2)), job: changed(withAll(gangMinCount(2)), noChange)},
		{name: "claims changed", gate: true, op: "update", refused: true, kept: true,
			old: stored(claims(1)), job: changed(claims(2), noChange)},
		{name: "gate off: added on update is dropped", gate: false, op: "update",
			old: stored(nil), job: changed(gangMinCount(2), noChange)},
		{name: "gate off: a stored configuration is kept", gate: false, op: "update", kept: true,
			old: stored(gangMinCount(2)), job: changed(gangMinCount(2), func(j *batchv1.Job) { j.Spec.Parallelism = ptr.To[int32](3) })},
		{name: "gate off: minCount changed", gate: false, op: "update", refused: true, kept: true,
			old: stored(gangMinCount(2)), job: changed(gangMinCount(3), noChange)},
		{name: "gate off: scheduling removed", gate: false, op: "update", refused: true,
			old: stored(gangMinCount(2)), job: changed(nil, noChange)},

		// Status writes keep the stored spec.
		{name: "status write of a gang Job", gate: true, op: "status", kept: true,
			old: stored(gangMinCount(2)), job: changed(nil, func(j *batchv1.Job) { j.Status.Active = 2 })},
		{name: "gate off: status write of a gang Job", gate: false, op: "status", kept: true,
			old: stored(gangMinCount(2)), job: changed(gangMinCount(4), func(j *batchv1.Job) { j.Status.Active = 2 })},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			setWorkloadWithJob(t, tc.gate)
			ours, upstream := decodedPair(t, tc.job)
			var gotOurs, gotUpstream field.ErrorList
			var err error
			switch tc.op {
			case "create":
				gotOurs, gotUpstream, err = createErrors(ours, upstream)
			case "update", "status":
				oldOurs, oldUpstream := decodedPair(t, tc.old)
				if tc.op == "update" {
					gotOurs, gotUpstream, err = updateErrors(ours, oldOurs, upstream, oldUpstream)
				} else {
					gotOurs, gotUpstream, err = statusUpdateErrors(ours, oldOurs, upstream, oldUpstream)
				}
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(renderedWithDetail(gotUpstream), renderedWithDetail(gotOurs)); diff != "" {
				t.Errorf("errors differ from kube-apiserver's (-kube-apiserver,+ours):\n%s", diff)
			}
			if refused := len(gotOurs) > 0; refused != tc.refused {
				t.Errorf("refused = %v, want %v: %v", refused, tc.refused, gotOurs)
			}
			if diff := cmp.Diff(upstreamSchedulingParts(upstream.Spec.Scheduling), ourSchedulingParts(ours.Spec.Scheduling)); diff != "" {
				t.Errorf("spec.scheduling after the strategy differs from kube-apiserver's (-kube-apiserver,+ours):\n%s", diff)
			}
			if kept := ours.Spec.Scheduling != nil; kept != tc.kept {
				t.Errorf("spec.scheduling kept = %v, want %v", kept, tc.kept)
			}
		})
	}
}

// renderedWithDetail renders errors by type, field, value and message,
// sorted.
func renderedWithDetail(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, fmt.Sprintf("%s %s %#v: %s", e.Type, e.Field, e.BadValue, e.Detail))
	}
	sort.Strings(out)
	return out
}

// schedulingParts holds the members of a spec.scheduling, which are the
// same v1alpha3 types in our Job and in upstream's.
type schedulingParts struct {
	Set         bool
	Policy      *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy
	Constraints *schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints
	Mode        *schedulingv1alpha3.WorkloadPodGroupDisruptionMode
	Claims      []schedulingv1alpha3.WorkloadPodGroupResourceClaim
}

func ourSchedulingParts(s *batch.JobSchedulingConfiguration) schedulingParts {
	if s == nil {
		return schedulingParts{}
	}
	return schedulingParts{true, s.SchedulingPolicy, s.SchedulingConstraints, s.DisruptionMode, s.ResourceClaims}
}

func upstreamSchedulingParts(s *upstreambatch.JobSchedulingConfiguration) schedulingParts {
	if s == nil {
		return schedulingParts{}
	}
	return schedulingParts{true, s.SchedulingPolicy, s.SchedulingConstraints, s.DisruptionMode, s.ResourceClaims}
}
