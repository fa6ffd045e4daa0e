package job

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// matchPodFailurePolicy matches a failed Pod against the rules of the Job's
// pod failure policy, first matching rule wins. It returns
//   - the Job failure message when the Pod matched a FailJob rule (nil
//     otherwise),
//   - whether the failure counts toward backoffLimit (and
//     backoffLimitPerIndex): false only for an Ignore rule,
//   - the action of the matched rule, nil when no rule matched.
//
// A rule with an action this controller does not know is skipped, so that a
// newer API server adding an action does not make an older controller act
// on it wrongly.
func matchPodFailurePolicy(podFailurePolicy *batchv1.PodFailurePolicy, failedPod *corev1.Pod) (*string, bool, *batchv1.PodFailurePolicyAction) {
	if podFailurePolicy == nil {
		return nil, true, nil
	}
	for index, rule := range podFailurePolicy.Rules {
		switch {
		case rule.OnExitCodes != nil:
			containerStatus := matchOnExitCodes(&failedPod.Status, rule.OnExitCodes)
			if containerStatus == nil {
				continue
			}
			if msg, countFailed, action, ok := ruleOutcome(rule.Action, func() string {
				return fmt.Sprintf("Container %s for pod %s/%s failed with exit code %v matching %v rule at index %d",
					containerStatus.Name, failedPod.Namespace, failedPod.Name, containerStatus.State.Terminated.ExitCode, rule.Action, index)
			}); ok {
				return msg, countFailed, action
			}
		case rule.OnPodConditions != nil:
			podCondition := matchOnPodConditions(&failedPod.Status, rule.OnPodConditions)
			if podCondition == nil {
				continue
			}
			if msg, countFailed, action, ok := ruleOutcome(rule.Action, func() string {
				return fmt.Sprintf("Pod %s/%s has condition %v matching %v rule at index %d",
					failedPod.Namespace, failedPod.Name, podCondition.Type, rule.Action, index)
			}); ok {
				return msg, countFailed, action
			}
		}
	}
	return nil, true, nil
}

// ruleOutcome turns the action of a matched rule into the results of
// matchPodFailurePolicy; ok is false for an unknown action. failJobMessage is
// only called for FailJob, the one action that reports a message.
func ruleOutcome(action batchv1.PodFailurePolicyAction, failJobMessage func() string) (*string, bool, *batchv1.PodFailurePolicyAction, bool) {
	switch action {
	case batchv1.PodFailurePolicyActionIgnore:
		return nil, false, &action, true
	case batchv1.PodFailurePolicyActionFailIndex, batchv1.PodFailurePolicyActionCount:
		return nil, true, &action, true
	case batchv1.PodFailurePolicyActionFailJob:
		msg := failJobMessage()
		return &msg, true, &action, true
	}
	return nil, false, nil, false
}

// matchOnExitCodes returns the status of a terminated container matching the
// requirement, looking at regular containers first and init containers
// after; a non-nil result always has State.Terminated set.
func matchOnExitCodes(podStatus *corev1.PodStatus, requirement *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	if cs := matchingContainerStatus(podStatus.ContainerStatuses, requirement); cs != nil {
		return cs
	}
	return matchingContainerStatus(podStatus.InitContainerStatuses, requirement)
}

// matchOnPodConditions returns the first Pod condition that has the type and
// status of one of the patterns.
func matchOnPodConditions(podStatus *corev1.PodStatus, patterns []batchv1.PodFailurePolicyOnPodConditionsPattern) *corev1.PodCondition {
	for i := range podStatus.Conditions {
		cond := &podStatus.Conditions[i]
		for _, pattern := range patterns {
			if cond.Type == pattern.Type && cond.Status == pattern.Status {
				return cond
			}
		}
	}
	return nil
}

// matchingContainerStatus returns the first terminated container status of
// the list matching the requirement.
func matchingContainerStatus(statuses []corev1.ContainerStatus, requirement *batchv1.PodFailurePolicyOnExitCodesRequirement) *corev1.ContainerStatus {
	for i := range statuses {
		cs := &statuses[i]
		// A container still running or terminating has no exit code yet.
		if cs.State.Terminated == nil {
			continue
		}
		if requirement.ContainerName != nil && *requirement.ContainerName != cs.Name {
			continue
		}
		// A container that succeeded did not cause the failure, whatever the
		// operator: NotIn [1] must not blame a container that exited 0.
		if cs.State.Terminated.ExitCode == 0 {
			continue
		}
		if exitCodeMatches(cs.State.Terminated.ExitCode, requirement) {
			return cs
		}
	}
	return nil
}

// exitCodeMatches applies the requirement's operator; an unknown operator
// never matches.
func exitCodeMatches(exitCode int32, requirement *batchv1.PodFailurePolicyOnExitCodesRequirement) bool {
	switch requirement.Operator {
	case batchv1.PodFailurePolicyOnExitCodesOpIn:
		return slices.Contains(requirement.Values, exitCode)
	case batchv1.PodFailurePolicyOnExitCodesOpNotIn:
		return !slices.Contains(requirement.Values, exitCode)
	}
	return false
}
