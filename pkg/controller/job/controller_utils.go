package job

import (
	"encoding/json"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/klog/v2"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// The Pod helpers upstream's job controller takes from
// k8s.io/kubernetes/pkg/controller and pkg/api/v1/pod, which this module
// must not import.

// isPodActive reports whether p still counts as running: not finished and not
// being deleted.
func isPodActive(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded &&
		p.Status.Phase != corev1.PodFailed &&
		p.DeletionTimestamp == nil
}

// filterActivePods returns the active Pods of pods.
func filterActivePods(logger klog.Logger, pods []*corev1.Pod) []*corev1.Pod {
	var result []*corev1.Pod
	for _, p := range pods {
		if isPodActive(p) {
			result = append(result, p)
		} else {
			logger.V(4).Info("Ignoring inactive pod", "pod", klog.KObj(p), "phase", p.Status.Phase, "deletionTime", p.DeletionTimestamp)
		}
	}
	return result
}

// isPodTerminating reports whether p is being deleted but has not finished.
func isPodTerminating(p *corev1.Pod) bool {
	return p.Status.Phase != corev1.PodSucceeded &&
		p.Status.Phase != corev1.PodFailed &&
		p.DeletionTimestamp != nil
}

// filterTerminatingPods returns the terminating Pods of pods.
func filterTerminatingPods(pods []*corev1.Pod) []*corev1.Pod {
	var result []*corev1.Pod
	for _, p := range pods {
		if isPodTerminating(p) {
			result = append(result, p)
		}
	}
	return result
}

// isPodReady reports whether p has the Ready condition True.
func isPodReady(p *corev1.Pod) bool {
	c := podReadyCondition(p)
	return c != nil && c.Status == corev1.ConditionTrue
}

func podReadyCondition(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// podPhaseToOrdinal orders the phases of active Pods from the cheapest to
// lose (Pending) to the dearest (Running).
var podPhaseToOrdinal = map[corev1.PodPhase]int{corev1.PodPending: 0, corev1.PodUnknown: 1, corev1.PodRunning: 2}

// activePods sorts Pods so that the ones whose deletion loses the least work
// come first: upstream's controller.ActivePods order.
type activePods []*corev1.Pod

func (s activePods) Len() int      { return len(s) }
func (s activePods) Swap(i, j int) { s[i], s[j] = s[j], s[i] }

// Less puts first, deciding on the first rule that tells them apart:
//  1. an unassigned Pod before an assigned one;
//  2. Pending before Unknown before Running;
//  3. not ready before ready;
//  4. of two ready Pods, the one ready more recently (unknown ready time first);
//  5. the Pod with more container restarts (then more sidecar restarts);
//  6. the newer Pod (no creation time first).
func (s activePods) Less(i, j int) bool {
	pi, pj := s[i], s[j]
	if pi.Spec.NodeName != pj.Spec.NodeName && (pi.Spec.NodeName == "" || pj.Spec.NodeName == "") {
		return pi.Spec.NodeName == ""
	}
	if podPhaseToOrdinal[pi.Status.Phase] != podPhaseToOrdinal[pj.Status.Phase] {
		return podPhaseToOrdinal[pi.Status.Phase] < podPhaseToOrdinal[pj.Status.Phase]
	}
	readyI, readyJ := isPodReady(pi), isPodReady(pj)
	if readyI != readyJ {
		return !readyI
	}
	if readyI && readyJ {
		ti, tj := podReadyTime(pi), podReadyTime(pj)
		if !ti.Equal(tj) {
			return afterOrZero(ti, tj)
		}
	}
	if res := compareMaxContainerRestarts(pi, pj); res != nil {
		return *res
	}
	if !pi.CreationTimestamp.Equal(&pj.CreationTimestamp) {
		return afterOrZero(&pi.CreationTimestamp, &pj.CreationTimestamp)
	}
	return false
}

// afterOrZero reports whether t1 is after t2, a zero time counting as after
// any other.
func afterOrZero(t1, t2 *metav1.Time) bool {
	if t1.Time.IsZero() || t2.Time.IsZero() {
		return t1.Time.IsZero()
	}
	return t1.After(t2.Time)
}

// podReadyTime returns when a ready Pod became ready, a zero time otherwise.
func podReadyTime(p *corev1.Pod) *metav1.Time {
	if c := podReadyCondition(p); c != nil && c.Status == corev1.ConditionTrue {
		return &c.LastTransitionTime
	}
	return &metav1.Time{}
}

// maxContainerRestarts returns the highest restart count among p's regular
// containers and among its sidecars (init containers restarting Always).
func maxContainerRestarts(p *corev1.Pod) (regular, sidecar int32) {
	for _, c := range p.Status.ContainerStatuses {
		regular = max(regular, c.RestartCount)
	}
	sidecars := sets.New[string]()
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars.Insert(c.Name)
		}
	}
	for _, c := range p.Status.InitContainerStatuses {
		if sidecars.Has(c.Name) {
			sidecar = max(sidecar, c.RestartCount)
		}
	}
	return regular, sidecar
}

// compareMaxContainerRestarts returns whether pi restarted more than pj
// (regular containers first, then sidecars), nil when they tie.
func compareMaxContainerRestarts(pi, pj *corev1.Pod) *bool {
	regularI, sidecarI := maxContainerRestarts(pi)
	regularJ, sidecarJ := maxContainerRestarts(pj)
	if regularI != regularJ {
		res := regularI > regularJ
		return &res
	}
	if sidecarI != sidecarJ {
		res := sidecarI > sidecarJ
		return &res
	}
	return nil
}

// getPodFromTemplate returns the Pod the controller creates for job from
// template: the template's labels, annotations, finalizers and spec (all
// copied, so the Pod can be changed freely), named after the Job, owned
// through controllerRef when it is set.
func getPodFromTemplate(template *corev1.PodTemplateSpec, job *batchv1.Job, controllerRef *metav1.OwnerReference) *corev1.Pod {
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			// Labels and annotations are never nil, as upstream, so callers can
			// add to them.
			Labels:       copyOrEmpty(template.Labels),
			Annotations:  copyOrEmpty(template.Annotations),
			GenerateName: podsPrefix(job.Name),
			Finalizers:   append([]string{}, template.Finalizers...),
		},
	}
	if controllerRef != nil {
		pod.OwnerReferences = append(pod.OwnerReferences, *controllerRef)
	}
	pod.Spec = *template.Spec.DeepCopy()
	return pod
}

func copyOrEmpty(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	maps.Copy(out, m)
	return out
}

// podsPrefix returns "<name>-", or the bare name when the dash would make an
// invalid name prefix (upstream's getPodsPrefix).
func podsPrefix(name string) string {
	prefix := name + "-"
	if len(apimachineryvalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		return name
	}
	return prefix
}

// removeTrackingFinalizerPatch returns the strategic merge patch that removes
// the tracking finalizer from pod, nil when pod does not have it.
func removeTrackingFinalizerPatch(pod *corev1.Pod) []byte {
	if !hasJobTrackingFinalizer(pod) {
		return nil
	}
	patch := map[string]any{
		"metadata": map[string]any{
			"$deleteFromPrimitiveList/finalizers": []string{batch.JobTrackingFinalizer},
		},
	}
	// Marshalling nested maps of strings cannot fail.
	data, _ := json.Marshal(patch)
	return data
}

// validateControllerRef checks that controllerRef makes the created Pod a
// controlled dependent that blocks its owner's foreground deletion, as
// upstream refuses to create Pods otherwise.
func validateControllerRef(controllerRef *metav1.OwnerReference) error {
	switch {
	case controllerRef == nil:
		return fmt.Errorf("controllerRef is nil")
	case controllerRef.APIVersion == "":
		return fmt.Errorf("controllerRef has empty APIVersion")
	case controllerRef.Kind == "":
		return fmt.Errorf("controllerRef has empty Kind")
	case controllerRef.Controller == nil || !*controllerRef.Controller:
		return fmt.Errorf("controllerRef.Controller is not set to true")
	case controllerRef.BlockOwnerDeletion == nil || !*controllerRef.BlockOwnerDeletion:
		return fmt.Errorf("controllerRef.BlockOwnerDeletion is not set")
	}
	return nil
}
