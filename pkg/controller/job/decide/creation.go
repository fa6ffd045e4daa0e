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

package decide

import (
	"fmt"
	"slices"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	"k8s.io/apiserver/pkg/storage/names"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// completionIndexEnv is the variable through which the containers of an
// Indexed Job learn their index; the downward API reads it from the label.
const completionIndexEnv = "JOB_COMPLETION_INDEX"

// creations returns the Pods to create: n of a NonIndexed Job, one per
// index of an Indexed Job. Every Pod carries the tracking finalizer, so
// that its end is counted before it can vanish. held gives, per index, the
// failed Pod a replacement inherits its failure counts from. group, when
// set, is the Job's PodGroup, which every Pod joins.
func creations(job *batchv1.Job, n int, indexes []int, held map[int]*corev1.Pod, group *corev1.PodSchedulingGroup) []PodCreation {
	base := job.Spec.Template.DeepCopy()
	if !slices.Contains(base.Finalizers, batch.JobTrackingFinalizer) {
		base.Finalizers = append(base.Finalizers, batch.JobTrackingFinalizer)
	}
	if group != nil {
		base.Spec.SchedulingGroup = group.DeepCopy()
	}
	if !isIndexed(job) {
		out := make([]PodCreation, n)
		prefix := namePrefix(job.Name)
		for i := range out {
			out[i] = PodCreation{Index: noIndex, Template: base, GenerateName: prefix}
		}
		return out
	}
	for i := range base.Spec.InitContainers {
		exposeIndex(&base.Spec.InitContainers[i])
	}
	for i := range base.Spec.Containers {
		exposeIndex(&base.Spec.Containers[i])
	}
	out := make([]PodCreation, 0, len(indexes))
	for _, ix := range indexes {
		t := base.DeepCopy()
		value := strconv.Itoa(ix)
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		// Upstream uses the annotation's key for the label too.
		t.Annotations[batch.JobCompletionIndexAnnotation] = value
		t.Labels[batch.JobCompletionIndexAnnotation] = value
		t.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, ix)
		if job.Spec.BackoffLimitPerIndex != nil {
			counted, ignored := replacementCounts(job, held[ix])
			t.Annotations[batch.JobIndexFailureCountAnnotation] = strconv.Itoa(int(counted))
			if ignored > 0 {
				t.Annotations[batch.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
			}
		}
		out = append(out, PodCreation{Index: ix, Template: t, GenerateName: indexedNamePrefix(job.Name, ix)})
	}
	return out
}

// exposeIndex gives the container the completion index variable, unless
// it defines one of its own.
func exposeIndex(c *corev1.Container) {
	for _, e := range c.Env {
		if e.Name == completionIndexEnv {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{
		Name: completionIndexEnv,
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: "metadata.labels['" + batch.JobCompletionIndexAnnotation + "']",
		}},
	})
}

// namePrefix is the generateName of a NonIndexed Job's Pods, "<job>-",
// or the bare name where the dash would not make a valid prefix.
func namePrefix(job string) string {
	if len(apimachineryvalidation.NameIsDNSSubdomain(job+"-", true)) != 0 {
		return job
	}
	return job + "-"
}

// indexedNamePrefix is the generateName of an Indexed Job's Pod,
// "<job>-<index>-", with the Job's name cut so that the index survives in
// a prefix the API server still accepts.
func indexedNamePrefix(job string, ix int) string {
	tail := "-" + strconv.Itoa(ix) + "-"
	if len(job)+len(tail) > names.MaxGeneratedNameLength {
		job = job[:names.MaxGeneratedNameLength-len(tail)]
	}
	return job + tail
}
