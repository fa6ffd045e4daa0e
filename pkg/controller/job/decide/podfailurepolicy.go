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

package decide

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// verdict is what a Job's podFailurePolicy says of one failed Pod.
type verdict struct {
	// action of the first rule the Pod matched; nil when none did.
	action *batchv1.PodFailurePolicyAction
	// ignored: the failure counts toward no backoff limit (action Ignore).
	ignored bool
	// failJob is the message of the Job's failure for a FailJob rule.
	failJob string
}

func (v verdict) is(a batchv1.PodFailurePolicyAction) bool {
	return v.action != nil && *v.action == a
}

// judge applies the policy's rules to a failed Pod in their order; the
// first rule the Pod matches decides. A Pod matching no rule, or a Job with
// no policy, gets the default: the failure counts. A rule whose action this
// controller does not know is passed over, so that an API server newer than
// the controller cannot make it act on a half-understood rule.
func judge(policy *batchv1.PodFailurePolicy, pod *corev1.Pod) verdict {
	if policy == nil {
		return verdict{}
	}
	for i := range policy.Rules {
		rule := &policy.Rules[i]
		if !knownAction(rule.Action) {
			continue
		}
		why, ok := ruleMatches(rule, i, pod)
		if !ok {
			continue
		}
		v := verdict{action: &rule.Action, ignored: rule.Action == batchv1.PodFailurePolicyActionIgnore}
		if rule.Action == batchv1.PodFailurePolicyActionFailJob {
			v.failJob = why
		}
		return v
	}
	return verdict{}
}

func knownAction(a batchv1.PodFailurePolicyAction) bool {
	switch a {
	case batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionFailIndex,
		batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyActionCount:
		return true
	}
	return false
}

// ruleMatches tells whether the Pod matches the rule at position i and, if
// so, what the Job's failure message would say of it.
func ruleMatches(rule *batchv1.PodFailurePolicyRule, i int, pod *corev1.Pod) (string, bool) {
	switch {
	case rule.OnExitCodes != nil:
		c := culprit(pod, rule.OnExitCodes)
		if c == nil {
			return "", false
		}
		return fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
			c.Name, pod.Namespace, pod.Name, c.State.Terminated.ExitCode, rule.Action, i), true
	case rule.OnPodConditions != nil:
		t, ok := conditionMatch(pod, rule.OnPodConditions)
		if !ok {
			return "", false
		}
		return fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d", pod.Namespace, pod.Name, t, rule.Action, i), true
	}
	return "", false
}

// culprit returns the terminated container whose exit code the requirement
// matches: the regular containers are looked at before the init
// containers. A container that exited 0 is never a culprit, whatever the
// operator, since it did not fail.
func culprit(pod *corev1.Pod, req *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for _, statuses := range [][]corev1.ContainerStatus{pod.Status.ContainerStatuses, pod.Status.InitContainerStatuses} {
		for i := range statuses {
			cs := &statuses[i]
			term := cs.State.Terminated
			if term == nil || term.ExitCode == 0 {
				continue
			}
			if req.ContainerName != nil && *req.ContainerName != cs.Name {
				continue
			}
			if exitCodeMatches(req, term.ExitCode) {
				return cs
			}
		}
	}
	return nil
}

// exitCodeMatches applies the operator; an operator this controller does
// not know matches nothing.
func exitCodeMatches(req *batchv1.PodFailurePolicyOnExitCodesRequirement, code int32) bool {
	listed := slices.Contains(req.Values, code)
	switch req.Operator {
	case batchv1.PodFailurePolicyOnExitCodesOpIn:
		return listed
	case batchv1.PodFailurePolicyOnExitCodesOpNotIn:
		return !listed
	}
	return false
}

// conditionMatch returns the type of the Pod's first condition that one of
// the patterns names with the same status.
func conditionMatch(pod *corev1.Pod, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) (corev1.PodConditionType, bool) {
	for _, c := range pod.Status.Conditions {
		for _, p := range patterns {
			if c.Type == p.Type && c.Status == p.Status {
				return c.Type, true
			}
		}
	}
	return "", false
}

// failJobMessage returns the message of the first failed Pod (in the given
// order, counted or not) that a FailJob rule matches.
func failJobMessage(job *batchv1.Job, pods []*corev1.Pod) (string, bool) {
	if job.Spec.PodFailurePolicy == nil {
		return "", false
	}
	for _, p := range pods {
		if !podFailed(job, p) {
			continue
		}
		if v := judge(job.Spec.PodFailurePolicy, p); v.failJob != "" {
			return v.failJob, true
		}
	}
	return "", false
}
