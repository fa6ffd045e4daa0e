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

package jobhost_test

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	genericapiserver "k8s.io/apiserver/pkg/server"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/apiserver"
	"github.com/batch-apiserver/batch-apiserver/pkg/certs"
	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/server"
	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/server/servertest"
	"github.com/batch-apiserver/batch-apiserver/pkg/controller/jobhost"
	"github.com/batch-apiserver/batch-apiserver/pkg/embeddedetcd/etcdtest"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
)

// testBound bounds the waits of this test; it needs a fraction of it
// unless the in-process path is broken.
const testBound = 10 * time.Second

// TestJobControllerInProcess starts the server's real handler chain (with
// etcd), as pkg/cmd/server builds it, and the Job controller through its
// post-start hook (addPostStartHook), with a fake host
// cluster: a Job created over the network gets its Pods from the
// controller, which learnt of the Job from its in-process informer, and the
// status the controller writes in process is the one stored. A request
// without the loopback token is refused, which shows the in-process path
// runs authentication.
func TestJobControllerInProcess(t *testing.T) {
	endpoints := etcdtest.Start(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("listening: %v", err)
	}
	o := server.NewOptions(nil)
	o.DataDir = t.TempDir()
	o.Listener = ln
	if err := o.Complete(); err != nil {
		t.Fatalf("completing options: %v", err)
	}
	o.RecommendedOptions.Etcd.StorageConfig.Transport.ServerList = endpoints
	if err := o.Validate(); err != nil {
		t.Fatalf("validating options: %v", err)
	}
	config, pki, err := o.Config()
	if err != nil {
		t.Fatalf("building the server config: %v", err)
	}
	// The test's own client is the admin of the network endpoint, as Run
	// makes it.
	serverURL := "https://" + ln.Addr().String()
	if err := certs.WriteAdminKubeconfig(filepath.Join(o.DataDir, server.KubeconfigFileName), serverURL, pki); err != nil {
		t.Fatalf("writing the admin kubeconfig: %v", err)
	}
	built, err := config.Complete().New()
	if err != nil {
		t.Fatalf("building the server: %v", err)
	}
	s := built.GenericAPIServer

	host := k8sfake.NewClientset()
	// The fake host does not make names from generateName; each Pod of
	// the Job must have its own.
	var podCount atomic.Int32
	host.PrependReactor("create", "pods", func(action k8stesting.Action) (bool, runtime.Object, error) {
		pod := action.(k8stesting.CreateAction).GetObject().(*corev1.Pod)
		if pod.Name == "" {
			pod.Name = fmt.Sprintf("%s%d", pod.GenerateName, podCount.Add(1))
		}
		return false, nil, nil
	})
	waitForController, err := jobhost.AddPostStartHookWithHost(s, host, "in-process-test")
	if err != nil {
		t.Fatalf("adding the controller's hook: %v", err)
	}
	loopback := make(chan *rest.Config, 1)
	if err := s.AddPostStartHook("test-loopback-config", func(hookCtx genericapiserver.PostStartHookContext) error {
		loopback <- hookCtx.LoopbackClientConfig
		return nil
	}); err != nil {
		t.Fatalf("adding the test's hook: %v", err)
	}

	ctx, cancel := context.WithCancel(context.Background())
	stopped := make(chan error, 1)
	go func() { stopped <- s.PrepareRun().RunWithContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-stopped:
			if err != nil {
				t.Errorf("server stopped with an error: %v", err)
			}
		case <-time.After(time.Minute):
			t.Errorf("the server did not stop within a minute")
		}
		waitForController()
	})

	client := servertest.ReadyClient(t, filepath.Join(o.DataDir, server.KubeconfigFileName), stopped)
	var loopbackConfig *rest.Config
	select {
	case loopbackConfig = <-loopback:
	case <-time.After(testBound):
		t.Fatal("the post-start hooks did not run")
	}

	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "in-process"},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2),
			Completions: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "busybox:1.36"}},
			}},
		},
	}
	if _, err := client.BatchV1().Jobs("default").Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating the Job: %v", err)
	}
	var active int32
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		got, err := client.BatchV1().Jobs("default").Get(ctx, "in-process", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		active = got.Status.Active
		return active == 2, nil
	})
	if err != nil {
		t.Fatalf("waiting for the controller to write status.active=2 (last seen %d): %v", active, err)
	}
	pods, err := host.CoreV1().Pods("default").List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("listing the host's Pods: %v", err)
	}
	var names []string
	for _, p := range pods.Items {
		names = append(names, p.Name)
	}
	sort.Strings(names)
	if diff := cmp.Diff([]string{"in-process-1", "in-process-2"}, names); diff != "" {
		t.Errorf("Pods the controller created on the host (-want +got):\n%s", diff)
	}

	// The same path without the loopback token: authentication refuses it.
	anonymous := apiserver.InProcessConfig(loopbackConfig, s.Handler)
	anonymous.BearerToken = ""
	anonymousClient, err := versioned.NewForConfig(anonymous)
	if err != nil {
		t.Fatalf("creating the tokenless in-process client: %v", err)
	}
	_, err = anonymousClient.BatchV1().Jobs("default").List(ctx, metav1.ListOptions{})
	if !apierrors.IsUnauthorized(err) {
		t.Errorf("listing Jobs in process without the loopback token: %v, want 401 Unauthorized", err)
	}
}
