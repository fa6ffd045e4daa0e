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

package integration

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// TestPodTemplateValidation creates Jobs whose templates kube-apiserver
// refuses for core pod rules (not Job rules) through the whole server, and
// checks that they are refused with 422, every cause at kube-apiserver's
// path, and not stored; and that kube's template warnings and defaults
// reach the client.
func TestPodTemplateValidation(t *testing.T) {
	ts := framework.StartServer(t)
	client, warnings := newTestClientWithWarnings(t, ts.ClientConfig)
	ctx, ns := testContext(t), testNamespace(t)
	jobs := client.BatchV1().Jobs(ns)

	t.Run("refused with every cause and not stored", func(t *testing.T) {
		job := newTestJob(ns, "bad-template").Obj()
		spec := &job.Spec.Template.Spec
		// A volume with two sources, a probe without a handler, limits below
		// requests and a mount of no volume.
		spec.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{
			EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"},
		}}}
		c := &spec.Containers[0]
		c.LivenessProbe = &corev1.Probe{}
		c.Resources = corev1.ResourceRequirements{
			Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")},
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("2")},
		}
		c.VolumeMounts = []corev1.VolumeMount{{Name: "missing", MountPath: "/data"}}

		_, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		var status apierrors.APIStatus
		if !apierrors.IsInvalid(err) || !errors.As(err, &status) {
			t.Fatalf("create error = %v, want 422 Invalid", err)
		}
		ctr := "spec.template.spec.containers[0]"
		want := []metav1.StatusCause{
			{Type: metav1.CauseType(field.ErrorTypeForbidden), Field: "spec.template.spec.volumes[0].hostPath"},
			{Type: metav1.CauseTypeFieldValueRequired, Field: ctr + ".livenessProbe"},
			{Type: metav1.CauseTypeFieldValueInvalid, Field: ctr + ".resources.requests"},
			{Type: metav1.CauseTypeFieldValueNotFound, Field: ctr + ".volumeMounts[0].name"},
		}
		got := status.Status().Details.Causes
		opts := []cmp.Option{
			cmpopts.IgnoreFields(metav1.StatusCause{}, "Message"),
			cmpopts.SortSlices(func(a, b metav1.StatusCause) bool { return a.Field < b.Field }),
		}
		if diff := cmp.Diff(want, got, opts...); diff != "" {
			t.Errorf("causes (-want,+got):\n%s", diff)
		}
		if _, err := jobs.Get(ctx, job.Name, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("get after a refused create = %v, want NotFound", err)
		}
	})

	t.Run("defaulted with kube's defaults and warned about", func(t *testing.T) {
		job := newTestJob(ns, "warned").Obj()
		job.Spec.Template.Spec.NodeSelector = map[string]string{"beta.kubernetes.io/os": "linux"}
		job.Spec.Template.Spec.Containers[0].LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
			Exec: &corev1.ExecAction{Command: []string{"true"}},
		}}
		warnings.take()
		created, err := jobs.Create(ctx, job, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("create: %v", err)
		}
		wantWarnings := []string{`spec.template.spec.nodeSelector[beta.kubernetes.io/os]: deprecated since v1.14; use "kubernetes.io/os" instead`}
		if diff := cmp.Diff(wantWarnings, warnings.take()); diff != "" {
			t.Errorf("warnings (-want,+got):\n%s", diff)
		}
		wantProbe := &corev1.Probe{
			ProbeHandler:   corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}},
			TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
		}
		if diff := cmp.Diff(wantProbe, created.Spec.Template.Spec.Containers[0].LivenessProbe); diff != "" {
			t.Errorf("defaulted probe (-want,+got):\n%s", diff)
		}
		if got := created.Spec.Template.Spec.SchedulerName; got != corev1.DefaultSchedulerName {
			t.Errorf("schedulerName = %q, want %q", got, corev1.DefaultSchedulerName)
		}
	})
}
