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

package v1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

const imageDigest = "sha256:e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"

// quantityComparer compares quantities by their serialized form, which is what
// a client sees, so that a rounding default that changes only the format is caught.
var quantityComparer = cmp.Comparer(func(a, b resource.Quantity) bool {
	return a.String() == b.String()
})

// defaulted returns a template carrying every default for a pod with one
// container "c" (image busybox:1.36), after applying the given changes.
func defaultedTemplate(changes ...func(*corev1.PodSpec)) corev1.PodTemplateSpec {
	t := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:                     "c",
				Image:                    "busybox:1.36",
				ImagePullPolicy:          corev1.PullIfNotPresent,
				TerminationMessagePath:   "/dev/termination-log",
				TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}},
			RestartPolicy:                 corev1.RestartPolicyAlways,
			TerminationGracePeriodSeconds: ptr.To[int64](30),
			DNSPolicy:                     corev1.DNSClusterFirst,
			SecurityContext:               &corev1.PodSecurityContext{},
			SchedulerName:                 "default-scheduler",
		},
	}
	for _, change := range changes {
		change(&t.Spec)
	}
	return t
}

// container changes the first container.
func templateContainer(change func(*corev1.Container)) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) { change(&s.Containers[0]) }
}

// volume adds a volume named "v" with the given source.
func templateVolume(src corev1.VolumeSource) func(*corev1.PodSpec) {
	return func(s *corev1.PodSpec) {
		s.Volumes = append(s.Volumes, corev1.Volume{Name: "v", VolumeSource: src})
	}
}

// image sets the first container's image and pull policy.
func templateImage(name string, policy corev1.PullPolicy) func(*corev1.PodSpec) {
	return templateContainer(func(c *corev1.Container) {
		c.Image = name
		c.ImagePullPolicy = policy
	})
}

// TestTemplateDefaults pins the core/v1 defaults kube-apiserver gives a Job's
// pod template. They come from kube's own SetDefaults_* functions, called by
// the generated SetObjectDefaults_Job; the cases check that wiring, for the
// template and everything nested in it.
func TestTemplateDefaults(t *testing.T) {
	cases := []struct {
		name string
		in   corev1.PodTemplateSpec
		want corev1.PodTemplateSpec
	}{
		{
			name: "a defaulted template is kept as is",
			in:   defaultedTemplate(),
			want: defaultedTemplate(),
		},
		{
			name: "empty template gets the pod spec defaults only",
			in:   corev1.PodTemplateSpec{},
			want: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy:                 corev1.RestartPolicyAlways,
				TerminationGracePeriodSeconds: ptr.To[int64](30),
				DNSPolicy:                     corev1.DNSClusterFirst,
				SecurityContext:               &corev1.PodSecurityContext{},
				SchedulerName:                 "default-scheduler",
			}},
		},
		{
			name: "minimal job template gets every default",
			in: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "pi", Image: "perl:5.34.0", Command: []string{"perl"}}},
			}},
			want: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				Containers: []corev1.Container{{
					Name:                     "pi",
					Image:                    "perl:5.34.0",
					Command:                  []string{"perl"},
					ImagePullPolicy:          corev1.PullIfNotPresent,
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				}},
				RestartPolicy:                 corev1.RestartPolicyNever,
				TerminationGracePeriodSeconds: ptr.To[int64](30),
				DNSPolicy:                     corev1.DNSClusterFirst,
				SecurityContext:               &corev1.PodSecurityContext{},
				SchedulerName:                 "default-scheduler",
			}},
		},

		// Pod spec.
		{
			name: "dnsPolicy defaults to ClusterFirst",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.DNSPolicy = "" }),
			want: defaultedTemplate(),
		},
		{
			name: "dnsPolicy set is kept",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.DNSPolicy = corev1.DNSDefault }),
			want: defaultedTemplate(func(s *corev1.PodSpec) { s.DNSPolicy = corev1.DNSDefault }),
		},
		{
			name: "restartPolicy defaults to Always",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.RestartPolicy = "" }),
			want: defaultedTemplate(),
		},
		{
			name: "restartPolicy set is kept",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.RestartPolicy = corev1.RestartPolicyOnFailure }),
			want: defaultedTemplate(func(s *corev1.PodSpec) { s.RestartPolicy = corev1.RestartPolicyOnFailure }),
		},
		{
			name: "securityContext defaults to empty",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.SecurityContext = nil }),
			want: defaultedTemplate(),
		},
		{
			name: "securityContext set is kept",
			in: defaultedTemplate(func(s *corev1.PodSpec) {
				s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
			}),
			want: defaultedTemplate(func(s *corev1.PodSpec) {
				s.SecurityContext = &corev1.PodSecurityContext{RunAsUser: ptr.To[int64](1000)}
			}),
		},
		{
			name: "terminationGracePeriodSeconds defaults to 30",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = nil }),
			want: defaultedTemplate(),
		},
		{
			name: "terminationGracePeriodSeconds 0 is kept",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](0) }),
			want: defaultedTemplate(func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](0) }),
		},
		{
			// Upstream clamps a negative value to 1 in SetDefaults_Pod only.
			name: "negative terminationGracePeriodSeconds is not clamped in a template",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](-5) }),
			want: defaultedTemplate(func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = ptr.To[int64](-5) }),
		},
		{
			name: "schedulerName defaults to default-scheduler",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.SchedulerName = "" }),
			want: defaultedTemplate(),
		},
		{
			name: "schedulerName set is kept",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.SchedulerName = "other" }),
			want: defaultedTemplate(func(s *corev1.PodSpec) { s.SchedulerName = "other" }),
		},
		{
			name: "serviceAccount is copied from serviceAccountName",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.ServiceAccountName = "sa" }),
			want: defaultedTemplate(func(s *corev1.PodSpec) { s.ServiceAccountName, s.DeprecatedServiceAccount = "sa", "sa" }),
		},
		{
			name: "serviceAccountName is copied from serviceAccount",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.DeprecatedServiceAccount = "sa" }),
			want: defaultedTemplate(func(s *corev1.PodSpec) { s.ServiceAccountName, s.DeprecatedServiceAccount = "sa", "sa" }),
		},
		{
			name: "serviceAccountName wins over a different serviceAccount",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.ServiceAccountName, s.DeprecatedServiceAccount = "sa", "old" }),
			want: defaultedTemplate(func(s *corev1.PodSpec) { s.ServiceAccountName, s.DeprecatedServiceAccount = "sa", "sa" }),
		},
		{
			// enableServiceLinks is defaulted in SetDefaults_Pod only.
			name: "enableServiceLinks is not defaulted in a template",
			in:   defaultedTemplate(func(s *corev1.PodSpec) { s.EnableServiceLinks = nil }),
			want: defaultedTemplate(func(s *corev1.PodSpec) { s.EnableServiceLinks = nil }),
		},
		{
			// hostPort follows containerPort under hostNetwork in SetDefaults_Pod only.
			name: "hostPort is not defaulted under hostNetwork in a template",
			in: defaultedTemplate(func(s *corev1.PodSpec) {
				s.HostNetwork = true
				s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
			}),
			want: defaultedTemplate(func(s *corev1.PodSpec) {
				s.HostNetwork = true
				s.Containers[0].Ports = []corev1.ContainerPort{{ContainerPort: 8080, Protocol: corev1.ProtocolTCP}}
			}),
		},
		{
			name: "overhead is rounded up to milli scale",
			in: defaultedTemplate(func(s *corev1.PodSpec) {
				s.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.1234")}
			}),
			want: defaultedTemplate(func(s *corev1.PodSpec) {
				s.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("124m")}
			}),
		},
		{
			name: "pod-level resources are rounded up to milli scale",
			in: defaultedTemplate(func(s *corev1.PodSpec) {
				s.Resources = &corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1.0001")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0001")},
				}
			}),
			want: defaultedTemplate(func(s *corev1.PodSpec) {
				s.Resources = &corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1001m")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")},
				}
			}),
		},

		// Containers.
		{
			name: "imagePullPolicy is Always for the latest tag",
			in:   defaultedTemplate(templateImage("busybox:latest", "")),
			want: defaultedTemplate(templateImage("busybox:latest", corev1.PullAlways)),
		},
		{
			name: "imagePullPolicy is Always without a tag",
			in:   defaultedTemplate(templateImage("busybox", "")),
			want: defaultedTemplate(templateImage("busybox", corev1.PullAlways)),
		},
		{
			name: "imagePullPolicy is Always without a tag behind a registry port",
			in:   defaultedTemplate(templateImage("registry.example.com:5000/team/busybox", "")),
			want: defaultedTemplate(templateImage("registry.example.com:5000/team/busybox", corev1.PullAlways)),
		},
		{
			name: "imagePullPolicy is IfNotPresent for another tag",
			in:   defaultedTemplate(templateImage("registry.example.com:5000/busybox:1.36", "")),
			want: defaultedTemplate(templateImage("registry.example.com:5000/busybox:1.36", corev1.PullIfNotPresent)),
		},
		{
			name: "imagePullPolicy is IfNotPresent for a tag that is latest in another case",
			in:   defaultedTemplate(templateImage("busybox:Latest", "")),
			want: defaultedTemplate(templateImage("busybox:Latest", corev1.PullIfNotPresent)),
		},
		{
			name: "imagePullPolicy is IfNotPresent for a digest",
			in:   defaultedTemplate(templateImage("busybox@"+imageDigest, "")),
			want: defaultedTemplate(templateImage("busybox@"+imageDigest, corev1.PullIfNotPresent)),
		},
		{
			name: "imagePullPolicy is Always for the latest tag with a digest",
			in:   defaultedTemplate(templateImage("busybox:latest@"+imageDigest, "")),
			want: defaultedTemplate(templateImage("busybox:latest@"+imageDigest, corev1.PullAlways)),
		},
		{
			name: "imagePullPolicy is IfNotPresent for an image that does not parse",
			in:   defaultedTemplate(templateImage("BusyBox", "")),
			want: defaultedTemplate(templateImage("BusyBox", corev1.PullIfNotPresent)),
		},
		{
			name: "imagePullPolicy is IfNotPresent for an empty image",
			in:   defaultedTemplate(templateImage("", "")),
			want: defaultedTemplate(templateImage("", corev1.PullIfNotPresent)),
		},
		{
			name: "imagePullPolicy set is kept",
			in:   defaultedTemplate(templateImage("busybox", corev1.PullNever)),
			want: defaultedTemplate(templateImage("busybox", corev1.PullNever)),
		},
		{
			name: "terminationMessagePath defaults to /dev/termination-log",
			in:   defaultedTemplate(templateContainer(func(c *corev1.Container) { c.TerminationMessagePath = "" })),
			want: defaultedTemplate(),
		},
		{
			name: "terminationMessagePath set is kept",
			in:   defaultedTemplate(templateContainer(func(c *corev1.Container) { c.TerminationMessagePath = "/tmp/msg" })),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) { c.TerminationMessagePath = "/tmp/msg" })),
		},
		{
			name: "terminationMessagePolicy defaults to File",
			in:   defaultedTemplate(templateContainer(func(c *corev1.Container) { c.TerminationMessagePolicy = "" })),
			want: defaultedTemplate(),
		},
		{
			name: "terminationMessagePolicy set is kept",
			in: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
			})),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.TerminationMessagePolicy = corev1.TerminationMessageFallbackToLogsOnError
			})),
		},
		{
			name: "port protocol defaults to TCP and a set one is kept",
			in: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Ports = []corev1.ContainerPort{{ContainerPort: 80}, {ContainerPort: 53, Protocol: corev1.ProtocolUDP}}
			})),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Ports = []corev1.ContainerPort{
					{ContainerPort: 80, Protocol: corev1.ProtocolTCP},
					{ContainerPort: 53, Protocol: corev1.ProtocolUDP},
				}
			})),
		},
		{
			name: "env fieldRef apiVersion defaults to v1 and a set one is kept",
			in: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Env = []corev1.EnvVar{
					{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
					{Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}},
					{Name: "C", Value: "c"},
				}
			})),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Env = []corev1.EnvVar{
					{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}},
					{Name: "B", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v2", FieldPath: "metadata.name"}}},
					{Name: "C", Value: "c"},
				}
			})),
		},
		{
			name: "env fileKeyRef optional defaults to false",
			in: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k"}}}}
			})),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FileKeyRef: &corev1.FileKeySelector{VolumeName: "v", Path: "p", Key: "k", Optional: ptr.To(false)}}}}
			})),
		},
		{
			name: "env valueFrom secretKeyRef gets no default",
			in: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
			})),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{Key: "k"}}}}
			})),
		},
		{
			name: "container resources are rounded up to milli scale",
			in: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Resources = corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100.5m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0000001")},
				}
			})),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Resources = corev1.ResourceRequirements{
					Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("101m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1m")},
				}
			})),
		},
		{
			// Requests follow limits in SetDefaults_Pod only.
			name: "requests are not copied from limits in a template",
			in: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
			})),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}
			})),
		},
		{
			name: "liveness probe gets timing and httpGet defaults",
			in: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.LivenessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}}
			})),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.LivenessProbe = &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(8080), Scheme: corev1.URISchemeHTTP}},
					TimeoutSeconds:   1,
					PeriodSeconds:    10,
					SuccessThreshold: 1,
					FailureThreshold: 3,
				}
			})),
		},
		{
			name: "readiness probe gets timing and grpc service defaults",
			in: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.ReadinessProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090}}}
			})),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.ReadinessProbe = &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 9090, Service: ptr.To("")}},
					TimeoutSeconds:   1,
					PeriodSeconds:    10,
					SuccessThreshold: 1,
					FailureThreshold: 3,
				}
			})),
		},
		{
			name: "startup probe gets timing defaults and a tcpSocket handler none",
			in: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.StartupProbe = &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}}}
			})),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.StartupProbe = &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromString("http")}},
					TimeoutSeconds:   1,
					PeriodSeconds:    10,
					SuccessThreshold: 1,
					FailureThreshold: 3,
				}
			})),
		},
		{
			name: "probe values set are kept",
			in: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.LivenessProbe = &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8443), Scheme: corev1.URISchemeHTTPS}},
					TimeoutSeconds:   5,
					PeriodSeconds:    20,
					SuccessThreshold: 2,
					FailureThreshold: 7,
				}
			})),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.LivenessProbe = &corev1.Probe{
					ProbeHandler:     corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromInt32(8443), Scheme: corev1.URISchemeHTTPS}},
					TimeoutSeconds:   5,
					PeriodSeconds:    20,
					SuccessThreshold: 2,
					FailureThreshold: 7,
				}
			})),
		},
		{
			name: "lifecycle httpGet handlers get path and scheme",
			in: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Lifecycle = &corev1.Lifecycle{
					PostStart: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}},
					PreStop:   &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80), Path: "/stop"}},
				}
			})),
			want: defaultedTemplate(templateContainer(func(c *corev1.Container) {
				c.Lifecycle = &corev1.Lifecycle{
					PostStart: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}},
					PreStop:   &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/stop", Port: intstr.FromInt32(80), Scheme: corev1.URISchemeHTTP}},
				}
			})),
		},
		{
			name: "init containers get the container defaults",
			in: defaultedTemplate(func(s *corev1.PodSpec) {
				s.InitContainers = []corev1.Container{{
					Name:          "init",
					Image:         "busybox",
					RestartPolicy: ptr.To(corev1.ContainerRestartPolicyAlways),
					Ports:         []corev1.ContainerPort{{ContainerPort: 80}},
					StartupProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}},
				}}
			}),
			want: defaultedTemplate(func(s *corev1.PodSpec) {
				s.InitContainers = []corev1.Container{{
					Name:                     "init",
					Image:                    "busybox",
					RestartPolicy:            ptr.To(corev1.ContainerRestartPolicyAlways),
					Ports:                    []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
					StartupProbe:             &corev1.Probe{ProbeHandler: corev1.ProbeHandler{Exec: &corev1.ExecAction{Command: []string{"true"}}}, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3},
					ImagePullPolicy:          corev1.PullAlways,
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				}}
			}),
		},
		{
			name: "ephemeral containers get the container defaults",
			in: defaultedTemplate(func(s *corev1.PodSpec) {
				s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					Name:  "debug",
					Image: "busybox:1.36",
					Env:   []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}},
				}}}
			}),
			want: defaultedTemplate(func(s *corev1.PodSpec) {
				s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
					Name:                     "debug",
					Image:                    "busybox:1.36",
					Env:                      []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}}}},
					ImagePullPolicy:          corev1.PullIfNotPresent,
					TerminationMessagePath:   "/dev/termination-log",
					TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				}}}
			}),
		},

		// Volumes.
		{
			name: "volume without a source becomes an emptyDir",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}})),
		},
		{
			name: "emptyDir gets no default",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("0.0001"))}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{SizeLimit: ptr.To(resource.MustParse("0.0001"))}})),
		},
		{
			name: "hostPath type defaults to unset",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data"}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data", Type: ptr.To(corev1.HostPathUnset)}})),
		},
		{
			name: "hostPath type set is kept",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data", Type: ptr.To(corev1.HostPathDirectory)}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/data", Type: ptr.To(corev1.HostPathDirectory)}})),
		},
		{
			name: "secret defaultMode defaults to 0644",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o644)}})),
		},
		{
			name: "secret defaultMode set is kept",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o400)}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o400)}})),
		},
		{
			name: "configMap defaultMode defaults to 0644",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm"}, DefaultMode: ptr.To[int32](0o644)}})),
		},
		{
			name: "downwardAPI defaultMode defaults to 0644 and fieldRef apiVersion to v1",
			in: defaultedTemplate(templateVolume(corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}},
				{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.cpu"}},
			}}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{DefaultMode: ptr.To[int32](0o644), Items: []corev1.DownwardAPIVolumeFile{
				{Path: "name", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"}},
				{Path: "cpu", ResourceFieldRef: &corev1.ResourceFieldSelector{ContainerName: "c", Resource: "limits.cpu"}},
			}}})),
		},
		{
			name: "projected defaultMode, downwardAPI fieldRef and token expiration are defaulted",
			in: defaultedTemplate(templateVolume(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "short", ExpirationSeconds: ptr.To[int64](600)}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}},
			}}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{
				{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "ns", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.namespace"}}}}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3600)}},
				{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "short", ExpirationSeconds: ptr.To[int64](600)}},
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "s"}}},
			}}})),
		},
		{
			name: "iscsi initiator interface defaults to default",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.2001-04.com.example:storage", Lun: 0}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.2001-04.com.example:storage", Lun: 0, ISCSIInterface: "default"}})),
		},
		{
			name: "rbd pool, user and keyring are defaulted",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"m"}, RBDImage: "img"}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{RBD: &corev1.RBDVolumeSource{CephMonitors: []string{"m"}, RBDImage: "img", RBDPool: "rbd", RadosUser: "admin", Keyring: "/etc/ceph/keyring"}})),
		},
		{
			name: "azureDisk cachingMode, fsType, readOnly and kind are defaulted",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{DiskName: "d", DataDiskURI: "u"}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{AzureDisk: &corev1.AzureDiskVolumeSource{
				DiskName:    "d",
				DataDiskURI: "u",
				CachingMode: ptr.To(corev1.AzureDataDiskCachingReadWrite),
				FSType:      ptr.To("ext4"),
				ReadOnly:    ptr.To(false),
				Kind:        ptr.To(corev1.AzureSharedBlobDisk),
			}})),
		},
		{
			name: "scaleIO storageMode and fsType are defaulted",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{Gateway: "g", System: "s"}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{ScaleIO: &corev1.ScaleIOVolumeSource{Gateway: "g", System: "s", StorageMode: "ThinProvisioned", FSType: "xfs"}})),
		},
		{
			name: "ephemeral claim template gets volumeMode Filesystem and rounded resources",
			in: defaultedTemplate(templateVolume(corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("0.0001")}},
				},
			}}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{
					AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
					Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1m")}},
					VolumeMode:  ptr.To(corev1.PersistentVolumeFilesystem),
				},
			}}})),
		},
		{
			name: "ephemeral claim template volumeMode set is kept",
			in: defaultedTemplate(templateVolume(corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: ptr.To(corev1.PersistentVolumeBlock)},
			}}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
				Spec: corev1.PersistentVolumeClaimSpec{VolumeMode: ptr.To(corev1.PersistentVolumeBlock)},
			}}})),
		},
		{
			name: "image volume pullPolicy is Always for latest",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "example.com/artifact"}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "example.com/artifact", PullPolicy: corev1.PullAlways}})),
		},
		{
			name: "image volume pullPolicy is IfNotPresent for another tag",
			in:   defaultedTemplate(templateVolume(corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "example.com/artifact:v1"}})),
			want: defaultedTemplate(templateVolume(corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "example.com/artifact:v1", PullPolicy: corev1.PullIfNotPresent}})),
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := defaultTemplate(tc.in)
			if diff := cmp.Diff(tc.want, got, quantityComparer); diff != "" {
				t.Errorf("template defaults (-want +got):\n%s", diff)
			}
			// Defaulting an object twice must not change it again: the server
			// defaults every object it decodes, including its own output.
			again := defaultTemplate(got)
			if diff := cmp.Diff(got, again, quantityComparer); diff != "" {
				t.Errorf("template defaults are not idempotent (-once +twice):\n%s", diff)
			}
		})
	}
}

// defaultTemplate applies the generated Job defaulter to a Job holding a copy
// of template and returns the defaulted template.
func defaultTemplate(template corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	job := &batchv1.Job{Spec: batchv1.JobSpec{Template: *template.DeepCopy()}}
	batchv1.SetObjectDefaults_Job(job)
	return job.Spec.Template
}
