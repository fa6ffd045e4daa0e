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

package e2e

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/batch-apiserver/batch-apiserver/pkg/certs"
	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// installRotationArgs make the self-managed certificates short-lived, so
// that a whole CA rotation (next CA, trust, switch, retirement of the old
// one) happens within about a minute. They are hidden flags; the
// Deployment's own arguments are kept as they are.
var installRotationArgs = []string{
	"--serving-cert-lifetime=20s",
	"--serving-ca-lifetime=60s",
	"--serving-ca-trust-grace=3s",
	"--serving-secret-sync-period=1s",
}

// TestInstall installs artifacts/deploy into a host of its own with
// `kubectl apply -k`, starts batch-apiserver as a process with the
// Deployment container's arguments, and waits for both APIServices to be
// Available with no other step: no certificate script, no caBundle patch,
// no Secret made by hand. It then keeps requests going through the
// aggregator while the server rotates its CA, and counts the failures,
// which must be 0.
//
// What differs from a Pod: no container runtime runs the Deployment or
// the etcd StatefulSet here. The process gets the host's etcd, 127.0.0.1
// and a free port instead of the Pod network, the ServiceAccount's
// kubeconfig instead of the in-cluster config, and the emptyDir under a
// temporary directory; the Service becomes an ExternalName of 127.0.0.1
// (framework.Cluster.ProcessArgs and PointServiceAtLocalHost). The
// manifests, the RBAC the server runs with, its other flags and
// everything it does to the Secret and the APIServices are the real ones.
func TestInstall(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	dir := t.TempDir()
	host, err := framework.StartClusterWith(ctx, bins, filepath.Join(dir, "host"),
		framework.ClusterOptions{NoBatchAPIServer: true, NoControllerManager: true})
	if err != nil {
		if host != nil {
			host.DumpLogs(os.Stderr, 40)
		}
		t.Fatal(err)
	}
	t.Cleanup(host.Stop)
	defer func() {
		if t.Failed() {
			host.DumpLogs(os.Stderr, 60)
		}
	}()

	rendered, err := host.RenderDeploy()
	if err != nil {
		t.Fatal(err)
	}
	deployDir := host.Artifact(framework.DeployDir)
	host.Kubectl().MustRun(t, "apply", "--dry-run=server", "-k", deployDir)
	host.Kubectl().MustRun(t, "apply", "-k", deployDir)

	ctr, err := framework.DeployedBatchAPIServer(rendered)
	if err != nil {
		t.Fatal(err)
	}
	// The etcd the server is pointed at is started once the server has
	// made its certificates, as the StatefulSet's members wait for the
	// Secret they mount.
	etcdPort, err := framework.FreePort()
	if err != nil {
		t.Fatal(err)
	}
	etcdURL := "https://127.0.0.1:" + strconv.Itoa(etcdPort)
	args, err := host.ProcessArgs(ctr, filepath.Join(dir, "pod"), []string{etcdURL})
	if err != nil {
		t.Fatal(err)
	}
	args = append(args, installRotationArgs...)
	t.Logf("batch-apiserver %v", args)
	if _, err := host.StartDeployedBatchAPIServer("batch-apiserver-installed", args, ctr.Env); err != nil {
		t.Fatal(err)
	}
	etcdCA := startInstalledEtcd(ctx, t, host, filepath.Join(dir, "etcd"), etcdPort)
	assertEtcdRefusesAnonymous(t, etcdURL, etcdCA)
	if err := host.PointServiceAtLocalHost(ctx); err != nil {
		t.Fatal(err)
	}
	if err := host.WaitAPIServicesAvailable(ctx); err != nil {
		t.Fatal(err)
	}

	secrets := host.AdminClient.CoreV1().Secrets(framework.Namespace)
	secret, err := secrets.Get(ctx, "batch-apiserver-serving", metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the serving Secret: %v", err)
	}
	if !certs.SelfManaged(secret) {
		t.Fatalf("the serving Secret the server made is not self-managed")
	}
	firstCA := secret.Data["signing-ca.crt"]

	// Requests through the aggregator during the rotation: discovery-free
	// lists of Jobs, as a client would send them.
	cfg := rest.CopyConfig(host.Admin)
	cfg.QPS, cfg.Burst = -1, 0
	client := dynamic.NewForConfigOrDie(cfg)
	jobs := client.Resource(schema.GroupVersionResource{Group: "batch.jobs.dev", Version: "v1", Resource: "jobs"}).Namespace("default")
	var sent, failed atomic.Int64
	var firstErr atomic.Value
	loadCtx, stopLoad := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for loadCtx.Err() == nil {
				_, err := jobs.List(loadCtx, metav1.ListOptions{Limit: 1})
				if loadCtx.Err() != nil {
					return
				}
				sent.Add(1)
				if err != nil {
					failed.Add(1)
					firstErr.CompareAndSwap(nil, err.Error())
				}
			}
		}()
	}

	// A rotation is over when another CA signs and the bundle holds it
	// alone again.
	sawTwo := false
	err = wait.PollUntilContextTimeout(ctx, time.Second, 3*time.Minute, false, func(ctx context.Context) (bool, error) {
		s, err := secrets.Get(ctx, "batch-apiserver-serving", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, err
		}
		if err != nil {
			return false, nil
		}
		cas, err := certs.ParseCertificates(s.Data["ca.crt"])
		if err != nil {
			return false, err
		}
		sawTwo = sawTwo || len(cas) > 1
		return sawTwo && len(cas) == 1 && !bytes.Equal(s.Data["signing-ca.crt"], firstCA), nil
	})
	stopLoad()
	wg.Wait()
	if err != nil {
		t.Fatalf("waiting for a CA rotation to complete: %v", err)
	}
	t.Logf("%d requests through the aggregator during the CA rotation, %d failed", sent.Load(), failed.Load())
	if failed.Load() != 0 {
		t.Errorf("%d of %d requests failed during the CA rotation; first: %v", failed.Load(), sent.Load(), firstErr.Load())
	}
	if sent.Load() == 0 {
		t.Errorf("no request went through during the rotation")
	}

	final, err := secrets.Get(ctx, "batch-apiserver-serving", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range framework.APIServiceNames {
		bundle, err := host.APIServiceCABundle(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		// The server may have moved on to the next renewal since; the
		// bundle must at least hold the CA that signs now.
		signing, err := certs.ParseCertificates(final.Data["signing-ca.crt"])
		if err != nil || len(signing) != 1 {
			t.Fatalf("signing CA of the Secret: %v", err)
		}
		if !certs.BundleContains(bundle, signing[0]) {
			t.Errorf("APIService %s does not trust the CA that signs now", name)
		}
	}
}

// startInstalledEtcd waits for the etcd Secret the server makes, puts its
// ca.crt, tls.crt and tls.key where the StatefulSet mounts them, and starts
// a member serving clients over mutual TLS with them. It returns ca.crt.
func startInstalledEtcd(ctx context.Context, t *testing.T, host *framework.Cluster, dir string, port int) []byte {
	t.Helper()
	var data map[string][]byte
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		s, err := host.AdminClient.CoreV1().Secrets(framework.Namespace).Get(ctx, "batch-apiserver-etcd", metav1.GetOptions{})
		if err != nil {
			return false, nil
		}
		data = s.Data
		return true, nil
	})
	if err != nil {
		t.Fatalf("waiting for the server to create the etcd Secret: %v", err)
	}
	pki := filepath.Join(dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"ca.crt", "tls.crt", "tls.key"} {
		if err := os.WriteFile(filepath.Join(pki, key), data[key], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	etcd, err := framework.StartTLSEtcd(filepath.Join(dir, "data"), pki, port)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(etcd.Stop)
	return data["ca.crt"]
}

// assertEtcdRefusesAnonymous checks that a client that trusts etcd's CA but
// presents no certificate gets no answer.
func assertEtcdRefusesAnonymous(t *testing.T, url string, ca []byte) {
	t.Helper()
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("the etcd Secret's ca.crt holds no certificate")
	}
	client, err := clientv3.New(clientv3.Config{
		Endpoints:   []string{url},
		TLS:         &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		DialTimeout: 5 * time.Second,
	})
	if err != nil {
		return // refused while dialing
	}
	defer client.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := client.Get(ctx, "/"); err == nil {
		t.Errorf("etcd answered a client without a certificate")
	}
}
