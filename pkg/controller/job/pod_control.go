package job

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// Reasons of the Events the controller records on a Job about its Pods, as
// upstream's RealPodControl.
const (
	failedCreatePodReason     = "FailedCreate"
	successfulCreatePodReason = "SuccessfulCreate"
	failedDeletePodReason     = "FailedDelete"
	successfulDeletePodReason = "SuccessfulDelete"
)

// podControl creates, deletes and patches the Pods of Jobs in the host cluster.
type podControl interface {
	// createPods creates one Pod for job from template, controlled through
	// controllerRef, named from generateName when it is not empty.
	createPods(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, job *batchv1.Job, controllerRef *metav1.OwnerReference, generateName string) error
	// deletePod deletes the Pod name of job. A NotFound error is returned
	// as is: whether a Pod already gone is a failure is the caller's call.
	deletePod(ctx context.Context, namespace, name string, job *batchv1.Job) error
	// patchPod applies the strategic merge patch data to the Pod name.
	patchPod(ctx context.Context, namespace, name string, data []byte) error
}

// realPodControl is the podControl that talks to the host cluster.
type realPodControl struct {
	kubeClient kubernetes.Interface
	recorder   record.EventRecorder
}

// newRealPodControl returns a podControl writing Pods with kubeClient and
// recording Events on Jobs with recorder.
func newRealPodControl(kubeClient kubernetes.Interface, recorder record.EventRecorder) podControl {
	return &realPodControl{kubeClient: kubeClient, recorder: recorder}
}

func (r *realPodControl) createPods(ctx context.Context, namespace string, template *corev1.PodTemplateSpec, job *batchv1.Job, controllerRef *metav1.OwnerReference, generateName string) error {
	if err := validateControllerRef(controllerRef); err != nil {
		return err
	}
	pod := getPodFromTemplate(template, job, controllerRef)
	if generateName != "" {
		pod.GenerateName = generateName
	}
	// A Pod without labels could never be matched back to its Job's
	// selector and would leak.
	if len(pod.Labels) == 0 {
		return fmt.Errorf("unable to create pods, no labels")
	}
	newPod, err := r.kubeClient.CoreV1().Pods(namespace).Create(ctx, pod, metav1.CreateOptions{})
	if err != nil {
		// Every later create fails too while the namespace is being deleted;
		// an Event for each would only be noise.
		if !apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			r.recorder.Eventf(job, corev1.EventTypeWarning, failedCreatePodReason, "Error creating: %v", err)
		}
		// Returned unwrapped: callers test it for the namespace-terminating
		// cause and API error types.
		return err
	}
	klog.FromContext(ctx).V(4).Info("Controller created pod", "controller", job.Name, "pod", klog.KObj(newPod))
	r.recorder.Eventf(job, corev1.EventTypeNormal, successfulCreatePodReason, "Created pod: %v", newPod.Name)
	return nil
}

func (r *realPodControl) deletePod(ctx context.Context, namespace, name string, job *batchv1.Job) error {
	logger := klog.FromContext(ctx)
	logger.V(2).Info("Deleting pod", "controller", job.Name, "pod", klog.KRef(namespace, name))
	if err := r.kubeClient.CoreV1().Pods(namespace).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		if apierrors.IsNotFound(err) {
			logger.V(4).Info("Pod has already been deleted.", "pod", klog.KRef(namespace, name))
			return err
		}
		r.recorder.Eventf(job, corev1.EventTypeWarning, failedDeletePodReason, "Error deleting: %v", err)
		return fmt.Errorf("unable to delete pods: %w", err)
	}
	r.recorder.Eventf(job, corev1.EventTypeNormal, successfulDeletePodReason, "Deleted pod: %v", name)
	return nil
}

func (r *realPodControl) patchPod(ctx context.Context, namespace, name string, data []byte) error {
	_, err := r.kubeClient.CoreV1().Pods(namespace).Patch(ctx, name, types.StrategicMergePatchType, data, metav1.PatchOptions{})
	return err
}
