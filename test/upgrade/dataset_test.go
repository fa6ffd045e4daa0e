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

package upgrade

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	batchv1beta1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1beta1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
)

// externalManager is the spec.managedBy of the data set's mirrored Jobs: a
// MultiKueue-style dispatcher that writes their status.
const externalManager = "example.com/dispatcher"

// jobBuilder builds the v1 Jobs of the data set.
type jobBuilder struct{ job *batchv1.Job }

func makeJob(name string) *jobBuilder {
	return &jobBuilder{job: &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Labels:      map[string]string{"upgrade.batch.jobs.dev/shape": name},
			Annotations: map[string]string{"upgrade.batch.jobs.dev/written-by": "data set"},
		},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:    "main",
						Image:   "registry.k8s.io/e2e-test-images/busybox:1.36.1-1",
						Command: []string{"sh", "-c", "exit 0"},
					}},
				},
			},
		},
	}}
}

func (b *jobBuilder) Obj() *batchv1.Job { return b.job }

func (b *jobBuilder) Indexed(completions, parallelism int32) *jobBuilder {
	b.job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	b.job.Spec.Completions = ptr.To(completions)
	b.job.Spec.Parallelism = ptr.To(parallelism)
	return b
}

func (b *jobBuilder) ManagedBy(manager string) *jobBuilder {
	b.job.Spec.ManagedBy = ptr.To(manager)
	return b
}

// dataSetJob is one Job of the data set and, for a Job an external
// controller manages, the status that controller writes.
type dataSetJob struct {
	job    *batchv1.Job
	status func(now metav1.Time) batchv1.JobStatus
}

// dataSet is a Job of every shape the API has, with the names prefixed.
func dataSet(prefix string) []dataSetJob {
	name := func(n string) string { return prefix + n }
	return []dataSetJob{
		{job: makeJob(name("indexed-per-index")).Indexed(4, 2).Obj()},
		{job: func() *batchv1.Job {
			j := makeJob(name("per-index-backoff")).Indexed(6, 3).Obj()
			j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
			j.Spec.MaxFailedIndexes = ptr.To[int32](2)
			j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3, 4},
				}},
			}}
			return j
		}()},
		{job: func() *batchv1.Job {
			j := makeJob(name("pod-failure-policy")).Obj()
			j.Spec.BackoffLimit = ptr.To[int32](3)
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					ContainerName: ptr.To("main"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42},
				}},
				{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
					{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
				}},
				{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
					Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0, 42},
				}},
			}}
			return j
		}()},
		{job: func() *batchv1.Job {
			j := makeJob(name("success-policy")).Indexed(5, 5).Obj()
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
				{SucceededIndexes: ptr.To("0-2"), SucceededCount: ptr.To[int32](2)},
				{SucceededCount: ptr.To[int32](4)},
			}}
			return j
		}()},
		{job: func() *batchv1.Job {
			j := makeJob(name("suspended")).Obj()
			j.Spec.Suspend = ptr.To(true)
			j.Spec.Parallelism = ptr.To[int32](3)
			j.Spec.Completions = ptr.To[int32](6)
			j.Spec.ActiveDeadlineSeconds = ptr.To[int64](600)
			j.Spec.TTLSecondsAfterFinished = ptr.To[int32](3600)
			return j
		}()},
		{
			job: makeJob(name("mirrored-running")).ManagedBy(externalManager).Obj(),
			status: func(now metav1.Time) batchv1.JobStatus {
				return batchv1.JobStatus{StartTime: &now, Active: 1, Ready: ptr.To[int32](1), Terminating: ptr.To[int32](0)}
			},
		},
		{
			job: makeJob(name("mirrored-indexed")).Indexed(4, 2).ManagedBy(externalManager).Obj(),
			status: func(now metav1.Time) batchv1.JobStatus {
				return batchv1.JobStatus{StartTime: &now, Active: 1, Succeeded: 2, CompletedIndexes: "0,2"}
			},
		},
		{
			job: func() *batchv1.Job {
				j := makeJob(name("mirrored-per-index")).Indexed(4, 2).ManagedBy(externalManager).Obj()
				j.Spec.BackoffLimitPerIndex = ptr.To[int32](0)
				return j
			}(),
			status: func(now metav1.Time) batchv1.JobStatus {
				return batchv1.JobStatus{StartTime: &now, Active: 1, Succeeded: 1, Failed: 1, CompletedIndexes: "0", FailedIndexes: ptr.To("3")}
			},
		},
		{
			// Finished: complete, as kube-controller-manager leaves a Job.
			job: makeJob(name("finished-complete")).ManagedBy(externalManager).Obj(),
			status: func(now metav1.Time) batchv1.JobStatus {
				return batchv1.JobStatus{
					StartTime: &now, CompletionTime: &now, Succeeded: 1,
					Conditions: []batchv1.JobCondition{
						{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", Message: "Reached expected number of succeeded pods", LastProbeTime: now, LastTransitionTime: now},
						{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", Message: "Reached expected number of succeeded pods", LastProbeTime: now, LastTransitionTime: now},
					},
				}
			},
		},
		{
			// Finished: failed, after its FailureTarget.
			job: makeJob(name("finished-failed")).ManagedBy(externalManager).Obj(),
			status: func(now metav1.Time) batchv1.JobStatus {
				return batchv1.JobStatus{
					StartTime: &now, Failed: 7,
					Conditions: []batchv1.JobCondition{
						{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastProbeTime: now, LastTransitionTime: now},
						{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: "Job has reached the specified backoff limit", LastProbeTime: now, LastTransitionTime: now},
					},
				}
			},
		},
	}
}

// v1beta1Job is the data set's Job created through the deprecated version.
func v1beta1Job(prefix string) *batchv1beta1.Job {
	return &batchv1beta1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: prefix + "v1beta1-created", Labels: map[string]string{"upgrade.batch.jobs.dev/shape": "v1beta1-created"}},
		Spec: batchv1beta1.JobSpec{
			Parallelism: ptr.To[int32](2),
			Completions: ptr.To[int32](4),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyOnFailure,
				Containers:    []corev1.Container{{Name: "main", Image: "registry.k8s.io/e2e-test-images/busybox:1.36.1-1"}},
			}},
		},
	}
}

// writeDataSet creates the data set in ns with prefix and writes the
// mirrored Jobs' status, as the external controller would.
func writeDataSet(ctx context.Context, t *testing.T, cs versioned.Interface, ns, prefix string) {
	t.Helper()
	now := metav1.NewTime(time.Now().Truncate(time.Second))
	jobs := cs.BatchV1().Jobs(ns)
	for _, d := range dataSet(prefix) {
		created, err := jobs.Create(ctx, d.job, metav1.CreateOptions{})
		if err != nil {
			t.Fatalf("creating Job %s: %v", d.job.Name, err)
		}
		if d.status == nil {
			continue
		}
		created.Status = d.status(now)
		if _, err := jobs.UpdateStatus(ctx, created, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("writing the status of Job %s: %v", d.job.Name, err)
		}
	}
	if _, err := cs.BatchV1beta1().Jobs(ns).Create(ctx, v1beta1Job(prefix), metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the v1beta1 Job: %v", err)
	}
}

// served is every Job of a namespace as one server serves it, in both
// versions, by name.
type served struct {
	V1      map[string]batchv1.Job
	V1beta1 map[string]batchv1beta1.Job
}

func readServed(ctx context.Context, cs versioned.Interface, ns string) (served, error) {
	s := served{V1: map[string]batchv1.Job{}, V1beta1: map[string]batchv1beta1.Job{}}
	v1List, err := cs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, fmt.Errorf("listing v1 Jobs: %w", err)
	}
	for _, j := range v1List.Items {
		s.V1[j.Name] = j
	}
	betaList, err := cs.BatchV1beta1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return s, fmt.Errorf("listing v1beta1 Jobs: %w", err)
	}
	for _, j := range betaList.Items {
		s.V1beta1[j.Name] = j
	}
	return s, nil
}

// diffServed compares two servers' answers whole, resourceVersion aside:
// a restart on the same data must not change a byte of any other field.
func diffServed(want, got served) string {
	return cmp.Diff(want, got, cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ResourceVersion"))
}
