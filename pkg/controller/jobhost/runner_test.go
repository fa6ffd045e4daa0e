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
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"path"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	versionedfake "github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned/fake"
)

// TestControllerClientBudgets checks that the controller's host writes,
// its Job status writes and its informers each draw on a limiter of their
// own, all at --kube-api-qps, or on none when it is negative.
func TestControllerClientBudgets(t *testing.T) {
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["host"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	cfg.AuthInfos["sa"] = &clientcmdapi.AuthInfo{Token: "t"}
	cfg.Contexts["host"] = &clientcmdapi.Context{Cluster: "host", AuthInfo: "sa"}
	cfg.CurrentContext = "host"
	if err := clientcmd.WriteToFile(*cfg, kubeconfig); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		qps       float32
		burst     int32
		wantLimit bool
	}{
		"limited":   {qps: 7, burst: 9, wantLimit: true},
		"unlimited": {qps: -1, burst: 0, wantLimit: false},
	} {
		t.Run(name, func(t *testing.T) {
			opts := NewOptions()
			opts.LeaderElection.LeaderElect = false
			opts.KubeAPIQPS, opts.KubeAPIBurst = tc.qps, tc.burst
			r, err := newJobControllerRunner(opts, Plan{Run: true, Kubeconfig: kubeconfig, Identity: "id"})
			if err != nil {
				t.Fatal(err)
			}
			writes := r.kubeClient.CoreV1().RESTClient().GetRateLimiter()
			informers := r.informerClient.CoreV1().RESTClient().GetRateLimiter()
			if !tc.wantLimit {
				if r.writes != nil || r.statusWrites != nil || writes != nil || informers != nil {
					t.Fatalf("limiters: writes %v, status writes %v, host client %v, informers %v; want none",
						r.writes, r.statusWrites, writes, informers)
				}
				return
			}
			if r.writes == nil || writes != r.writes {
				t.Fatalf("host client's limiter %p, writes %p: want the writes' one", writes, r.writes)
			}
			if r.statusWrites == nil || r.statusWrites == r.writes || informers == nil || informers == r.writes || informers == r.statusWrites {
				t.Fatalf("limiters: host writes %p, status writes %p, informers %p; want three", r.writes, r.statusWrites, informers)
			}
			if got := []float32{writes.QPS(), r.statusWrites.QPS(), informers.QPS()}; !cmp.Equal(got, []float32{tc.qps, tc.qps, tc.qps}) {
				t.Errorf("QPS of host writes, status writes, informers = %v, want %v each", got, tc.qps)
			}
		})
	}
}

func TestLeaseNamespace(t *testing.T) {
	cases := map[string]struct {
		flag string
		env  string
		file string // empty: no file
		want string
	}{
		"flag wins":                     {flag: "flag-ns", env: "env-ns", file: "file-ns", want: "flag-ns"},
		"POD_NAMESPACE":                 {env: "env-ns", file: "file-ns", want: "env-ns"},
		"in-cluster ServiceAccount":     {file: "file-ns\n", want: "file-ns"},
		"empty ServiceAccount file":     {file: " \n", want: "default"},
		"outside a cluster: default ns": {want: "default"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			getenv := func(key string) string {
				if key == "POD_NAMESPACE" {
					return tc.env
				}
				return ""
			}
			readFile := func(path string) ([]byte, error) {
				if path != "/var/run/secrets/kubernetes.io/serviceaccount/namespace" || tc.file == "" {
					return nil, fs.ErrNotExist
				}
				return []byte(tc.file), nil
			}
			if got := leaseNamespace(tc.flag, getenv, readFile); got != tc.want {
				t.Errorf("leaseNamespace = %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStartJobControllerOff checks that a server without a cluster prints
// exactly one line and registers no hook.
func TestStartJobControllerOff(t *testing.T) {
	plan := NewPlan(true, true, "")
	var lines []string
	wait, err := Start(context.Background(), nil, NewOptions(), plan, func(l string) { lines = append(lines, l) })
	if err != nil {
		t.Fatalf("Start: %v", err)
	}
	wait()
	if diff := cmp.Diff([]string{plan.Off}, lines); diff != "" {
		t.Errorf("printed lines (-want +got):\n%s", diff)
	}
}

// TestStartJobControllerBadKubeconfig checks that a kubeconfig that cannot
// be loaded fails the server at startup, not later in a hook.
func TestStartJobControllerBadKubeconfig(t *testing.T) {
	plan := NewPlan(true, true, t.TempDir()+"/missing")
	plan.Identity = "0b5c7a4e-5d7e-4c39-9f1e-3a2b1c0d9e8f"
	_, err := Start(context.Background(), nil, NewOptions(), plan, func(string) {})
	if !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Start error = %v, want one wrapping fs.ErrNotExist", err)
	}
}

// TestStartJobControllerWithoutIdentity checks that the controller never
// starts without the server identity, which its Pods and Lease need.
func TestStartJobControllerWithoutIdentity(t *testing.T) {
	plan := NewPlan(true, true, t.TempDir()+"/missing")
	_, err := Start(context.Background(), nil, NewOptions(), plan, func(string) {})
	if err == nil || !strings.Contains(err.Error(), "no server identity") {
		t.Errorf("Start error = %v, want one saying there is no server identity", err)
	}
}

// TestLeaseName checks the Lease's name: the flag's when given, else one
// of its own per server identity, valid as a Lease name.
func TestLeaseName(t *testing.T) {
	const identity = "0b5c7a4e-5d7e-4c39-9f1e-3a2b1c0d9e8f"
	type result struct {
		Name   string
		Errors []string
	}
	cases := map[string]struct {
		flag string
		want result
	}{
		"default: named after the identity": {want: result{Name: "batch-apiserver-job-controller-" + identity}},
		"explicit name kept":                {flag: "batch-apiserver-job-controller", want: result{Name: "batch-apiserver-job-controller"}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := leaseName(tc.flag, identity)
			if diff := cmp.Diff(tc.want, result{Name: got, Errors: validation.IsDNS1123Subdomain(got)}); diff != "" {
				t.Errorf("leaseName(%q, %q) (-want +got):\n%s", tc.flag, identity, diff)
			}
		})
	}
}

// TestServerPodsSelector checks that the Pod informer's selector takes the
// Pods of this server only: not another server's, not Pods without the
// label.
func TestServerPodsSelector(t *testing.T) {
	const identity = "0b5c7a4e-5d7e-4c39-9f1e-3a2b1c0d9e8f"
	sel, err := labels.Parse(serverPodsSelector(identity))
	if err != nil {
		t.Fatalf("parsing %q: %v", serverPodsSelector(identity), err)
	}
	pods := map[string]labels.Set{
		"ours":          {"batch.jobs.dev/server-identity": identity, "job-name": "j"},
		"another's":     {"batch.jobs.dev/server-identity": "6f1d2c3b-0a9e-4d8c-8b7a-1e2f3a4b5c6d", "job-name": "j"},
		"without label": {"job-name": "j"},
	}
	var got []string
	for name, l := range pods {
		if sel.Matches(l) {
			got = append(got, name)
		}
	}
	if diff := cmp.Diff([]string{"ours"}, got); diff != "" {
		t.Errorf("Pods the selector %q takes (-want +got):\n%s", sel, diff)
	}
}

// TestJobInformerTrimsJobs checks that the controller's Job informer
// applies the controller's transform: a Job the controller runs is cached
// without managedFields (with 150 000 Jobs stored, the entries of their
// creators and status writers are a copy the controller never reads) and
// with its Pod template, and one another controller manages is cached as
// a stand-in of a few fields, not as a Job (what the stand-in keeps is
// tested with the controller).
func TestJobInformerTrimsJobs(t *testing.T) {
	managedFields := []metav1.ManagedFieldsEntry{
		{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch.jobs.dev/v1", FieldsType: "FieldsV1",
			FieldsV1: metav1.NewFieldsV1(`{"f:spec":{"f:completions":{}}}`)},
		{Manager: "dispatcher", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "batch.jobs.dev/v1", Subresource: "status",
			FieldsType: "FieldsV1", FieldsV1: metav1.NewFieldsV1(`{"f:status":{"f:succeeded":{}}}`)},
	}
	template := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "a"}},
		Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}
	job := func(name string, managedBy *string) *batchv1.Job {
		return &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: "ns", Name: name, ResourceVersion: "7", Labels: map[string]string{"team": "a"},
				ManagedFields: managedFields,
			},
			Spec:   batchv1.JobSpec{Completions: ptr.To[int32](3), ManagedBy: managedBy, Template: template},
			Status: batchv1.JobStatus{Succeeded: 1},
		}
	}
	ours, external := job("ours", nil), job("external", ptr.To("example.com/dispatcher"))
	factory := newJobInformerFactory(versionedfake.NewClientset(ours.DeepCopy(), external.DeepCopy()))
	indexer := factory.Batch().V1().Jobs().Informer().GetIndexer()
	ctx, cancel := context.WithCancel(context.Background())
	// Shutdown waits for the informers, which stop when ctx ends.
	defer factory.Shutdown()
	defer cancel()
	factory.Start(ctx.Done())
	for typ, ok := range factory.WaitForCacheSync(ctx.Done()) {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	wantOurs := ours.DeepCopy()
	wantOurs.ManagedFields = nil
	got, _, err := indexer.GetByKey("ns/ours")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(any(wantOurs), got); diff != "" {
		t.Errorf("Job ours in the controller's cache (-want +got):\n%s", diff)
	}
	got, found, err := indexer.GetByKey("ns/external")
	if err != nil || !found {
		t.Fatalf("external Job in the controller's cache: found %v, %v", found, err)
	}
	if _, isJob := got.(*batchv1.Job); isJob {
		t.Errorf("the external Job is cached whole as a %T; want the controller's stand-in", got)
	}
	m, err := meta.Accessor(got)
	if err != nil {
		t.Fatalf("the cached stand-in of the external Job has no metadata: %v", err)
	}
	if m.GetNamespace() != "ns" || m.GetName() != "external" || m.GetResourceVersion() != "7" {
		t.Errorf("cached stand-in is %s/%s at %s; want ns/external at 7", m.GetNamespace(), m.GetName(), m.GetResourceVersion())
	}
}

// TestPodInformerAsksForNoGzip checks that the Pod informer's client does
// not accept gzip (the host would compress its watch of every Pod update)
// while the host client it is made from still does, as client-go's default.
func TestPodInformerAsksForNoGzip(t *testing.T) {
	got := map[string]string{}
	var mu sync.Mutex
	host := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got[path.Base(r.UserAgent())] = r.Header.Get("Accept-Encoding")
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"kind":"PodList","apiVersion":"v1","metadata":{},"items":[]}`)
	}))
	defer host.Close()
	// Over TLS, as every host is: client-go shares one transport, which
	// keeps its own compression setting, for every plain-HTTP config.
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: host.Certificate().Raw})
	hostConfig := &rest.Config{Host: host.URL, UserAgent: "host", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}
	for _, cfg := range []*rest.Config{hostConfig, hostInformerConfig(hostConfig)} {
		client, err := kubernetes.NewForConfig(cfg)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := client.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	want := map[string]string{"host": "gzip", "job-controller-informers": ""}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("Accept-Encoding by user agent (-want +got):\n%s", diff)
	}
}
