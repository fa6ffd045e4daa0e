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

package server

import (
	"time"

	genericapiserver "k8s.io/apiserver/pkg/server"
)

// watchTerminationGracePeriod bounds how long shutdown waits for the open
// watches to end once they have been told to. They end as soon as the server
// stops accepting requests; the period only caps the rate-limited drain of
// very many watches, so that the process exits in well under two seconds.
const watchTerminationGracePeriod = time.Second

// applyShutdown makes shutdown end the open watches at once.
//
// Without it the generic server never tells a watch that it is shutting
// down: watches are long-running requests, which neither the request
// timeout nor NonLongRunningRequestWaitGroup cover, so http.Server.Shutdown
// waits for their streams until ShutdownTimeout (the 60 s request timeout)
// and fails with "context deadline exceeded". A positive
// ShutdownWatchTerminationGracePeriod installs the filter that hands each
// watch the server's shutdown signal, on which the watch handler returns
// and its stream closes.
func applyShutdown(c *genericapiserver.Config) {
	c.ShutdownWatchTerminationGracePeriod = watchTerminationGracePeriod
}
