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

package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	upbatchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
)

// target is one server in one wire format, behind the operations the
// benchmark times.
type target interface {
	create(ctx context.Context, ns, name string) error
	get(ctx context.Context, ns, name string) error
	updateStatus(ctx context.Context, ns, name string) error
	delete(ctx context.Context, ns, name string) error
	// list returns the bytes of one page and its continue token.
	list(ctx context.Context, ns string, limit int64, cont string) (int, string, error)
	// watch watches ns from rv on a connection of its own and sends the
	// name of every ADDED Job to added.
	watch(ctx context.Context, ns, rv string, added chan<- string) error
	// resourceVersion returns the list resourceVersion of ns.
	resourceVersion(ctx context.Context, ns string) (string, error)
	// config is the client configuration of the server.
	config() *rest.Config
}

// benchJob is the realistic Job every server gets: one container with a
// command, 10 env vars and resources, a podFailurePolicy with two rules, 6
// labels and 4 annotations (about 2 KB as JSON).
func benchJob(name string) *upbatchv1.Job {
	var env []corev1.EnvVar
	for i := range 10 {
		env = append(env, corev1.EnvVar{Name: fmt.Sprintf("BENCH_VAR_%d", i), Value: fmt.Sprintf("value-%d-of-the-benchmark-job", i)})
	}
	labels := map[string]string{}
	annotations := map[string]string{}
	for i := range 6 {
		labels[fmt.Sprintf("bench.jobs.dev/label-%d", i)] = fmt.Sprintf("value-%d", i)
	}
	for i := range 4 {
		annotations[fmt.Sprintf("bench.jobs.dev/annotation-%d", i)] = fmt.Sprintf("a longer annotation value number %d for the benchmark", i)
	}
	backoff := int32(6)
	return &upbatchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels, Annotations: annotations},
		Spec: upbatchv1.JobSpec{
			BackoffLimit: &backoff,
			PodFailurePolicy: &upbatchv1.PodFailurePolicy{Rules: []upbatchv1.PodFailurePolicyRule{
				{Action: upbatchv1.PodFailurePolicyActionFailJob, OnExitCodes: &upbatchv1.PodFailurePolicyOnExitCodesRequirement{
					ContainerName: ptr("main"), Operator: upbatchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
				{Action: upbatchv1.PodFailurePolicyActionIgnore, OnPodConditions: []upbatchv1.PodFailurePolicyOnPodConditionsPattern{
					{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}}},
			}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "bench"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name:    "main",
						Image:   "registry.example.com/bench/worker:1.0",
						Command: []string{"/bin/worker", "--mode=batch", "--input=/data/in", "--output=/data/out"},
						Env:     env,
						Resources: corev1.ResourceRequirements{
							Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
							Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("512Mi")},
						},
					}},
				},
			},
		},
	}
}

func ptr[T any](v T) *T { return &v }

// ourJob is benchJob as a batch.jobs.dev Job: the same fields, so the same
// JSON.
func ourJob(name string) *batchv1.Job {
	data, err := json.Marshal(benchJob(name))
	if err != nil {
		panic(err)
	}
	var job batchv1.Job
	if err := json.Unmarshal(data, &job); err != nil {
		panic(err)
	}
	job.APIVersion, job.Kind = "", ""
	return &job
}

// ownConnection makes client-go give cfg a transport of its own (a custom
// dialer is never shared), so that each watcher has its own connection.
func ownConnection(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.Dial = (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	return cfg
}

// noRetries drops Retry-After from responses: client-go retries a request
// only when the server asks with it, and the benchmark counts each request
// once.
type noRetries struct{ rt http.RoundTripper }

func (n noRetries) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := n.rt.RoundTrip(req)
	if resp != nil {
		resp.Header.Del("Retry-After")
	}
	return resp, err
}

// loadConfig is cfg without client-side throttling or retries, in
// contentType.
func loadConfig(cfg *rest.Config, contentType string) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return noRetries{rt} })
	cfg.ContentType = contentType
	cfg.AcceptContentTypes = contentType
	cfg.Timeout = time.Minute
	return cfg
}

// upstreamTarget is kube-apiserver's batch/v1.
type upstreamTarget struct {
	cfg    *rest.Config
	client kubernetes.Interface
}

func newUpstreamTarget(cfg *rest.Config, contentType string) (*upstreamTarget, error) {
	cfg = loadConfig(cfg, contentType)
	c, err := kubernetes.NewForConfig(cfg)
	return &upstreamTarget{cfg: cfg, client: c}, err
}

func (u *upstreamTarget) config() *rest.Config { return u.cfg }

func (u *upstreamTarget) create(ctx context.Context, ns, name string) error {
	_, err := u.client.BatchV1().Jobs(ns).Create(ctx, benchJob(name), metav1.CreateOptions{})
	return err
}

func (u *upstreamTarget) get(ctx context.Context, ns, name string) error {
	_, err := u.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	return err
}

func (u *upstreamTarget) updateStatus(ctx context.Context, ns, name string) error {
	job, err := u.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	job.Status.StartTime, job.Status.Active = &now, job.Status.Active+1
	_, err = u.client.BatchV1().Jobs(ns).UpdateStatus(ctx, job, metav1.UpdateOptions{})
	return err
}

func (u *upstreamTarget) delete(ctx context.Context, ns, name string) error {
	return u.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

func (u *upstreamTarget) list(ctx context.Context, ns string, limit int64, cont string) (int, string, error) {
	return rawList(ctx, u.client.BatchV1().RESTClient(), u.cfg.ContentType, ns, limit, cont, func(data []byte) (string, error) {
		var l upbatchv1.JobList
		_, _, err := scheme.upstream.Decode(data, nil, &l)
		return l.Continue, err
	})
}

func (u *upstreamTarget) watch(ctx context.Context, ns, rv string, added chan<- string) error {
	c, err := kubernetes.NewForConfig(ownConnection(u.cfg))
	if err != nil {
		return err
	}
	w, err := c.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		return err
	}
	go forward(ctx, w, added, func(obj any) string { return obj.(*upbatchv1.Job).Name })
	return nil
}

func (u *upstreamTarget) resourceVersion(ctx context.Context, ns string) (string, error) {
	l, err := u.client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return "", err
	}
	return l.ResourceVersion, nil
}

// ourTarget is batch.jobs.dev/v1 on batch-apiserver.
type ourTarget struct {
	cfg    *rest.Config
	client versioned.Interface
}

func newOurTarget(cfg *rest.Config, contentType string) (*ourTarget, error) {
	cfg = loadConfig(cfg, contentType)
	c, err := versioned.NewForConfig(cfg)
	return &ourTarget{cfg: cfg, client: c}, err
}

func (o *ourTarget) config() *rest.Config { return o.cfg }

func (o *ourTarget) create(ctx context.Context, ns, name string) error {
	_, err := o.client.BatchV1().Jobs(ns).Create(ctx, ourJob(name), metav1.CreateOptions{})
	return err
}

func (o *ourTarget) get(ctx context.Context, ns, name string) error {
	_, err := o.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	return err
}

func (o *ourTarget) updateStatus(ctx context.Context, ns, name string) error {
	job, err := o.client.BatchV1().Jobs(ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	now := metav1.Now()
	job.Status.StartTime, job.Status.Active = &now, job.Status.Active+1
	_, err = o.client.BatchV1().Jobs(ns).UpdateStatus(ctx, job, metav1.UpdateOptions{})
	return err
}

func (o *ourTarget) delete(ctx context.Context, ns, name string) error {
	return o.client.BatchV1().Jobs(ns).Delete(ctx, name, metav1.DeleteOptions{})
}

func (o *ourTarget) list(ctx context.Context, ns string, limit int64, cont string) (int, string, error) {
	return rawList(ctx, o.client.BatchV1().RESTClient(), o.cfg.ContentType, ns, limit, cont, func(data []byte) (string, error) {
		var l batchv1.JobList
		_, _, err := scheme.ours.Decode(data, nil, &l)
		return l.Continue, err
	})
}

func (o *ourTarget) watch(ctx context.Context, ns, rv string, added chan<- string) error {
	c, err := versioned.NewForConfig(ownConnection(o.cfg))
	if err != nil {
		return err
	}
	w, err := c.BatchV1().Jobs(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: rv})
	if err != nil {
		return err
	}
	go forward(ctx, w, added, func(obj any) string { return obj.(*batchv1.Job).Name })
	return nil
}

func (o *ourTarget) resourceVersion(ctx context.Context, ns string) (string, error) {
	l, err := o.client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{Limit: 1})
	if err != nil {
		return "", err
	}
	return l.ResourceVersion, nil
}

// rawList GETs one page of Jobs in ns and returns its size on the wire and
// its continue token.
func rawList(ctx context.Context, c rest.Interface, contentType, ns string, limit int64, cont string, next func([]byte) (string, error)) (int, string, error) {
	req := c.Get().Namespace(ns).Resource("jobs").SetHeader("Accept", contentType)
	if limit > 0 {
		req = req.Param("limit", strconv.FormatInt(limit, 10))
	}
	if cont != "" {
		req = req.Param("continue", cont)
	}
	data, err := req.DoRaw(ctx)
	if err != nil {
		return 0, "", err
	}
	token, err := next(data)
	return len(data), token, err
}

// forward sends the names of ADDED objects until the watch or ctx ends.
func forward(ctx context.Context, w watch.Interface, added chan<- string, name func(any) string) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if ev.Type == watch.Added {
				select {
				case added <- name(ev.Object):
				case <-ctx.Done():
					return
				}
			}
		}
	}
}
