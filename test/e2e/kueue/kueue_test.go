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

package kueue

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// singleClusterQueues are the worker cluster's objects of the single-cluster
// scenarios: a flavor of the KWOK nodes (its node label and toleration are
// what let a Pod onto them), one 2-CPU ClusterQueue per side that preempts
// lower priorities, and the priorities.
func singleClusterQueues() string {
	out := kwokFlavor() + `---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: low
value: 1
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: WorkloadPriorityClass
metadata:
  name: high
value: 100
`
	for _, api := range sides {
		ns := sideNamespace("single", api)
		out += fmt.Sprintf(`---
apiVersion: v1
kind: Namespace
metadata:
  name: %[1]s
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: %[1]s
spec:
  namespaceSelector: {}
  preemption:
    withinClusterQueue: LowerPriority
  resourceGroups:
  - coveredResources: ["cpu"]
    flavors:
    - name: kwok
      resources:
      - name: cpu
        nominalQuota: "2"
---
apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: q
  namespace: %[1]s
spec:
  clusterQueue: %[1]s
`, ns)
	}
	return out
}

// kwokFlavor is the worker cluster's flavor of the KWOK nodes: its node
// label and toleration are what let a Pod onto them.
func kwokFlavor() string {
	return fmt.Sprintf(`apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: kwok
spec:
  nodeLabels:
    %s: %s
  tolerations:
  - key: %s
    operator: Equal
    value: %s
    effect: NoSchedule
`, kwokFlavorLabel, kwokFlavorValue, framework.KWOKNodeAnnotation, framework.KWOKNodeValue)
}

// singleResult is what a side of the single-cluster scenarios shows.
type singleResult struct {
	// admissions are the Jobs in the order they started running.
	admissions []string
	// statuses are the final statuses, times left out.
	statuses map[string]batchv1.JobStatus
}

// TestSingleCluster runs, on each side in its own namespace and
// ClusterQueue of the worker cluster: (a) three 1-CPU Jobs on a 2-CPU
// ClusterQueue, the third waiting suspended until the first finishes; (b)
// a higher-priority Job preempting a lower one, which is suspended, loses
// its Pods and startTime and completes after readmission; (c) the
// flavor's node selector and toleration on the Pods while admitted, off
// the template after the stop. Both sides must show the same admissions in
// the same order and the same final statuses.
func TestSingleCluster(t *testing.T) {
	ctx := context.Background()
	apply(t, worker, singleClusterQueues())
	var mu sync.Mutex
	results := map[string]singleResult{}
	t.Run("sides", func(t *testing.T) {
		for _, api := range sides {
			t.Run(api.Name, func(t *testing.T) {
				t.Parallel()
				r := runSingleCluster(ctx, t, api)
				mu.Lock()
				results[api.Name] = r
				mu.Unlock()
			})
		}
	})
	ours, upstream := results[framework.OurJobs.Name], results[framework.UpstreamJobs.Name]
	if t.Failed() {
		return
	}
	if diff := cmp.Diff(upstream.admissions, ours.admissions); diff != "" {
		t.Errorf("admission order (-batch/v1,+ours):\n%s", diff)
	}
	if diff := cmp.Diff(upstream.statuses, ours.statuses); diff != "" {
		t.Errorf("final statuses (-batch/v1,+ours):\n%s", diff)
	}
	t.Logf("admissions on both sides: %v", ours.admissions)
}

func runSingleCluster(ctx context.Context, t *testing.T, api framework.JobAPI) singleResult {
	ns := sideNamespace("single", api)
	jobs := jobsOf(worker, api, ns)
	r := singleResult{statuses: map[string]batchv1.JobStatus{}}
	admitted := func(name string, active int32) *batchv1.Job {
		job := waitJob(ctx, t, jobs, name, "resumed and running", running(active))
		r.admissions = append(r.admissions, name)
		return job
	}

	// The webhooks leave a Job without the queue label alone.
	unqueued := newJob("unqueued", jobOpts{parallelism: 1, completions: 1, hold: true})
	delete(unqueued.Labels, queueLabel)
	created, err := jobs.Create(ctx, unqueued)
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Deref(created.Spec.Suspend, true) {
		t.Errorf("a Job without %s was created with suspend=%v, want false", queueLabel, created.Spec.Suspend)
	}
	if err := jobs.Delete(ctx, "unqueued"); err != nil {
		t.Fatal(err)
	}

	// (a) Two of three fit; the third waits, suspended with no Pods.
	one := jobOpts{parallelism: 1, completions: 1, hold: true}
	for _, name := range []string{"a1", "a2"} {
		if _, err := jobs.Create(ctx, newJob(name, one)); err != nil {
			t.Fatal(err)
		}
		admitted(name, 1)
	}
	refuseQueueNameChange(ctx, t, jobs, "a1")
	created, err = jobs.Create(ctx, newJob("a3", one))
	if err != nil {
		t.Fatal(err)
	}
	if !ptr.Deref(created.Spec.Suspend, false) {
		t.Errorf("a3 was created with suspend=%v, want true (the webhook)", created.Spec.Suspend)
	}
	waitWorkload(ctx, t, worker, api, ns, "a3", "pending without quota", func(wl *unstructured.Unstructured) bool {
		c := workloadCondition(wl, "QuotaReserved")
		return c != nil && c.Status == metav1.ConditionFalse && c.Reason == "Pending"
	})
	if job, err := jobs.Get(ctx, "a3"); err != nil || !ptr.Deref(job.Spec.Suspend, false) {
		t.Errorf("pending a3: %s (err %v), want suspended", describe(job), err)
	}
	if pods, err := podsOf(ctx, worker, api, ns, "a3"); err != nil || len(pods) != 0 {
		t.Errorf("pending a3 has %d Pods (err %v), want none", len(pods), err)
	}
	a1 := finish(ctx, t, worker, api, ns, "a1")
	admitted("a3", 1)
	wl := waitWorkload(ctx, t, worker, api, ns, "a3", "admitted", func(wl *unstructured.Unstructured) bool {
		c := workloadCondition(wl, "Admitted")
		return c != nil && c.Status == metav1.ConditionTrue
	})
	if at := workloadCondition(wl, "Admitted").LastTransitionTime; a1.Status.CompletionTime == nil || at.Before(a1.Status.CompletionTime) {
		t.Errorf("a3 admitted at %v, before a1 completed at %v", at, a1.Status.CompletionTime)
	}
	for _, name := range []string{"a2", "a3"} {
		finish(ctx, t, worker, api, ns, name)
	}

	// (b, c) A higher priority preempts; the flavor comes and goes.
	two := func(priority string) jobOpts {
		return jobOpts{parallelism: 2, completions: 2, hold: true, priority: priority}
	}
	if _, err := jobs.Create(ctx, newJob("low", two("low"))); err != nil {
		t.Fatal(err)
	}
	low := admitted("low", 2)
	if !hasFlavor(low.Spec.Template.Spec) {
		t.Errorf("admitted low's template has no flavor: nodeSelector %v, tolerations %v", low.Spec.Template.Spec.NodeSelector, low.Spec.Template.Spec.Tolerations)
	}
	pods, err := podsOf(ctx, worker, api, ns, "low")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if !hasFlavor(p.Spec) {
			t.Errorf("Pod %s of admitted low lacks the flavor: nodeSelector %v, tolerations %v", p.Name, p.Spec.NodeSelector, p.Spec.Tolerations)
		}
	}
	if _, err := jobs.Create(ctx, newJob("high", two("high"))); err != nil {
		t.Fatal(err)
	}
	waitJob(ctx, t, jobs, "low", "stopped: suspended, no start time, template restored, no Pods", func(j *batchv1.Job) bool {
		if !ptr.Deref(j.Spec.Suspend, false) || j.Status.StartTime != nil || j.Status.Active != 0 || hasAnyFlavor(j.Spec.Template.Spec) {
			return false
		}
		pods, err := podsOf(ctx, worker, api, ns, "low")
		return err == nil && len(pods) == 0
	})
	admitted("high", 2)
	finish(ctx, t, worker, api, ns, "high")
	admitted("low", 2)
	finish(ctx, t, worker, api, ns, "low")

	for _, name := range []string{"a1", "a2", "a3", "low", "high"} {
		job, err := jobs.Get(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		r.statuses[name] = comparable(job.Status)
	}
	return r
}

// hasFlavor tells whether a Pod spec carries both the kwok flavor's node
// selector and its toleration.
func hasFlavor(spec corev1.PodSpec) bool {
	selector, toleration := flavorParts(spec)
	return selector && toleration
}

// hasAnyFlavor tells whether a Pod spec carries either of them.
func hasAnyFlavor(spec corev1.PodSpec) bool {
	selector, toleration := flavorParts(spec)
	return selector || toleration
}

func flavorParts(spec corev1.PodSpec) (selector, toleration bool) {
	return spec.NodeSelector[kwokFlavorLabel] == kwokFlavorValue,
		slices.ContainsFunc(spec.Tolerations, func(t corev1.Toleration) bool { return t.Key == framework.KWOKNodeAnnotation })
}
