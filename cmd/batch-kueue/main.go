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

// Command batch-kueue runs beside an installed Kueue and makes
// batch.jobs.dev Jobs workloads it queues: for each Job with the label
// kueue.x-k8s.io/queue-name it keeps a Workload, resumes the Job when Kueue
// admits it and stops it when Kueue evicts it. Kueue's own manager must
// list the kind in its configuration (integrations.externalFrameworks:
// ["Job.v1.batch.jobs.dev"]; for MultiKueue also multiKueue.externalFrameworks).
// It also serves Kueue's webhook for the kind (the defaults and validation
// Kueue's webhook gives batch/v1 Jobs), with a serving certificate it
// creates and renews itself.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/controller-runtime/pkg/webhook"
	kueuev1beta1 "sigs.k8s.io/kueue/apis/kueue/v1beta1"
	kueue "sigs.k8s.io/kueue/apis/kueue/v1beta2"

	jobsv1 "github.com/batch-apiserver/batch-apiserver/cmd/batch-kueue/api/v1"
	"github.com/batch-apiserver/batch-apiserver/cmd/batch-kueue/integration"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "batch-kueue:", err)
		os.Exit(1)
	}
}

// Defaults of the webhook's flags: the names artifacts/kueue gives.
const (
	defaultNamespace                      = "kueue-system"
	defaultWebhookService                 = "batch-kueue-webhook"
	defaultWebhookSecret                  = "batch-kueue-webhook-server-cert"
	defaultMutatingWebhookConfiguration   = "batch-kueue-mutating-webhook-configuration"
	defaultValidatingWebhookConfiguration = "batch-kueue-validating-webhook-configuration"
	// defaultManagedJobsNamespaceSelector is Kueue's default of
	// managedJobsNamespaceSelector, for Kueue installed in kueue-system.
	defaultManagedJobsNamespaceSelector = "kubernetes.io/metadata.name notin (kube-system,kueue-system)"
)

func run() error {
	var opts integration.Options
	var metricsAddr, probeAddr string
	var leaderElect bool
	var leaderElectionNamespace string
	var namespaceSelector string
	var serveWebhook bool
	var webhookHost string
	var webhookPort int
	var certDir, namespace, serviceName, secretName, mutatingName, validatingName string
	var extraDNSNames stringList
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "The address the metrics endpoint binds to (0 turns it off).")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address of /healthz and /readyz.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader through a Lease, so that only one replica reconciles.")
	flag.StringVar(&leaderElectionNamespace, "leader-election-namespace", "", "The namespace of the leader election Lease (default: the one the process runs in).")
	flag.BoolVar(&opts.ManageJobsWithoutQueueName, "manage-jobs-without-queue-name", false,
		"Queue every Job, not only those with the kueue.x-k8s.io/queue-name label (Kueue's manageJobsWithoutQueueName; set both alike).")
	flag.StringVar(&namespaceSelector, "managed-jobs-namespace-selector", defaultManagedJobsNamespaceSelector,
		"A label selector of Namespaces (kubectl's -l syntax): --manage-jobs-without-queue-name applies only to Jobs in the namespaces it selects; empty selects all (Kueue's managedJobsNamespaceSelector; set both alike).")
	flag.StringVar(&opts.ManagerName, "manager-name", "batch-kueue", "The name Kueue's Events and field managers carry.")
	flag.BoolVar(&serveWebhook, "webhook", true,
		"Serve Kueue's webhook for batch.jobs.dev Jobs (defaults and validation) and manage its serving certificate; false leaves both to others.")
	flag.StringVar(&webhookHost, "webhook-host", "", "The address the webhook server listens on (default: all).")
	flag.IntVar(&webhookPort, "webhook-port", 9443, "The port the webhook server listens on.")
	flag.StringVar(&certDir, "webhook-cert-dir", "/tmp/k8s-webhook-server/serving-certs",
		"The directory batch-kueue writes the webhook's serving certificate to (tls.crt, tls.key) and serves it from.")
	flag.StringVar(&namespace, "webhook-namespace", defaultNamespace, "The namespace of the webhook's Service and certificate Secret.")
	flag.StringVar(&serviceName, "webhook-service-name", defaultWebhookService, "The webhook's Service: the certificate is for <name>.<namespace>.svc.")
	flag.Var(&extraDNSNames, "webhook-cert-extra-dns-name", "One more DNS name the serving certificate is for (repeatable).")
	flag.StringVar(&secretName, "webhook-secret-name", defaultWebhookSecret,
		"The Secret that holds the webhook's CA and serving certificate (it must exist; batch-kueue fills and renews it).")
	flag.StringVar(&mutatingName, "mutating-webhook-configuration", defaultMutatingWebhookConfiguration,
		"The MutatingWebhookConfiguration whose caBundle batch-kueue keeps current.")
	flag.StringVar(&validatingName, "validating-webhook-configuration", defaultValidatingWebhookConfiguration,
		"The ValidatingWebhookConfiguration whose caBundle batch-kueue keeps current.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

	selector, err := labels.Parse(namespaceSelector)
	if err != nil {
		return fmt.Errorf("--managed-jobs-namespace-selector: %w", err)
	}
	opts.ManagedJobsNamespaceSelector = selector

	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, kueuev1beta1.AddToScheme, kueue.AddToScheme, jobsv1.AddToScheme} {
		if err := add(scheme); err != nil {
			return err
		}
	}
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	certs := integration.CertOptions{
		Secret:                         types.NamespacedName{Namespace: namespace, Name: secretName},
		Dir:                            certDir,
		Service:                        types.NamespacedName{Namespace: namespace, Name: serviceName},
		ExtraDNSNames:                  extraDNSNames,
		MutatingWebhookConfiguration:   mutatingName,
		ValidatingWebhookConfiguration: validatingName,
	}
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "batch-kueue.batch.jobs.dev",
		LeaderElectionNamespace: leaderElectionNamespace,
		WebhookServer:           webhook.NewServer(webhook.Options{Host: webhookHost, Port: webhookPort, CertDir: certDir}),
		Cache: cache.Options{ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: integration.SecretCacheOptions(certs.Secret),
		}},
	})
	if err != nil {
		return fmt.Errorf("creating the manager: %w", err)
	}
	ctx := ctrl.SetupSignalHandler()
	if err := integration.Setup(ctx, mgr, opts); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return err
	}
	ready := healthz.Checker(healthz.Ping)
	if serveWebhook {
		if ready, err = setupWebhook(ctx, mgr, opts, certs); err != nil {
			return err
		}
	}
	if err := mgr.AddReadyzCheck("readyz", ready); err != nil {
		return err
	}
	return mgr.Start(ctx)
}

// setupWebhook starts the certificate rotation and, once the certificate
// is in place, registers the webhook, which adds the webhook server to the
// manager: the server reads its certificate when it starts. The returned
// check passes once the webhook server is listening with it.
func setupWebhook(ctx context.Context, mgr ctrl.Manager, opts integration.Options, certs integration.CertOptions) (healthz.Checker, error) {
	certsReady, err := integration.SetupCertRotation(mgr, certs)
	if err != nil {
		return nil, err
	}
	registered := make(chan struct{})
	go func() {
		select {
		case <-certsReady:
		case <-ctx.Done():
			return
		}
		if err := integration.SetupWebhook(mgr, opts); err != nil {
			ctrl.Log.Error(err, "Registering the webhook")
			os.Exit(1)
		}
		close(registered)
	}()
	return func(req *http.Request) error {
		select {
		case <-registered:
			return mgr.GetWebhookServer().StartedChecker()(req)
		default:
			return errors.New("the webhook's serving certificate is not in place yet")
		}
	}, nil
}

// stringList is a repeatable string flag.
type stringList []string

func (l *stringList) String() string { return strings.Join(*l, ",") }

func (l *stringList) Set(value string) error {
	*l = append(*l, value)
	return nil
}
