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

package framework

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/version"
)

// This file is what the e2e tier knows about hosts older than the 1.37 one
// it is written for (make test-compat, docs/compatibility.md): which host it
// runs on, and what an older host lacks.

// ReferenceHostMinor is the host minor the e2e tier's expectations are
// written for (hack/tools pins 1.37).
const ReferenceHostMinor = 37

// hostVersion asks bin (kube-apiserver) for its version. The builds stamp
// it (hack/build-e2e-bins.sh, hack/build-compat-bins.sh); a binary that
// reports none is refused, since the tier then cannot tell which host
// expectations hold.
func hostVersion(bin string) (*version.Version, error) {
	res, err := run(time.Minute, nil, bin, "--version")
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", bin, err)
	}
	out := strings.TrimSpace(res.Stdout)
	v, err := version.ParseSemantic(strings.TrimPrefix(out, "Kubernetes "))
	if err != nil || v.Major() != 1 {
		return nil, fmt.Errorf("%s --version printed %q, want \"Kubernetes v1.X.Y\" (a binary built without version stamping?)", bin, out)
	}
	return v, nil
}

// HostGap is something a scenario needs from the host that hosts before
// minor Since do not have.
type HostGap struct {
	// Since is the first 1.x minor whose kube-apiserver or
	// kube-controller-manager has it.
	Since uint
	// Missing names what an older host lacks and what that changes.
	Missing string
}

// HostLacks returns why the host falls short of g ("" when it does not):
// the host version, the first version that has it, and what is missing.
func (b *Binaries) HostLacks(g HostGap) string {
	if b.HostVersion == nil || b.HostVersion.Minor() >= g.Since {
		return ""
	}
	return fmt.Sprintf("host v%s is older than 1.%d: %s", b.HostVersion, g.Since, g.Missing)
}

// SkipIfHostLacks skips t, saying why, when the host falls short of g.
func (b *Binaries) SkipIfHostLacks(t testing.TB, g HostGap) {
	t.Helper()
	if why := b.HostLacks(g); why != "" {
		t.Skip(why)
	}
}

// OlderHost reports whether the host is older than the one the tier's
// expectations are written for.
func (b *Binaries) OlderHost() bool {
	return b.HostVersion != nil && b.HostVersion.Minor() < ReferenceHostMinor
}

// hostAdjustment is a flag batch-apiserver needs on hosts older than
// gap.Since, the way an operator would run it there.
type hostAdjustment struct {
	gap       HostGap
	batchArgs []string
}

// hostAdjustments are the differences in how the harness runs batch-apiserver
// on an older host; docs/compatibility.md tells users the same. None today:
// hosts before 1.36 lack admissionregistration.k8s.io/v1
// MutatingAdmissionPolicy, and batch-apiserver turns that admission plugin
// off by itself when the host's discovery does not list the API (the
// compat runs check that it does: they pass no flag).
var hostAdjustments []hostAdjustment

// HostAdjustments says how the harness runs batch-apiserver differently on
// this host, and why.
func (b *Binaries) HostAdjustments() []string {
	var out []string
	for _, a := range hostAdjustments {
		if why := b.HostLacks(a.gap); why != "" {
			out = append(out, why)
		}
	}
	return out
}

// hostBatchArgs are the batch-apiserver flags this host needs.
func (b *Binaries) hostBatchArgs() []string {
	var args []string
	for _, a := range hostAdjustments {
		if b.HostLacks(a.gap) != "" {
			args = append(args, a.batchArgs...)
		}
	}
	return args
}
