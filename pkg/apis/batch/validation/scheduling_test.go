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

package validation

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	schedulingv1alpha3 "k8s.io/api/scheduling/v1alpha3"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// The spec.scheduling rules are compared with their messages too: they are
// new, and the messages are part of what kube-apiserver answers.

// errorsWithDetail compares field.ErrorLists by Type, Field and Detail, in
// any order.
var errorsWithDetail = errorsComparedBy("Detail")

// detailed builds an expected ErrorList from (type, field, detail) triples.
func detailed(triples ...any) field.ErrorList {
	var list field.ErrorList
	for i := 0; i < len(triples); i += 3 {
		list = append(list, &field.Error{Type: triples[i].(field.ErrorType), Field: triples[i+1].(string), Detail: triples[i+2].(string)})
	}
	return list
}

const (
	immutableDetail = "field is immutable"
	noSetDetail     = "field cannot be set once created"
	noUnsetDetail   = "field cannot be cleared once set"
	basicAllDetail  = "the disruptionMode `all` is not supported with the Basic scheduling policy"
	variantDetail   = "the basic/gang policy variant is immutable after creation; only schedulingPolicy.gang.minCount may be updated"
)

// schedulingJob is makeJob with spec.scheduling set to s.
func schedulingJob(s *batchv1.JobSchedulingConfiguration) *batchtesting.JobBuilder {
	return makeJob("j").Scheduling(s)
}

func singleMode() *schedulingv1alpha3.WorkloadPodGroupDisruptionMode {
	return &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{Single: &schedulingv1alpha3.WorkloadPodGroupSingleDisruptionMode{}}
}

func allMode() *schedulingv1alpha3.WorkloadPodGroupDisruptionMode {
	return &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{All: &schedulingv1alpha3.WorkloadPodGroupAllDisruptionMode{}}
}

func basicPolicy() *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy {
	return &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{}}
}

func gangPolicy(minCount *int32) *schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy {
	return &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{MinCount: minCount}}
}

func topology(keys ...string) *schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints {
	c := &schedulingv1alpha3.WorkloadPodGroupSchedulingConstraints{}
	for _, k := range keys {
		c.Topology = append(c.Topology, schedulingv1alpha3.TopologyConstraint{Key: k})
	}
	return c
}

// claims returns resource claims named by names, each referring to a
// ResourceClaim of the same name.
func claims(names ...string) []schedulingv1alpha3.WorkloadPodGroupResourceClaim {
	var out []schedulingv1alpha3.WorkloadPodGroupResourceClaim
	for _, n := range names {
		out = append(out, schedulingv1alpha3.WorkloadPodGroupResourceClaim{Name: n, ResourceClaimName: ptr.To(n)})
	}
	return out
}

func TestValidateJobScheduling(t *testing.T) {
	minCountPath := "spec.scheduling.schedulingPolicy.gang.minCount"
	cases := map[string]struct {
		job      *batch.Job
		disabled bool // the WorkloadWithJob gate is off
		want     field.ErrorList
	}{
		"no scheduling":                 {job: makeJob("j").Internal()},
		"basic policy":                  {job: makeJob("j").BasicScheduling().Internal()},
		"gang without minCount":         {job: makeJob("j").Parallelism(4).Gang(nil).Internal()},
		"gang minCount at parallelism":  {job: makeJob("j").Parallelism(4).Gang(ptr.To[int32](4)).Internal()},
		"gang minCount 1":               {job: makeJob("j").Gang(ptr.To[int32](1)).Internal()},
		"an empty configuration":        {job: schedulingJob(&batchv1.JobSchedulingConfiguration{}).Internal()},
		"every block, within its rules": {job: makeJob("j").Parallelism(4).Scheduling(&batchv1.JobSchedulingConfiguration{SchedulingPolicy: gangPolicy(ptr.To[int32](2)), SchedulingConstraints: topology("topology.kubernetes.io/rack"), DisruptionMode: allMode(), ResourceClaims: claims("a", "b", "c", "d")}).Internal()},
		"gang minCount above parallelism": {job: makeJob("j").Parallelism(4).Gang(ptr.To[int32](5)).Internal(),
			want: detailed(field.ErrorTypeInvalid, minCountPath, "must not be greater than parallelism (4)")},
		"gang minCount above an unset parallelism, which counts as 1": {job: makeJob("j").Gang(ptr.To[int32](2)).Do(func(j *batchv1.Job) { j.Spec.Parallelism = nil }).Internal(),
			want: detailed(field.ErrorTypeInvalid, minCountPath, "must not be greater than parallelism (1)")},
		"gang minCount 0": {job: makeJob("j").Gang(ptr.To[int32](0)).Internal(),
			want: detailed(field.ErrorTypeInvalid, minCountPath, "must be greater than or equal to 1")},
		"basic and gang": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{
			Basic: &schedulingv1alpha3.WorkloadPodGroupBasicSchedulingPolicy{}, Gang: &schedulingv1alpha3.WorkloadPodGroupGangSchedulingPolicy{}}}).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.schedulingPolicy", "must specify exactly one of: `basic`, `gang`")},
		"a policy that is neither": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{SchedulingPolicy: &schedulingv1alpha3.WorkloadPodGroupSchedulingPolicy{}}).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.schedulingPolicy", "must specify one of: `basic`, `gang`")},
		"all with the basic policy": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{SchedulingPolicy: basicPolicy(), DisruptionMode: allMode()}).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.disruptionMode", basicAllDetail)},
		"all without a policy, which is basic": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{DisruptionMode: allMode()}).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.disruptionMode", basicAllDetail)},
		"single with the basic policy": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{SchedulingPolicy: basicPolicy(), DisruptionMode: singleMode()}).Internal()},
		"single and all": {job: makeJob("j").Gang(nil).Do(func(j *batchv1.Job) {
			j.Spec.Scheduling.DisruptionMode = &schedulingv1alpha3.WorkloadPodGroupDisruptionMode{Single: singleMode().Single, All: allMode().All}
		}).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.disruptionMode", "must specify exactly one of: `single`, `all`")},
		"two topology constraints": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{SchedulingConstraints: topology("rack", "zone")}).Internal(),
			want: detailed(field.ErrorTypeTooMany, "spec.scheduling.schedulingConstraints.topology", "must have at most 1 item")},
		"a topology key that is not a label key": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{SchedulingConstraints: topology("not a key")}).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.schedulingConstraints.topology[0].key", "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')")},
		"an empty topology key": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{SchedulingConstraints: topology("")}).Internal(),
			want: detailed(field.ErrorTypeRequired, "spec.scheduling.schedulingConstraints.topology[0].key", "")},
		"five resource claims": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{ResourceClaims: claims("a", "b", "c", "d", "e")}).Internal(),
			want: detailed(field.ErrorTypeTooMany, "spec.scheduling.resourceClaims", "must have at most 4 items")},
		"two resource claims with one name": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{ResourceClaims: claims("a", "a")}).Internal(),
			want: detailed(field.ErrorTypeDuplicate, "spec.scheduling.resourceClaims[1]", "")},
		"a resource claim without a source": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{ResourceClaims: []schedulingv1alpha3.WorkloadPodGroupResourceClaim{{Name: "a"}}}).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.resourceClaims[0]", "must specify one of: `resourceClaimName`, `resourceClaimTemplateName`")},
		"a resource claim without a name": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{ResourceClaims: []schedulingv1alpha3.WorkloadPodGroupResourceClaim{{ResourceClaimTemplateName: ptr.To("t")}}}).Internal(),
			want: detailed(field.ErrorTypeRequired, "spec.scheduling.resourceClaims[0].name", "")},
		"a resource claim name that is not a DNS label": {job: schedulingJob(&batchv1.JobSchedulingConfiguration{ResourceClaims: []schedulingv1alpha3.WorkloadPodGroupResourceClaim{{Name: "a.b", ResourceClaimName: ptr.To("a.b")}}}).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.resourceClaims[0].name", "must not contain dots")},
		"gate off: set on create": {job: makeJob("j").BasicScheduling().Internal(), disabled: true,
			want: detailed(field.ErrorTypeForbidden, "spec.scheduling", "")},
		"gate off: the building blocks are not checked, the Job's own rules are": {job: makeJob("j").Gang(ptr.To[int32](0)).Do(func(j *batchv1.Job) {
			j.Spec.Scheduling.DisruptionMode = allMode()
			j.Spec.Scheduling.SchedulingConstraints = topology("a", "b")
		}).Internal(), disabled: true,
			want: detailed(field.ErrorTypeForbidden, "spec.scheduling", "")},
		"gate off: minCount above parallelism": {job: makeJob("j").Gang(ptr.To[int32](3)).Internal(), disabled: true,
			want: detailed(field.ErrorTypeForbidden, "spec.scheduling", "", field.ErrorTypeInvalid, minCountPath, "must not be greater than parallelism (1)")},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := ValidateJob(tc.job, JobValidationOptions{RequirePrefixedLabels: true, AllowScheduling: !tc.disabled})
			if diff := cmp.Diff(tc.want, got, errorsWithDetail...); diff != "" {
				t.Errorf("errors (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestValidateJobSchedulingUpdate(t *testing.T) {
	gang := func(minCount int32) *batchtesting.JobBuilder {
		return makeJob("j").Parallelism(4).Gang(ptr.To(minCount))
	}
	withScheduling := func(s *batchv1.JobSchedulingConfiguration) *batch.Job {
		return makeJob("j").Parallelism(4).Scheduling(s).Internal()
	}
	cases := map[string]struct {
		old, job *batch.Job
		disabled bool
		want     field.ErrorList
	}{
		"unchanged":                             {old: gang(2).Internal(), job: gang(2).Internal()},
		"minCount raised up to parallelism":     {old: gang(2).Internal(), job: gang(4).Internal()},
		"minCount lowered":                      {old: gang(4).Internal(), job: gang(1).Internal()},
		"minCount set where it was the default": {old: makeJob("j").Parallelism(4).Gang(nil).Internal(), job: gang(3).Internal()},
		"minCount raised above parallelism": {old: gang(2).Internal(), job: gang(5).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.schedulingPolicy.gang.minCount", "must not be greater than parallelism (4)")},
		"parallelism lowered below minCount": {old: gang(3).Internal(), job: gang(3).Parallelism(2).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.schedulingPolicy.gang.minCount", "must not be greater than parallelism (2)")},
		"parallelism and minCount lowered together": {old: gang(3).Internal(), job: gang(2).Parallelism(2).Internal()},
		"basic to gang": {old: makeJob("j").Parallelism(4).BasicScheduling().Internal(), job: gang(2).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.schedulingPolicy", variantDetail)},
		"gang to basic": {old: gang(2).Internal(), job: makeJob("j").Parallelism(4).BasicScheduling().Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.schedulingPolicy", variantDetail)},
		"scheduling added": {old: makeJob("j").Parallelism(4).Internal(), job: gang(2).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling", noSetDetail)},
		"scheduling removed": {old: gang(2).Internal(), job: makeJob("j").Parallelism(4).Internal(),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling", noUnsetDetail)},
		"policy added": {old: withScheduling(&batchv1.JobSchedulingConfiguration{DisruptionMode: singleMode()}),
			job:  withScheduling(&batchv1.JobSchedulingConfiguration{DisruptionMode: singleMode(), SchedulingPolicy: basicPolicy()}),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.schedulingPolicy", noSetDetail)},
		"policy removed": {old: withScheduling(&batchv1.JobSchedulingConfiguration{SchedulingPolicy: basicPolicy()}),
			job:  withScheduling(&batchv1.JobSchedulingConfiguration{}),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.schedulingPolicy", noUnsetDetail)},
		"constraints changed": {old: withScheduling(&batchv1.JobSchedulingConfiguration{SchedulingConstraints: topology("rack")}),
			job:  withScheduling(&batchv1.JobSchedulingConfiguration{SchedulingConstraints: topology("zone")}),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.schedulingConstraints", immutableDetail)},
		"disruption mode set": {old: withScheduling(&batchv1.JobSchedulingConfiguration{SchedulingPolicy: basicPolicy()}),
			job:  withScheduling(&batchv1.JobSchedulingConfiguration{SchedulingPolicy: basicPolicy(), DisruptionMode: singleMode()}),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.disruptionMode", immutableDetail)},
		"resource claim added": {old: withScheduling(&batchv1.JobSchedulingConfiguration{ResourceClaims: claims("a")}),
			job:  withScheduling(&batchv1.JobSchedulingConfiguration{ResourceClaims: claims("a", "b")}),
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling.resourceClaims", immutableDetail)},
		"an invalid stored configuration is not checked again when unchanged": {
			old: withScheduling(&batchv1.JobSchedulingConfiguration{SchedulingConstraints: topology("a", "b")}),
			job: makeJob("j").Parallelism(5).Scheduling(&batchv1.JobSchedulingConfiguration{SchedulingConstraints: topology("a", "b")}).Internal()},
		"gate off: a stored configuration kept as it is": {old: gang(2).Internal(), job: gang(2).Parallelism(3).Internal(), disabled: true},
		"gate off: minCount changed": {old: gang(2).Internal(), job: gang(3).Internal(), disabled: true,
			want: detailed(field.ErrorTypeForbidden, "spec.scheduling", "")},
		"gate off: scheduling removed": {old: gang(2).Internal(), job: makeJob("j").Parallelism(4).Internal(), disabled: true,
			want: detailed(field.ErrorTypeInvalid, "spec.scheduling", noUnsetDetail)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tc.job.ResourceVersion = tc.old.ResourceVersion
			got := ValidateJobUpdate(tc.job, tc.old, JobValidationOptions{RequirePrefixedLabels: true, AllowScheduling: !tc.disabled})
			if diff := cmp.Diff(tc.want, got, errorsWithDetail...); diff != "" {
				t.Errorf("errors (-want,+got):\n%s", diff)
			}
		})
	}
}
