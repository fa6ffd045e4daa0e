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
package main

import (
	"flag"
	"fmt"
	"os"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
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

func run() error {
	var opts integration.Options
	var metricsAddr, probeAddr string
	var leaderElect bool
	var leaderElectionNamespace string
	flag.StringVar(&metricsAddr, "metrics-bind-address", ":8080", "The address the metrics endpoint binds to (0 turns it off).")
	flag.StringVar(&probeAddr, "health-probe-bind-address", ":8081", "The address of /healthz and /readyz.")
	flag.BoolVar(&leaderElect, "leader-elect", false, "Elect a leader through a Lease, so that only one replica reconciles.")
	flag.StringVar(&leaderElectionNamespace, "leader-election-namespace", "", "The namespace of the leader election Lease (default: the one the process runs in).")
	flag.BoolVar(&opts.ManageJobsWithoutQueueName, "manage-jobs-without-queue-name", false,
		"Queue every Job, not only those with the kueue.x-k8s.io/queue-name label (Kueue's manageJobsWithoutQueueName; set both alike).")
	flag.StringVar(&opts.ManagerName, "manager-name", "batch-kueue", "The name Kueue's Events and field managers carry.")
	zapOpts := zap.Options{}
	zapOpts.BindFlags(flag.CommandLine)
	flag.Parse()
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&zapOpts)))

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
	mgr, err := ctrl.NewManager(cfg, ctrl.Options{
		Scheme:                  scheme,
		Metrics:                 metricsserver.Options{BindAddress: metricsAddr},
		HealthProbeBindAddress:  probeAddr,
		LeaderElection:          leaderElect,
		LeaderElectionID:        "batch-kueue.batch.jobs.dev",
		LeaderElectionNamespace: leaderElectionNamespace,
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
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return err
	}
	return mgr.Start(ctx)
}
