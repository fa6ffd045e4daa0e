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

package framework

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Standalone is batch-apiserver running on its own: embedded etcd, its own
// CA, and the admin kubeconfig it writes in its data dir.
type Standalone struct {
	Process *Process
	DataDir string
	// Kubeconfig is <data dir>/kubeconfig, written by the server.
	Kubeconfig string
	URL        string
}

// StartStandalone runs the batch-apiserver binary with only --data-dir and
// a port on 127.0.0.1, and waits until it is ready through the kubeconfig
// it writes. extraArgs (for example "-v=10") follow those flags.
func StartStandalone(ctx context.Context, bin, dataDir, logDir string, extraArgs ...string) (*Standalone, error) {
	port, err := freePort()
	if err != nil {
		return nil, err
	}
	args := append([]string{
		"--data-dir=" + dataDir,
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
	}, extraArgs...)
	p, err := StartProcess(logDir, "batch-apiserver-standalone", bin, args...)
	if err != nil {
		return nil, err
	}
	s := &Standalone{
		Process:    p,
		DataDir:    dataDir,
		Kubeconfig: filepath.Join(dataDir, "kubeconfig"),
		URL:        "https://127.0.0.1:" + strconv.Itoa(port),
	}
	var last string
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		if err := p.Exited(); err != nil {
			return false, err
		}
		if _, err := os.Stat(s.Kubeconfig); err != nil {
			last = err.Error()
			return false, nil
		}
		cfg, err := clientcmd.BuildConfigFromFlags("", s.Kubeconfig)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		if cfg.Host != s.URL {
			return false, fmt.Errorf("the kubeconfig points at %s, want %s", cfg.Host, s.URL)
		}
		client, err := rest.HTTPClientFor(cfg)
		if err != nil {
			return false, err
		}
		client.Timeout = 5 * time.Second
		resp, err := client.Get(s.URL + "/readyz")
		if err != nil {
			last = err.Error()
			return false, nil
		}
		_ = resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == 200, nil
	})
	if err != nil {
		p.Stop()
		return nil, fmt.Errorf("waiting for the standalone server (last: %s): %w\nlog %s:\n%s", last, err, p.LogFile, Tail(p.LogFile, 40))
	}
	return s, nil
}

// Stop stops the server.
func (s *Standalone) Stop() { s.Process.Stop() }
