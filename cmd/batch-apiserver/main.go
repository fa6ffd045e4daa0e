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

// Command batch-apiserver serves the batch.jobs.dev Job API.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
	genericapiserver "k8s.io/apiserver/pkg/server"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/version"
	"k8s.io/component-base/version/verflag"

	"github.com/batch-apiserver/batch-apiserver/pkg/cmd/server"
)

func main() {
	ctx := genericapiserver.SetupSignalContext()
	cmd := server.NewCommand(ctx, os.Stdout, os.Stderr)
	addVersionFlag(cmd, os.Stdout)
	os.Exit(cli.Run(cmd))
}

// addVersionFlag gives the command component-base's --version, as every
// Kubernetes component has it: --version prints the version the build was
// stamped with (hack/version.sh) and exits, --version=raw prints all of it.
func addVersionFlag(cmd *cobra.Command, out io.Writer) {
	if cmd.Flags().Lookup("version") == nil {
		verflag.AddFlags(cmd.Flags())
	}
	run := cmd.RunE
	cmd.RunE = func(c *cobra.Command, args []string) error {
		// verflag would name the program "Kubernetes"; this binary is not.
		if c.Flags().Lookup("version").Value.String() == "true" {
			_, err := fmt.Fprintf(out, "batch-apiserver %s\n", version.Get())
			return err
		}
		verflag.PrintAndExitIfRequested()
		return run(c, args)
	}
}
