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

package integration

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/labels"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/kueue/pkg/controller/jobframework"

	jobsv1 "github.com/batch-apiserver/batch-apiserver/cmd/batch-kueue/api/v1"
)

// Options are what an operator chooses of the integration.
type Options struct {
	// ManageJobsWithoutQueueName queues Jobs without a queue-name label
	// too (Kueue's option of the same name).
	ManageJobsWithoutQueueName bool
	// ManagedJobsNamespaceSelector limits ManageJobsWithoutQueueName to
	// the namespaces it selects; nil selects every namespace (Kueue's
	// managedJobsNamespaceSelector).
	ManagedJobsNamespaceSelector labels.Selector
	// ManagerName names the integration in Events and field managers.
	ManagerName string
}

// Setup adds the reconciler of batch.jobs.dev Jobs to mgr, with the
// Workload index it lists by.
func Setup(ctx context.Context, mgr ctrl.Manager, opts Options) error {
	if err := jobframework.SetupWorkloadOwnerIndex(ctx, mgr.GetFieldIndexer(), jobsv1.GroupVersionKind); err != nil {
		return fmt.Errorf("indexing Workloads by their Job: %w", err)
	}
	newReconciler := jobframework.NewGenericReconcilerFactory(NewJob)
	r, err := newReconciler(ctx, mgr.GetClient(), mgr.GetFieldIndexer(),
		//lint:ignore SA1019 Kueue v0.17.0's reconciler factory takes the old record.EventRecorder
		mgr.GetEventRecorderFor(opts.ManagerName+"-job-controller"),
		jobframework.WithManageJobsWithoutQueueName(opts.ManageJobsWithoutQueueName),
		jobframework.WithManagedJobsNamespaceSelector(opts.ManagedJobsNamespaceSelector),
		jobframework.WithManagerName(opts.ManagerName),
	)
	if err != nil {
		return fmt.Errorf("creating the Job reconciler: %w", err)
	}
	return r.SetupWithManager(mgr)
}
