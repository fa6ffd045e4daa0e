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

package scale

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// Template labels and annotations our KWOK stages read
// (testdata/stages).
const (
	runForAnnotation       = "scale.jobs.dev/run-for"
	failIndexLabel         = "scale.jobs.dev/fail-index"
	failExitCodeAnnotation = "scale.jobs.dev/fail-exit-code"
	failAttemptsAnnotation = "scale.jobs.dev/fail-attempts"
)

// jobSpec is the shape of one Job of a workload, the same for both
// controllers.
type jobSpec struct {
	name        string
	completions int32
	parallelism int32
	runFor      time.Duration
	// failIndex, failExitCode and failAttempts make the Pods of one index
	// fail (failAttempts times) when failAttempts > 0.
	failIndex    int
	failExitCode int32
	failAttempts int
	// backoffLimitPerIndex and failurePolicy add per-index backoff and a
	// podFailurePolicy: exit code 42 fails the index, others count.
	backoffLimitPerIndex *int32
	failurePolicy        bool
}

// upstreamJob builds the batch/v1 Job of spec; ours is the same object
// under batch.jobs.dev/v1.
func (j jobSpec) upstreamJob() *batchv1.Job {
	indexed := batchv1.IndexedCompletion
	completions, parallelism := j.completions, j.parallelism
	annotations := map[string]string{runForAnnotation: j.runFor.String()}
	labels := map[string]string{"app": "scale"}
	if j.failAttempts > 0 {
		labels[failIndexLabel] = strconv.Itoa(j.failIndex)
		annotations[failExitCodeAnnotation] = strconv.Itoa(int(j.failExitCode))
		annotations[failAttemptsAnnotation] = strconv.Itoa(j.failAttempts)
	}
	noToken := false
	zero := int64(0)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: j.name},
		Spec: batchv1.JobSpec{
			Completions:    &completions,
			Parallelism:    &parallelism,
			CompletionMode: &indexed,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels, Annotations: annotations},
				Spec: corev1.PodSpec{
					RestartPolicy:                 corev1.RestartPolicyNever,
					AutomountServiceAccountToken:  &noToken,
					TerminationGracePeriodSeconds: &zero,
					NodeSelector:                  map[string]string{framework.KWOKNodeLabel: framework.KWOKNodeLabelValue},
					Tolerations:                   []corev1.Toleration{framework.KWOKToleration},
					Containers: []corev1.Container{{
						Name:  "main",
						Image: "registry.example.com/scale/worker:1.0",
					}},
				},
			},
		},
	}
	if j.backoffLimitPerIndex != nil {
		limit := *j.backoffLimitPerIndex
		job.Spec.BackoffLimitPerIndex = &limit
	}
	if j.failurePolicy {
		job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
			{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{0, 42}}},
		}}
	}
	return job
}

// object returns the Job of spec for side s, as an unstructured object of
// the side's group.
func (s *side) object(obj any) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetAPIVersion(s.gvr.GroupVersion().String())
	u.SetKind("Job")
	unstructured.RemoveNestedField(u.Object, "status")
	unstructured.RemoveNestedField(u.Object, "metadata", "creationTimestamp")
	unstructured.RemoveNestedField(u.Object, "spec", "template", "metadata", "creationTimestamp")
	return u, nil
}

// finalStatus is what the comparison of the two controllers looks at:
// the terminal conditions' types and reasons, the counts and the indexes.
type finalStatus struct {
	Conditions       []string `json:"conditions"`
	Succeeded        int32    `json:"succeeded"`
	Failed           int32    `json:"failed"`
	CompletedIndexes string   `json:"completedIndexes"`
	FailedIndexes    string   `json:"failedIndexes"`
}

func statusOf(job *batchv1.Job) finalStatus {
	st := finalStatus{Succeeded: job.Status.Succeeded, Failed: job.Status.Failed, CompletedIndexes: job.Status.CompletedIndexes}
	if job.Status.FailedIndexes != nil {
		st.FailedIndexes = *job.Status.FailedIndexes
	}
	for _, c := range job.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			st.Conditions = append(st.Conditions, string(c.Type)+"/"+c.Reason)
		}
	}
	sort.Strings(st.Conditions)
	return st
}

// terminal tells whether a Job has finished: Complete or Failed.
func terminal(job *batchv1.Job) (done bool, complete bool) {
	for _, c := range job.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, true
		case batchv1.JobFailed:
			return true, false
		}
	}
	return false, false
}

// finishedAt is when a finished Job's Complete or Failed condition became
// true.
func finishedAt(job *batchv1.Job) time.Time {
	for _, c := range job.Status.Conditions {
		if c.Status == corev1.ConditionTrue && (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

// tracker follows the Jobs of a namespace through an informer and records
// when each was created (by the harness) and first seen finished.
type tracker struct {
	mu       sync.Mutex
	created  map[string]time.Time
	finished map[string]time.Time
	final    map[string]*batchv1.Job
	// lastFinish is when the tracker last saw a Job finish.
	lastFinish time.Time
	stop       chan struct{}
}

func (s *side) track(ns string) (*tracker, error) {
	tr := &tracker{created: map[string]time.Time{}, finished: map[string]time.Time{}, final: map[string]*batchv1.Job{}, stop: make(chan struct{})}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return s.dyn.Resource(s.gvr).Namespace(ns).List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return s.dyn.Resource(s.gvr).Namespace(ns).Watch(ctx, opts)
		},
	}
	inf := cache.NewSharedIndexInformer(lw, &unstructured.Unstructured{}, 0, cache.Indexers{})
	observe := func(obj any) {
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		var job batchv1.Job
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &job); err != nil {
			return
		}
		if done, _ := terminal(&job); !done {
			return
		}
		tr.mu.Lock()
		defer tr.mu.Unlock()
		if _, seen := tr.finished[job.Name]; !seen {
			tr.finished[job.Name] = time.Now()
			tr.lastFinish = tr.finished[job.Name]
		}
		tr.final[job.Name] = &job
	}
	if _, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	}); err != nil {
		return nil, err
	}
	go inf.Run(tr.stop)
	if !cache.WaitForCacheSync(tr.stop, inf.HasSynced) {
		return nil, fmt.Errorf("the Job informer of %s did not sync", ns)
	}
	return tr, nil
}

func (tr *tracker) markCreated(name string, at time.Time) {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	tr.created[name] = at
}

func (tr *tracker) done() int {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	return len(tr.finished)
}

// lateAfter is how long a run may go without a Job finishing, once some
// have and every Job is created, before the harness reports the Jobs
// still running: several times the create→Complete p99 of every
// workload, so only a Job held up for minutes is reported.
const lateAfter = 90 * time.Second

// late returns the Jobs of specs not finished yet when none has finished
// for lateAfter since quietSince (when the last create was sent) and at
// least one has; nil otherwise.
func (tr *tracker) late(specs []jobSpec, now, quietSince time.Time) []string {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if len(tr.finished) == 0 || now.Sub(latest(tr.lastFinish, quietSince)) < lateAfter {
		return nil
	}
	var names []string
	for _, spec := range specs {
		if _, ok := tr.finished[spec.name]; !ok {
			names = append(names, spec.name)
		}
	}
	return names
}

func latest(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// latencies returns create→finished of every finished Job, sorted.
// completedOverTime returns the finished Jobs, and their succeeded Pods,
// accumulated in the order the tracker saw them finish, from start.
func (tr *tracker) completedOverTime(start time.Time) []completionPoint {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	type end struct {
		at   time.Time
		pods int64
	}
	ends := make([]end, 0, len(tr.finished))
	for name, at := range tr.finished {
		var pods int64
		if job := tr.final[name]; job != nil {
			pods = int64(job.Status.Succeeded)
		}
		ends = append(ends, end{at: at, pods: pods})
	}
	sort.Slice(ends, func(i, j int) bool { return ends[i].at.Before(ends[j].at) })
	out := make([]completionPoint, 0, len(ends))
	var pods int64
	for i, e := range ends {
		pods += e.pods
		out = append(out, completionPoint{Seconds: e.at.Sub(start).Seconds(), Jobs: i + 1, Pods: pods})
	}
	return out
}

func (tr *tracker) latencies() []time.Duration {
	tr.mu.Lock()
	defer tr.mu.Unlock()
	var out []time.Duration
	for name, end := range tr.finished {
		if start, ok := tr.created[name]; ok {
			out = append(out, end.Sub(start))
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p)
	return sorted[i]
}

// runOutcome is the correctness record of one workload on one side.
type runOutcome struct {
	Created               int `json:"jobs_created"`
	Lost                  int `json:"jobs_lost"`
	Stuck                 int `json:"jobs_stuck"`
	NotComplete           int `json:"jobs_not_complete"`
	PodsLeftWithFinalizer int `json:"pods_left_with_finalizer"`
	// FinalizersAtFinish is how many Pods still carried the tracking
	// finalizer when every Job had finished: a Job ends only after its
	// Pods' ends are counted, and counted Pods no longer carry it.
	FinalizersAtFinish int                    `json:"pods_with_finalizer_when_finished"`
	PodsSucceeded      int64                  `json:"pods_succeeded"`
	Statuses           map[string]finalStatus `json:"-"`
	Wall               time.Duration          `json:"-"`
	P50, P99           time.Duration          `json:"-"`
	// LastFinishedSeconds is when, after the first create, the last Job
	// got its Complete or Failed condition by the condition's own time
	// (whole seconds), beside the wall time, which ends when the harness
	// saw it: the two tell a slow controller from a slow watch.
	LastFinishedSeconds float64 `json:"last_finished_condition_seconds"`
	// LastFinished is the Job that finished last.
	LastFinished string `json:"last_finished_job"`
	// CompletedOverTime is, at each moment a Job was seen finished, how
	// many Jobs had finished and how many of their Pods had succeeded,
	// in seconds after the first create: the curve of the plots.
	CompletedOverTime []completionPoint `json:"completed_over_time,omitempty"`
}

// completionPoint is one step of runOutcome.CompletedOverTime.
type completionPoint struct {
	Seconds float64 `json:"seconds"`
	Jobs    int     `json:"jobs"`
	Pods    int64   `json:"pods_succeeded"`
}

// runJobs creates the Jobs of specs in ns at perSecond Jobs a second,
// waits until every one has finished (or limit has passed), waits for the
// Pods' tracking finalizers to go, and returns what happened.
func (s *side) runJobs(ctx context.Context, t *testing.T, ns string, specs []jobSpec, perSecond float64, limit time.Duration) runOutcome {
	t.Helper()
	tr, err := s.track(ns)
	if err != nil {
		t.Fatal(err)
	}
	defer close(tr.stop)
	out := runOutcome{Statuses: map[string]finalStatus{}}
	start := time.Now()
	interval := time.Duration(float64(time.Second) / perSecond)
	// Creates run concurrently so that a slow create does not slow the
	// rate down; each starts on its tick.
	var wg sync.WaitGroup
	var mu sync.Mutex
	var createErrs []error
	tick := time.NewTicker(interval)
	for i, spec := range specs {
		if i > 0 {
			<-tick.C
		}
		obj, err := s.object(spec.upstreamJob())
		if err != nil {
			t.Fatal(err)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			at := time.Now()
			tr.markCreated(spec.name, at)
			if _, err := s.dyn.Resource(s.gvr).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{}); err != nil {
				mu.Lock()
				createErrs = append(createErrs, fmt.Errorf("creating %s: %w", spec.name, err))
				mu.Unlock()
			}
		}()
	}
	tick.Stop()
	wg.Wait()
	if len(createErrs) > 0 {
		t.Errorf("%s: %d creates failed, the first: %v", s.name, len(createErrs), createErrs[0])
	}
	out.Created = len(specs) - len(createErrs)

	var lastDone int
	createsSent, reported := time.Now(), false
	_ = wait.PollUntilContextTimeout(ctx, time.Second, limit-time.Since(start), true, func(ctx context.Context) (bool, error) {
		if err := s.cluster.Healthy(); err != nil {
			return false, err
		}
		lastDone = tr.done()
		if lastDone >= out.Created {
			return true, nil
		}
		if reported {
			return false, nil
		}
		if late := tr.late(specs, time.Now(), createsSent); late != nil {
			reported = true
			s.reportLate(ctx, t, ns, late)
		}
		return false, nil
	})
	out.Wall = time.Since(start)
	lat := tr.latencies()
	out.P50, out.P99 = percentile(lat, 0.5), percentile(lat, 0.99)
	out.CompletedOverTime = tr.completedOverTime(start)
	t.Logf("%s: %d of %d Jobs finished in %v", s.name, lastDone, out.Created, out.Wall.Round(time.Millisecond))

	// The final word is a LIST, not the informer.
	list, err := s.dyn.Resource(s.gvr).Namespace(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i := range list.Items {
		var job batchv1.Job
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(list.Items[i].Object, &job); err != nil {
			t.Fatal(err)
		}
		seen[job.Name] = true
		done, complete := terminal(&job)
		if !done {
			out.Stuck++
			continue
		}
		if !complete {
			out.NotComplete++
		}
		out.PodsSucceeded += int64(job.Status.Succeeded)
		out.Statuses[job.Name] = statusOf(&job)
		if at := finishedAt(&job); at.Sub(start).Seconds() > out.LastFinishedSeconds {
			out.LastFinishedSeconds, out.LastFinished = at.Sub(start).Seconds(), job.Name
		}
	}
	for _, spec := range specs {
		if !seen[spec.name] {
			out.Lost++
		}
	}
	t.Logf("%s: the last Job to finish, %s, has its condition %.0fs after the first create", s.name, out.LastFinished, out.LastFinishedSeconds)
	if out.Stuck > 0 {
		s.diagnose(ctx, t, ns)
	}
	waited := time.Now()
	out.FinalizersAtFinish, out.PodsLeftWithFinalizer = s.waitFinalizersGone(ctx, t, ns, 2*time.Minute)
	t.Logf("%s: the final LIST took %v, the tracking finalizers were gone %v after it",
		s.name, waited.Sub(start.Add(out.Wall)).Round(time.Millisecond), time.Since(waited).Round(time.Millisecond))
	return out
}

// waitFinalizersGone waits until no Pod of ns carries the side's tracking
// finalizer, or limit passes, and returns how many did at first and how
// many still do (-1 when no count succeeded).
func (s *side) waitFinalizersGone(ctx context.Context, t *testing.T, ns string, limit time.Duration) (first, left int) {
	t.Helper()
	first, left = -1, -1
	_ = wait.PollUntilContextTimeout(ctx, time.Second, limit, true, func(ctx context.Context) (bool, error) {
		n, sample, err := s.podsWithFinalizer(ctx, ns)
		if err != nil {
			return false, nil
		}
		if first < 0 {
			first = n
			if n > 0 {
				t.Logf("%s: %d Pods of %s still had the tracking finalizer when every Job had finished", s.name, n, ns)
				s.logFinalizerSample(ctx, t, ns, sample)
			}
		}
		left = n
		return n == 0, nil
	})
	return first, left
}

// logFinalizerSample logs Pods that still carry the tracking finalizer,
// with their phase and the status of their Job.
func (s *side) logFinalizerSample(ctx context.Context, t *testing.T, ns string, sample []corev1.Pod) {
	t.Helper()
	for _, p := range sample {
		job := ""
		if ref := metav1.GetControllerOf(&p); ref != nil {
			if u, err := s.dyn.Resource(s.gvr).Namespace(ns).Get(ctx, ref.Name, metav1.GetOptions{}); err == nil {
				st, _, _ := unstructured.NestedMap(u.Object, "status")
				job = fmt.Sprintf("%s %v", ref.Name, st)
			}
		}
		t.Logf("%s: Pod %s phase %s rv %s deletion %v finalizers %v; job %s", s.name, p.Name, p.Status.Phase, p.ResourceVersion, p.DeletionTimestamp, p.Finalizers, job)
	}
}

// podsWithFinalizer counts the Pods of ns that carry the side's tracking
// finalizer and returns the first few of them.
func (s *side) podsWithFinalizer(ctx context.Context, ns string) (int, []corev1.Pod, error) {
	const sampleSize = 3
	n := 0
	var sample []corev1.Pod
	cont := ""
	for {
		pods, err := s.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{Limit: 500, Continue: cont})
		if err != nil {
			return 0, nil, err
		}
		for _, p := range pods.Items {
			if !slices.Contains(p.Finalizers, s.finalize) {
				continue
			}
			n++
			if len(sample) < sampleSize {
				sample = append(sample, p)
			}
		}
		if cont = pods.Continue; cont == "" {
			return n, sample, nil
		}
	}
}

// reportLate logs, for the first few Jobs of names, the Job's status, its
// Pods by phase and where each of those not yet ended and counted is
// (phase, Node, readiness, finalizers, deletion, when its containers
// ended): whether the cluster (a Pod not scheduled, not started or not
// ended by kwok) or the controller (a Pod that ended long ago and is not
// counted) holds the Job up.
func (s *side) reportLate(ctx context.Context, t *testing.T, ns string, names []string) {
	t.Helper()
	const most = 3
	t.Logf("%s: no Job of %s finished for %v; %d still running, e.g. %v", s.name, ns, lateAfter, len(names), names[:min(most, len(names))])
	pods, err := s.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("%s: listing Pods of %s: %v", s.name, ns, err)
		return
	}
	for _, name := range names[:min(most, len(names))] {
		if u, err := s.dyn.Resource(s.gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Logf("%s: Job %s: %v", s.name, name, err)
		} else {
			st, _, _ := unstructured.NestedMap(u.Object, "status")
			t.Logf("%s: Job %s (resourceVersion %s): status %v", s.name, name, u.GetResourceVersion(), st)
		}
		// The Pods that ended and were counted are only counted here;
		// the others, which hold the Job up, are shown one by one.
		const mostPods = 10
		byPhase, shown := map[corev1.PodPhase]int{}, 0
		for _, p := range pods.Items {
			if ref := metav1.GetControllerOf(&p); ref == nil || ref.Name != name {
				continue
			}
			byPhase[p.Status.Phase]++
			ended := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
			if (ended && !slices.Contains(p.Finalizers, s.finalize)) || shown >= mostPods {
				continue
			}
			shown++
			t.Logf("%s:   Pod %s", s.name, podSummary(&p))
		}
		t.Logf("%s:   Pods of %s by phase: %v", s.name, name, byPhase)
	}
}

// podSummary is one line about where a Pod is.
func podSummary(p *corev1.Pod) string {
	ready := "-"
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			ready = fmt.Sprintf("%s since %s", c.Status, c.LastTransitionTime.UTC().Format(time.TimeOnly))
		}
	}
	ended := "-"
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Terminated != nil {
			ended = fmt.Sprintf("exit %d at %s", c.State.Terminated.ExitCode, c.State.Terminated.FinishedAt.UTC().Format(time.TimeOnly))
		}
	}
	deleting := "-"
	if p.DeletionTimestamp != nil {
		deleting = p.DeletionTimestamp.UTC().Format(time.TimeOnly)
	}
	return fmt.Sprintf("%s created %s node %q phase %s ready %s ended %s deletion %s finalizers %v rv %s",
		p.Name, p.CreationTimestamp.UTC().Format(time.TimeOnly), p.Spec.NodeName, p.Status.Phase, ready, ended, deleting, p.Finalizers, p.ResourceVersion)
}

// diagnose logs where the Pods of ns are (by phase, scheduled or not) and
// the end of kwok's and the controller's logs, for a run with stuck Jobs.
func (s *side) diagnose(ctx context.Context, t *testing.T, ns string) {
	t.Helper()
	pods, err := s.kube.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Logf("%s: listing Pods of %s: %v", s.name, ns, err)
		return
	}
	counts := map[string]int{}
	for i, p := range pods.Items {
		if i == 0 {
			t.Logf("%s: Pod %s: conditions %+v", s.name, p.Name, p.Status.Conditions)
		}
		key := string(p.Status.Phase)
		if p.Spec.NodeName == "" {
			key += ",unscheduled"
		}
		if p.DeletionTimestamp != nil {
			key += ",deleting"
		}
		counts[key]++
	}
	t.Logf("%s: Pods of %s by phase: %v", s.name, ns, counts)
	for _, p := range []*framework.Process{s.kwok, s.scheduler, s.controllerProcess()} {
		t.Logf("%s: last lines of %s:\n%s", s.name, p.Name, framework.Tail(p.LogFile, 6))
	}
}

// TestTrackerLate reports the unfinished Jobs, in the order they were
// created, only once some Job has finished and none has for lateAfter
// since that finish and since the last create was sent.
func TestTrackerLate(t *testing.T) {
	t0 := time.Date(2026, 12, 6, 23, 0, 0, 0, time.UTC)
	specs := []jobSpec{{name: "a"}, {name: "b"}, {name: "c"}, {name: "d"}}
	for _, tc := range []struct {
		name       string
		finished   map[string]time.Time
		quietSince time.Time
		now        time.Time
		want       []string
	}{{
		name:       "none finished: a slow start is not late",
		quietSince: t0,
		now:        t0.Add(10 * lateAfter),
	}, {
		name:       "the last finish is recent",
		finished:   map[string]time.Time{"b": t0.Add(time.Minute)},
		quietSince: t0,
		now:        t0.Add(time.Minute + lateAfter - time.Second),
	}, {
		name:       "the last create is recent",
		finished:   map[string]time.Time{"b": t0},
		quietSince: t0.Add(time.Minute),
		now:        t0.Add(time.Minute + lateAfter - time.Second),
	}, {
		name:       "quiet for lateAfter after both",
		finished:   map[string]time.Time{"b": t0, "c": t0.Add(time.Minute)},
		quietSince: t0,
		now:        t0.Add(time.Minute + lateAfter),
		want:       []string{"a", "d"},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tr := &tracker{finished: map[string]time.Time{}}
			for name, at := range tc.finished {
				tr.finished[name] = at
				tr.lastFinish = latest(tr.lastFinish, at)
			}
			if diff := cmp.Diff(tc.want, tr.late(specs, tc.now, tc.quietSince)); diff != "" {
				t.Errorf("late Jobs (-want +got):\n%s", diff)
			}
		})
	}
}
