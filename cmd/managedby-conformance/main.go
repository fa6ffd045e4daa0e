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

// Command managedby-conformance measures how a cluster treats the managedBy
// field of a Job-like resource and prints one row of the conformance table.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utiljson "k8s.io/apimachinery/pkg/util/json"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/batch-apiserver/batch-apiserver/pkg/conformance/managedby"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cmd := newCommand(os.Stdout)
	if err := cmd.ExecuteContext(ctx); err != nil {
		fmt.Fprintln(os.Stderr, "Error:", err)
		stop()
		os.Exit(1)
	}
}

// options are the command's flags.
type options struct {
	kubeconfig    string
	resource      string
	field         string
	template      string
	reserved      string
	reconcileWait time.Duration
	noReconcile   bool
	output        string
}

// newCommand builds the command, which writes its row to out.
func newCommand(out io.Writer) *cobra.Command {
	o := &options{}
	cmd := &cobra.Command{
		Use:   "managedby-conformance --resource RESOURCE.VERSION.GROUP",
		Short: "Measure how a cluster treats the managedBy field of a Job-like resource",
		Long: `managedby-conformance creates objects of the resource in a namespace of its own,
probes which managedBy values the server takes, whether the field stays
immutable through every write path, whether the status subresource enforces
the Job status contract for externally managed objects, and whether a
controller leaves them alone; then it deletes everything it made and prints
one row of the conformance table. It exits non-zero only when a probe could
not run, never because a cell is n.`,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.run(cmd.Context(), out)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.kubeconfig, "kubeconfig", "", "kubeconfig file; the usual loading rules when empty")
	f.StringVar(&o.resource, "resource", "", "resource to measure, RESOURCE.VERSION.GROUP (jobs.v1.batch.jobs.dev, jobs.v1.batch)")
	f.StringVar(&o.field, "field", "spec.managedBy", "dotted path of the managedBy field")
	f.StringVar(&o.template, "template", "", "YAML or JSON file of a minimal valid object; built in for the Jobs of batch and batch.jobs.dev")
	f.StringVar(&o.reserved, "reserved", managedby.JobControllerValue, "the value that hands an object to the built-in controller")
	f.DurationVar(&o.reconcileWait, "reconcile-wait", managedby.DefaultReconcileWait, "how long the reconcile probes watch an object")
	f.BoolVar(&o.noReconcile, "no-reconcile", false, "do not measure skipsReconcile (no controller runs)")
	f.StringVarP(&o.output, "output", "o", "markdown", "output format: markdown or json")
	_ = cmd.MarkFlagRequired("resource")
	return cmd
}

// run measures the resource and writes the row; it returns the kit's error
// after writing whatever row it got.
func (o *options) run(ctx context.Context, out io.Writer) error {
	if o.output != "markdown" && o.output != "json" {
		return fmt.Errorf("--output %q: want markdown or json", o.output)
	}
	cfg := managedby.Config{
		Resource:      o.resource,
		Field:         o.field,
		Reserved:      o.reserved,
		Reconcile:     !o.noReconcile,
		ReconcileWait: o.reconcileWait,
	}
	if o.template != "" {
		template, err := loadTemplate(o.template)
		if err != nil {
			return err
		}
		cfg.Template = template
	}
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	restConfig, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("loading the kubeconfig: %w", err)
	}
	// The probes make some sixty requests; client-go's default of five per
	// second would stretch them over a quarter of a minute.
	restConfig.QPS, restConfig.Burst = 50, 100
	// A deprecated version answers every request with the same warning.
	restConfig.WarningHandler = rest.NewWarningWriter(os.Stderr, rest.WarningWriterOptions{Deduplicate: true})
	if cfg.Dynamic, err = dynamic.NewForConfig(restConfig); err != nil {
		return fmt.Errorf("building the dynamic client: %w", err)
	}
	if cfg.Discovery, err = discovery.NewDiscoveryClientForConfig(restConfig); err != nil {
		return fmt.Errorf("building the discovery client: %w", err)
	}

	row, runErr := managedby.Run(ctx, cfg)
	if row.Resource != "" {
		if err := writeRow(out, o.output, row); err != nil {
			return errors.Join(runErr, err)
		}
	}
	return runErr
}

// loadTemplate reads a YAML or JSON object from path.
func loadTemplate(path string) (*unstructured.Unstructured, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading the template: %w", err)
	}
	data, err = utilyaml.ToJSON(data)
	if err != nil {
		return nil, fmt.Errorf("reading the template %s: %w", path, err)
	}
	obj := &unstructured.Unstructured{}
	// This decoder keeps whole numbers as int64, as unstructured objects
	// hold them.
	if err := utiljson.Unmarshal(data, &obj.Object); err != nil {
		return nil, fmt.Errorf("reading the template %s: %w", path, err)
	}
	if len(obj.Object) == 0 {
		return nil, fmt.Errorf("the template %s is empty", path)
	}
	return obj, nil
}

// writeRow writes the row as a markdown table or as one JSON object.
func writeRow(out io.Writer, format string, row managedby.Row) error {
	var err error
	if format == "json" {
		enc := json.NewEncoder(out)
		enc.SetIndent("", "  ")
		err = enc.Encode(row)
	} else {
		_, err = io.WriteString(out, managedby.MarkdownHeader()+row.Markdown())
	}
	if err != nil {
		return fmt.Errorf("writing the row: %w", err)
	}
	return nil
}
