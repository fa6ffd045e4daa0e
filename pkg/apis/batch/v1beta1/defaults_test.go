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

package v1beta1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/install"
	batchv1beta1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1beta1"
)

// TestSetObjectDefaultsJob is a smoke test: v1beta1 shares SetDefaults_Job's
// logic and the pod template walk with v1, whose tests cover each default.
func TestSetObjectDefaultsJob(t *testing.T) {
	got := &batchv1beta1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns"},
		Spec: batchv1beta1.JobSpec{
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:  "c",
						Image: "busybox",
						Ports: []corev1.ContainerPort{{ContainerPort: 80}},
					}},
				},
			},
		},
	}
	want := &batchv1beta1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", Labels: map[string]string{"app": "a"}},
		Spec: batchv1beta1.JobSpec{
			Parallelism:          ptr.To[int32](1),
			Completions:          ptr.To[int32](1),
			BackoffLimit:         ptr.To[int32](6),
			ManualSelector:       ptr.To(false),
			CompletionMode:       ptr.To(batchv1beta1.NonIndexedCompletion),
			Suspend:              ptr.To(false),
			PodReplacementPolicy: ptr.To(batchv1beta1.TerminatingOrFailed),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:                     "c",
						Image:                    "busybox",
						Ports:                    []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
						ImagePullPolicy:          corev1.PullAlways,
						TerminationMessagePath:   "/dev/termination-log",
						TerminationMessagePolicy: corev1.TerminationMessageReadFile,
					}},
					TerminationGracePeriodSeconds: ptr.To[int64](30),
					DNSPolicy:                     corev1.DNSClusterFirst,
					SecurityContext:               &corev1.PodSecurityContext{},
					SchedulerName:                 "default-scheduler",
				},
			},
		},
	}
	scheme := runtime.NewScheme()
	install.Install(scheme)
	scheme.Default(got)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Default (-want +got):\n%s", diff)
	}
}
