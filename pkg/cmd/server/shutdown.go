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
	"fmt"
	"net/http"
	"time"

	"github.com/spf13/pflag"
	genericapiserver "k8s.io/apiserver/pkg/server"
)

// watchTerminationGracePeriod bounds how long shutdown waits for the open
// watches to end once they have been told to. They end as soon as the server
// stops accepting requests; the period only caps the rate-limited drain of
// very many watches, so that the process exits in well under two seconds.
const watchTerminationGracePeriod = time.Second

// ShutdownOptions say how a replica leaves: how long it keeps serving after
// SIGTERM, and what a request that reaches it afterwards is told.
//
// The flags are kube-apiserver's. The one default that differs is
// SendRetryAfter, on here: a replica of an aggregated server is taken out of
// its Service while the aggregator still holds connections to it, and
// without it a write sent on one of those just as it closes is answered 503
// by the aggregator and not retried by the client.
type ShutdownOptions struct {
	// Delay is how long the replica serves as usual after SIGTERM with a
	// failing /readyz, for the Service's endpoints to drop it first.
	Delay time.Duration
	// SendRetryAfter keeps the listener open after Delay until the requests
	// in flight are done, answering every new request 429 with Retry-After
	// and Connection: close, so that clients retry on a new connection,
	// which the Service sends to another replica.
	SendRetryAfter bool
}

// NewShutdownOptions returns the defaults: no delay (standalone mode has no
// Service to leave; the Deployment sets one), Retry-After answers on.
func NewShutdownOptions() *ShutdownOptions {
	return &ShutdownOptions{SendRetryAfter: true}
}

// AddFlags adds --shutdown-delay-duration and --shutdown-send-retry-after.
func (o *ShutdownOptions) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&o.Delay, "shutdown-delay-duration", o.Delay,
		"How long the server keeps serving after SIGTERM before it starts to stop. Meanwhile /readyz fails while /livez and /healthz pass, "+
			"so that a load balancer or Service stops sending new connections first.")
	fs.BoolVar(&o.SendRetryAfter, "shutdown-send-retry-after", o.SendRetryAfter,
		"If true, once the shutdown delay is over the server keeps listening until the requests in flight are done and answers every new request "+
			"429 with a Retry-After header and 'Connection: close', which clients retry on a new connection. If false it stops listening at once, "+
			"and a request sent on a connection as it closes fails (kube-apiserver's default).")
}

// Validate refuses a negative delay.
func (o *ShutdownOptions) Validate() []error {
	if o.Delay < 0 {
		return []error{fmt.Errorf("--shutdown-delay-duration must not be negative, got %s", o.Delay)}
	}
	return nil
}

// applyShutdown sets the generic server's shutdown from o, makes it end the
// open watches at once, and, from the moment stopping is closed (SIGTERM),
// asks every client to leave the connection its request came on.
//
// Without the watch grace period the generic server never tells a watch that
// it is shutting down: watches are long-running requests, which neither the
// request timeout nor NonLongRunningRequestWaitGroup cover, so
// http.Server.Shutdown waits for their streams until ShutdownTimeout (the
// 60 s request timeout) and fails with "context deadline exceeded". A
// positive ShutdownWatchTerminationGracePeriod installs the filter that hands
// each watch the server's shutdown signal, on which the watch handler returns
// and its stream closes.
func applyShutdown(c *genericapiserver.Config, o *ShutdownOptions, stopping <-chan struct{}) {
	c.ShutdownWatchTerminationGracePeriod = watchTerminationGracePeriod
	c.ShutdownDelayDuration = o.Delay
	c.ShutdownSendRetryAfter = o.SendRetryAfter
	build := c.BuildHandlerChainFunc
	c.BuildHandlerChainFunc = func(h http.Handler, c *genericapiserver.Config) http.Handler {
		return withConnectionDrain(build(h, c), stopping)
	}
}

// withConnectionDrain answers every request as usual, and once stopping is
// closed adds Connection: close to the answer.
//
// It is what makes the shutdown delay useful behind a Service: the clients
// that hold a connection to this replica (the aggregator's pool, through
// kube-proxy) keep using it after the replica has left the endpoints, and
// without being told would do so until the server closes it, when a write
// sent at that moment fails. Told at their next answer, HTTP/1.1 clients
// close the connection after reading it and dial again, reaching a replica
// that stays; a connection still idle when the delay ends is the only one
// closed under a client. Over HTTP/2 the header makes the server send
// GOAWAY, which a client may cross with a new stream: the aggregator cannot
// resend a proxied body, hence --disable-http2-serving in the Deployment.
func withConnectionDrain(h http.Handler, stopping <-chan struct{}) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-stopping:
			w.Header().Set("Connection", "close")
		default:
		}
		h.ServeHTTP(w, r)
	})
}
