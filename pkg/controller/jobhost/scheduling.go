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

package jobhost

import (
	"context"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	"k8s.io/client-go/informers"
	"k8s.io/klog/v2"

	jobcontroller "github.com/batch-apiserver/batch-apiserver/pkg/controller/job"
	"github.com/batch-apiserver/batch-apiserver/pkg/features"
	"github.com/batch-apiserver/batch-apiserver/pkg/hostcluster"
)

// The scheduling objects the controller keeps for its Jobs under
// WorkloadWithJob, in the version kube-controller-manager 1.37 keeps them.
const schedulingGroupVersion = "scheduling.k8s.io/v1beta1"

var schedulingResources = []string{"workloads", "podgroups"}

// schedulingAskEvery is how often a host that cannot be asked whether it
// serves them is asked again.
var schedulingAskEvery = 5 * time.Second

// decideWorkloads tells whether the controller keeps Workloads and
// PodGroups: only with the gate on and a host that serves both. It
// returns the line that says so, empty with the gate off (the startup line
// shows the gate). An error is a host that could not be asked.
func decideWorkloads(gateOn bool, serves func() (bool, error)) (bool, string, error) {
	if !gateOn {
		return false, "", nil
	}
	ok, err := serves()
	switch {
	case err != nil:
		return false, "", err
	case ok:
		return true, "Job controller: Workloads and PodGroups: on (WorkloadWithJob); a Job without a controller of its own gets a " +
			schedulingGroupVersion + " Workload and PodGroup, its Pods join the PodGroup", nil
	}
	return false, "Job controller: Workloads and PodGroups: off, the host cluster does not serve " + schedulingGroupVersion + " " +
		strings.Join(schedulingResources, " and ") + " (Kubernetes 1.36 or later with GenericWorkload on and the API enabled); " +
		"Jobs run as with WorkloadWithJob off", nil
}

// manageWorkloads decides about the scheduling objects at the first term
// and keeps the answer for the next: the line is said once. A host that
// cannot be asked is asked again until ctx is done, when it returns false.
// Terms run one at a time (r.running), so no lock.
func (r *jobControllerRunner) manageWorkloads(ctx context.Context) bool {
	if r.workloadsDecided {
		return r.workloadsOn
	}
	logger := klog.FromContext(ctx)
	gateOn := utilfeature.DefaultFeatureGate.Enabled(features.WorkloadWithJob)
	serves := func() (bool, error) {
		return hostcluster.Serves(r.informerClient.Discovery(), schedulingGroupVersion, schedulingResources...)
	}
	var on bool
	var line string
	err := wait.PollUntilContextCancel(ctx, schedulingAskEvery, true, func(context.Context) (bool, error) {
		var err error
		if on, line, err = decideWorkloads(gateOn, serves); err != nil {
			logger.Error(err, "Asking the host cluster whether it serves Workloads and PodGroups; asking again", "every", schedulingAskEvery)
			return false, nil
		}
		return true, nil
	})
	if err != nil {
		return false
	}
	r.workloadsDecided, r.workloadsOn = true, on
	if line != "" {
		logger.Info(line)
	}
	return on
}

// schedulingInformers returns the factory of the host's Workloads and
// PodGroups, every one of them: a delegated Job's PodGroup is made from
// its owner's Workload, which is not ours. The controller tells its own by
// their owner references, and, to delete those of deleted Jobs in
// standalone mode, by the server identity label it gives them.
func (r *jobControllerRunner) schedulingInformers(jm *jobcontroller.Controller) (informers.SharedInformerFactory, error) {
	f := informers.NewSharedInformerFactoryWithOptions(r.informerClient, informerResync, informers.WithTransform(dropManagedFields))
	if err := jm.ManageWorkloads(f.Scheduling().V1beta1().Workloads(), f.Scheduling().V1beta1().PodGroups()); err != nil {
		return nil, err
	}
	return f, nil
}
