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
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// Names the scenarios share with Kueue and with the KWOK stages.
const (
	queueLabel         = "kueue.x-k8s.io/queue-name"
	priorityClassLabel = "kueue.x-k8s.io/priority-class"
	multiKueueManager  = "kueue.x-k8s.io/multikueue"
	holdLabel          = "e2e.jobs.dev/hold"
	failIndexLabel     = "e2e.jobs.dev/fail-index"
	failExitCodeAnnot  = "e2e.jobs.dev/fail-exit-code"
	runForAnnot        = "e2e.jobs.dev/run-for"
	kwokFlavorLabel    = "type"
	kwokFlavorValue    = "kwok"
	waitTimeout        = 2 * time.Minute
)

var workloadGVR = schema.GroupVersionResource{Group: "kueue.x-k8s.io", Version: "v1beta2", Resource: "workloads"}

// sides are the two Job APIs every scenario runs on: ours under
// batch-kueue, batch/v1 under Kueue's own integration.
var sides = []framework.JobAPI{framework.OurJobs, framework.UpstreamJobs}

// sideNamespace is the namespace of a scenario's side.
func sideNamespace(scenario string, api framework.JobAPI) string {
	if api.GVR.Group == "batch" {
		return scenario + "-v1"
	}
	return scenario + "-ours"
}

// jobOpts shape a scenario's Job.
type jobOpts struct {
	parallelism, completions int32
	indexed                  bool
	hold                     bool
	priority                 string
	managedBy                string
	backoffLimitPerIndex     *int32
	failIndex                string
	failExitCode             int
	failJobOnExitCode        int32
	runFor                   string
}

// newJob is a queued Job of 1-CPU Pods (the API's own labels come from
// the server).
func newJob(name string, o jobOpts) *batchv1.Job {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{queueLabel: "q"}},
		Spec: batchv1.JobSpec{
			Parallelism:  ptr.To(o.parallelism),
			Completions:  ptr.To(o.completions),
			BackoffLimit: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{}, Annotations: map[string]string{}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:      "main",
						Image:     "registry.example/work:1",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
					}},
				},
			},
		},
	}
	if o.indexed {
		job.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	}
	if o.hold {
		job.Spec.Template.Labels[holdLabel] = "true"
	}
	if o.priority != "" {
		job.Labels[priorityClassLabel] = o.priority
	}
	if o.managedBy != "" {
		job.Spec.ManagedBy = ptr.To(o.managedBy)
	}
	if o.backoffLimitPerIndex != nil {
		job.Spec.BackoffLimit = nil
		job.Spec.BackoffLimitPerIndex = o.backoffLimitPerIndex
	}
	if o.failIndex != "" {
		job.Spec.Template.Labels[failIndexLabel] = o.failIndex
		job.Spec.Template.Annotations[failExitCodeAnnot] = strconv.Itoa(o.failExitCode)
	}
	if o.failJobOnExitCode != 0 {
		job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:      batchv1.PodFailurePolicyActionFailJob,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{o.failJobOnExitCode}},
		}}}
	}
	if o.runFor != "" {
		job.Spec.Template.Annotations[runForAnnot] = o.runFor
	}
	return job
}

// jobsOf is the Jobs of api in ns of cluster c.
func jobsOf(c *framework.Cluster, api framework.JobAPI, ns string) framework.Jobs {
	return framework.Jobs{API: api, Client: c.Dynamic, Namespace: ns}
}

// apply applies YAML manifests to c.
func apply(t *testing.T, c *framework.Cluster, manifests string) {
	t.Helper()
	c.Kubectl().MustRunStdin(t, manifests, "apply", "-f", "-")
}

// workloadOf returns the Workload of the Job, nil while there is none.
func workloadOf(ctx context.Context, c *framework.Cluster, api framework.JobAPI, ns, job string) (*unstructured.Unstructured, error) {
	list, err := c.Dynamic.Resource(workloadGVR).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, err
	}
	for i := range list.Items {
		for _, ref := range list.Items[i].GetOwnerReferences() {
			if ref.Kind == "Job" && ref.APIVersion == api.APIVersion() && ref.Name == job {
				return &list.Items[i], nil
			}
		}
	}
	return nil, nil
}

// workloadCondition returns the Workload's condition of type typ.
func workloadCondition(wl *unstructured.Unstructured, typ string) *metav1.Condition {
	conds, _, _ := unstructured.NestedSlice(wl.Object, "status", "conditions")
	for _, raw := range conds {
		data, err := json.Marshal(raw)
		if err != nil {
			continue
		}
		var c metav1.Condition
		if json.Unmarshal(data, &c) == nil && c.Type == typ {
			return &c
		}
	}
	return nil
}

// waitWorkload polls the Job's Workload until done says so.
func waitWorkload(ctx context.Context, t *testing.T, c *framework.Cluster, api framework.JobAPI, ns, job, what string, done func(*unstructured.Unstructured) bool) *unstructured.Unstructured {
	t.Helper()
	var last *unstructured.Unstructured
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, waitTimeout, true, func(ctx context.Context) (bool, error) {
		wl, err := workloadOf(ctx, c, api, ns, job)
		if err != nil || wl == nil {
			return false, nil
		}
		last = wl
		return done(wl), nil
	})
	if err != nil {
		var status any
		if last != nil {
			status = last.Object["status"]
		}
		t.Fatalf("%s job %s/%s: waiting for its Workload to be %s: %v; last status: %v", api.Name, ns, job, what, err, status)
	}
	return last
}

// waitJob polls the Job until done says so.
func waitJob(ctx context.Context, t *testing.T, jobs framework.Jobs, name, what string, done func(*batchv1.Job) bool) *batchv1.Job {
	t.Helper()
	job, err := framework.WaitForJob(ctx, jobs, name, waitTimeout, func(j *batchv1.Job) (bool, string) { return done(j), what })
	if err != nil {
		t.Fatalf("%s job %s/%s: %v", jobs.API.Name, jobs.Namespace, name, err)
	}
	return job
}

// running is a Job Kueue resumed with n Pods active.
func running(n int32) func(*batchv1.Job) bool {
	return func(j *batchv1.Job) bool { return !ptr.Deref(j.Spec.Suspend, false) && j.Status.Active == n }
}

// finishedJob is a Job with a Complete or Failed condition.
func finishedJob(j *batchv1.Job) bool {
	return framework.HasJobCondition(j, batchv1.JobComplete) || framework.HasJobCondition(j, batchv1.JobFailed)
}

// podsOf lists the Job's Pods in c.
func podsOf(ctx context.Context, c *framework.Cluster, api framework.JobAPI, ns, job string) ([]corev1.Pod, error) {
	list, err := c.AdminClient.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{LabelSelector: api.LabelPrefix + "job-name=" + job})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

// finish lets the held Pods of the Job succeed (removing the hold label
// from each running one, again for any Pod that comes later) until the Job
// is Complete, and returns it.
func finish(ctx context.Context, t *testing.T, c *framework.Cluster, api framework.JobAPI, ns, name string) *batchv1.Job {
	t.Helper()
	jobs := jobsOf(c, api, ns)
	release := []byte(`{"metadata":{"labels":{"` + holdLabel + `":null}}}`)
	return waitJob(ctx, t, jobs, name, "Complete", func(j *batchv1.Job) bool {
		if framework.HasJobCondition(j, batchv1.JobComplete) {
			return true
		}
		pods, err := podsOf(ctx, c, api, ns, name)
		if err != nil {
			return false
		}
		for _, p := range pods {
			if _, held := p.Labels[holdLabel]; held && p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning {
				_, _ = c.AdminClient.CoreV1().Pods(ns).Patch(ctx, p.Name, types.MergePatchType, release, metav1.PatchOptions{})
			}
		}
		return false
	})
}

// podInMessage is a Pod's namespace/name in a condition message.
var podInMessage = regexp.MustCompile(`pod [^ /]+/[^ ]+`)

// comparable is a Job's status without what differs from run to run and
// from one API to the other: times, the namespace and name of a Pod a
// condition message names, and the Suspended condition. A Job created
// suspended gets Suspended=True only if its controller syncs it before
// Kueue resumes it (and then Suspended=False on resume): a race either
// controller may win or lose in any run.
func comparable(status batchv1.JobStatus) batchv1.JobStatus {
	s := *status.DeepCopy()
	s.StartTime, s.CompletionTime = nil, nil
	s.Conditions = slices.DeleteFunc(s.Conditions, func(c batchv1.JobCondition) bool { return c.Type == batchv1.JobSuspended })
	for i := range s.Conditions {
		c := &s.Conditions[i]
		c.LastProbeTime, c.LastTransitionTime = metav1.Time{}, metav1.Time{}
		c.Message = podInMessage.ReplaceAllString(c.Message, "pod <namespace>/<pod>")
	}
	return s
}

// lastSeen records the last state of every Job of one API in one
// namespace of a cluster, deleted ones included, from an informer.
type lastSeen struct {
	mu   sync.Mutex
	jobs map[string]*batchv1.Job
}

// watchJobs starts recording; it stops when ctx ends.
func watchJobs(ctx context.Context, t *testing.T, c *framework.Cluster, api framework.JobAPI, ns string) *lastSeen {
	t.Helper()
	seen := &lastSeen{jobs: map[string]*batchv1.Job{}}
	record := func(obj any) {
		if tomb, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = tomb.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		var job batchv1.Job
		if runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &job) != nil {
			return
		}
		seen.mu.Lock()
		seen.jobs[job.Name] = &job
		seen.mu.Unlock()
	}
	factory := dynamicinformer.NewFilteredDynamicSharedInformerFactory(c.Dynamic, 0, ns, nil)
	informer := factory.ForResource(api.GVR).Informer()
	if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    record,
		UpdateFunc: func(_, obj any) { record(obj) },
		DeleteFunc: record,
	}); err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
		t.Fatalf("watching %s jobs in %s", api.Name, ns)
	}
	return seen
}

// get returns the last state recorded of the Job.
func (s *lastSeen) get(name string) *batchv1.Job {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.jobs[name]
}

// requestTotalLine is one series of apiserver_request_total.
var requestTotalLine = regexp.MustCompile(`^apiserver_request_total\{(.*)\} (\S+)$`)

// refusedRequests sums batch-apiserver's apiserver_request_total for Jobs
// of the given verb and subresource answered with a 4xx code.
func refusedRequests(t *testing.T, c *framework.Cluster, verb, subresource string) int {
	t.Helper()
	return jobRequests(t, c, verb, subresource, refusedCode)
}

var (
	refusedCode = regexp.MustCompile(`code="4\d\d"`)
	anyCode     = regexp.MustCompile(`code="`)
)

// jobRequests sums batch-apiserver's apiserver_request_total for Jobs of
// the given verb and subresource whose labels match code.
func jobRequests(t *testing.T, c *framework.Cluster, verb, subresource string, code *regexp.Regexp) int {
	t.Helper()
	body, err := c.BatchMetrics(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for _, line := range strings.Split(body, "\n") {
		m := requestTotalLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		labels := m[1]
		if !strings.Contains(labels, `resource="jobs"`) || !strings.Contains(labels, `verb="`+verb+`"`) ||
			!strings.Contains(labels, `subresource="`+subresource+`"`) || !code.MatchString(labels) {
			continue
		}
		n, err := strconv.ParseFloat(m[2], 64)
		if err != nil {
			t.Fatalf("parsing %q: %v", line, err)
		}
		total += int(n)
	}
	return total
}

// describe prints a Job for a failure message.
func describe(j *batchv1.Job) string {
	if j == nil {
		return "<none>"
	}
	data, _ := json.Marshal(map[string]any{"suspend": j.Spec.Suspend, "status": j.Status})
	return fmt.Sprintf("%s: %s", j.Name, data)
}
