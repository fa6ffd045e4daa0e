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

package framework

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/retry"
)

// Kubelet plays the node's part for Pods nobody schedules: the host cluster
// has no kubelet and no scheduler, so the tests move a Job's Pods through
// their phases by writing pods/status, as a kubelet would.
type Kubelet struct {
	Client kubernetes.Interface
}

// Run marks the Pod Running with every container running (init containers
// done), and Ready when ready is true.
func (k Kubelet) Run(ctx context.Context, pod *corev1.Pod, ready bool) error {
	return k.writeStatus(ctx, pod, func(p *corev1.Pod, now metav1.Time) {
		p.Status.Phase = corev1.PodRunning
		p.Status.InitContainerStatuses = terminatedStatuses(p.Spec.InitContainers, "", 0, now)
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
				Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), Ready: ready, Started: ptrTo(true),
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
			})
		}
		setPodConditions(p, now, true, ready)
	})
}

// Succeed ends the Pod Succeeded: every container exited 0.
func (k Kubelet) Succeed(ctx context.Context, pod *corev1.Pod) error {
	return k.writeStatus(ctx, pod, func(p *corev1.Pod, now metav1.Time) {
		p.Status.Phase = corev1.PodSucceeded
		p.Status.InitContainerStatuses = terminatedStatuses(p.Spec.InitContainers, "", 0, now)
		p.Status.ContainerStatuses = terminatedStatuses(p.Spec.Containers, "", 0, now)
		setPodConditions(p, now, true, false)
	})
}

// Fail ends the Pod Failed because container exited with exitCode; the
// other containers exited 0. When container is an init container, the
// regular containers never started.
func (k Kubelet) Fail(ctx context.Context, pod *corev1.Pod, container string, exitCode int32) error {
	if !hasContainer(pod.Spec.InitContainers, container) && !hasContainer(pod.Spec.Containers, container) {
		return fmt.Errorf("pod %s/%s has no container %q", pod.Namespace, pod.Name, container)
	}
	return k.writeStatus(ctx, pod, func(p *corev1.Pod, now metav1.Time) {
		p.Status.Phase = corev1.PodFailed
		p.Status.InitContainerStatuses = terminatedStatuses(p.Spec.InitContainers, container, exitCode, now)
		if hasContainer(p.Spec.InitContainers, container) {
			p.Status.ContainerStatuses = nil
			for _, c := range p.Spec.Containers {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, corev1.ContainerStatus{
					Name: c.Name, Image: c.Image, Started: ptrTo(false),
					State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "PodInitializing"}},
				})
			}
			setPodConditions(p, now, false, false)
			return
		}
		p.Status.ContainerStatuses = terminatedStatuses(p.Spec.Containers, container, exitCode, now)
		setPodConditions(p, now, true, false)
	})
}

// Disrupt adds the DisruptionTarget condition with reason (as the taint
// manager, preemption or an eviction does), in one write, and then ends the
// Pod Failed with every container killed (exit code 137) in a second one:
// the order a kubelet shutting a Pod down produces.
func (k Kubelet) Disrupt(ctx context.Context, pod *corev1.Pod, reason string) error {
	if err := k.writeStatus(ctx, pod, func(p *corev1.Pod, now metav1.Time) {
		setCondition(p, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason,
			Message: "e2e: the test disrupted this Pod", LastTransitionTime: now})
	}); err != nil {
		return err
	}
	return k.writeStatus(ctx, pod, func(p *corev1.Pod, now metav1.Time) {
		p.Status.Phase = corev1.PodFailed
		p.Status.InitContainerStatuses = terminatedStatuses(p.Spec.InitContainers, "", 0, now)
		p.Status.ContainerStatuses = nil
		for _, c := range p.Spec.Containers {
			p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, terminatedStatus(c, 137, now))
		}
		setPodConditions(p, now, true, false)
	})
}

// writeStatus reads the Pod, changes its status with mutate and writes it
// through pods/status, again on a conflict (the controller patches the
// same Pod's finalizers).
func (k Kubelet) writeStatus(ctx context.Context, pod *corev1.Pod, mutate func(*corev1.Pod, metav1.Time)) error {
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur, err := k.Client.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		now := metav1.NewTime(time.Now().Truncate(time.Second))
		if cur.Status.StartTime == nil {
			cur.Status.StartTime = &now
		}
		mutate(cur, now)
		_, err = k.Client.CoreV1().Pods(cur.Namespace).UpdateStatus(ctx, cur, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		return fmt.Errorf("writing the status of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return nil
}

// terminatedStatuses are statuses of containers that all exited 0 but
// failed, which exited with exitCode.
func terminatedStatuses(containers []corev1.Container, failed string, exitCode int32, now metav1.Time) []corev1.ContainerStatus {
	var out []corev1.ContainerStatus
	for _, c := range containers {
		code := int32(0)
		if c.Name == failed {
			code = exitCode
		}
		out = append(out, terminatedStatus(c, code, now))
	}
	return out
}

func terminatedStatus(c corev1.Container, exitCode int32, now metav1.Time) corev1.ContainerStatus {
	reason := "Completed"
	if exitCode != 0 {
		reason = "Error"
	}
	return corev1.ContainerStatus{
		Name: c.Name, Image: c.Image, ImageID: imageID(c.Image), Started: ptrTo(false),
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, Reason: reason, StartedAt: now, FinishedAt: now,
		}},
	}
}

// setPodConditions sets the conditions a kubelet keeps: PodScheduled,
// Initialized, ContainersReady and Ready.
func setPodConditions(p *corev1.Pod, now metav1.Time, initialized, ready bool) {
	status := func(b bool) corev1.ConditionStatus {
		if b {
			return corev1.ConditionTrue
		}
		return corev1.ConditionFalse
	}
	setCondition(p, corev1.PodCondition{Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now})
	setCondition(p, corev1.PodCondition{Type: corev1.PodInitialized, Status: status(initialized), LastTransitionTime: now})
	setCondition(p, corev1.PodCondition{Type: corev1.ContainersReady, Status: status(ready), LastTransitionTime: now})
	setCondition(p, corev1.PodCondition{Type: corev1.PodReady, Status: status(ready), LastTransitionTime: now})
}

// setCondition replaces the condition of the same type, keeping its
// transition time when the status does not change.
func setCondition(p *corev1.Pod, cond corev1.PodCondition) {
	for i, c := range p.Status.Conditions {
		if c.Type == cond.Type {
			if c.Status == cond.Status {
				cond.LastTransitionTime = c.LastTransitionTime
			}
			p.Status.Conditions[i] = cond
			return
		}
	}
	p.Status.Conditions = append(p.Status.Conditions, cond)
}

func hasContainer(cs []corev1.Container, name string) bool {
	for _, c := range cs {
		if c.Name == name {
			return true
		}
	}
	return false
}

func imageID(image string) string { return "docker-pullable://" + image }

func ptrTo[T any](v T) *T { return &v }
