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

package jobhost

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/pager"
	"k8s.io/klog/v2"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
)

// What the server does about a batch-apiserver from before the server
// identity: its replicas all used one Lease name, and its Pods carry no
// identity label.

// LegacyJobControllerLeaseName is the Lease name every batch-apiserver
// used before the server identity.
const LegacyJobControllerLeaseName = "batch-apiserver-job-controller"

// leaseFree says whether the Lease has no live holder at now: no holder,
// or one that has not renewed it within its lease duration.
func leaseFree(lease *coordinationv1.Lease, now time.Time) bool {
	spec := lease.Spec
	if spec.HolderIdentity == nil || *spec.HolderIdentity == "" {
		return true
	}
	if spec.RenewTime == nil || spec.LeaseDurationSeconds == nil {
		return true
	}
	return now.After(spec.RenewTime.Add(time.Duration(*spec.LeaseDurationSeconds) * time.Second))
}

// WaitForLegacyLeaseRelease returns once the legacy Lease in namespace is
// missing or has been free for a whole settle period. During a rolling
// update from a release without the identity, the old replicas hold that
// Lease and run their controller, which sees every Pod: a new replica
// that ran its own at the same time (its Lease has another name) would
// act on the same Jobs. An old replica takes a released Lease within its
// retry period, so a Lease free for settle is one no old replica wants.
func WaitForLegacyLeaseRelease(ctx context.Context, client kubernetes.Interface, namespace string, interval, settle time.Duration, now func() time.Time) error {
	logger := klog.FromContext(ctx)
	var freeSince time.Time
	var lastHolder string
	err := wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		lease, err := client.CoordinationV1().Leases(namespace).Get(ctx, LegacyJobControllerLeaseName, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if err != nil {
			logger.Info("Reading the Lease of replicas older than the server identity; retrying", "lease", klog.KRef(namespace, LegacyJobControllerLeaseName), "err", err)
			return false, nil
		}
		t := now()
		if !leaseFree(lease, t) {
			freeSince = time.Time{}
			if holder := *lease.Spec.HolderIdentity; holder != lastHolder {
				lastHolder = holder
				logger.Info("Waiting for the replicas older than the server identity to stop before running the Job controller",
					"lease", klog.KRef(namespace, LegacyJobControllerLeaseName), "holder", holder)
			}
			return false, nil
		}
		if freeSince.IsZero() {
			freeSince = t
		}
		return t.Sub(freeSince) >= settle, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for the Lease %s/%s to be released: %w", namespace, LegacyJobControllerLeaseName, err)
	}
	return nil
}

// ClaimUnlabelledPods labels with identity the Pods a batch-apiserver
// from before the server identity created for this server's Jobs, so that
// the controller, which sees only Pods with its label, keeps tracking
// them. A Pod is claimed when it has no identity label and its controller
// ownerReference names a Job of this server's storage by namespace, name
// and UID: UIDs are unique, so the Pods of another server's Job of the
// same name stay alone. It returns the number of Pods labelled.
func ClaimUnlabelledPods(ctx context.Context, kubeClient kubernetes.Interface, jobClient versioned.Interface, identity string) (int, error) {
	// The UID of each owner Job looked up, "" when it is not ours.
	owners := map[types.NamespacedName]types.UID{}
	claimed := 0
	list := pager.New(func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
		return kubeClient.CoreV1().Pods(metav1.NamespaceAll).List(ctx, opts)
	})
	err := list.EachListItem(ctx, metav1.ListOptions{LabelSelector: "!" + batch.ServerIdentityLabel}, func(obj runtime.Object) error {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return fmt.Errorf("listing Pods: got a %T", obj)
		}
		ref := metav1.GetControllerOfNoCopy(pod)
		if ref == nil || ref.Kind != "Job" {
			return nil
		}
		if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != batch.GroupName {
			return nil
		}
		owner := types.NamespacedName{Namespace: pod.Namespace, Name: ref.Name}
		uid, looked := owners[owner]
		if !looked {
			job, err := jobClient.BatchV1().Jobs(owner.Namespace).Get(ctx, owner.Name, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
			case err != nil:
				return fmt.Errorf("reading Job %s: %w", owner, err)
			default:
				uid = job.UID
			}
			owners[owner] = uid
		}
		if uid == "" || uid != ref.UID {
			return nil
		}
		// The UID in the patch is a precondition: a Pod re-created under
		// the same name since the list is refused (the UID is immutable).
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": pod.UID, "labels": map[string]string{batch.ServerIdentityLabel: identity}}})
		if err != nil {
			return fmt.Errorf("encoding the label patch: %w", err)
		}
		_, err = kubeClient.CoreV1().Pods(pod.Namespace).Patch(ctx, pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) || apierrors.IsConflict(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("labelling Pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
		klog.FromContext(ctx).V(2).Info("Labelled a Pod created before the server identity", "pod", klog.KObj(pod), "job", owner.String())
		claimed++
		return nil
	})
	if err != nil {
		return claimed, fmt.Errorf("labelling the Pods of this server's Jobs created before the server identity: %w", err)
	}
	return claimed, nil
}
