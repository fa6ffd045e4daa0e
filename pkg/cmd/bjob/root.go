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

// Package bjob is the kubectl plugin for batch.jobs.dev Jobs (kubectl
// bjob): describe, logs, wait, suspend, resume and retry, on the generated
// clientset and kubectl's own flags, printers and describe helpers.
package bjob

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/kubernetes"
	"k8s.io/component-base/version"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
)

// Clients are what the commands talk to: the Jobs through the generated
// clientset, and the Pods and Events of the cluster the Jobs run in. When
// batch-apiserver is aggregated both are the same kubeconfig.
type Clients struct {
	Jobs versioned.Interface
	Kube kubernetes.Interface
	// Namespace is the namespace of the kubeconfig's context, or of -n.
	Namespace string
}

// ClientsFunc returns the Clients once the flags are parsed.
type ClientsFunc func() (*Clients, error)

// ExitError ends the plugin with Code and no further message (wait's 1
// and 2); main turns it into the process's exit code.
type ExitError struct {
	Code int
}

func (e *ExitError) Error() string { return fmt.Sprintf("exit code %d", e.Code) }

// ExitCode is the exit code err asks for: an ExitError's code, 1 for any
// other error and 0 for none.
func ExitCode(err error) int {
	if err == nil {
		return 0
	}
	var exit *ExitError
	if errors.As(err, &exit) {
		return exit.Code
	}
	return 1
}

// root holds what every subcommand shares.
type root struct {
	streams genericiooptions.IOStreams
	clients ClientsFunc
	// allNamespaces is -A: describe every Job of every namespace.
	allNamespaces bool
}

// NewCommand returns `kubectl bjob` with kubectl's connection flags
// (--kubeconfig, --context, -n, ...) read by cli-runtime.
func NewCommand(streams genericiooptions.IOStreams) *cobra.Command {
	flags := genericclioptions.NewConfigFlags(true)
	cmd := newCommand(streams, func() (*Clients, error) { return clientsFromFlags(flags) })
	flags.AddFlags(cmd.PersistentFlags())
	return cmd
}

// clientsFromFlags builds both clientsets from kubectl's connection flags.
func clientsFromFlags(flags *genericclioptions.ConfigFlags) (*Clients, error) {
	cfg, err := flags.ToRESTConfig()
	if err != nil {
		return nil, err
	}
	ns, _, err := flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return nil, err
	}
	jobs, err := versioned.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Job client: %w", err)
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("creating the Pod client: %w", err)
	}
	return &Clients{Jobs: jobs, Kube: kube, Namespace: ns}, nil
}

// newCommand builds the command tree on clients, so that tests pass fake
// clientsets.
func newCommand(streams genericiooptions.IOStreams, clients ClientsFunc) *cobra.Command {
	r := &root{streams: streams, clients: clients}
	cmd := &cobra.Command{
		Use:   "kubectl-bjob",
		Short: "Work with batch.jobs.dev Jobs: describe, logs, wait, suspend, resume, retry",
		Long: templates.LongDesc(`
			Work with the Jobs of batch-apiserver (group batch.jobs.dev, short name bjob)
			as kubectl does with batch/v1 Jobs, and a little more: wait for a Job to
			end either way, retry a failed Job, read the logs of one completion index.

			Installed as kubectl-bjob on PATH, it runs as "kubectl bjob".`),
		Annotations: map[string]string{
			cobra.CommandDisplayNameAnnotation: "kubectl bjob",
		},
		SilenceUsage:  true,
		SilenceErrors: true,
		// The version make build stamps (hack/version.sh), as batch-apiserver
		// --version prints it.
		Version: version.Get().GitVersion,
	}
	cmd.SetVersionTemplate("kubectl-bjob {{.Version}}\n")
	// Declared here so that cobra does not add its -v shorthand: kubectl
	// users read -v as log verbosity.
	cmd.Flags().Bool("version", false, "Print the version of kubectl-bjob and exit.")
	cmd.SetIn(streams.In)
	cmd.SetOut(streams.Out)
	cmd.SetErr(streams.ErrOut)
	cmd.AddCommand(
		r.newDescribeCommand(),
		r.newLogsCommand(),
		r.newWaitCommand(),
		r.newSuspendCommand(true),
		r.newSuspendCommand(false),
		r.newRetryCommand(),
	)
	return cmd
}

// completeJobNames completes the names of the Jobs in the namespace of the
// flags already given.
func (r *root) completeJobNames(cmd *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	c, err := r.clients()
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	list, err := c.Jobs.BatchV1().Jobs(c.Namespace).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	var names []cobra.Completion
	for _, j := range list.Items {
		if strings.HasPrefix(j.Name, toComplete) && !slices.Contains(args, j.Name) {
			names = append(names, j.Name)
		}
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
