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

// Package integration makes batch.jobs.dev Jobs a workload Kueue queues:
// the jobframework's GenericJob and the optional interfaces a batch Job
// needs (a stop that suspends, clears status.startTime and restores the
// template; managedBy for MultiKueue; Pods given back as a Job nears its
// end).
package integration

import (
	"context"
	"fmt"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"
	"sigs.k8s.io/kueue/pkg/features"
	"sigs.k8s.io/kueue/pkg/podset"
	clientutil "sigs.k8s.io/kueue/pkg/util/client"

	jobsv1 "github.com/batch-apiserver/batch-apiserver/cmd/batch-kueue/api/v1"
)

// Names the server and Kueue give; the server's are fixed by its API.
const (
	// FrameworkName is how Kueue's configuration names the kind, in
	// integrations.externalFrameworks and multiKueue.externalFrameworks.
	FrameworkName = "Job.v1.batch.jobs.dev"

	// The labels the server puts on a Job's template: they belong to one
	// Job and say nothing of the Pods' needs, so a Workload's PodSet does
	// not carry them (but for the Job's name, which Kueue's topology-aware
	// scheduling may group Pods by), and a restore puts back what the
	// template had.
	jobNameLabel             = "batch.jobs.dev/job-name"
	controllerUIDLabel       = "batch.jobs.dev/controller-uid"
	legacyJobNameLabel       = "job-name"
	legacyControllerUIDLabel = "controller-uid"
	completionIndexLabel     = "batch.jobs.dev/job-completion-index"

	// jobControllerName is the managedBy value of the server's own
	// controller (the same as batch/v1's).
	jobControllerName = "kubernetes.io/job-controller"

	// Kueue's annotations for a batch Job: the smallest parallelism it
	// may be admitted with (partial admission), whether completions follow
	// the admitted parallelism, and a stop under way (set with the suspend,
	// removed with the restore, so that a stop cut short is finished by
	// the next reconcile).
	minParallelismAnnotation          = "kueue.x-k8s.io/job-min-parallelism"
	completionsFollowParallelismAnnot = "kueue.x-k8s.io/job-completions-equal-parallelism"
	stoppingAnnotation                = "kueue.x-k8s.io/stopping"
)

// templateOwnLabels are the labels of the template the server owns.
var templateOwnLabels = []string{jobNameLabel, controllerUIDLabel, legacyJobNameLabel, legacyControllerUIDLabel}

// Job is a batch.jobs.dev Job as Kueue's jobframework drives it.
type Job jobsv1.Job

var (
	_ jobframework.GenericJob              = (*Job)(nil)
	_ jobframework.JobWithCustomStop       = (*Job)(nil)
	_ jobframework.JobWithManagedBy        = (*Job)(nil)
	_ jobframework.JobWithReclaimablePods  = (*Job)(nil)
	_ jobframework.JobWithPodLabelSelector = (*Job)(nil)
)

// NewJob returns an empty Job for the reconciler to read into.
func NewJob() jobframework.GenericJob { return &Job{} }

// Object is the Job as the API object the client reads and writes.
func (j *Job) Object() client.Object { return (*jobsv1.Job)(j) }

// GVK is batch.jobs.dev/v1 Job.
func (j *Job) GVK() schema.GroupVersionKind { return jobsv1.GroupVersionKind }

// IsSuspended tells whether the Job is suspended and no stop is half done.
func (j *Job) IsSuspended() bool {
	return ptr.Deref(j.Spec.Suspend, false) && j.Annotations[stoppingAnnotation] != "true"
}

// IsActive tells whether any Pod of the Job is running.
func (j *Job) IsActive() bool { return j.Status.Active > 0 }

// Suspend sets spec.suspend; the caller writes it.
func (j *Job) Suspend() { j.Spec.Suspend = ptr.To(true) }

// Stop takes an admitted Job back to the state it was queued in, in three
// writes, each of which the server accepts only after the one before:
// suspend (the controller then deletes the Pods), clear status.startTime
// (the server lets a suspended Job's scheduling directives change only
// while it has none), and restore the template Kueue changed on admission.
// It reports whether this call stopped the Job: it ran the stop (not
// already done) and the last write was accepted. While the server refuses
// the restore (the Job still counts active Pods) the calls report nothing,
// and the one that finishes reports the stop, so that a stop records one
// Stopped Event, when it has succeeded, as Kueue's batch/v1 integration
// decides it.
func (j *Job) Stop(ctx context.Context, c client.Client, infos []podset.PodSetInfo, _ jobframework.StopReason, _ string) (bool, error) {
	obj := j.Object()
	suspendedNow := false
	if !j.IsSuspended() {
		err := clientutil.Patch(ctx, c, obj, func() (bool, error) {
			j.Suspend()
			if j.Annotations == nil {
				j.Annotations = map[string]string{}
			}
			j.Annotations[stoppingAnnotation] = "true"
			return true, nil
		})
		if err != nil {
			return false, fmt.Errorf("suspending job %s/%s: %w", j.Namespace, j.Name, err)
		}
		suspendedNow = true
	}
	if j.Status.StartTime != nil {
		err := clientutil.PatchStatus(ctx, c, obj, func() (bool, error) {
			j.Status.StartTime = nil
			return true, nil
		})
		if err != nil {
			return suspendedNow, fmt.Errorf("clearing the start time of job %s/%s: %w", j.Namespace, j.Name, err)
		}
	}
	err := clientutil.Patch(ctx, c, obj, func() (bool, error) {
		j.RestorePodSetsInfo(infos)
		delete(j.Annotations, stoppingAnnotation)
		return true, nil
	})
	if err != nil {
		return false, fmt.Errorf("restoring the template of job %s/%s: %w", j.Namespace, j.Name, err)
	}
	return suspendedNow, nil
}

// PodLabelSelector selects the Job's Pods.
func (j *Job) PodLabelSelector() string { return jobNameLabel + "=" + j.Name }

// PodSets is the one PodSet of the Job: its template without the server's
// own labels, as many Pods as run at once.
func (j *Job) PodSets(context.Context) ([]kueue.PodSet, error) {
	template := j.Spec.Template.DeepCopy()
	for _, key := range templateOwnLabels {
		if key != jobNameLabel {
			delete(template.Labels, key)
		}
	}
	set := kueue.PodSet{
		Name:     kueue.DefaultPodSetName,
		Template: *template,
		Count:    j.podCount(),
		MinCount: j.minParallelism(),
	}
	if features.Enabled(features.TopologyAwareScheduling) {
		request, err := jobframework.NewPodSetTopologyRequest(&j.Spec.Template.ObjectMeta).
			PodIndexLabel(ptr.To(completionIndexLabel)).Build()
		if err != nil {
			return nil, err
		}
		set.TopologyRequest = request
	}
	return []kueue.PodSet{set}, nil
}

// RunWithPodSetsInfo resumes the Job with what the admission gave its one
// PodSet (node selector, tolerations, labels, annotations, and the count
// under partial admission). The caller writes it.
func (j *Job) RunWithPodSetsInfo(_ context.Context, infos []podset.PodSetInfo) error {
	j.Spec.Suspend = ptr.To(false)
	if len(infos) != 1 {
		return podset.BadPodSetsInfoLenError(1, len(infos))
	}
	if j.minParallelism() != nil {
		j.setParallelism(infos[0].Count)
	}
	return podset.Merge(&j.Spec.Template.ObjectMeta, &j.Spec.Template.Spec, infos[0])
}

// RestorePodSetsInfo puts back the template (and the parallelism under
// partial admission) the Job had before it was admitted, keeping the
// labels the server owns; it reports whether anything changed.
func (j *Job) RestorePodSetsInfo(infos []podset.PodSetInfo) bool {
	if len(infos) == 0 {
		return false
	}
	info := infos[0]
	changed := false
	if j.minParallelism() != nil && ptr.Deref(j.Spec.Parallelism, 0) != info.Count {
		j.setParallelism(info.Count)
		changed = true
	}
	for _, key := range templateOwnLabels {
		if value, ok := j.Spec.Template.Labels[key]; ok {
			info.AddOrUpdateLabel(key, value)
		}
	}
	return podset.RestorePodSpec(&j.Spec.Template.ObjectMeta, &j.Spec.Template.Spec, info) || changed
}

// Finished reports the Job's terminal condition, if it has one.
func (j *Job) Finished(context.Context) (message string, success, finished bool) {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return c.Message, true, true
		case batchv1.JobFailed:
			return c.Message, false, true
		}
	}
	return "", true, false
}

// PodsReady tells whether as many Pods are ready or done as the Job runs
// at once.
func (j *Job) PodsReady(context.Context) bool {
	done := j.Status.Succeeded + ptr.Deref(j.Status.Ready, 0)
	if u := j.Status.UncountedTerminatedPods; u != nil {
		done += int32(len(u.Succeeded))
	}
	return done >= j.podCount()
}

// ReclaimablePods are the Pods of quota a Job no longer needs: once fewer
// completions remain than its parallelism, the difference.
func (j *Job) ReclaimablePods(context.Context) ([]kueue.ReclaimablePod, error) {
	parallelism := ptr.Deref(j.Spec.Parallelism, 1)
	if parallelism <= 1 || j.Status.Succeeded == 0 {
		return nil, nil
	}
	left := ptr.Deref(j.Spec.Completions, parallelism) - j.Status.Succeeded
	if left >= parallelism {
		return nil, nil
	}
	return []kueue.ReclaimablePod{{Name: kueue.DefaultPodSetName, Count: parallelism - left}}, nil
}

// CanDefaultManagedBy tells whether Kueue may hand the Job to MultiKueue:
// only when nobody but the server's own controller was named.
func (j *Job) CanDefaultManagedBy() bool {
	return features.Enabled(features.MultiKueue) &&
		(j.Spec.ManagedBy == nil || *j.Spec.ManagedBy == jobControllerName)
}

// ManagedBy is spec.managedBy.
func (j *Job) ManagedBy() *string { return j.Spec.ManagedBy }

// SetManagedBy sets spec.managedBy.
func (j *Job) SetManagedBy(managedBy *string) { j.Spec.ManagedBy = managedBy }

// podCount is how many Pods run at once: the parallelism (the server
// defaults it to 1), at most the completions.
func (j *Job) podCount() int32 {
	n := ptr.Deref(j.Spec.Parallelism, 1)
	if j.Spec.Completions != nil && *j.Spec.Completions < n {
		n = *j.Spec.Completions
	}
	return n
}

// minParallelism is the annotation of partial admission, nil without it
// or when it is not a number.
func (j *Job) minParallelism() *int32 {
	value, ok := j.Annotations[minParallelismAnnotation]
	if !ok {
		return nil
	}
	n, err := strconv.ParseInt(value, 10, 32)
	if err != nil {
		return nil
	}
	return ptr.To(int32(n))
}

// setParallelism sets the parallelism, and the completions with it when
// the Job asks for that.
func (j *Job) setParallelism(n int32) {
	j.Spec.Parallelism = ptr.To(n)
	if j.completionsFollowParallelism() {
		j.Spec.Completions = ptr.To(n)
	}
}
