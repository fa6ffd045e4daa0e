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
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestWarningsForJob(t *testing.T) {
	ctr := "spec.template.spec.containers[0]"
	cases := map[string]struct {
		job, old *batch.Job
		want     []string
	}{
		"no warnings": {job: makeJob("j").Internal()},
		"name is not a DNS label": {job: makeJob("j.v1").Internal(), want: []string{
			`metadata.name: this is used in Pod names and hostnames, which can result in surprising behavior; a DNS label is recommended: [must not contain dots]`,
		}},
		"name checked on create only": {job: makeJob("j.v1").Do(func(j *batchv1.Job) { j.Generation = 2 }).Internal(), old: makeJob("j.v1").Internal()},
		"update without a spec change": {job: makeJob("j").Do(func(j *batchv1.Job) {
			j.Spec.Template.Spec.NodeSelector = map[string]string{"beta.kubernetes.io/os": "linux"}
		}).Internal(), old: makeJob("j").Internal()},
		"update with a spec change": {job: makeJob("j").Do(func(j *batchv1.Job) {
			j.Generation = 2
			j.Spec.Template.Spec.NodeSelector = map[string]string{"beta.kubernetes.io/os": "linux"}
		}).Internal(), old: makeJob("j").Internal(), want: []string{
			`spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`,
		}},
		"very large Indexed Job": {job: makeJob("j").Indexed(100_001).Parallelism(10_001).Internal(), want: []string{
			"spec: In Indexed Jobs with a number of completions higher than 10^5 and a parallelism higher than 10^4, Kubernetes might not be able to track completedIndexes when a big number of indexes fail",
		}},
		"large Indexed Job at the limits": {job: makeJob("j").Indexed(100_000).Parallelism(10_001).Internal()},
		"fractional memory": {job: makeJob("j").Containers(withResources(container("main"), resources(map[corev1.ResourceName]string{"memory": "100m"}, nil))).Internal(), want: []string{
			ctr + `.resources.requests[memory]: fractional byte value "100m" is invalid, must be an integer`,
		}},
		"env var redefined": {job: makeJob("j").Do(func(j *batchv1.Job) {
			j.Spec.Template.Spec.Containers[0].Env = []corev1.EnvVar{{Name: "A", Value: "1"}, {Name: "A", Value: "2"}, {Name: "A", Value: "$(A)x"}}
		}).Internal(), want: []string{ctr + `.env[1]: hides previous definition of "A", which may be dropped when using apply`}},
		"duplicate port name across containers": {job: makeJob("j").Containers(
			withPorts(container("a"), corev1.ContainerPort{Name: "http", ContainerPort: 80, Protocol: "TCP"}),
			withPorts(container("b"), corev1.ContainerPort{Name: "http", ContainerPort: 81, Protocol: "TCP"})).Internal(), want: []string{
			`spec.template.spec.containers[1].ports[0]: duplicate port name "http" with spec.template.spec.containers[0].ports[0], services and probes that select ports by name will use spec.template.spec.containers[0].ports[0]`,
		}},
		"duplicate port definition": {job: makeJob("j").Containers(withPorts(container("main"), tcp(80), tcp(80))).Internal(), want: []string{
			ctr + `.ports[1]: duplicate port definition with ` + ctr + `.ports[0]`,
		}},
		"negative grace period": {job: makeJob("j").Do(func(j *batchv1.Job) { *j.Spec.Template.Spec.TerminationGracePeriodSeconds = -1 }).Internal(), want: []string{
			`spec.template.spec.terminationGracePeriodSeconds: must be >= 0; negative values are invalid and will be treated as 1`,
		}},
		"deprecated template annotation": {job: makeJob("j").Do(func(j *batchv1.Job) {
			j.Spec.Template.Annotations = map[string]string{"scheduler.alpha.kubernetes.io/critical-pod": ""}
		}).Internal(), want: []string{
			`spec.template.metadata.annotations[scheduler.alpha.kubernetes.io/critical-pod]: non-functional in v1.16+; use the "priorityClassName" field instead`,
		}},
		"null label selector in a topology spread constraint": {job: makeJob("j").Do(func(j *batchv1.Job) {
			j.Spec.Template.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{TopologyKey: "failure-domain.beta.kubernetes.io/zone", MaxSkew: 1}}
		}).Internal(), want: []string{
			`spec.template.spec.topologySpreadConstraints[0].topologyKey: failure-domain.beta.kubernetes.io/zone is deprecated since v1.17; use "topology.kubernetes.io/zone" instead`,
			`spec.template.spec.topologySpreadConstraints[0].labelSelector: a null labelSelector results in matching no pod`,
		}},
		"duplicate image pull secret": {job: makeJob("j").Do(func(j *batchv1.Job) {
			j.Spec.Template.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "s"}, {Name: "s"}, {Name: ""}}
		}).Internal(), want: []string{
			`spec.template.spec.imagePullSecrets[1].name: duplicate name "s"`,
			`spec.template.spec.imagePullSecrets[2].name: invalid empty name ""`,
		}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, WarningsForJob(context.Background(), tc.job, tc.old)); diff != "" {
				t.Errorf("unexpected warnings (-want,+got):\n%s", diff)
			}
		})
	}
}
