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
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	kubefeatures "k8s.io/kubernetes/pkg/features"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchtesting "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/testing"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// emptyDirMode gives the Job an emptyDir volume, with a mode when mode is not
// nil. emptyDir.mode is behind EmptyDirVolumeMode, alpha and off in 1.37.
func emptyDirMode(mode *int32) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.Spec.Template.Spec.Volumes = []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{Mode: mode}}}}
	}
}

// TestStrategyDropsDisabledTemplateFields checks that create and update drop
// the template fields of a disabled feature, as kube-apiserver's Job strategy
// does with DropDisabledTemplateFields: unless the gate is on, or, on update,
// the stored template already uses the field.
func TestStrategyDropsDisabledTemplateFields(t *testing.T) {
	cases := map[string]struct {
		gateOn bool
		old    *batch.Job // nil on create
		job    *batch.Job
		want   *batch.Job
	}{
		"create drops a disabled field": {
			job:  testJob("j").Do(emptyDirMode(ptr.To[int32](0o700))).Internal(),
			want: testJob("j").Do(emptyDirMode(nil)).Internal(),
		},
		"create keeps an enabled field": {
			gateOn: true,
			job:    testJob("j").Do(emptyDirMode(ptr.To[int32](0o700))).Internal(),
			want:   testJob("j").Do(emptyDirMode(ptr.To[int32](0o700))).Internal(),
		},
		"update drops a disabled field the stored Job does not use": {
			old:  testJob("j").Do(emptyDirMode(nil)).Internal(),
			job:  testJob("j").Do(emptyDirMode(ptr.To[int32](0o700))).Internal(),
			want: testJob("j").Do(emptyDirMode(nil)).Internal(),
		},
		"update keeps a disabled field the stored Job uses": {
			old:  testJob("j").Do(emptyDirMode(ptr.To[int32](0o755))).Internal(),
			job:  testJob("j").Do(emptyDirMode(ptr.To[int32](0o700))).Internal(),
			want: testJob("j").Do(emptyDirMode(ptr.To[int32](0o700))).Internal(),
		},
		"a template without disabled fields is left as it is": {
			job:  testJob("j").Do(emptyDirMode(nil)).Internal(),
			want: testJob("j").Do(emptyDirMode(nil)).Internal(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, kubefeatures.EmptyDirVolumeMode, tc.gateOn)
			strategy := NewStrategy(testScheme())
			var old *batch.Job
			if tc.old == nil {
				strategy.PrepareForCreate(context.Background(), tc.job)
			} else {
				old = tc.old.DeepCopy()
				strategy.PrepareForUpdate(context.Background(), tc.job, tc.old)
				if diff := cmp.Diff(old, tc.old); diff != "" {
					t.Errorf("PrepareForUpdate changed the stored Job (-before,+after):\n%s", diff)
				}
			}
			if diff := cmp.Diff(tc.want.Spec.Template, tc.job.Spec.Template); diff != "" {
				t.Errorf("template (-want,+got):\n%s", diff)
			}
		})
	}
}

// TestStrategyDropsDisabledScheduling checks the strategy's preparation on
// its own: with WorkloadWithJob off, spec.scheduling goes on create and on
// updates of Jobs stored without it, and stays on updates of Jobs stored
// with it; with the gate on it always stays.
func TestStrategyDropsDisabledScheduling(t *testing.T) {
	cases := map[string]struct {
		gate bool
		old  *batch.Job // nil on create
		job  *batch.Job
		want *batchv1.JobSchedulingConfiguration
	}{
		"gate off: dropped on create": {job: testJob("j").Scheduling(gangMinCount(1)).Internal()},
		"gate on: kept on create":     {gate: true, job: testJob("j").Scheduling(gangMinCount(1)).Internal(), want: gangMinCount(1)},
		"gate off: dropped on an update of a Job stored without it": {
			old: storedSchedulingJob().Internal(), job: storedSchedulingJob().Scheduling(gangMinCount(1)).Internal()},
		"gate off: kept on an update of a Job stored with it": {
			old: storedSchedulingJob().Scheduling(basicScheduling()).Internal(), job: storedSchedulingJob().Scheduling(gangMinCount(1)).Internal(), want: gangMinCount(1)},
		"gate on: kept on an update of a Job stored without it": {gate: true,
			old: storedSchedulingJob().Internal(), job: storedSchedulingJob().Scheduling(gangMinCount(1)).Internal(), want: gangMinCount(1)},
		"gate off: an update that clears it stays cleared": {
			old: storedSchedulingJob().Scheduling(basicScheduling()).Internal(), job: storedSchedulingJob().Internal()},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			setWorkloadWithJob(t, tc.gate)
			strategy := NewStrategy(testScheme())
			if tc.old == nil {
				strategy.PrepareForCreate(context.Background(), tc.job)
			} else {
				before := tc.old.DeepCopy()
				strategy.PrepareForUpdate(context.Background(), tc.job, tc.old)
				if diff := cmp.Diff(before, tc.old); diff != "" {
					t.Errorf("PrepareForUpdate changed the stored Job (-before,+after):\n%s", diff)
				}
			}
			var want *batch.JobSchedulingConfiguration
			if tc.want != nil {
				want = batchtesting.MakeJob("w").Scheduling(tc.want).Internal().Spec.Scheduling
			}
			if diff := cmp.Diff(want, tc.job.Spec.Scheduling); diff != "" {
				t.Errorf("spec.scheduling (-want,+got):\n%s", diff)
			}
		})
	}
}
