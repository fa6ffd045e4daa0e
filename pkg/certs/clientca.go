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

package certs

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"k8s.io/apiserver/pkg/authentication/authenticatorfactory"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/apiserver/pkg/server/healthz"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

const (
	// authenticationConfigMap is where kube-apiserver publishes the CA of
	// the client certificates it accepts, for aggregated servers.
	authenticationConfigMapNamespace = "kube-system"
	authenticationConfigMapName      = "extension-apiserver-authentication"

	// clientCALoadTimeout bounds the first read of that ConfigMap at start.
	clientCALoadTimeout = 10 * time.Second
)

// LoadDelegatedClientCA gives delegated authentication a client CA that is
// loaded before the server serves, and returns a readyz check that fails
// while it holds no CA.
//
// Left to the generic options, the CA of client certificates comes from the
// ConfigMap through a controller that first reads it a moment after the
// server is already serving and reporting ready: in that moment a client
// with a valid certificate was treated as system:anonymous and got 403 (seen
// on a fresh replica under load). The request-header CA, by contrast, is
// read once before serving; this does the same for the client CA.
//
// It does nothing when there is no delegated authentication (a is nil), a
// client CA is given by flag, in-cluster lookup is off, or there is no
// cluster to read it from: the generic options handle those as before.
func LoadDelegatedClientCA(a *genericoptions.DelegatingAuthenticationOptions) (healthz.HealthChecker, error) {
	if a == nil || a.SkipInClusterLookup || a.ClientCert.ClientCA != "" || a.ClientCert.CAContentProvider != nil {
		return nil, nil
	}
	cfg, err := delegatedAuthenticationConfig(a.RemoteKubeConfigFile, a.RemoteKubeConfigFileOptional)
	if err != nil || cfg == nil {
		return nil, err
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("delegated authentication client: %w", err)
	}
	ca, err := dynamiccertificates.NewDynamicCAFromConfigMapController("client-ca",
		authenticationConfigMapNamespace, authenticationConfigMapName, "client-ca-file", client)
	if err != nil {
		return nil, fmt.Errorf("configmap %s/%s client CA: %w", authenticationConfigMapNamespace, authenticationConfigMapName, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), clientCALoadTimeout)
	defer cancel()
	// RunOnce logs nothing and returns no error when the ConfigMap cannot
	// be read; the readyz check below then says so until the controller,
	// which the server runs, has read it.
	_ = ca.RunOnce(ctx)
	if len(ca.CurrentCABundleContent()) == 0 {
		klog.Background().Info("Client CA not loaded yet; /readyz fails until it is",
			"configMap", authenticationConfigMapNamespace+"/"+authenticationConfigMapName)
	}
	a.ClientCert.CAContentProvider = ca
	return healthz.NamedCheck("client-ca", func(*http.Request) error {
		if len(ca.CurrentCABundleContent()) == 0 {
			return errors.New("the client-ca-file of " + authenticationConfigMapNamespace + "/" + authenticationConfigMapName + " is not loaded yet")
		}
		return nil
	}), nil
}

// delegatedAuthenticationConfig is the client configuration delegated
// authentication uses: --authentication-kubeconfig, else in-cluster; nil
// when neither exists and the kubeconfig is optional.
func delegatedAuthenticationConfig(kubeconfig string, optional bool) (*rest.Config, error) {
	if kubeconfig != "" {
		loader := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(
			&clientcmd.ClientConfigLoadingRules{ExplicitPath: kubeconfig}, &clientcmd.ConfigOverrides{})
		cfg, err := loader.ClientConfig()
		if err != nil {
			return nil, fmt.Errorf("--authentication-kubeconfig %s: %w", kubeconfig, err)
		}
		return cfg, nil
	}
	cfg, err := rest.InClusterConfig()
	if errors.Is(err, rest.ErrNotInCluster) && optional {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("in-cluster configuration for delegated authentication: %w", err)
	}
	return cfg, nil
}

// RequestHeaderReady is a readyz check that fails until delegated
// authentication has loaded what it needs to accept a request the host's
// aggregator forwards: the front-proxy CA (requestheader-client-ca-file of
// kube-system/extension-apiserver-authentication) and the names of the
// headers that carry the user. The generic server loads both in the
// background and its /readyz does not wait for them, so a replica that had
// just become ready answered forwarded requests with 401 Unauthorized
// ("certificate signed by unknown authority") for a moment: a rolling
// update put it behind the APIService too early. Nil when rh is nil (no
// front proxy to trust).
func RequestHeaderReady(rh *authenticatorfactory.RequestHeaderConfig) healthz.HealthChecker {
	if rh == nil || rh.CAContentProvider == nil {
		return nil
	}
	return healthz.NamedCheck("requestheader-client-ca", func(*http.Request) error {
		if len(rh.CAContentProvider.CurrentCABundleContent()) == 0 {
			return errors.New("the requestheader-client-ca-file of " + authenticationConfigMapNamespace + "/" + authenticationConfigMapName + " is not loaded yet")
		}
		if rh.UsernameHeaders == nil || len(rh.UsernameHeaders.Value()) == 0 {
			return errors.New("the requestheader-username-headers of " + authenticationConfigMapNamespace + "/" + authenticationConfigMapName + " are not loaded yet")
		}
		return nil
	})
}
