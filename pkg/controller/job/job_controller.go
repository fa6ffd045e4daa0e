package job

import (
	"context"

	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"

	versioned "github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	jobinformers "github.com/batch-apiserver/batch-apiserver/pkg/generated/informers/externalversions/batch/v1"
)

// Config is what the server decides about the controller beyond its clients.
type Config struct {
	// DeletePodsOfDeletedJobs makes the controller delete the Pods of a Job
	// that is gone, because the host cluster's garbage collector cannot see
	// our API (standalone mode with --kubeconfig).
	DeletePodsOfDeletedJobs bool
}

// Controller runs the Pods of Jobs whose spec.managedBy is unset or
// kubernetes.io/job-controller.
type Controller struct{}

// NewController returns a Job controller reading Jobs through jobInformer and
// writing them with jobClient, and managing Pods through podInformer and
// kubeClient in the host cluster.
func NewController(ctx context.Context, podInformer coreinformers.PodInformer, jobInformer jobinformers.JobInformer,
	kubeClient kubernetes.Interface, jobClient versioned.Interface, cfg Config) (*Controller, error) {
	return &Controller{}, nil
}

// Run starts workers and blocks until ctx is done.
func (jm *Controller) Run(ctx context.Context, workers int) {
	<-ctx.Done()
}
