// Package podtemplate applies to a Job's pod template the core/v1 defaults that
// kube-apiserver applies to a PodTemplateSpec, without importing k8s.io/kubernetes.
package podtemplate

import (
	corev1 "k8s.io/api/core/v1"
)

// SetDefaults applies the core/v1 defaults to a pod template in place.
func SetDefaults(t *corev1.PodTemplateSpec) {
	setDefaultsPodSpec(&t.Spec)
}

func setDefaultsPodSpec(s *corev1.PodSpec) {
	if s.RestartPolicy == "" {
		s.RestartPolicy = corev1.RestartPolicyAlways
	}
}
