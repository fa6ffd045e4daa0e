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

package apiserver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime/debug"
	"strconv"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
)

// inProcessRemoteAddr is the client address the handler sees for an
// in-process request. The generic server's filters (audit's source IPs, the
// request log, priority and fairness) split RemoteAddr into host and port;
// the caller is this very process, so the loopback address stands for it,
// and port 0 says that no socket is behind it.
const inProcessRemoteAddr = "127.0.0.1:0"

// errHandlerAborted is what the client gets when the handler panicked.
var errHandlerAborted = errors.New("in-process handler aborted the response")

// InProcessConfig returns a copy of loopback whose requests are served by
// handler in this process instead of over the network: no connection, no
// TLS, no HTTP/2 and no gzip (nothing asks for it), while the request still
// passes every filter handler runs (authentication by loopback's bearer
// token, authorization, admission, priority and fairness, audit).
// Credentials, user agent, rate limits and content types stay as the caller
// set them.
func InProcessConfig(loopback *rest.Config, handler http.Handler) *rest.Config {
	cfg := rest.CopyConfig(loopback)
	cfg.Transport = handlerTransport{handler: handler}
	// client-go refuses a Transport of our own together with a CA, client
	// certificates, a certificate callback or the insecure flag, and the
	// rest of the TLS settings (server name, ALPN) mean nothing without a
	// connection.
	cfg.TLSClientConfig = rest.TLSClientConfig{}
	// Only client-go's own transports dial or use a proxy.
	cfg.Dial = nil
	cfg.Proxy = nil
	return cfg
}

// handlerTransport is an http.RoundTripper that serves every request by
// calling handler in a goroutine of its own, as net/http's server would for
// a request read from a connection. The response streams: RoundTrip returns
// once the handler has written its header (or written, or flushed), and the
// body is fed by the handler's writes through a pipe, so a watch streams
// for as long as the handler writes.
//
// The handler's ResponseWriter is an http.Flusher and an http.CloseNotifier,
// which the generic server's filters expect of the writer they wrap, but not
// an http.Hijacker: there is no connection to take over, so upgraded
// requests (exec, port-forward, websockets) cannot be made through it.
type handlerTransport struct {
	handler http.Handler
}

var _ http.RoundTripper = handlerTransport{}

// RoundTrip serves req with the handler. Closing the response body or
// ending req's context cancels the handler's context and fails any write
// the handler is blocked in. A panic of the handler is recovered: before
// the header it is RoundTrip's error, after it the body's read error.
func (t handlerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	clientCtx := req.Context()
	ctx, cancel := context.WithCancel(clientCtx)
	serverReq := newServerRequest(ctx, req)

	pr, pw := io.Pipe()
	// The handler may be blocked writing to a client that went away; the
	// pipe's reader must be closed for that write to return.
	stopOnClientDone := context.AfterFunc(clientCtx, func() {
		pr.CloseWithError(clientCtx.Err())
	})
	w := &pipeResponseWriter{
		req:         serverReq,
		header:      make(http.Header),
		pipe:        pw,
		committed:   make(chan struct{}),
		closeNotify: make(chan bool, 1),
	}
	// CloseNotify must report the client's going away (the context ends
	// with it); the buffered channel keeps the send from blocking.
	context.AfterFunc(ctx, func() {
		select {
		case w.closeNotify <- true:
		default:
		}
	})

	go t.serve(w, serverReq, req, cancel)

	select {
	case <-w.committed:
	case <-clientCtx.Done():
		// The handler's context is already done with the client's; it
		// runs on until it notices, writing into a closed pipe.
		stopOnClientDone()
		pr.CloseWithError(clientCtx.Err())
		return nil, fmt.Errorf("in-process %s %s: %w", req.Method, req.URL.Path, clientCtx.Err())
	}
	if w.failure != nil {
		stopOnClientDone()
		pr.CloseWithError(w.failure)
		return nil, fmt.Errorf("in-process %s %s: %w", req.Method, req.URL.Path, w.failure)
	}

	resp := &http.Response{
		Status:        strconv.Itoa(w.status) + " " + http.StatusText(w.status),
		StatusCode:    w.status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        w.sent,
		ContentLength: -1,
		Request:       req,
		Body: &responseBody{
			pipe:   pr,
			cancel: cancel,
			stop:   stopOnClientDone,
		},
	}
	if n, err := strconv.ParseInt(w.sent.Get("Content-Length"), 10, 64); err == nil && n >= 0 {
		resp.ContentLength = n
	}
	if !bodyAllowed(req.Method, w.status) {
		resp.ContentLength = 0
	}
	return resp, nil
}

// serve runs the handler on serverReq and ends the response when it
// returns or panics. No panic may leave this goroutine: nothing above it
// would recover it, and the process would crash.
func (t handlerTransport) serve(w *pipeResponseWriter, serverReq, clientReq *http.Request, cancel context.CancelFunc) {
	var failure error
	defer func() {
		if p := recover(); p != nil {
			failure = errHandlerAborted
			// The generic server's timeout filter aborts with this value
			// on purpose, and net/http's server keeps quiet about it too.
			if p != http.ErrAbortHandler {
				klog.FromContext(serverReq.Context()).Error(nil, "In-process request handler panicked",
					"method", serverReq.Method, "path", serverReq.URL.Path, "panic", p, "stack", string(debug.Stack()))
				failure = fmt.Errorf("%w: panic: %v", errHandlerAborted, p)
			}
		}
		w.finish(failure)
		cancel()
		// A RoundTripper owns the request body and must close it.
		if clientReq.Body != nil {
			_ = clientReq.Body.Close()
		}
	}()
	t.handler.ServeHTTP(w, serverReq)
}

// newServerRequest turns a client request into the request net/http's
// server would hand a handler for it, on ctx.
func newServerRequest(ctx context.Context, req *http.Request) *http.Request {
	r := req.Clone(ctx)
	r.Proto, r.ProtoMajor, r.ProtoMinor = "HTTP/1.1", 1, 1
	r.RequestURI = req.URL.RequestURI()
	r.RemoteAddr = inProcessRemoteAddr
	if r.Host == "" {
		r.Host = req.URL.Host
	}
	// A server never puts Host among the headers, and its handlers read
	// a body that is never nil.
	r.Header.Del("Host")
	switch {
	case req.Body == nil || req.Body == http.NoBody:
		r.Body = http.NoBody
		r.ContentLength = 0
	case req.ContentLength > 0:
		r.Header.Set("Content-Length", strconv.FormatInt(req.ContentLength, 10))
	default:
		// A client request with a body and a length of 0 has a length
		// nobody knows yet; a server says so with -1.
		r.ContentLength = -1
	}
	r.GetBody = nil
	r.Close = false
	return r
}

// bodyAllowed reports whether a response to method with status may have a
// body, by HTTP's rules.
func bodyAllowed(method string, status int) bool {
	if method == http.MethodHead {
		return false
	}
	return status != http.StatusNoContent && status != http.StatusNotModified && (status < 100 || status > 199)
}

// pipeResponseWriter is the handler's side of one in-process response:
// the header is handed to RoundTrip through committed, the body is written
// into the pipe whose other end is the response body.
type pipeResponseWriter struct {
	req    *http.Request
	header http.Header
	pipe   *io.PipeWriter

	// mu guards the header state; the body writes do not hold it, since
	// they may block until the client reads.
	mu sync.Mutex
	// committed is closed once status and sent, or failure, are set; they
	// do not change afterwards.
	committed chan struct{}
	done      bool
	status    int
	// sent is a copy of header taken when it was written: later changes
	// to header reach no client, as over the network.
	sent    http.Header
	failure error
	// noBody is set when the status or method forbid a body.
	noBody bool

	closeNotify chan bool
}

var (
	_ http.ResponseWriter = &pipeResponseWriter{}
	_ http.Flusher        = &pipeResponseWriter{}
	//lint:ignore SA1019 responsewriter.WrapForHTTP1Or2 keeps Flusher only on a writer that is also a CloseNotifier
	_ http.CloseNotifier = &pipeResponseWriter{}
)

// Header returns the header the next WriteHeader sends.
func (w *pipeResponseWriter) Header() http.Header {
	return w.header
}

// WriteHeader sends the status and header; a second call is ignored, as
// are informational statuses, which are no final answer.
func (w *pipeResponseWriter) WriteHeader(status int) {
	if status >= 100 && status <= 199 && status != http.StatusSwitchingProtocols {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commitLocked(status, nil)
}

// commitLocked sets the response's status and header, or its failure, once.
func (w *pipeResponseWriter) commitLocked(status int, failure error) {
	if w.done {
		return
	}
	w.done = true
	w.status = status
	w.sent = w.header.Clone()
	w.failure = failure
	w.noBody = !bodyAllowed(w.req.Method, status)
	close(w.committed)
}

// Write writes p to the body, sending a 200 header first if none was
// sent. It blocks until the client has read p, and fails once the client
// has closed the body or gone away.
func (w *pipeResponseWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if !w.done {
		// As net/http, the type of a body the handler did not name is
		// guessed from its first bytes.
		if _, named := w.header["Content-Type"]; !named && w.header.Get("Content-Encoding") == "" && len(p) > 0 {
			w.header.Set("Content-Type", http.DetectContentType(p))
		}
		w.commitLocked(http.StatusOK, nil)
	}
	noBody := w.noBody
	w.mu.Unlock()
	if noBody {
		return 0, http.ErrBodyNotAllowed
	}
	return w.pipe.Write(p)
}

// Flush sends the header if it was not sent yet. Every write already
// reaches the client when Write returns: the pipe holds nothing back.
func (w *pipeResponseWriter) Flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.commitLocked(http.StatusOK, nil)
}

// CloseNotify returns a channel that receives true when the client has
// gone away or closed the body.
//
// Deprecated: kept for the generic server's filters, which require it of
// the writer they wrap; handlers use the request's context.
func (w *pipeResponseWriter) CloseNotify() <-chan bool {
	return w.closeNotify
}

// finish ends the response once the handler has returned: a handler that
// wrote nothing answers 200 with an empty body, as over net/http; failure,
// when set, fails RoundTrip if no header was sent and the body's reads
// otherwise.
func (w *pipeResponseWriter) finish(failure error) {
	w.mu.Lock()
	w.commitLocked(http.StatusOK, failure)
	w.mu.Unlock()
	// CloseWithError(nil) ends the body with io.EOF.
	_ = w.pipe.CloseWithError(failure)
}

// responseBody is the client's side of the response.
type responseBody struct {
	pipe *io.PipeReader
	// cancel ends the handler's context.
	cancel context.CancelFunc
	// stop unregisters the close of pipe on the client's context.
	stop      func() bool
	closeOnce sync.Once
}

// Read reads what the handler writes.
func (b *responseBody) Read(p []byte) (int, error) {
	n, err := b.pipe.Read(p)
	if errors.Is(err, io.EOF) {
		// The handler is done: a late end of the client's context must
		// not turn the end of the body into an error.
		b.stop()
	}
	return n, err
}

// Close tells the handler the client is gone: its context ends and its
// writes fail.
func (b *responseBody) Close() error {
	b.closeOnce.Do(func() {
		b.stop()
		b.cancel()
		_ = b.pipe.Close()
	})
	return nil
}
