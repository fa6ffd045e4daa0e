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
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/client-go/kubernetes"

	jobcontroller "github.com/batch-apiserver/batch-apiserver/pkg/controller/job"
)

// AddPostStartHookWithHost registers the controller's post-start hook on
// s, as Start does, with host as the host cluster's client (Pods, Events,
// informers), no leader election and the given server identity; it
// returns the runner's wait. For the external test, which runs the server
// pkg/cmd/server builds against a fake host.
func AddPostStartHookWithHost(s *genericapiserver.GenericAPIServer, host kubernetes.Interface, identity string) (wait func(), err error) {
	opts := NewOptions()
	opts.LeaderElection.LeaderElect = false
	r := &jobControllerRunner{
		opts:           opts,
		cfg:            jobcontroller.Config{Identity: identity},
		kubeClient:     host,
		informerClient: host,
		done:           make(chan struct{}),
	}
	if err := r.addPostStartHook(s); err != nil {
		return nil, err
	}
	return r.wait, nil
}
