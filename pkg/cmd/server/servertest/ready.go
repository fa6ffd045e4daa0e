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

// Package servertest holds what the tests of a whole running server share.
package servertest

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
)

// ReadyClient polls until the admin kubeconfig at kubeconfig exists and the
// server it names answers /readyz with 200, then returns a client built
// from it. The test fails when stopped delivers first (the server's Run
// returned) or after a minute.
func ReadyClient(t *testing.T, kubeconfig string, stopped <-chan error) versioned.Interface {
	t.Helper()
	var client versioned.Interface
	poll := func(ctx context.Context) (bool, error) {
		select {
		case err := <-stopped:
			t.Fatalf("server stopped while starting: %v", err)
		default:
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
		if err != nil {
			return false, nil // the server has not written it yet
		}
		c, err := versioned.NewForConfig(cfg)
		if err != nil {
			return false, err
		}
		var code int
		c.Discovery().RESTClient().Get().AbsPath("/readyz").Do(ctx).StatusCode(&code)
		if code != 200 {
			return false, nil
		}
		client = c
		return true, nil
	}
	if err := wait.PollUntilContextTimeout(context.Background(), 100*time.Millisecond, time.Minute, true, poll); err != nil {
		t.Fatalf("waiting for the server to be ready: %v", err)
	}
	return client
}
