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

// Package jobwatch is the logic of the clientset example (examples/client):
// it creates a batch.jobs.dev Job with a pod failure policy by server-side
// apply, waits for it to finish through a shared informer, and prints its
// conditions. It is a package of its own so that the integration tests run
// exactly what the example runs.
package jobwatch

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	applycorev1 "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/tools/cache"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	applybatchv1 "github.com/batch-apiserver/batch-apiserver/pkg/generated/applyconfiguration/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/informers/externalversions"
)

// FieldManager is the field manager of the example's server-side apply: the
// fields it sets are owned by this name.
const FieldManager = "jobwatch-example"

// DesiredJob is the Job the example applies: three indexed completions,
// one retry per index, and a pod failure policy that fails an index on exit
// code 42, ignores disruptions and fails the whole Job on exit code 3.
func DesiredJob(namespace, name string) *applybatchv1.JobApplyConfiguration {
	return applybatchv1.Job(name, namespace).
		WithSpec(applybatchv1.JobSpec().
			WithCompletionMode(batchv1.IndexedCompletion).
			WithCompletions(3).
			WithParallelism(3).
			WithBackoffLimitPerIndex(1).
			WithPodFailurePolicy(applybatchv1.PodFailurePolicy().
				WithRules(
					applybatchv1.PodFailurePolicyRule().
						WithAction(batchv1.PodFailurePolicyActionFailIndex).
						WithOnExitCodes(applybatchv1.PodFailurePolicyOnExitCodesRequirement().
							WithContainerName("main").
							WithOperator(batchv1.PodFailurePolicyOnExitCodesOpIn).
							WithValues(42)),
					applybatchv1.PodFailurePolicyRule().
						WithAction(batchv1.PodFailurePolicyActionIgnore).
						WithOnPodConditions(applybatchv1.PodFailurePolicyOnPodConditionsPattern().
							WithType(corev1.DisruptionTarget)),
					applybatchv1.PodFailurePolicyRule().
						WithAction(batchv1.PodFailurePolicyActionFailJob).
						WithOnExitCodes(applybatchv1.PodFailurePolicyOnExitCodesRequirement().
							WithContainerName("main").
							WithOperator(batchv1.PodFailurePolicyOnExitCodesOpIn).
							WithValues(3)),
				)).
			WithTemplate(applycorev1.PodTemplateSpec().
				WithSpec(applycorev1.PodSpec().
					WithRestartPolicy(corev1.RestartPolicyNever).
					WithContainers(applycorev1.Container().
						WithName("main").
						WithImage("docker.io/library/busybox:1.36").
						WithCommand("sh", "-c", "echo index $JOB_COMPLETION_INDEX")))))
}

// Apply creates or updates the Job by server-side apply and returns it.
func Apply(ctx context.Context, client versioned.Interface, job *applybatchv1.JobApplyConfiguration) (*batchv1.Job, error) {
	applied, err := client.BatchV1().Jobs(*job.Namespace).Apply(ctx, job, metav1.ApplyOptions{FieldManager: FieldManager, Force: true})
	if err != nil {
		return nil, fmt.Errorf("applying job %s/%s: %w", *job.Namespace, *job.Name, err)
	}
	return applied, nil
}

// Finished returns the condition that ends the Job, Complete or Failed, when
// it is true, and nil while the Job runs. (SuccessCriteriaMet and
// FailureTarget come first, while the Job's last Pods terminate.)
func Finished(job *batchv1.Job) *batchv1.JobCondition {
	for i, c := range job.Status.Conditions {
		if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
			return &job.Status.Conditions[i]
		}
	}
	return nil
}

// WaitForFinish watches the Job through a shared informer of the generated
// informers, limited to this one Job, until it is finished, and returns it.
// It fails when ctx ends first.
func WaitForFinish(ctx context.Context, client versioned.Interface, namespace, name string) (*batchv1.Job, error) {
	factory := externalversions.NewSharedInformerFactoryWithOptions(client, 0,
		externalversions.WithNamespace(namespace),
		externalversions.WithTweakListOptions(func(o *metav1.ListOptions) {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
		}))
	informer := factory.Batch().V1().Jobs()

	finished := make(chan *batchv1.Job, 1)
	check := func(obj any) {
		// The informer's cache owns obj: read it, never change it.
		job, ok := obj.(*batchv1.Job)
		if !ok || job.Name != name || Finished(job) == nil {
			return
		}
		select {
		case finished <- job:
		default: // already reported
		}
	}
	if _, err := informer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    check,
		UpdateFunc: func(_, newObj any) { check(newObj) },
	}); err != nil {
		return nil, fmt.Errorf("watching job %s/%s: %w", namespace, name, err)
	}

	ctx, cancel := context.WithCancel(ctx)
	defer func() {
		cancel()
		factory.Shutdown()
	}()
	factory.Start(ctx.Done())
	select {
	case job := <-finished:
		return job.DeepCopy(), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for job %s/%s to finish: %w", namespace, name, context.Cause(ctx))
	}
}

// PrintConditions writes the Job's conditions as a table.
func PrintConditions(w io.Writer, job *batchv1.Job) error {
	tw := tabwriter.NewWriter(w, 0, 8, 2, ' ', 0)
	fmt.Fprintf(tw, "TYPE\tSTATUS\tREASON\tLAST TRANSITION\tMESSAGE\n")
	for _, c := range job.Status.Conditions {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.LastTransitionTime.UTC().Format(time.RFC3339), c.Message)
	}
	return tw.Flush()
}

// Run is the example: apply DesiredJob, wait for it to finish, print its
// conditions to out. It returns the finished Job.
func Run(ctx context.Context, client versioned.Interface, namespace, name string, out io.Writer) (*batchv1.Job, error) {
	applied, err := Apply(ctx, client, DesiredJob(namespace, name))
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(out, "Applied job %s/%s (uid %s); waiting for it to finish\n", applied.Namespace, applied.Name, applied.UID)
	job, err := WaitForFinish(ctx, client, namespace, name)
	if err != nil {
		return nil, err
	}
	c := Finished(job)
	fmt.Fprintf(out, "Job %s/%s finished: %s (%s)\n", job.Namespace, job.Name, c.Type, c.Reason)
	if err := PrintConditions(out, job); err != nil {
		return nil, err
	}
	return job, nil
}
