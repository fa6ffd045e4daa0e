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
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned/scheme"
)

// newSuspendCommand is suspend (suspend true) or resume (false).
func (r *root) newSuspendCommand(suspend bool) *cobra.Command {
	verb, done := "resume", "resumed"
	short := "Resume suspended Jobs: the controller creates their Pods again"
	example := `
		# Resume a Job created suspended
		kubectl bjob resume sample`
	if suspend {
		verb, done = "suspend", "suspended"
		short = "Suspend Jobs: the controller deletes their running Pods and creates none"
		example = `
		# Suspend two Jobs and print them as YAML
		kubectl bjob suspend pi sample -o yaml`
	}
	printFlags := genericclioptions.NewPrintFlags(done).WithTypeSetter(scheme.Scheme)
	cmd := &cobra.Command{
		Use:               verb + " NAME...",
		Short:             short,
		Long:              templates.LongDesc(short + ` (spec.suspend is set to ` + fmt.Sprint(suspend) + `).`),
		Example:           templates.Examples(example),
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: r.completeJobNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.runSuspend(cmd.Context(), args, suspend, printFlags)
		},
	}
	printFlags.AddFlags(cmd)
	return cmd
}

func (r *root) runSuspend(ctx context.Context, names []string, suspend bool, printFlags *genericclioptions.PrintFlags) error {
	printer, err := printFlags.ToPrinter()
	if err != nil {
		return err
	}
	c, err := r.clients()
	if err != nil {
		return err
	}
	patch := fmt.Appendf(nil, `{"spec":{"suspend":%t}}`, suspend)
	var errs []error
	for _, name := range names {
		job, err := c.Jobs.BatchV1().Jobs(c.Namespace).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := printer.PrintObj(job, r.streams.Out); err != nil {
			errs = append(errs, err)
		}
	}
	return utilerrors.NewAggregate(errs)
}
