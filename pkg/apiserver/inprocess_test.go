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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// testBound bounds every wait of these tests; no test needs more than a
// fraction of it unless the transport is broken.
const testBound = 10 * time.Second

// waitClosed fails the test unless ch is closed within testBound.
func waitClosed(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(testBound):
		t.Fatalf("%s: not within %v", what, testBound)
	}
}

// seenRequest is what a handler saw of the server-side request.
type seenRequest struct {
	Method        string
	RequestURI    string
	Host          string
	RemoteAddr    string
	Proto         string
	ProtoMajor    int
	ProtoMinor    int
	ContentLength int64
	LengthHeader  string
	HostHeader    string
	NoBody        bool
	Body          string
	Auth          string
}

// seenResponse is what the client got.
type seenResponse struct {
	StatusCode    int
	Proto         string
	Header        http.Header
	ContentLength int64
	Body          string
}

func TestHandlerTransportRequests(t *testing.T) {
	cases := []struct {
		name   string
		method string
		url    string
		body   io.Reader
		// length overrides the request's ContentLength when set.
		length *int64
		want   seenRequest
	}{{
		name:   "GET without a body",
		method: http.MethodGet,
		url:    "https://127.0.0.1:6443/apis/batch.jobs.dev/v1/jobs?watch=true&resourceVersion=5",
		want: seenRequest{Method: "GET", RequestURI: "/apis/batch.jobs.dev/v1/jobs?watch=true&resourceVersion=5",
			Host: "127.0.0.1:6443", RemoteAddr: "127.0.0.1:0", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			NoBody: true, Auth: "Bearer t0ken"},
	}, {
		name:   "POST with a known length",
		method: http.MethodPost,
		url:    "https://loopback.example/apis/batch.jobs.dev/v1/namespaces/ns/jobs",
		body:   strings.NewReader(`{"kind":"Job"}`),
		want: seenRequest{Method: "POST", RequestURI: "/apis/batch.jobs.dev/v1/namespaces/ns/jobs",
			Host: "loopback.example", RemoteAddr: "127.0.0.1:0", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			ContentLength: 14, LengthHeader: "14", Body: `{"kind":"Job"}`, Auth: "Bearer t0ken"},
	}, {
		name:   "PUT with an unknown length",
		method: http.MethodPut,
		url:    "https://127.0.0.1:6443/apis/batch.jobs.dev/v1/namespaces/ns/jobs/a/status",
		// A plain io.Reader hides its length from http.NewRequest.
		body: io.MultiReader(strings.NewReader("status")),
		want: seenRequest{Method: "PUT", RequestURI: "/apis/batch.jobs.dev/v1/namespaces/ns/jobs/a/status",
			Host: "127.0.0.1:6443", RemoteAddr: "127.0.0.1:0", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			ContentLength: -1, Body: "status", Auth: "Bearer t0ken"},
	}, {
		name:   "PATCH",
		method: http.MethodPatch,
		url:    "https://127.0.0.1:6443/apis/batch.jobs.dev/v1/namespaces/ns/jobs/a",
		body:   bytes.NewReader([]byte(`{"spec":{}}`)),
		want: seenRequest{Method: "PATCH", RequestURI: "/apis/batch.jobs.dev/v1/namespaces/ns/jobs/a",
			Host: "127.0.0.1:6443", RemoteAddr: "127.0.0.1:0", Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			ContentLength: 11, LengthHeader: "11", Body: `{"spec":{}}`, Auth: "Bearer t0ken"},
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			seen := make(chan seenRequest, 1)
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				body, err := io.ReadAll(r.Body)
				if err != nil {
					t.Errorf("reading the request body: %v", err)
				}
				seen <- seenRequest{Method: r.Method, RequestURI: r.RequestURI, Host: r.Host, RemoteAddr: r.RemoteAddr,
					Proto: r.Proto, ProtoMajor: r.ProtoMajor, ProtoMinor: r.ProtoMinor, ContentLength: r.ContentLength,
					LengthHeader: r.Header.Get("Content-Length"), HostHeader: r.Header.Get("Host"),
					NoBody: r.Body == http.NoBody, Body: string(body), Auth: r.Header.Get("Authorization")}
				w.Header().Set("Content-Type", "text/plain")
				w.Header().Set("X-Method", r.Method)
				w.WriteHeader(http.StatusCreated)
				_, _ = io.WriteString(w, "echo:"+string(body))
			})
			req, err := http.NewRequest(tc.method, tc.url, tc.body)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer t0ken")
			resp, err := handlerTransport{handler: handler}.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			got := readResponse(t, resp)
			want := seenResponse{StatusCode: http.StatusCreated, Proto: "HTTP/1.1", ContentLength: -1,
				Header: http.Header{"Content-Type": {"text/plain"}, "X-Method": {tc.method}},
				Body:   "echo:" + tc.want.Body}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want, <-seen); diff != "" {
				t.Errorf("server-side request (-want +got):\n%s", diff)
			}
		})
	}
}

// readResponse reads all of resp and closes its body.
func readResponse(t *testing.T, resp *http.Response) seenResponse {
	t.Helper()
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading the response body: %v", err)
	}
	return seenResponse{StatusCode: resp.StatusCode, Proto: resp.Proto, Header: resp.Header,
		ContentLength: resp.ContentLength, Body: string(body)}
}

func TestHandlerTransportResponses(t *testing.T) {
	cases := []struct {
		name   string
		method string
		// handler returns the error of its last write, if it checks one.
		handler func(w http.ResponseWriter, r *http.Request) error
		want    seenResponse
		// wantWriteErr is what the handler's last write returned.
		wantWriteErr error
	}{{
		name:    "a handler that writes nothing answers 200 with an empty body",
		handler: func(w http.ResponseWriter, r *http.Request) error { return nil },
		want:    seenResponse{StatusCode: http.StatusOK, Proto: "HTTP/1.1", Header: http.Header{}, ContentLength: -1},
	}, {
		name: "a write without a header sends 200 and a guessed content type",
		handler: func(w http.ResponseWriter, r *http.Request) error {
			_, err := io.WriteString(w, "plain words")
			return err
		},
		want: seenResponse{StatusCode: http.StatusOK, Proto: "HTTP/1.1", ContentLength: -1,
			Header: http.Header{"Content-Type": {"text/plain; charset=utf-8"}}, Body: "plain words"},
	}, {
		name: "the header is the one at WriteHeader; a second status is ignored",
		handler: func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Content-Length", "2")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusNotFound)
			w.Header().Set("X-Late", "lost")
			w.WriteHeader(http.StatusInternalServerError)
			_, err := io.WriteString(w, "{}")
			return err
		},
		want: seenResponse{StatusCode: http.StatusNotFound, Proto: "HTTP/1.1", ContentLength: 2,
			Header: http.Header{"Content-Length": {"2"}, "Content-Type": {"application/json"}}, Body: "{}"},
	}, {
		name: "an informational status is no answer",
		handler: func(w http.ResponseWriter, r *http.Request) error {
			w.WriteHeader(http.StatusContinue)
			w.WriteHeader(http.StatusAccepted)
			return nil
		},
		want: seenResponse{StatusCode: http.StatusAccepted, Proto: "HTTP/1.1", Header: http.Header{}, ContentLength: -1},
	}, {
		name: "a 204 has no body",
		handler: func(w http.ResponseWriter, r *http.Request) error {
			w.WriteHeader(http.StatusNoContent)
			_, err := io.WriteString(w, "dropped")
			return err
		},
		want:         seenResponse{StatusCode: http.StatusNoContent, Proto: "HTTP/1.1", Header: http.Header{}},
		wantWriteErr: http.ErrBodyNotAllowed,
	}, {
		name:   "a HEAD has no body",
		method: http.MethodHead,
		handler: func(w http.ResponseWriter, r *http.Request) error {
			w.Header().Set("Content-Type", "text/plain")
			_, err := io.WriteString(w, "dropped")
			return err
		},
		want:         seenResponse{StatusCode: http.StatusOK, Proto: "HTTP/1.1", Header: http.Header{"Content-Type": {"text/plain"}}},
		wantWriteErr: http.ErrBodyNotAllowed,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			writeErr := make(chan error, 1)
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				writeErr <- tc.handler(w, r)
			})
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req, err := http.NewRequest(method, "https://127.0.0.1:6443/x", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := handlerTransport{handler: handler}.RoundTrip(req)
			if err != nil {
				t.Fatalf("RoundTrip: %v", err)
			}
			if diff := cmp.Diff(tc.want, readResponse(t, resp)); diff != "" {
				t.Errorf("response (-want +got):\n%s", diff)
			}
			if err := <-writeErr; !errors.Is(err, tc.wantWriteErr) {
				t.Errorf("the handler's write: %v, want %v", err, tc.wantWriteErr)
			}
		})
	}
}

// TestHandlerTransportWriterInterfaces checks the optional interfaces the
// generic server's filters look for on the writer they wrap.
func TestHandlerTransportWriterInterfaces(t *testing.T) {
	type ifaces struct{ Flusher, CloseNotifier, Hijacker bool }
	got := make(chan ifaces, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var i ifaces
		_, i.Flusher = w.(http.Flusher)
		//lint:ignore SA1019 the generic server's filters still look for it
		_, i.CloseNotifier = w.(http.CloseNotifier)
		_, i.Hijacker = w.(http.Hijacker)
		got <- i
	})
	req, err := http.NewRequest(http.MethodGet, "https://127.0.0.1:6443/x", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := handlerTransport{handler: handler}.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	readResponse(t, resp)
	if diff := cmp.Diff(ifaces{Flusher: true, CloseNotifier: true}, <-got); diff != "" {
		t.Errorf("interfaces of the writer (-want +got):\n%s", diff)
	}
}

// TestHandlerTransportStreams checks that RoundTrip returns at the first
// flush of a handler that has not finished, that each write reaches the
// client while the handler still runs, and that closing the body ends the
// handler: its context, CloseNotify and its goroutine.
func TestHandlerTransportStreams(t *testing.T) {
	next := make(chan struct{})
	returned := make(chan struct{})
	type outcome struct {
		ctxErr      error
		closeNotify bool
		writeErr    error
	}
	result := make(chan outcome, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer close(returned)
		w.Header().Set("Content-Type", "application/json")
		w.(http.Flusher).Flush()
		_, _ = io.WriteString(w, `{"type":"ADDED"}`)
		<-next
		_, _ = io.WriteString(w, `{"type":"MODIFIED"}`)
		// A watch writes until the client goes away.
		<-r.Context().Done()
		var o outcome
		o.ctxErr = r.Context().Err()
		select {
		//lint:ignore SA1019 the generic server's filters still use it
		case o.closeNotify = <-w.(http.CloseNotifier).CloseNotify():
		case <-time.After(testBound):
		}
		_, o.writeErr = io.WriteString(w, "late")
		result <- o
	})
	req, err := http.NewRequest(http.MethodGet, "https://127.0.0.1:6443/watch", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := handlerTransport{handler: handler}.RoundTrip(req)
	if err != nil {
		t.Fatalf("RoundTrip: %v", err)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "application/json" {
		t.Errorf("response: %d %v, want 200 with the JSON content type", resp.StatusCode, resp.Header)
	}
	buf := make([]byte, 64)
	var got []string
	n, err := resp.Body.Read(buf)
	if err != nil {
		t.Fatalf("reading the first event: %v", err)
	}
	got = append(got, string(buf[:n]))
	close(next)
	n, err = resp.Body.Read(buf)
	if err != nil {
		t.Fatalf("reading the second event: %v", err)
	}
	got = append(got, string(buf[:n]))
	if diff := cmp.Diff([]string{`{"type":"ADDED"}`, `{"type":"MODIFIED"}`}, got); diff != "" {
		t.Errorf("events read while the handler runs (-want +got):\n%s", diff)
	}
	select {
	case <-returned:
		t.Fatal("the handler returned before the client closed the body")
	default:
	}
	if err := resp.Body.Close(); err != nil {
		t.Errorf("closing the body: %v", err)
	}
	waitClosed(t, returned, "the handler returning after the body was closed")
	o := <-result
	if !errors.Is(o.ctxErr, context.Canceled) || !o.closeNotify || !errors.Is(o.writeErr, io.ErrClosedPipe) {
		t.Errorf("after the body was closed the handler saw context error %v, CloseNotify %v, write error %v; want %v, true, %v",
			o.ctxErr, o.closeNotify, o.writeErr, context.Canceled, io.ErrClosedPipe)
	}
}

// TestHandlerTransportCancellation checks that a client going away
// unblocks a handler in the middle of a write nobody reads, or waiting
// before its header, and that the handler's goroutine then ends.
func TestHandlerTransportCancellation(t *testing.T) {
	cases := []struct {
		name string
		// beforeHeader makes the handler wait for its context before it
		// writes anything.
		beforeHeader bool
		// cancel ends the request: by its context or by closing the body.
		cancel func(cancelCtx context.CancelFunc, resp *http.Response)
		// wantWriteErr is what the handler's blocked write returns.
		wantWriteErr error
	}{{
		name:         "context cancelled while the handler writes",
		cancel:       func(cancelCtx context.CancelFunc, _ *http.Response) { cancelCtx() },
		wantWriteErr: context.Canceled,
	}, {
		name:         "body closed while the handler writes",
		cancel:       func(_ context.CancelFunc, resp *http.Response) { resp.Body.Close() },
		wantWriteErr: io.ErrClosedPipe,
	}, {
		name:         "context cancelled before the header",
		beforeHeader: true,
		cancel:       func(cancelCtx context.CancelFunc, _ *http.Response) { cancelCtx() },
		wantWriteErr: context.Canceled,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			writing := make(chan struct{})
			returned := make(chan struct{})
			writeErr := make(chan error, 1)
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(returned)
				if tc.beforeHeader {
					close(writing)
					<-r.Context().Done()
				} else {
					w.(http.Flusher).Flush()
					close(writing)
				}
				// Nobody reads: this blocks until the client goes away.
				_, err := io.WriteString(w, "unread")
				writeErr <- err
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://127.0.0.1:6443/x", nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.beforeHeader {
				rtErr := make(chan error, 1)
				go func() {
					resp, err := handlerTransport{handler: handler}.RoundTrip(req)
					if resp != nil {
						resp.Body.Close()
					}
					rtErr <- err
				}()
				waitClosed(t, writing, "the handler starting")
				tc.cancel(cancel, nil)
				select {
				case err := <-rtErr:
					if !errors.Is(err, context.Canceled) {
						t.Errorf("RoundTrip: %v, want an error wrapping %v", err, context.Canceled)
					}
				case <-time.After(testBound):
					t.Fatal("RoundTrip did not return after the context was cancelled")
				}
			} else {
				resp, err := handlerTransport{handler: handler}.RoundTrip(req)
				if err != nil {
					t.Fatalf("RoundTrip: %v", err)
				}
				waitClosed(t, writing, "the handler flushing")
				tc.cancel(cancel, resp)
			}
			waitClosed(t, returned, "the handler returning")
			if err := <-writeErr; !errors.Is(err, tc.wantWriteErr) {
				t.Errorf("the handler's blocked write returned %v, want %v", err, tc.wantWriteErr)
			}
		})
	}
}

// TestHandlerTransportPanics checks that a panicking handler fails the
// request, before the header as RoundTrip's error and after it as the
// body's read error, and never the process (an unrecovered panic in the
// serving goroutine would end this test binary).
func TestHandlerTransportPanics(t *testing.T) {
	cases := []struct {
		name       string
		value      any
		afterBytes string
		// wantRoundTripErr is set when RoundTrip itself must fail.
		wantRoundTripErr bool
		wantText         string
	}{{
		name:             "panic before the header",
		value:            "boom",
		wantRoundTripErr: true,
		wantText:         "panic: boom",
	}, {
		name:             "ErrAbortHandler before the header",
		value:            http.ErrAbortHandler,
		wantRoundTripErr: true,
		wantText:         errHandlerAborted.Error(),
	}, {
		name:       "panic after part of the body",
		value:      fmt.Errorf("broken encoder"),
		afterBytes: `{"kind":`,
		wantText:   "panic: broken encoder",
	}, {
		name:       "ErrAbortHandler after part of the body",
		value:      http.ErrAbortHandler,
		afterBytes: `{"kind":`,
		wantText:   errHandlerAborted.Error(),
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			returned := make(chan struct{})
			handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				defer close(returned)
				if tc.afterBytes != "" {
					_, _ = io.WriteString(w, tc.afterBytes)
				}
				panic(tc.value)
			})
			req, err := http.NewRequest(http.MethodGet, "https://127.0.0.1:6443/x", nil)
			if err != nil {
				t.Fatal(err)
			}
			resp, err := handlerTransport{handler: handler}.RoundTrip(req)
			if tc.wantRoundTripErr {
				if err == nil || !errors.Is(err, errHandlerAborted) || !strings.Contains(err.Error(), tc.wantText) {
					t.Errorf("RoundTrip error: %v, want one wrapping %v and saying %q", err, errHandlerAborted, tc.wantText)
				}
				if resp != nil {
					t.Errorf("RoundTrip returned a response with its error: %d", resp.StatusCode)
				}
			} else {
				if err != nil {
					t.Fatalf("RoundTrip: %v", err)
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if string(body) != tc.afterBytes || !errors.Is(err, errHandlerAborted) || !strings.Contains(err.Error(), tc.wantText) {
					t.Errorf("body %q with read error %v; want %q and an error wrapping %v saying %q",
						body, err, tc.afterBytes, errHandlerAborted, tc.wantText)
				}
			}
			waitClosed(t, returned, "the handler returning")
		})
	}
}

func TestInProcessConfig(t *testing.T) {
	limiter := flowcontrol.NewFakeAlwaysRateLimiter()
	loopback := &rest.Config{
		Host:        "https://127.0.0.1:6443",
		BearerToken: "loopback-token",
		UserAgent:   "batch-apiserver/test",
		QPS:         -1,
		Burst:       7,
		RateLimiter: limiter,
		ContentConfig: rest.ContentConfig{
			ContentType:        "application/vnd.kubernetes.protobuf",
			AcceptContentTypes: "application/vnd.kubernetes.protobuf,application/json",
		},
		TLSClientConfig: rest.TLSClientConfig{
			ServerName: "apiserver-loopback-client",
			CAData:     []byte("not a real CA, and never parsed"),
			Insecure:   false,
			NextProtos: []string{"h2"},
		},
	}
	served := make(chan string, 1)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		served <- r.Header.Get("Authorization") + " " + r.Header.Get("User-Agent") + " " + r.Header.Get("Accept-Encoding")
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"kind":"Status","apiVersion":"v1","status":"Success"}`)
	})
	cfg := InProcessConfig(loopback, handler)

	type kept struct {
		Host, BearerToken, UserAgent, ContentType, Accept string
		QPS                                               float32
		Burst                                             int
		SameLimiter                                       bool
		TLS                                               rest.TLSClientConfig
	}
	keptOf := func(c *rest.Config) kept {
		return kept{Host: c.Host, BearerToken: c.BearerToken, UserAgent: c.UserAgent, ContentType: c.ContentType,
			Accept: c.AcceptContentTypes, QPS: c.QPS, Burst: c.Burst, SameLimiter: c.RateLimiter == limiter, TLS: c.TLSClientConfig}
	}
	want := keptOf(loopback)
	want.TLS = rest.TLSClientConfig{}
	if diff := cmp.Diff(want, keptOf(cfg)); diff != "" {
		t.Errorf("in-process config (-want +got):\n%s", diff)
	}
	if loopback.Transport != nil || loopback.TLSClientConfig.ServerName != "apiserver-loopback-client" {
		t.Errorf("the loopback config was changed: transport %v, TLS %+v", loopback.Transport, loopback.TLSClientConfig)
	}

	// client-go accepts the config and its requests reach the handler
	// with the loopback credentials and without asking for gzip.
	cfg.NegotiatedSerializer = scheme.Codecs.WithoutConversion()
	client, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		t.Fatalf("client-go refuses the in-process config: %v", err)
	}
	body, err := client.Get().AbsPath("/apis").DoRaw(context.Background())
	if err != nil {
		t.Fatalf("GET through the in-process config: %v", err)
	}
	if diff := cmp.Diff(`{"kind":"Status","apiVersion":"v1","status":"Success"}`, string(body)); diff != "" {
		t.Errorf("body (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff("Bearer loopback-token batch-apiserver/test ", <-served); diff != "" {
		t.Errorf("authorization, user agent and accept-encoding the handler saw (-want +got):\n%s", diff)
	}
}
