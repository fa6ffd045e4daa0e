// Package podtemplate applies to a Job's pod template the core/v1 defaults that
// kube-apiserver applies to a PodTemplateSpec, without importing k8s.io/kubernetes.
//
// The walk mirrors what the generated SetObjectDefaults_Job of Kubernetes 1.37
// (k8s.io/kubernetes/pkg/apis/batch/v1) does for spec.template: the
// hand-written SetDefaults_* functions of k8s.io/kubernetes/pkg/apis/core/v1
// that apply to a PodSpec, and the declarative +default markers of
// k8s.io/api/core/v1 that defaulter-gen inlines. Our own generated defaulter
// inlines the declarative ones as well; applying them here too keeps this
// package complete on its own, and every default is idempotent.
//
// Defaults that upstream applies only to a Pod (SetDefaults_Pod) are
// deliberately absent, because kube-apiserver does not apply them to a pod
// template: requests copied from limits, enableServiceLinks, hostPort from
// containerPort under hostNetwork, the negative terminationGracePeriodSeconds
// clamp, HTTP probe protocol and pod-level resource defaults.
package podtemplate

import (
	"time"

	"github.com/distribution/reference"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// SetDefaults applies the core/v1 defaults to a pod template in place.
func SetDefaults(t *corev1.PodTemplateSpec) {
	spec := &t.Spec
	setDefaultsPodSpec(spec)
	for i := range spec.Volumes {
		setDefaultsVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		setDefaultsContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		setDefaultsContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		// EphemeralContainerCommon has exactly the fields of Container, as upstream relies on too.
		setDefaultsContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUpResourceList(spec.Overhead)
	if spec.Resources != nil {
		roundUpResourceList(spec.Resources.Limits)
		roundUpResourceList(spec.Resources.Requests)
	}
}

// setDefaultsPodSpec mirrors SetDefaults_PodSpec.
func setDefaultsPodSpec(s *corev1.PodSpec) {
	// serviceAccount is the deprecated alias of serviceAccountName; upstream keeps
	// them equal, serviceAccountName winning when both are set.
	if s.ServiceAccountName == "" {
		s.ServiceAccountName = s.DeprecatedServiceAccount //nolint:staticcheck // SA1019: the alias is kept in sync as upstream does.
	}
	s.DeprecatedServiceAccount = s.ServiceAccountName //nolint:staticcheck // SA1019: see above.
	if s.DNSPolicy == "" {
		s.DNSPolicy = corev1.DNSClusterFirst
	}
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
	if s.SecurityContext == nil {
		s.SecurityContext = &corev1.PodSecurityContext{}
	}
	if s.TerminationGracePeriodSeconds == nil {
		s.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	if s.SchedulerName == "" {
		s.SchedulerName = corev1.DefaultSchedulerName
	}
}

// setDefaultsVolume mirrors SetDefaults_Volume and the defaults of each volume source.
func setDefaultsVolume(v *corev1.Volume) {
	if ptr.AllPtrFieldsNil(&v.VolumeSource) {
		v.VolumeSource = corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}
	}
	src := &v.VolumeSource
	// Upstream gates this on ImageVolume, GA and locked on since 1.36.
	if src.Image != nil && src.Image.PullPolicy == "" {
		src.Image.PullPolicy = pullPolicyFor(src.Image.Reference)
	}
	if src.HostPath != nil && src.HostPath.Type == nil {
		src.HostPath.Type = ptr.To(corev1.HostPathUnset)
	}
	if src.Secret != nil && src.Secret.DefaultMode == nil {
		src.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if src.ISCSI != nil && src.ISCSI.ISCSIInterface == "" {
		src.ISCSI.ISCSIInterface = "default"
	}
	if src.RBD != nil {
		if src.RBD.RBDPool == "" {
			src.RBD.RBDPool = "rbd"
		}
		if src.RBD.RadosUser == "" {
			src.RBD.RadosUser = "admin"
		}
		if src.RBD.Keyring == "" {
			src.RBD.Keyring = "/etc/ceph/keyring"
		}
	}
	if src.DownwardAPI != nil {
		if src.DownwardAPI.DefaultMode == nil {
			src.DownwardAPI.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		setDefaultsDownwardAPIFiles(src.DownwardAPI.Items)
	}
	if src.ConfigMap != nil && src.ConfigMap.DefaultMode == nil {
		src.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if d := src.AzureDisk; d != nil {
		if d.CachingMode == nil {
			d.CachingMode = ptr.To(corev1.AzureDataDiskCachingReadWrite)
		}
		if d.FSType == nil {
			d.FSType = ptr.To("ext4")
		}
		if d.ReadOnly == nil {
			d.ReadOnly = ptr.To(false)
		}
		if d.Kind == nil {
			d.Kind = ptr.To(corev1.AzureSharedBlobDisk)
		}
	}
	if p := src.Projected; p != nil {
		if p.DefaultMode == nil {
			p.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range p.Sources {
			s := &p.Sources[i]
			if s.DownwardAPI != nil {
				setDefaultsDownwardAPIFiles(s.DownwardAPI.Items)
			}
			if s.ServiceAccountToken != nil && s.ServiceAccountToken.ExpirationSeconds == nil {
				s.ServiceAccountToken.ExpirationSeconds = ptr.To(int64(time.Hour.Seconds()))
			}
		}
	}
	if s := src.ScaleIO; s != nil {
		if s.StorageMode == "" {
			s.StorageMode = "ThinProvisioned"
		}
		if s.FSType == "" {
			s.FSType = "xfs"
		}
	}
	if src.Ephemeral != nil && src.Ephemeral.VolumeClaimTemplate != nil {
		claim := &src.Ephemeral.VolumeClaimTemplate.Spec
		if claim.VolumeMode == nil {
			claim.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
		roundUpResourceList(claim.Resources.Limits)
		roundUpResourceList(claim.Resources.Requests)
	}
}

func setDefaultsDownwardAPIFiles(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		setDefaultsObjectFieldSelector(items[i].FieldRef)
	}
}

// setDefaultsContainer mirrors SetDefaults_Container and the defaults of what a
// container holds. Init, regular and ephemeral containers get the same.
func setDefaultsContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicyFor(c.Image)
	}
	if c.TerminationMessagePath == "" {
		c.TerminationMessagePath = corev1.TerminationMessagePathDefault
	}
	if c.TerminationMessagePolicy == "" {
		c.TerminationMessagePolicy = corev1.TerminationMessageReadFile
	}
	for i := range c.Ports {
		if c.Ports[i].Protocol == "" {
			c.Ports[i].Protocol = corev1.ProtocolTCP
		}
	}
	for i := range c.Env {
		from := c.Env[i].ValueFrom
		if from == nil {
			continue
		}
		setDefaultsObjectFieldSelector(from.FieldRef)
		if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
			from.FileKeyRef.Optional = ptr.To(false)
		}
	}
	roundUpResourceList(c.Resources.Limits)
	roundUpResourceList(c.Resources.Requests)
	setDefaultsProbe(c.LivenessProbe)
	setDefaultsProbe(c.ReadinessProbe)
	setDefaultsProbe(c.StartupProbe)
	if c.Lifecycle != nil {
		if c.Lifecycle.PostStart != nil {
			setDefaultsHTTPGetAction(c.Lifecycle.PostStart.HTTPGet)
		}
		if c.Lifecycle.PreStop != nil {
			setDefaultsHTTPGetAction(c.Lifecycle.PreStop.HTTPGet)
		}
	}
}

// setDefaultsProbe mirrors SetDefaults_Probe and the defaults of its handler.
func setDefaultsProbe(p *corev1.Probe) {
	if p == nil {
		return
	}
	if p.TimeoutSeconds == 0 {
		p.TimeoutSeconds = 1
	}
	if p.PeriodSeconds == 0 {
		p.PeriodSeconds = 10
	}
	if p.SuccessThreshold == 0 {
		p.SuccessThreshold = 1
	}
	if p.FailureThreshold == 0 {
		p.FailureThreshold = 3
	}
	setDefaultsHTTPGetAction(p.HTTPGet)
	if p.GRPC != nil && p.GRPC.Service == nil {
		p.GRPC.Service = ptr.To("")
	}
}

// setDefaultsHTTPGetAction mirrors SetDefaults_HTTPGetAction.
func setDefaultsHTTPGetAction(a *corev1.HTTPGetAction) {
	if a == nil {
		return
	}
	if a.Path == "" {
		a.Path = "/"
	}
	if a.Scheme == "" {
		a.Scheme = corev1.URISchemeHTTP
	}
}

// setDefaultsObjectFieldSelector mirrors SetDefaults_ObjectFieldSelector.
func setDefaultsObjectFieldSelector(s *corev1.ObjectFieldSelector) {
	if s != nil && s.APIVersion == "" {
		s.APIVersion = "v1"
	}
}

// roundUpResourceList mirrors SetDefaults_ResourceList: quantities are rounded
// up to milli scale (upstream's compatibility rule, kubernetes#18538).
func roundUpResourceList(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

// pullPolicyFor returns the imagePullPolicy upstream defaults for an image:
// Always when the image names the tag latest or no tag and no digest,
// IfNotPresent otherwise, including for an image reference that does not
// parse.
func pullPolicyFor(image string) corev1.PullPolicy {
	if imageTag(image) == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// imageTag returns the tag of an image reference as upstream's
// parsers.ParseImageName sees it: the explicit tag, "latest" when the
// reference has neither tag nor digest, and "" for a digest-only reference or
// one that does not parse. It uses the same parser (github.com/distribution/reference).
func imageTag(image string) string {
	named, err := reference.ParseNormalizedNamed(image)
	if err != nil {
		return ""
	}
	if tagged, ok := named.(reference.Tagged); ok && tagged.Tag() != "" {
		return tagged.Tag()
	}
	if digested, ok := named.(reference.Digested); ok && digested.Digest() != "" {
		return ""
	}
	return "latest"
}
