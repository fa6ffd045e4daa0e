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

// Package e2e runs batch-apiserver aggregated into a real kube-apiserver
// (with a real kube-controller-manager) and standalone, and drives both with
// a real kubectl. One host cluster serves the whole package; the tests run
// in sequence.
package e2e

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// startTimeout bounds the start of the host cluster.
const startTimeout = 4 * time.Minute

var (
	// cluster is the host cluster with batch-apiserver aggregated into it.
	cluster *framework.Cluster
	// bins are the binaries under test.
	bins *framework.Binaries
)

func TestMain(m *testing.M) {
	// The HA tests run etcd members as copies of this binary.
	if ran, code := framework.RunEtcdMemberIfAsked(); ran {
		os.Exit(code)
	}
	os.Exit(testMain(m))
}

// defaultParallel is how many parallel tests run at once when -parallel is
// not given. The controller tests mostly wait for the controllers, so more
// of them than GOMAXPROCS (go test's default) can run on 2 cores.
const defaultParallel = "8"

func testMain(m *testing.M) int {
	flag.Parse()
	parallelSet := false
	flag.Visit(func(f *flag.Flag) { parallelSet = parallelSet || f.Name == "test.parallel" })
	if !parallelSet {
		if err := flag.Set("test.parallel", defaultParallel); err != nil {
			fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
			return 1
		}
	}
	begin := time.Now()
	dir, err := os.MkdirTemp("", "batch-apiserver-e2e-")
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}
	// E2E_KEEP_DIR=1 keeps the certificates, kubeconfigs and logs.
	keep := os.Getenv("E2E_KEEP_DIR") != ""
	defer func() {
		if keep {
			fmt.Fprintf(os.Stderr, "e2e: kept %s (logs in %s/logs)\n", dir, dir)
			return
		}
		_ = os.RemoveAll(dir)
	}()

	bins, err = framework.FindBinaries(dir)
	if err != nil {
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		return 1
	}

	ctx, cancel := context.WithTimeout(context.Background(), startTimeout)
	defer cancel()
	cluster, err = framework.StartCluster(ctx, bins, dir)
	if err != nil {
		keep = true
		fmt.Fprintf(os.Stderr, "e2e: %v\n", err)
		cluster.DumpLogs(os.Stderr, 80)
		return 1
	}
	defer cluster.Stop()
	started := time.Since(begin)

	// An interrupted run still stops its processes. (A panic or -timeout
	// kills the test binary; the children die with it through their
	// parent-death signal.)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		sig := <-sigs
		fmt.Fprintf(os.Stderr, "e2e: %v, stopping the cluster\n", sig)
		cluster.Stop()
		os.Exit(2)
	}()

	code := m.Run()
	if code != 0 {
		keep = true
		cluster.DumpLogs(os.Stderr, 80)
	}
	fmt.Fprintf(os.Stderr, "e2e: cluster started in %v (", started.Round(time.Millisecond))
	for i, p := range cluster.Phases {
		if i > 0 {
			fmt.Fprint(os.Stderr, ", ")
		}
		fmt.Fprintf(os.Stderr, "%s %v", p.Name, p.Duration.Round(time.Millisecond))
	}
	fmt.Fprintf(os.Stderr, "); whole package %v\n", time.Since(begin).Round(time.Millisecond))
	return code
}
