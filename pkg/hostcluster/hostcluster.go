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

// Package hostcluster says how the server reaches the cluster that hosts
// it: the client configuration of the host (--kubeconfig, else the
// in-cluster config) and the namespace the server runs in there. The Job
// controller runs its Pods and keeps its Lease in the host; the
// self-managed Secrets of the aggregated mode are kept there too.
package hostcluster

import (
	"fmt"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

const (
	// PodNamespaceEnv names the environment variable the Deployment sets
	// from the downward API to the namespace of the server's Pod.
	PodNamespaceEnv = "POD_NAMESPACE"
	// inClusterNamespaceFile holds the namespace of the Pod the server runs
	// in, when it runs in a cluster with a ServiceAccount token mounted.
	inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"
)

// ClientConfig returns the client configuration of the host cluster that
// kubeconfig names, or of the cluster the server runs in when kubeconfig
// is empty, loaded as the generic server's CoreAPI options load it. The
// caller sets its rate.
func ClientConfig(kubeconfig string) (*rest.Config, error) {
	if kubeconfig != "" {
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{})
		cfg, err := loader.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("loading host cluster kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if err != nil {
		return nil, fmt.Errorf("loading in-cluster config of the host cluster: %w", err)
	}
	return cfg, nil
}

// Namespace is the namespace the server runs in: $POD_NAMESPACE, else the
// namespace of the in-cluster ServiceAccount, else "default". getenv and
// readFile are os.Getenv and os.ReadFile outside tests.
func Namespace(getenv func(string) string, readFile func(string) ([]byte, error)) string {
	if ns := getenv(PodNamespaceEnv); ns != "" {
		return ns
	}
	if data, err := readFile(inClusterNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(data)); ns != "" {
			return ns
		}
	}
	return metav1.NamespaceDefault
}
