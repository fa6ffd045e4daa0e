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

package bjob

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned/scheme"
)

// generatedLabels are the labels the server puts on a Job's template (and
// that defaulting copies onto the Job): a copy must not carry them, or its
// template would not match the selector generated for it.
var generatedLabels = []string{
	batch.JobNameLabel, batch.ControllerUIDLabel, batch.LegacyJobNameLabel, batch.LegacyControllerUIDLabel,
}

func (r *root) newRetryCommand() *cobra.Command {
	var name string
	var force bool
	printFlags := genericclioptions.NewPrintFlags("created").WithTypeSetter(scheme.Scheme)
	cmd := &cobra.Command{
		Use:   "retry NAME",
		Short: "Create a new Job from the spec of a failed one",
		Long: templates.LongDesc(`
			Create a new Job with the spec, labels and annotations of a failed Job:
			without the selector and the labels the server generated for the failed
			Job (unless it chose its selector itself, manualSelector), and without
			its status. The new Job is named NAME-retry-<random> unless --name says
			otherwise. The failed Job stays, for its Pods' logs.`),
		Example: templates.Examples(`
			# Run a failed Job again
			kubectl bjob retry sample

			# Under a name of your own, printing only the name
			kubectl bjob retry sample --name sample-2 -o name`),
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: r.completeJobNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.runRetry(cmd.Context(), args[0], name, force, printFlags)
		},
	}
	cmd.Flags().StringVar(&name, "name", "", "The new Job's name (default: NAME-retry- and a random suffix).")
	cmd.Flags().BoolVar(&force, "force", false, "Retry a Job that has not Failed too.")
	printFlags.AddFlags(cmd)
	return cmd
}

func (r *root) runRetry(ctx context.Context, name, newName string, force bool, printFlags *genericclioptions.PrintFlags) error {
	printer, err := printFlags.ToPrinter()
	if err != nil {
		return err
	}
	c, err := r.clients()
	if err != nil {
		return err
	}
	job, err := c.Jobs.BatchV1().Jobs(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if !force && !hasCondition(job, batchv1.JobFailed) {
		return fmt.Errorf("job %s has not failed (--force retries it anyway)", name)
	}
	created, err := c.Jobs.BatchV1().Jobs(c.Namespace).Create(ctx, retryOf(job, newName), metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the retry of job %s: %w", name, err)
	}
	return printer.PrintObj(created, r.streams.Out)
}

// retryOf is the Job to create to run job again.
func retryOf(job *batchv1.Job, name string) *batchv1.Job {
	out := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{
			Name:        name,
			Namespace:   job.Namespace,
			Labels:      withoutKeys(job.Labels, generatedLabels),
			Annotations: withoutKeys(job.Annotations, []string{corev1.LastAppliedConfigAnnotation}),
		},
		Spec: *job.Spec.DeepCopy(),
	}
	if name == "" {
		out.GenerateName = job.Name + "-retry-"
	}
	if out.Spec.ManualSelector == nil || !*out.Spec.ManualSelector {
		out.Spec.Selector = nil
		out.Spec.Template.Labels = withoutKeys(out.Spec.Template.Labels, generatedLabels)
	}
	return out
}

// withoutKeys is a copy of m without keys; nil when nothing is left.
func withoutKeys(m map[string]string, keys []string) map[string]string {
	var out map[string]string
	for k, v := range m {
		skip := false
		for _, key := range keys {
			skip = skip || k == key
		}
		if skip {
			continue
		}
		if out == nil {
			out = map[string]string{}
		}
		out[k] = v
	}
	return out
}

func hasCondition(job *batchv1.Job, typ batchv1.JobConditionType) bool {
	for _, c := range job.Status.Conditions {
		if c.Type == typ && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}
