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

// Command client is an example of the generated Go client of batch.jobs.dev:
// it creates a Job with a pod failure policy by server-side apply (the
// generated apply configurations), watches it to completion (the generated
// informers) and prints its conditions.
//
// Against the standalone server (`make run`), which runs no Pods:
//
//	go run ./examples/client --kubeconfig data/kubeconfig
//
// waits until another controller finishes the Job; against a cluster where
// batch-apiserver's Job controller runs, the Job's Pods run and it completes:
//
//	go run ./examples/client --namespace default --timeout 5m
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/batch-apiserver/batch-apiserver/examples/client/jobwatch"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
)

func main() {
	kubeconfig := flag.String("kubeconfig", defaultKubeconfig(), "kubeconfig of the cluster serving batch.jobs.dev (default $KUBECONFIG, then ~/.kube/config)")
	namespace := flag.String("namespace", "default", "namespace of the Job")
	name := flag.String("name", "jobwatch-example", "name of the Job")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long to wait for the Job to finish")
	flag.Parse()

	if err := run(*kubeconfig, *namespace, *name, *timeout); err != nil {
		fmt.Fprintf(os.Stderr, "error: %v\n", err)
		os.Exit(1)
	}
}

func run(kubeconfig, namespace, name string, timeout time.Duration) error {
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		return fmt.Errorf("loading kubeconfig %q: %w", kubeconfig, err)
	}
	client, err := versioned.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building the clientset: %w", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	_, err = jobwatch.Run(ctx, client, namespace, name, os.Stdout)
	return err
}

// defaultKubeconfig is $KUBECONFIG (its first file) or ~/.kube/config.
func defaultKubeconfig() string {
	if env := filepath.SplitList(os.Getenv("KUBECONFIG")); len(env) > 0 && env[0] != "" {
		return env[0]
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".kube", "config")
	}
	return ""
}
