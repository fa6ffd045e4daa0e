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

package integration

import (
	"context"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// testTimeout bounds every wait in this package: a watch event, a poll.
const testTimeout = 30 * time.Second

// Labels the server generates on a Job's pod template (and so, through the
// Job defaults, on the Job itself when it has no labels of its own).
const (
	testLabelControllerUID       = "batch.jobs.dev/controller-uid"
	testLabelJobName             = "batch.jobs.dev/job-name"
	testLabelLegacyControllerUID = "controller-uid"
	testLabelLegacyJobName       = "job-name"
)

// testJobWrapper builds a batch.jobs.dev/v1 Job for the integration tests.
// The zero Job it starts from is the smallest valid one: a pod template with
// restartPolicy Never and one container.
type testJobWrapper struct {
	batchv1.Job
}

// newTestJob returns a builder for a Job named name in namespace.
func newTestJob(namespace, name string) *testJobWrapper {
	return &testJobWrapper{batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.36"}},
				},
			},
		},
	}}
}

// Obj returns a copy of the Job built so far.
func (w *testJobWrapper) Obj() *batchv1.Job {
	return w.Job.DeepCopy()
}

// Labels sets the Job's own labels.
func (w *testJobWrapper) Labels(labels map[string]string) *testJobWrapper {
	w.ObjectMeta.Labels = labels
	return w
}

// TemplateLabels sets the labels of the pod template.
func (w *testJobWrapper) TemplateLabels(labels map[string]string) *testJobWrapper {
	w.Spec.Template.Labels = labels
	return w
}

// Completions sets spec.completions.
func (w *testJobWrapper) Completions(n int32) *testJobWrapper {
	w.Spec.Completions = ptr.To(n)
	return w
}

// Parallelism sets spec.parallelism.
func (w *testJobWrapper) Parallelism(n int32) *testJobWrapper {
	w.Spec.Parallelism = ptr.To(n)
	return w
}

// Suspend sets spec.suspend.
func (w *testJobWrapper) Suspend(suspend bool) *testJobWrapper {
	w.Spec.Suspend = ptr.To(suspend)
	return w
}

// ManualSelector sets spec.manualSelector to true and the selector to matchLabels.
func (w *testJobWrapper) ManualSelector(matchLabels map[string]string) *testJobWrapper {
	w.Spec.ManualSelector = ptr.To(true)
	w.Spec.Selector = &metav1.LabelSelector{MatchLabels: matchLabels}
	return w
}

// RestartPolicy sets the pod template's restartPolicy.
func (w *testJobWrapper) RestartPolicy(p corev1.RestartPolicy) *testJobWrapper {
	w.Spec.Template.Spec.RestartPolicy = p
	return w
}

// Containers replaces the template's containers with one busybox container per name.
func (w *testJobWrapper) Containers(names ...string) *testJobWrapper {
	w.Spec.Template.Spec.Containers = nil
	for _, name := range names {
		w.Spec.Template.Spec.Containers = append(w.Spec.Template.Spec.Containers,
			corev1.Container{Name: name, Image: "busybox:1.36"})
	}
	return w
}

// Annotation sets one annotation on the Job.
func (w *testJobWrapper) Annotation(key, value string) *testJobWrapper {
	if w.Annotations == nil {
		w.Annotations = map[string]string{}
	}
	w.Annotations[key] = value
	return w
}

// Status sets the status the request carries (the server decides what it keeps).
func (w *testJobWrapper) Status(status batchv1.JobStatus) *testJobWrapper {
	w.Job.Status = status
	return w
}

// newTestJobCondition returns a Job condition with the given type and status.
func newTestJobCondition(conditionType batchv1.JobConditionType, status corev1.ConditionStatus, reason string) batchv1.JobCondition {
	return batchv1.JobCondition{Type: conditionType, Status: status, Reason: reason}
}

// newTestJobGeneratedLabels returns the labels the server puts on the
// template of a Job (without a manual selector) with the given name and UID.
func newTestJobGeneratedLabels(name, uid string) map[string]string {
	return map[string]string{
		testLabelControllerUID:       uid,
		testLabelJobName:             name,
		testLabelLegacyControllerUID: uid,
		testLabelLegacyJobName:       name,
	}
}

// newTestJobDefaultedPodSpec returns the pod spec of newTestJob's template
// after the core/v1 defaults kube-apiserver applies to a Job's template
// (as `kubectl get job -o yaml` shows them), with one busybox:1.36 container
// per name.
func newTestJobDefaultedPodSpec(containerNames ...string) corev1.PodSpec {
	spec := corev1.PodSpec{
		RestartPolicy:                 corev1.RestartPolicyNever,
		TerminationGracePeriodSeconds: ptr.To[int64](30),
		DNSPolicy:                     corev1.DNSClusterFirst,
		SecurityContext:               &corev1.PodSecurityContext{},
		SchedulerName:                 "default-scheduler",
	}
	for _, name := range containerNames {
		spec.Containers = append(spec.Containers, corev1.Container{
			Name:                     name,
			Image:                    "busybox:1.36",
			TerminationMessagePath:   "/dev/termination-log",
			TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			ImagePullPolicy:          corev1.PullIfNotPresent,
		})
	}
	return spec
}

// ignoreServerSetMeta ignores the metadata only the server chooses, for
// comparing a response with an expected object built by hand.
var ignoreServerSetMeta = cmpopts.IgnoreFields(metav1.ObjectMeta{},
	"UID", "ResourceVersion", "CreationTimestamp", "ManagedFields")

// ignoreWriteMeta ignores the metadata every write changes, for comparing
// the result of a write with the object before it.
var ignoreWriteMeta = cmpopts.IgnoreFields(metav1.ObjectMeta{}, "ResourceVersion", "ManagedFields")

// ignoreTypeMeta ignores apiVersion and kind: the typed clients decode into
// Go types and may leave them empty in some responses and not in others.
var ignoreTypeMeta = cmpopts.IgnoreFields(metav1.TypeMeta{}, "Kind", "APIVersion")

// testNamespace returns a namespace name unique to the (sub)test, so that
// tests sharing a server never see each other's Jobs. The server runs no
// namespace lifecycle admission, so the namespace need not exist.
func testNamespace(t *testing.T) string {
	name := strings.ToLower(t.Name())
	name = regexp.MustCompile(`[^a-z0-9]+`).ReplaceAllString(name, "-")
	name = strings.Trim(name, "-")
	if len(name) > 63 {
		name = strings.Trim(name[len(name)-63:], "-")
	}
	return name
}

// testContext returns a context bounded by testTimeout and cancelled at the end of the test.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// testWarningRecorder collects the Warning headers a client receives.
type testWarningRecorder struct {
	mu       sync.Mutex
	warnings []string
}

// HandleWarningHeader implements rest.WarningHandler.
func (r *testWarningRecorder) HandleWarningHeader(code int, agent string, text string) {
	if code != 299 || text == "" {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.warnings = append(r.warnings, text)
}

// take returns the warnings received since the last call and forgets them.
func (r *testWarningRecorder) take() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	w := r.warnings
	r.warnings = nil
	return w
}

// newTestClient returns a clientset for the server's admin configuration
// without client-side rate limiting: client-go's default of 5 requests per
// second would make these tests wait on the client, not the server.
func newTestClient(t *testing.T, ts *framework.TestServer) versioned.Interface {
	t.Helper()
	client, _ := newTestClientWithWarnings(t, ts.ClientConfig)
	return client
}

// newTestClientWithWarnings returns a clientset for cfg, without client-side
// rate limiting, whose Warning headers go to the returned recorder.
func newTestClientWithWarnings(t *testing.T, cfg *rest.Config) (versioned.Interface, *testWarningRecorder) {
	t.Helper()
	recorder := &testWarningRecorder{}
	cfg = rest.CopyConfig(cfg)
	cfg.WarningHandler = recorder
	cfg.QPS = -1
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		t.Fatalf("building clientset: %v", err)
	}
	return client, recorder
}

// nextTestWatchEvent returns the next event of w, failing the test when none
// arrives in time or the watch closes.
func nextTestWatchEvent(ctx context.Context, t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatalf("watch closed while waiting for an event")
		}
		return ev
	case <-ctx.Done():
		t.Fatalf("no watch event: %v", ctx.Err())
	}
	return watch.Event{}
}
