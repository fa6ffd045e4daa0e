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
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

const (
	podSpec = "spec.template.spec"
	ctr0    = podSpec + ".containers[0]"
	vol0    = podSpec + ".volumes[0]"
)

// spec changes the template's pod spec of testJob("j").
func spec(change func(*corev1.PodSpec)) *batch.Job {
	return testJob("j").Do(func(j *batchv1.Job) { change(&j.Spec.Template.Spec) }).Internal()
}

// main changes the template's first (and only) container.
func main(change func(*corev1.Container)) *batch.Job {
	return spec(func(s *corev1.PodSpec) { change(&s.Containers[0]) })
}

// withVolume adds volume v with the given source.
func withVolume(src corev1.VolumeSource) *batch.Job {
	return spec(func(s *corev1.PodSpec) { s.Volumes = append(s.Volumes, corev1.Volume{Name: "v", VolumeSource: src}) })
}

// defaultedContainer is a container as defaulting leaves it.
func defaultedContainer(name string) corev1.Container {
	return corev1.Container{
		Name: name, Image: "registry.example/app:1.0", ImagePullPolicy: corev1.PullIfNotPresent,
		TerminationMessagePath: corev1.TerminationMessagePathDefault, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
	}
}

func fe(t field.ErrorType, path string) *field.Error { return &field.Error{Type: t, Field: path} }

// TestInvalidTemplates has one invalid template per family of core's pod
// rules. Each expected error list is checked against both our strategy and
// kube-apiserver's own Job validation (its strategy, with the options it
// derives), so a row can only pass when the server refuses the template as
// kube-apiserver 1.37 does, with the same types and paths.
func TestInvalidTemplates(t *testing.T) {
	const (
		required     = field.ErrorTypeRequired
		invalid      = field.ErrorTypeInvalid
		notSupported = field.ErrorTypeNotSupported
		duplicate    = field.ErrorTypeDuplicate
		forbidden    = field.ErrorTypeForbidden
		notFound     = field.ErrorTypeNotFound
	)
	httpGet := func(port int) corev1.ProbeHandler {
		return corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intstr.FromInt32(int32(port)), Scheme: corev1.URISchemeHTTP}}
	}
	probe := func(h corev1.ProbeHandler) *corev1.Probe {
		return &corev1.Probe{ProbeHandler: h, TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3}
	}
	cases := map[string]struct {
		job  *batch.Job
		want field.ErrorList
	}{
		// Volumes and their sources.
		"volume without a name": {job: spec(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
		}), want: field.ErrorList{fe(required, vol0+".name")}},
		"volume with two sources": {job: withVolume(corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}, HostPath: &corev1.HostPathVolumeSource{Path: "/tmp", Type: ptr.To(corev1.HostPathUnset)}}),
			want: field.ErrorList{fe(forbidden, vol0+".hostPath")}},
		"duplicate volume names": {job: spec(func(s *corev1.PodSpec) {
			src := corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
			s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: src}, {Name: "v", VolumeSource: src}}
		}), want: field.ErrorList{fe(duplicate, podSpec+".volumes[1].name")}},
		"hostPath without a path": {job: withVolume(corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Type: ptr.To(corev1.HostPathUnset)}}),
			want: field.ErrorList{fe(required, vol0+".hostPath.path")}},
		"secret without a name": {job: withVolume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{DefaultMode: ptr.To[int32](0o644)}}),
			want: field.ErrorList{fe(required, vol0+".secret.secretName")}},
		"secret defaultMode out of range": {job: withVolume(corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s", DefaultMode: ptr.To[int32](0o1000)}}),
			want: field.ErrorList{fe(invalid, vol0+".secret.defaultMode")}},
		"configMap item path escaping the volume": {job: withVolume(corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, DefaultMode: ptr.To[int32](0o644), Items: []corev1.KeyToPath{{Key: "k", Path: "../x"}},
		}}), want: field.ErrorList{fe(invalid, vol0+".configMap.items[0].path")}},
		"downwardAPI item with an unsupported fieldPath": {job: withVolume(corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{
			DefaultMode: ptr.To[int32](0o644), Items: []corev1.DownwardAPIVolumeFile{{Path: "p", FieldRef: &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "spec.nodeName"}}},
		}}), want: field.ErrorList{fe(notSupported, vol0+".downwardAPI.fieldRef.fieldPath")}}, // upstream's path, without the item index
		"projected service account token expiring too soon": {job: withVolume(corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
			DefaultMode: ptr.To[int32](0o644), Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](60)}}},
		}}), want: field.ErrorList{fe(invalid, vol0+".projected.sources[0].serviceAccountToken.expirationSeconds")}},
		"persistentVolumeClaim without a claim name": {job: withVolume(corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{}}),
			want: field.ErrorList{fe(required, vol0+".persistentVolumeClaim.claimName")}},
		"nfs without a server": {job: withVolume(corev1.VolumeSource{NFS: &corev1.NFSVolumeSource{Path: "/export"}}),
			want: field.ErrorList{fe(required, vol0+".nfs.server")}},
		"ephemeral volume without a claim template": {job: withVolume(corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{}}),
			want: field.ErrorList{fe(required, vol0+".ephemeral.volumeClaimTemplate")}},
		"csi volume without a driver": {job: withVolume(corev1.VolumeSource{CSI: &corev1.CSIVolumeSource{}}),
			want: field.ErrorList{fe(required, vol0+".csi.driver")}},
		// Volume mounts and devices.
		"mount of no volume": {job: main(func(c *corev1.Container) {
			c.VolumeMounts = []corev1.VolumeMount{{Name: "missing", MountPath: "/data"}}
		}), want: field.ErrorList{fe(notFound, ctr0+".volumeMounts[0].name")}},
		"mount without a path": {job: spec(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v"}}
		}), want: field.ErrorList{fe(required, ctr0+".volumeMounts[0].mountPath")}},
		"mount with an absolute subPath": {job: spec(func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}}
			s.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "v", MountPath: "/data", SubPath: "/abs"}}
		}), want: field.ErrorList{fe(invalid, ctr0+".volumeMounts.subPath")}}, // upstream's path, without the mount index
		"device of no volume": {job: main(func(c *corev1.Container) {
			c.VolumeDevices = []corev1.VolumeDevice{{Name: "missing", DevicePath: "/dev/x"}}
		}), want: field.ErrorList{fe(notFound, ctr0+".volumeDevices[0].name")}},
		// Ports.
		"container port out of range": {job: main(func(c *corev1.Container) {
			c.Ports = []corev1.ContainerPort{{ContainerPort: 70000, Protocol: corev1.ProtocolTCP}}
		}), want: field.ErrorList{fe(invalid, ctr0+".ports[0].containerPort")}},
		"duplicate port name": {job: main(func(c *corev1.Container) {
			c.Ports = []corev1.ContainerPort{{Name: "http", ContainerPort: 80, Protocol: corev1.ProtocolTCP}, {Name: "http", ContainerPort: 81, Protocol: corev1.ProtocolTCP}}
		}), want: field.ErrorList{fe(duplicate, ctr0+".ports[1].name")}},
		// Probes.
		"probe without a handler": {job: main(func(c *corev1.Container) { c.LivenessProbe = probe(corev1.ProbeHandler{}) }),
			want: field.ErrorList{fe(required, ctr0+".livenessProbe")}},
		"probe with two handlers": {job: main(func(c *corev1.Container) {
			h := httpGet(8080)
			h.Exec = &corev1.ExecAction{Command: []string{"true"}}
			c.ReadinessProbe = probe(h)
		}), want: field.ErrorList{fe(forbidden, ctr0+".readinessProbe.httpGet")}},
		"liveness probe needing two successes": {job: main(func(c *corev1.Container) {
			p := probe(httpGet(8080))
			p.SuccessThreshold = 2
			c.LivenessProbe = p
		}), want: field.ErrorList{fe(invalid, ctr0+".livenessProbe.successThreshold")}},
		"probe port out of range": {job: main(func(c *corev1.Container) { c.StartupProbe = probe(httpGet(0)) }),
			want: field.ErrorList{fe(invalid, ctr0+".startupProbe.httpGet.port")}},
		// Lifecycle.
		"preStop hook without a handler": {job: main(func(c *corev1.Container) { c.Lifecycle = &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{}} }),
			want: field.ErrorList{fe(required, ctr0+".lifecycle.preStop")}},
		"postStart exec without a command": {job: main(func(c *corev1.Container) {
			c.Lifecycle = &corev1.Lifecycle{PostStart: &corev1.LifecycleHandler{Exec: &corev1.ExecAction{}}}
		}), want: field.ErrorList{fe(required, ctr0+".lifecycle.postStart.exec.command")}},
		// Security contexts.
		"negative runAsUser": {job: main(func(c *corev1.Container) { c.SecurityContext = &corev1.SecurityContext{RunAsUser: ptr.To[int64](-1)} }),
			want: field.ErrorList{fe(invalid, ctr0+".securityContext.runAsUser")}},
		"negative pod runAsGroup": {job: spec(func(s *corev1.PodSpec) { s.SecurityContext.RunAsGroup = ptr.To[int64](-1) }),
			want: field.ErrorList{fe(invalid, podSpec+".securityContext.runAsGroup")}},
		"unknown fsGroupChangePolicy": {job: spec(func(s *corev1.PodSpec) {
			s.SecurityContext.FSGroupChangePolicy = ptr.To(corev1.PodFSGroupChangePolicy("Sometimes"))
		}), want: field.ErrorList{fe(notSupported, podSpec+".securityContext.fsGroupChangePolicy")}},
		// kube-apiserver refuses privileged containers unless it runs with
		// --allow-privileged=true (its default is false); this server has no
		// such flag (docs/deviations.md).
		"privileged container": {job: main(func(c *corev1.Container) { c.SecurityContext = &corev1.SecurityContext{Privileged: ptr.To(true)} }),
			want: field.ErrorList{fe(forbidden, ctr0+".securityContext.privileged")}},
		"localhost seccomp profile without a file": {job: spec(func(s *corev1.PodSpec) {
			s.SecurityContext.SeccompProfile = &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeLocalhost}
		}), want: field.ErrorList{fe(required, podSpec+".securityContext.seccompProfile.localhostProfile")}},
		// Resources.
		"limits below requests": {job: main(func(c *corev1.Container) {
			c.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{"cpu": resource.MustParse("1")}, Requests: corev1.ResourceList{"cpu": resource.MustParse("2")}}
		}), want: field.ErrorList{fe(invalid, ctr0+".resources.requests")}},
		"unknown unqualified resource": {job: main(func(c *corev1.Container) {
			c.Resources = corev1.ResourceRequirements{Limits: corev1.ResourceList{"gpu": resource.MustParse("1")}}
		}), want: field.ErrorList{fe(invalid, ctr0+".resources.limits[gpu]"), fe(invalid, ctr0+".resources.limits[gpu]")}},
		// Env and envFrom.
		"env var without a name": {job: main(func(c *corev1.Container) { c.Env = []corev1.EnvVar{{Value: "x"}} }),
			want: field.ErrorList{fe(required, ctr0+".env[0].name")}},
		"env var from two sources": {job: main(func(c *corev1.Container) {
			c.Env = []corev1.EnvVar{{Name: "A", ValueFrom: &corev1.EnvVarSource{
				FieldRef:        &corev1.ObjectFieldSelector{APIVersion: "v1", FieldPath: "metadata.name"},
				ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}, Key: "k"},
			}}}
		}), want: field.ErrorList{fe(invalid, ctr0+".env[0].valueFrom")}},
		"envFrom configMap without a name": {job: main(func(c *corev1.Container) {
			c.EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}
		}), want: field.ErrorList{fe(required, ctr0+".envFrom[0].configMapRef.name")}},
		// DNS.
		"unknown DNS policy": {job: spec(func(s *corev1.PodSpec) { s.DNSPolicy = "Custom" }),
			want: field.ErrorList{fe(notSupported, podSpec+".dnsPolicy")}},
		"DNS policy None without a config": {job: spec(func(s *corev1.PodSpec) { s.DNSPolicy = corev1.DNSNone }),
			want: field.ErrorList{fe(required, podSpec+".dnsConfig")}},
		"too many nameservers": {job: spec(func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "2.2.2.2", "3.3.3.3", "4.4.4.4"}}
		}), want: field.ErrorList{fe(invalid, podSpec+".dnsConfig.nameservers")}},
		// Tolerations.
		"Exists toleration with a value": {job: spec(func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpExists, Value: "v"}}
		}), want: field.ErrorList{fe(invalid, podSpec+".tolerations[0].operator")}},
		"toleration with an unknown effect": {job: spec(func(s *corev1.PodSpec) {
			s.Tolerations = []corev1.Toleration{{Key: "k", Operator: corev1.TolerationOpEqual, Value: "v", Effect: "Sometimes"}}
		}), want: field.ErrorList{fe(notSupported, podSpec+".tolerations[0].effect")}},
		// Affinity.
		"required node affinity without terms": {job: spec(func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{}}}
		}), want: field.ErrorList{fe(required, podSpec+".affinity.nodeAffinity.requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms")}},
		"pod affinity term without a topology key": {job: spec(func(s *corev1.PodSpec) {
			s.Affinity = &corev1.Affinity{PodAffinity: &corev1.PodAffinity{RequiredDuringSchedulingIgnoredDuringExecution: []corev1.PodAffinityTerm{{
				LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "a"}},
			}}}}
		}), want: field.ErrorList{
			fe(required, podSpec+".affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"),
			fe(invalid, podSpec+".affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"),
			fe(invalid, podSpec+".affinity.podAffinity.requiredDuringSchedulingIgnoredDuringExecution[0].topologyKey"),
		}},
		// Topology spread.
		"topology spread with maxSkew 0": {job: spec(func(s *corev1.PodSpec) {
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 0, TopologyKey: "zone", WhenUnsatisfiable: corev1.DoNotSchedule}}
		}), want: field.ErrorList{fe(invalid, podSpec+".topologySpreadConstraints[0].maxSkew")}},
		"topology spread with an unknown whenUnsatisfiable": {job: spec(func(s *corev1.PodSpec) {
			s.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: "zone", WhenUnsatisfiable: "Maybe"}}
		}), want: field.ErrorList{fe(notSupported, podSpec+".topologySpreadConstraints[0].whenUnsatisfiable")}},
		// Sidecars and init containers.
		"sidecar with an unsupported restart policy": {job: spec(func(s *corev1.PodSpec) {
			c := defaultedContainer("sidecar")
			c.RestartPolicy = ptr.To(corev1.ContainerRestartPolicy("Sometimes"))
			s.InitContainers = []corev1.Container{c}
		}), want: field.ErrorList{fe(notSupported, podSpec+".initContainers[0].restartPolicy")}},
		"init container with a readiness probe": {job: spec(func(s *corev1.PodSpec) {
			c := defaultedContainer("init")
			c.ReadinessProbe = probe(httpGet(8080))
			s.InitContainers = []corev1.Container{c}
		}), want: field.ErrorList{fe(forbidden, podSpec+".initContainers[0].readinessProbe")}},
		"init container named as a container": {job: spec(func(s *corev1.PodSpec) { s.InitContainers = []corev1.Container{defaultedContainer("main")} }),
			want: field.ErrorList{fe(duplicate, podSpec+".initContainers[0].name")}},
		// Host aliases.
		"host alias with an invalid IP": {job: spec(func(s *corev1.PodSpec) {
			s.HostAliases = []corev1.HostAlias{{IP: "999.1.1.1", Hostnames: []string{"a"}}}
		}),
			want: field.ErrorList{fe(invalid, podSpec+".hostAliases[0].ip")}},
		"host alias with an invalid hostname": {job: spec(func(s *corev1.PodSpec) {
			s.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"Not_A_Host"}}}
		}),
			want: field.ErrorList{fe(invalid, podSpec+".hostAliases[0].hostnames[0]")}},
		// Sysctls.
		"invalid sysctl name": {job: spec(func(s *corev1.PodSpec) { s.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "-bad", Value: "1"}} }),
			want: field.ErrorList{fe(invalid, podSpec+".securityContext.sysctls[0].name")}},
		"duplicate sysctl": {job: spec(func(s *corev1.PodSpec) {
			s.SecurityContext.Sysctls = []corev1.Sysctl{{Name: "net.core.somaxconn", Value: "1"}, {Name: "net.core.somaxconn", Value: "2"}}
		}), want: field.ErrorList{fe(duplicate, podSpec+".securityContext.sysctls[1].name")}},
		// Overhead.
		"negative overhead": {job: spec(func(s *corev1.PodSpec) { s.Overhead = corev1.ResourceList{"memory": resource.MustParse("-1Mi")} }),
			want: field.ErrorList{fe(invalid, podSpec+".overhead.limits[memory]")}},
		// Ephemeral containers.
		"ephemeral container in a template": {job: spec(func(s *corev1.PodSpec) {
			s.EphemeralContainers = []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
				Name: "debug", Image: "busybox", ImagePullPolicy: corev1.PullAlways, TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			}}}
		}), want: field.ErrorList{fe(forbidden, podSpec+".ephemeralContainers")}},
		// The rest of the pod spec.
		"zero pod activeDeadlineSeconds": {job: spec(func(s *corev1.PodSpec) { s.ActiveDeadlineSeconds = ptr.To[int64](0) }),
			want: field.ErrorList{fe(invalid, podSpec+".activeDeadlineSeconds")}},
		"invalid hostname": {job: spec(func(s *corev1.PodSpec) { s.Hostname = "Not_A_Label" }),
			want: field.ErrorList{fe(invalid, podSpec+".hostname")}},
		"invalid service account name": {job: spec(func(s *corev1.PodSpec) {
			s.ServiceAccountName = "Not_A_Name"
			s.DeprecatedServiceAccount = "Not_A_Name"
		}),
			want: field.ErrorList{fe(invalid, podSpec+".serviceAccountName")}},
		"unsupported OS": {job: spec(func(s *corev1.PodSpec) { s.OS = &corev1.PodOS{Name: "plan9"} }),
			want: field.ErrorList{fe(notSupported, podSpec+".os")}},
		"duplicate scheduling gates": {job: spec(func(s *corev1.PodSpec) {
			s.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/a"}, {Name: "example.com/a"}}
		}),
			want: field.ErrorList{fe(duplicate, podSpec+".schedulingGates[1]")}},
		// Upstream's path is spec.template.labels; the Job's own labels,
		// defaulted from the template's, are refused too.
		"invalid template label": {job: testJob("j").TemplateLabel("bad key!", "v").Internal(),
			want: field.ErrorList{fe(invalid, "spec.template.labels"), fe(invalid, "metadata.labels")}},
		"container without an image": {job: main(func(c *corev1.Container) { c.Image = "" }),
			want: field.ErrorList{fe(required, ctr0+".image")}},
		"host port used twice": {job: main(func(c *corev1.Container) {
			c.Ports = []corev1.ContainerPort{{ContainerPort: 80, HostPort: 8080, Protocol: corev1.ProtocolTCP}, {ContainerPort: 81, HostPort: 8080, Protocol: corev1.ProtocolTCP}}
		}), want: field.ErrorList{fe(duplicate, ctr0+".ports[1].hostPort")}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ours, upstream := decodedPair(t, tc.job)
			gotOurs, gotUpstream, err := createErrors(ours, upstream)
			if err != nil {
				t.Fatal(err)
			}
			t.Run("ours", func(t *testing.T) { byTypeAndFieldMatcher.Test(t, tc.want, gotOurs) })
			t.Run("kube-apiserver", func(t *testing.T) { byTypeAndFieldMatcher.Test(t, tc.want, ourPaths(gotUpstream)) })
		})
	}
	if len(cases) < 40 {
		t.Errorf("%d invalid templates; the table must cover at least 40", len(cases))
	}
}
