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
	"bytes"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	"github.com/batch-apiserver/batch-apiserver/pkg/apiserver"
)

// TestStorageMediaType builds the server configuration in both modes and
// checks what the jobs storage writes: protobuf by default, as
// kube-apiserver stores, JSON or YAML with --storage-media-type; and that it
// reads every media type whatever it writes (data stored before a switch).
func TestStorageMediaType(t *testing.T) {
	aggregated := aggregatedArgs(t)

	job := &batch.Job{ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ns", Labels: map[string]string{"a": "b"}}}
	job.Spec.Template.Spec.RestartPolicy = "Never"

	for name, tc := range map[string]struct {
		args   []string
		prefix string
	}{
		"standalone default":  {nil, "k8s\x00"},
		"aggregated default":  {aggregated, "k8s\x00"},
		"standalone json":     {[]string{"--storage-media-type=application/json"}, `{"kind":"Job","apiVersion":"batch.jobs.dev/v1"`},
		"aggregated json":     {append([]string{"--storage-media-type=application/json"}, aggregated...), `{"kind":"Job","apiVersion":"batch.jobs.dev/v1"`},
		"aggregated yaml":     {append([]string{"--storage-media-type=application/yaml"}, aggregated...), "apiVersion: batch.jobs.dev/v1\nkind: Job\n"},
		"standalone protobuf": {[]string{"--storage-media-type=application/vnd.kubernetes.protobuf"}, "k8s\x00"},
	} {
		t.Run(name, func(t *testing.T) {
			_, cfg := configFor(t, append([]string{"--data-dir=" + t.TempDir()}, tc.args...)...)
			opts, err := cfg.GenericConfig.RESTOptionsGetter.GetRESTOptions(batch.Resource("jobs"), &batch.Job{})
			if err != nil {
				t.Fatalf("GetRESTOptions: %v", err)
			}
			codec := opts.StorageConfig.Codec
			data, err := runtime.Encode(codec, job)
			if err != nil {
				t.Fatalf("encoding: %v", err)
			}
			if !bytes.HasPrefix(data, []byte(tc.prefix)) {
				t.Errorf("stored %q, want it to start with %q", data, tc.prefix)
			}
			// The storage reads what any media type stored: the same Job
			// (defaulted, as every read from storage is) as what it wrote.
			want, err := runtime.Decode(codec, data)
			if err != nil {
				t.Fatalf("decoding what it wrote: %v", err)
			}
			for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeYAML, runtime.ContentTypeProtobuf} {
				other, _, err := apiserver.NewStorageCodec(mediaType)
				if err != nil {
					t.Fatal(err)
				}
				stored, err := runtime.Encode(other, job)
				if err != nil {
					t.Fatalf("encoding as %s: %v", mediaType, err)
				}
				got, err := runtime.Decode(codec, stored)
				if err != nil {
					t.Fatalf("decoding what %s storage wrote: %v", mediaType, err)
				}
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("read back what %s storage wrote (-want +got):\n%s", mediaType, diff)
				}
			}
		})
	}
}

// TestStorageMediaTypeFlag checks the flag's default and that it refuses
// what the storage cannot write.
func TestStorageMediaTypeFlag(t *testing.T) {
	if got := parseOptions(t).RecommendedOptions.Etcd.DefaultStorageMediaType; got != runtime.ContentTypeProtobuf {
		t.Errorf("--storage-media-type default %q, want %q", got, runtime.ContentTypeProtobuf)
	}
	o := parseOptions(t, "--storage-media-type=text/plain")
	if err := o.Validate(); err == nil || !strings.Contains(err.Error(), "--storage-media-type") {
		t.Errorf("Validate with --storage-media-type=text/plain: %v, want an error naming the flag", err)
	}
}

// aggregatedArgs are the flags of aggregated mode with a host cluster that
// is never contacted: the configuration only builds clients.
func aggregatedArgs(t *testing.T) []string {
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: host, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: host, user: {token: t}}]
contexts: [{name: host, context: {cluster: host, user: host}}]
current-context: host
`), 0o600); err != nil {
		t.Fatal(err)
	}
	return []string{"--etcd-servers=http://127.0.0.1:1", "--kubeconfig=" + kubeconfig,
		// The self-signed serving certificate goes here, not in the package.
		"--cert-dir=" + t.TempDir(),
		"--authentication-kubeconfig=" + kubeconfig, "--authorization-kubeconfig=" + kubeconfig,
		"--authentication-skip-lookup", "--enable-priority-and-fairness=false",
		// No admission plugin: they would fetch the host's OpenAPI in the background.
		"--disable-admission-plugins=NamespaceLifecycle,MutatingAdmissionPolicy,MutatingAdmissionWebhook,ValidatingAdmissionPolicy,ValidatingAdmissionWebhook"}
}

// configFor parses args, validates them and builds the server
// configuration on a listener of its own.
func configFor(t *testing.T, args ...string) (*Options, *apiserver.Config) {
	t.Helper()
	o := parseOptions(t, args...)
	if err := o.Validate(); err != nil {
		t.Fatalf("Validate: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ln.Close() })
	o.Listener = ln
	cfg, _, err := o.Config()
	if err != nil {
		t.Fatalf("Config: %v", err)
	}
	return o, cfg
}

// TestAdmissionClientRate checks the rate of the host cluster client the
// admission plugins get in aggregated mode: kube-apiserver's loopback rate,
// not client-go's 5 QPS, under which namespace lifecycle's lookups of a new
// namespace queued.
func TestAdmissionClientRate(t *testing.T) {
	o, cfg := configFor(t, append([]string{"--data-dir=" + t.TempDir()}, aggregatedArgs(t)...)...)
	type rate struct {
		QPS   float32
		Burst int
	}
	got := rate{cfg.GenericConfig.ClientConfig.QPS, cfg.GenericConfig.ClientConfig.Burst}
	if diff := cmp.Diff(rate{50, 100}, got); diff != "" {
		t.Errorf("admission client rate (-want +got):\n%s", diff)
	}
	if o.RecommendedOptions.CoreAPI == nil {
		t.Errorf("Config left the core API options nil")
	}
}
