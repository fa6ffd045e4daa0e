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
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// KueueModule is the module Kueue's manager and CRDs come from, at the
// version cmd/batch-kueue/go.mod pins.
const KueueModule = "sigs.k8s.io/kueue"

// KueueNamespace is the namespace of Kueue's configuration objects (the
// MultiKueue kubeconfig Secrets).
const KueueNamespace = "kueue-system"

// kueueMetricsCertDir is where Kueue's manager reads its metrics serving
// certificate when it does not manage certificates itself; it has no flag.
const kueueMetricsCertDir = "/etc/kueue/metrics/certs"

// KueueBinaries are Kueue's manager and our integration
// (hack/build-kueue-bins.sh), and the Kueue module's directory, which
// holds its CRDs.
type KueueBinaries struct {
	Kueue      string
	BatchKueue string
	ModuleDir  string
}

// FindKueueBinaries locates kueue and batch-kueue in E2E_BIN_DIR (default
// <repo>/_output/bin) and Kueue's module in the module cache.
func FindKueueBinaries(bins *Binaries) (*KueueBinaries, error) {
	dir := os.Getenv(EnvBinDir)
	if dir == "" {
		dir = filepath.Join(bins.RepoRoot, "_output", "bin")
	}
	k := &KueueBinaries{Kueue: filepath.Join(dir, "kueue"), BatchKueue: filepath.Join(dir, "batch-kueue")}
	for _, bin := range []string{k.Kueue, k.BatchKueue} {
		if st, err := os.Stat(bin); err != nil || st.IsDir() || st.Mode()&0o111 == 0 {
			return nil, fmt.Errorf("%s is missing: build it with `bash hack/build-kueue-bins.sh`", bin)
		}
	}
	cmd := exec.Command("go", "list", "-m", "-f", "{{.Dir}}", KueueModule)
	cmd.Dir = filepath.Join(bins.RepoRoot, "cmd", "batch-kueue")
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil || strings.TrimSpace(string(out)) == "" {
		return nil, fmt.Errorf("locating %s in the module cache (run hack/build-kueue-bins.sh): %v", KueueModule, err)
	}
	k.ModuleDir = strings.TrimSpace(string(out))
	return k, nil
}

// KueueOptions change how StartKueue configures Kueue.
type KueueOptions struct {
	// FeatureGates are Kueue feature gates (name=bool,...).
	FeatureGates string
	// BatchKueueArgs are more flags of batch-kueue.
	BatchKueueArgs []string
}

// StartKueue installs Kueue's CRDs into the host cluster and starts
// Kueue's manager (as the admin user) and batch-kueue (as its ServiceAccount
// of artifacts/kueue/rbac.yaml), both configured for
// batch/v1 Jobs (Kueue's own integration) and batch.jobs.dev Jobs (ours,
// as an external framework, also for MultiKueue). Kueue's webhook for
// batch/v1 Jobs is registered (registerKueueJobWebhook; kube-apiserver
// calls it), and batch-kueue's for ours (applyBatchKueueWebhook;
// batch-apiserver calls it). Both stop with the cluster.
func (c *Cluster) StartKueue(ctx context.Context, k *KueueBinaries, opts KueueOptions) error {
	kc := c.Kubectl()
	crds := filepath.Join(k.ModuleDir, "config", "components", "crd", "bases")
	if _, err := kc.Run("apply", "--server-side", "-f", crds); err != nil {
		return fmt.Errorf("applying Kueue's CRDs: %w", err)
	}
	if _, err := kc.Run("wait", "--for=condition=Established", "--timeout=60s", "-f", crds); err != nil {
		return fmt.Errorf("waiting for Kueue's CRDs: %w", err)
	}
	if _, err := kc.Run("create", "namespace", KueueNamespace); err != nil {
		return fmt.Errorf("creating namespace %s: %w", KueueNamespace, err)
	}

	// batch-kueue runs as the component's ServiceAccount, with the
	// component's RBAC, so that a missing rule fails here.
	if _, err := kc.Run("apply", "-f", filepath.Join(c.Bins.RepoRoot, "artifacts", "kueue", "rbac.yaml")); err != nil {
		return fmt.Errorf("applying batch-kueue's RBAC: %w", err)
	}
	batchWebhookPort, err := freePort()
	if err != nil {
		return err
	}
	if err := applyBatchKueueWebhook(kc, c.Bins.RepoRoot, batchWebhookPort); err != nil {
		return err
	}
	token, err := kc.Run("create", "token", "batch-kueue", "--namespace", KueueNamespace, "--duration=24h")
	if err != nil {
		return fmt.Errorf("a token of batch-kueue's ServiceAccount: %w", err)
	}
	dir := filepath.Join(c.Dir, "kueue")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	batchKubeconfig := filepath.Join(dir, "batch-kueue.kubeconfig")
	if err := writeKubeconfig(batchKubeconfig, c.HostURL, c.ClusterCA.CertPEM, clientcmdapi.AuthInfo{Token: strings.TrimSpace(token.Stdout)}); err != nil {
		return err
	}
	webhookCerts, metricsCerts := filepath.Join(dir, "webhook-certs"), filepath.Join(dir, "metrics-certs")
	for _, d := range []string{webhookCerts, metricsCerts} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return err
		}
		// Kueue serves both; kube-apiserver calls the webhook at
		// 127.0.0.1 with the cluster CA as its caBundle.
		if _, err := c.ClusterCA.Sign(d, "tls", LeafSpec{CommonName: "kueue", IPs: []net.IP{net.ParseIP("127.0.0.1")}, Server: true}); err != nil {
			return err
		}
	}
	ports := make([]int, 5)
	for i := range ports {
		p, err := freePort()
		if err != nil {
			return err
		}
		ports[i] = p
	}
	webhookPort, kueueProbe, kueueMetrics, visibilityPort, batchProbe := ports[0], ports[1], ports[2], ports[3], ports[4]
	config := fmt.Sprintf(`apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: %s
health:
  healthProbeBindAddress: 127.0.0.1:%d
metrics:
  bindAddress: 127.0.0.1:%d
webhook:
  host: 127.0.0.1
  port: %d
  certDir: %s
leaderElection:
  leaderElect: false
internalCertManagement:
  enable: false
manageJobsWithoutQueueName: false
integrations:
  frameworks: ["batch/job"]
  externalFrameworks: ["Job.v1.batch.jobs.dev"]
multiKueue:
  gcInterval: 30s
  externalFrameworks:
  - name: Job.v1.batch.jobs.dev
`, KueueNamespace, kueueProbe, kueueMetrics, webhookPort, webhookCerts)
	configFile := filepath.Join(dir, "config.yaml")
	if err := os.WriteFile(configFile, []byte(config), 0o644); err != nil {
		return err
	}

	// Kueue's manager reads its metrics certificate from a fixed path:
	// give it ours there in a mount namespace of its own, so nothing of
	// the machine's /etc is written but an empty mount point.
	kueueArgs := []string{
		"--config=" + configFile,
		"--kubeconfig=" + c.AdminKubeconfig,
		"--visibility-server-port=" + strconv.Itoa(visibilityPort),
		"--zap-log-level=2",
	}
	if opts.FeatureGates != "" {
		kueueArgs = append(kueueArgs, "--feature-gates="+opts.FeatureGates)
	}
	script := `set -e; mkdir -p "$1"; mount --bind "$2" "$1"; shift 2; exec "$@"`
	args := append([]string{"--mount", "--propagation", "private", "--", "sh", "-c", script, "kueue", kueueMetricsCertDir, metricsCerts, k.Kueue}, kueueArgs...)
	kueue, err := c.start("kueue", "unshare", args...)
	if err != nil {
		return err
	}
	if err := waitHTTPOK(ctx, kueue, fmt.Sprintf("http://127.0.0.1:%d/readyz", kueueProbe), 2*time.Minute); err != nil {
		return err
	}
	if err := registerKueueJobWebhook(kc, webhookPort, c.ClusterCA.CertPEM); err != nil {
		return err
	}
	batchArgs := append([]string{
		"--kubeconfig=" + batchKubeconfig,
		"--metrics-bind-address=0",
		"--health-probe-bind-address=127.0.0.1:" + strconv.Itoa(batchProbe),
		"--zap-log-level=2",
		"--webhook-host=127.0.0.1",
		"--webhook-port=" + strconv.Itoa(batchWebhookPort),
		"--webhook-cert-dir=" + filepath.Join(dir, "batch-kueue-certs"),
		"--webhook-cert-extra-dns-name=localhost",
	}, opts.BatchKueueArgs...)
	batch, err := c.start("batch-kueue", k.BatchKueue, batchArgs...)
	if err != nil {
		return err
	}
	return waitHTTPOK(ctx, batch, fmt.Sprintf("http://127.0.0.1:%d/readyz", batchProbe), time.Minute)
}

// registerKueueJobWebhook registers the webhook Kueue's manager serves for
// batch/v1 Jobs (mjob.kb.io and vjob.kb.io as Kueue's manifests have
// them: mutation on create, validation on create and update), at the
// manager's address and with its test certificate: kube-apiserver calls
// it, so that batch/v1 Jobs get Kueue's own defaults and refusals to be
// compared with ours. Kueue's other webhooks stay unregistered.
func registerKueueJobWebhook(kc Kubectl, port int, caPEM []byte) error {
	clientConfig := func(path string) map[string]any {
		return map[string]any{"url": fmt.Sprintf("https://127.0.0.1:%d%s", port, path), "caBundle": caPEM}
	}
	webhook := func(name, path string, operations ...string) map[string]any {
		return map[string]any{
			"name":                    name,
			"admissionReviewVersions": []string{"v1"},
			"clientConfig":            clientConfig(path),
			"failurePolicy":           "Fail",
			"sideEffects":             "None",
			"rules": []any{map[string]any{
				"apiGroups": []string{"batch"}, "apiVersions": []string{"v1"},
				"operations": operations, "resources": []string{"jobs"},
			}},
		}
	}
	for _, obj := range []map[string]any{{
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
		"metadata": map[string]any{"name": "e2e-kueue-batch-v1-job"},
		"webhooks": []any{webhook("mjob.kb.io", "/mutate-batch-v1-job", "CREATE")},
	}, {
		"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
		"metadata": map[string]any{"name": "e2e-kueue-batch-v1-job"},
		"webhooks": []any{webhook("vjob.kb.io", "/validate-batch-v1-job", "CREATE", "UPDATE")},
	}} {
		manifest, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		if res, err := kc.RunStdin(string(manifest), "apply", "-f", "-"); err != nil {
			return fmt.Errorf("registering Kueue's batch/v1 Job webhook: %w", err)
		} else if res.ExitCode != 0 {
			return fmt.Errorf("registering Kueue's batch/v1 Job webhook: %s", res.Combined())
		}
	}
	return nil
}

// applyBatchKueueWebhook applies the certificate Secret and the webhook
// configurations of artifacts/kueue/webhook.yaml, each webhook's
// clientConfig pointed at https://localhost:<port> instead of the Service:
// batch-kueue runs as a process here, not behind a Service, and
// batch-apiserver resolves a webhook Service by its cluster DNS name,
// which this machine cannot resolve (an ExternalName of 127.0.0.1 would not
// help: the webhook client dials the Service's DNS name, unlike the
// aggregator). localhost, not 127.0.0.1: batch-kueue's certificate carries
// DNS names only, and --webhook-cert-extra-dns-name=localhost adds that
// one. batch-kueue then fills in the caBundles as it does in a cluster.
func applyBatchKueueWebhook(kc Kubectl, root string, port int) error {
	data, err := os.ReadFile(filepath.Join(root, "artifacts", "kueue", "webhook.yaml"))
	if err != nil {
		return err
	}
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	for {
		var obj map[string]any
		if err := decoder.Decode(&obj); errors.Is(err, io.EOF) {
			return nil
		} else if err != nil {
			return fmt.Errorf("artifacts/kueue/webhook.yaml: %w", err)
		}
		switch obj["kind"] {
		case "Service":
			continue
		case "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration":
			webhooks, _ := obj["webhooks"].([]any)
			for _, w := range webhooks {
				wh := w.(map[string]any)
				path := wh["clientConfig"].(map[string]any)["service"].(map[string]any)["path"]
				wh["clientConfig"] = map[string]any{"url": fmt.Sprintf("https://localhost:%d%v", port, path)}
			}
		}
		manifest, err := json.Marshal(obj)
		if err != nil {
			return err
		}
		if res, err := kc.RunStdin(string(manifest), "apply", "-f", "-"); err != nil {
			return fmt.Errorf("applying batch-kueue's webhook: %w", err)
		} else if res.ExitCode != 0 {
			return fmt.Errorf("applying batch-kueue's webhook: %s", res.Combined())
		}
	}
}

// waitHTTPOK polls a plain-HTTP health endpoint of p until it answers 200.
func waitHTTPOK(ctx context.Context, p *Process, url string, timeout time.Duration) error {
	client := &http.Client{Timeout: 5 * time.Second}
	var last string
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if err := p.Exited(); err != nil {
			return false, err
		}
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return false, err
		}
		resp, err := client.Do(req)
		if err != nil {
			last = err.Error()
			return false, nil
		}
		_ = resp.Body.Close()
		last = resp.Status
		return resp.StatusCode == http.StatusOK, nil
	})
	if err != nil {
		return fmt.Errorf("waiting for %s at %s (last: %s): %w\nlog %s:\n%s", p.Name, url, last, err, p.LogFile, Tail(p.LogFile, 40))
	}
	return nil
}

// SelfContainedKubeconfig is the admin kubeconfig with every certificate
// and key inlined, as a MultiKueue kubeconfig Secret must be.
func (c *Cluster) SelfContainedKubeconfig() ([]byte, error) {
	cfg, err := clientcmd.LoadFromFile(c.AdminKubeconfig)
	if err != nil {
		return nil, err
	}
	if err := clientcmdapi.FlattenConfig(cfg); err != nil {
		return nil, err
	}
	return clientcmd.Write(*cfg)
}
