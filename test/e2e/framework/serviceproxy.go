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
	"errors"
	"io"
	"net"
	"sync"
	"time"
)

// ServiceProxy stands in for a Service with several ready endpoints, which
// this host cannot have (kube-apiserver refuses loopback endpoints): it
// listens on one address and hands each new TCP connection to the next of
// its endpoints in turn. Taking an endpoint out, as the endpoint controller
// does with a Pod that stops being ready or starts terminating, sends no
// new connection to it; the connections it already has stay open until one
// side closes them, as with kube-proxy.
type ServiceProxy struct {
	ln net.Listener

	mu        sync.Mutex
	endpoints []string
	next      int
	open      map[net.Conn]struct{}
	// dialFailures counts connections no endpoint took.
	dialFailures int

	wg sync.WaitGroup
}

// StartServiceProxy listens on addr (e.g. 127.0.0.1:8443) with no
// endpoints: a connection is closed at once until SetEndpoints names one.
func StartServiceProxy(addr string) (*ServiceProxy, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	p := &ServiceProxy{ln: ln, open: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.serve()
	return p, nil
}

// Addr is the address the proxy listens on.
func (p *ServiceProxy) Addr() string { return p.ln.Addr().String() }

// SetEndpoints replaces the endpoints new connections go to.
func (p *ServiceProxy) SetEndpoints(addrs ...string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.endpoints = append([]string(nil), addrs...)
	p.next = 0
}

// Endpoints returns the endpoints new connections go to.
func (p *ServiceProxy) Endpoints() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.endpoints...)
}

// DialFailures is how many connections were closed because no endpoint
// took them.
func (p *ServiceProxy) DialFailures() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dialFailures
}

// Close stops listening, closes every open connection and waits for the
// copies to end.
func (p *ServiceProxy) Close() {
	_ = p.ln.Close()
	p.mu.Lock()
	for c := range p.open {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

func (p *ServiceProxy) serve() {
	defer p.wg.Done()
	for {
		client, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.wg.Add(1)
		go p.forward(client)
	}
}

// pick returns the endpoints in the order this connection tries them:
// round robin, then the others, so that one endpoint refusing (its
// process gone before it was taken out) does not fail the connection.
func (p *ServiceProxy) pick() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := len(p.endpoints)
	order := make([]string, 0, n)
	for i := 0; i < n; i++ {
		order = append(order, p.endpoints[(p.next+i)%n])
	}
	if n > 0 {
		p.next = (p.next + 1) % n
	}
	return order
}

func (p *ServiceProxy) track(c net.Conn, add bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if add {
		p.open[c] = struct{}{}
	} else {
		delete(p.open, c)
	}
}

func (p *ServiceProxy) forward(client net.Conn) {
	defer p.wg.Done()
	defer client.Close()
	var backend net.Conn
	for _, ep := range p.pick() {
		c, err := net.DialTimeout("tcp", ep, 5*time.Second)
		if err == nil {
			backend = c
			break
		}
	}
	if backend == nil {
		p.mu.Lock()
		p.dialFailures++
		p.mu.Unlock()
		return
	}
	defer backend.Close()
	p.track(client, true)
	p.track(backend, true)
	defer p.track(client, false)
	defer p.track(backend, false)

	// Each direction copies until its reader ends, then half-closes the
	// other side, so that a server closing its end is seen by the client.
	done := make(chan struct{}, 2)
	halfCopy := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if tc, ok := dst.(*net.TCPConn); ok {
			_ = tc.CloseWrite()
		} else {
			_ = dst.Close()
		}
		done <- struct{}{}
	}
	go halfCopy(backend, client)
	go halfCopy(client, backend)
	<-done
	<-done
}
