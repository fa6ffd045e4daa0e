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
	"encoding/json"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
)

// JobAPI is one of the two Job APIs the controller tests drive with the
// same manifests: kube-apiserver's batch/v1 run by kube-controller-manager's
// job controller, and ours run by the controller embedded in
// batch-apiserver. Both have the same fields, so the tests handle either as
// a k8s.io/api/batch/v1 Job.
type JobAPI struct {
	// Name says which one in messages.
	Name string
	// GVR is the Job resource.
	GVR schema.GroupVersionResource
	// LabelPrefix is the prefix of the controller's Pod labels, annotations
	// and finalizer.
	LabelPrefix string
}

// Names of the two Job APIs.
var (
	UpstreamJobs = JobAPI{Name: "batch/v1", GVR: schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}, LabelPrefix: "batch.kubernetes.io/"}
	OurJobs      = JobAPI{Name: "batch.jobs.dev/v1", GVR: schema.GroupVersionResource{Group: "batch.jobs.dev", Version: "v1", Resource: "jobs"}, LabelPrefix: "batch.jobs.dev/"}
)

// APIVersion is the apiVersion of the API's Job manifests.
func (a JobAPI) APIVersion() string { return a.GVR.GroupVersion().String() }

// Jobs reads and writes the Jobs of one API in one namespace.
type Jobs struct {
	API       JobAPI
	Client    dynamic.Interface
	Namespace string
}

func (j Jobs) resource() dynamic.ResourceInterface {
	return j.Client.Resource(j.API.GVR).Namespace(j.Namespace)
}

// Create creates job (its apiVersion set to the API's) and returns it as
// the server stored it.
func (j Jobs) Create(ctx context.Context, job *batchv1.Job) (*batchv1.Job, error) {
	job = job.DeepCopy()
	job.APIVersion, job.Kind = j.API.APIVersion(), "Job"
	job.Namespace = j.Namespace
	obj, err := runtime.DefaultUnstructuredConverter.ToUnstructured(job)
	if err != nil {
		return nil, err
	}
	created, err := j.resource().Create(ctx, &unstructured.Unstructured{Object: obj}, metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating %s job %s/%s: %w", j.API.Name, j.Namespace, job.Name, err)
	}
	return toJob(created)
}

// Get returns the Job.
func (j Jobs) Get(ctx context.Context, name string) (*batchv1.Job, error) {
	u, err := j.resource().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return toJob(u)
}

// MergePatch applies a JSON merge patch (of the spec or metadata) to the Job.
func (j Jobs) MergePatch(ctx context.Context, name string, patch map[string]any) (*batchv1.Job, error) {
	data, err := json.Marshal(patch)
	if err != nil {
		return nil, err
	}
	u, err := j.resource().Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{})
	if err != nil {
		return nil, fmt.Errorf("patching %s job %s/%s: %w", j.API.Name, j.Namespace, name, err)
	}
	return toJob(u)
}

// Delete deletes the Job and its Pods (background propagation).
func (j Jobs) Delete(ctx context.Context, name string) error {
	if err := j.resource().Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)}); err != nil {
		return fmt.Errorf("deleting %s job %s/%s: %w", j.API.Name, j.Namespace, name, err)
	}
	return nil
}

func toJob(u *unstructured.Unstructured) (*batchv1.Job, error) {
	var job batchv1.Job
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &job); err != nil {
		return nil, fmt.Errorf("decoding job %s/%s: %w", u.GetNamespace(), u.GetName(), err)
	}
	return &job, nil
}

// WaitForJob polls the Job until done says so and returns it. done also
// returns a description of what it saw, for the error on timeout.
func WaitForJob(ctx context.Context, jobs Jobs, name string, timeout time.Duration, done func(*batchv1.Job) (bool, string)) (*batchv1.Job, error) {
	var last *batchv1.Job
	var detail string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		job, err := jobs.Get(ctx, name)
		if err != nil {
			detail = err.Error()
			return false, nil
		}
		last = job
		ok, d := done(job)
		detail = d
		return ok, nil
	})
	if err != nil {
		status, _ := json.Marshal(statusOf(last))
		return last, fmt.Errorf("%s job %s/%s: %s (%w); last status: %s", jobs.API.Name, jobs.Namespace, name, detail, err, status)
	}
	return last, nil
}

func statusOf(job *batchv1.Job) any {
	if job == nil {
		return nil
	}
	return job.Status
}

// WaitForJobCondition waits until the Job has condition typ with status
// True and returns the Job.
func WaitForJobCondition(ctx context.Context, jobs Jobs, name string, typ batchv1.JobConditionType, timeout time.Duration) (*batchv1.Job, error) {
	return WaitForJob(ctx, jobs, name, timeout, func(job *batchv1.Job) (bool, string) {
		return HasJobCondition(job, typ), fmt.Sprintf("waiting for condition %s=True", typ)
	})
}

// WaitForJobGone waits until the Job does not exist.
func WaitForJobGone(ctx context.Context, jobs Jobs, name string, timeout time.Duration) error {
	return wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		_, err := jobs.resource().Get(ctx, name, metav1.GetOptions{})
		if err == nil {
			return false, nil
		}
		return isNotFound(err), nil
	})
}

// HasJobCondition says whether the Job has condition typ with status True.
func HasJobCondition(job *batchv1.Job, typ batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// JobPods returns the Pods of the Job (by the unprefixed job-name label
// both controllers set) in the namespace, sorted by name.
func JobPods(ctx context.Context, client kubernetes.Interface, namespace, job string) ([]corev1.Pod, error) {
	list, err := client.CoreV1().Pods(namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of job %s/%s: %w", namespace, job, err)
	}
	return list.Items, nil
}

// WaitForPods polls the Job's Pods until done says so and returns them.
func WaitForPods(ctx context.Context, client kubernetes.Interface, namespace, job string, timeout time.Duration, what string, done func([]corev1.Pod) bool) ([]corev1.Pod, error) {
	var pods []corev1.Pod
	var lastErr error
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		var err error
		pods, err = JobPods(ctx, client, namespace, job)
		if err != nil {
			lastErr = err
			return false, nil
		}
		return done(pods), nil
	})
	if err != nil {
		return pods, fmt.Errorf("pods of job %s/%s: waiting for %s: %w (last error %v); last seen: %s", namespace, job, what, err, lastErr, DescribePods(pods))
	}
	return pods, nil
}

// WaitForActivePods waits until the Job has exactly n Pods that are neither
// terminal nor being deleted and returns those.
func WaitForActivePods(ctx context.Context, client kubernetes.Interface, namespace, job string, n int, timeout time.Duration) ([]corev1.Pod, error) {
	pods, err := WaitForPods(ctx, client, namespace, job, timeout, fmt.Sprintf("%d active pods", n), func(pods []corev1.Pod) bool {
		return len(ActivePods(pods)) == n
	})
	return ActivePods(pods), err
}

// ActivePods are the Pods neither terminal nor being deleted.
func ActivePods(pods []corev1.Pod) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// DescribePods is a one-line summary of pods for messages.
func DescribePods(pods []corev1.Pod) string {
	s := fmt.Sprintf("%d pods:", len(pods))
	for _, p := range pods {
		deleting := ""
		if p.DeletionTimestamp != nil {
			deleting = ",deleting"
		}
		s += fmt.Sprintf(" %s(%s%s,finalizers=%v)", p.Name, p.Status.Phase, deleting, p.Finalizers)
	}
	return s
}

func isNotFound(err error) bool { return apierrors.IsNotFound(err) }
