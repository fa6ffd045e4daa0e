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
	"context"
	"net/http"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/batch-apiserver/batch-apiserver/test/e2e/framework"
)

// TestKubectlStandalone runs the core kubectl steps against batch-apiserver
// started with no flags but its data dir and port: embedded etcd, its own
// certificates, and the admin kubeconfig it writes.
func TestKubectlStandalone(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	s, err := framework.StartStandalone(ctx, bins.BatchAPIServer, filepath.Join(dir, "data"), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		s.Stop()
		if t.Failed() {
			t.Logf("standalone server log:\n%s", framework.Tail(s.Process.LogFile, 80))
		}
	})
	k := framework.Kubectl{Bin: bins.Kubectl, Kubeconfig: s.Kubeconfig, Namespace: "default"}

	t.Run("get before anything exists", func(t *testing.T) {
		res, err := k.Run("get", "bjob")
		if err != nil || res.ExitCode != 0 {
			t.Fatalf("get: %v %s", err, res.Combined())
		}
		mustContain(t, res.Stderr, "No resources found in default namespace.")
	})
	t.Run("api-resources", func(t *testing.T) { stepAPIResources(t, k) })
	t.Run("create -f examples", func(t *testing.T) { stepCreateExamples(t, k) })
	t.Run("get columns and -o wide", func(t *testing.T) { stepGetColumns(t, k) })
	t.Run("explain", func(t *testing.T) { stepExplain(t, k) })
	t.Run("apply server-side with a second field manager", func(t *testing.T) { stepServerSideApply(t, k) })
	t.Run("delete -f examples", func(t *testing.T) { stepDelete(t, k) })
	t.Run("only its own client certificates get in", func(t *testing.T) {
		// The kubeconfig's server and CA with a token instead of the
		// admin certificate: standalone mode knows no tokens.
		cfg, err := clientcmd.LoadFromFile(s.Kubeconfig)
		if err != nil {
			t.Fatal(err)
		}
		for _, auth := range cfg.AuthInfos {
			*auth = clientcmdapi.AuthInfo{Token: "not-a-token"}
		}
		tokenKubeconfig := filepath.Join(dir, "token.kubeconfig")
		if err := clientcmd.WriteToFile(*cfg, tokenKubeconfig); err != nil {
			t.Fatal(err)
		}
		res := framework.Kubectl{Bin: bins.Kubectl, Kubeconfig: tokenKubeconfig}.MustFail(t, "get", "bjob")
		mustContain(t, res.Stderr, "Unauthorized")

		// No credentials at all.
		var ca []byte
		for _, c := range cfg.Clusters {
			ca = c.CertificateAuthorityData
		}
		client, err := framework.HTTPClient(ca, "", "")
		if err != nil {
			t.Fatal(err)
		}
		resp, err := client.Get(s.URL + "/apis/batch.jobs.dev/v1/namespaces/default/jobs")
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("anonymous list: %s, want 401", resp.Status)
		}
	})
}
