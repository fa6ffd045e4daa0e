package job

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// RunningContainer records a container that has not terminated yet.
func (b *podBuilder) RunningContainer(container string) *podBuilder {
	b.pod.Status.ContainerStatuses = append(b.pod.Status.ContainerStatuses, corev1.ContainerStatus{
		Name:  container,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
	})
	return b
}

func onExitCodes(action batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, values ...int32) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{
		Action:      action,
		OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: values},
	}
}

func onContainerExitCodes(action batchv1.PodFailurePolicyAction, container string, op batchv1.PodFailurePolicyOnExitCodesOperator, values ...int32) batchv1.PodFailurePolicyRule {
	r := onExitCodes(action, op, values...)
	r.OnExitCodes.ContainerName = ptr.To(container)
	return r
}

func onDisruption(action batchv1.PodFailurePolicyAction) batchv1.PodFailurePolicyRule {
	return batchv1.PodFailurePolicyRule{
		Action: action,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
			{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
		},
	}
}

type podFailurePolicyResult struct {
	Message     *string
	CountFailed bool
	Action      *batchv1.PodFailurePolicyAction
}

func runMatchPodFailurePolicy(policy *batchv1.PodFailurePolicy, pod *corev1.Pod) podFailurePolicyResult {
	msg, count, action := matchPodFailurePolicy(policy, pod)
	return podFailurePolicyResult{Message: msg, CountFailed: count, Action: action}
}

// TestMatchPodFailurePolicyActions runs every action against every kind of
// requirement: what the action returns must not depend on how the rule
// matched.
func TestMatchPodFailurePolicyActions(t *testing.T) {
	job := makeJob("j").Obj()
	finished := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	matchers := map[string]struct {
		rule func(batchv1.PodFailurePolicyAction) batchv1.PodFailurePolicyRule
		pod  *corev1.Pod
		// failJobMessage is the message of the FailJob row.
		failJobMessage string
	}{
		"exit code In": {
			rule: func(a batchv1.PodFailurePolicyAction) batchv1.PodFailurePolicyRule {
				return onExitCodes(a, batchv1.PodFailurePolicyOnExitCodesOpIn, 1, 42)
			},
			pod:            makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", 42, finished).Obj(),
			failJobMessage: "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 0",
		},
		"exit code NotIn": {
			rule: func(a batchv1.PodFailurePolicyAction) batchv1.PodFailurePolicyRule {
				return onExitCodes(a, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 1, 2)
			},
			pod:            makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", 3, finished).Obj(),
			failJobMessage: "Container main for pod ns/p failed with exit code 3 matching FailJob rule at index 0",
		},
		"exit code of the named container": {
			rule: func(a batchv1.PodFailurePolicyAction) batchv1.PodFailurePolicyRule {
				return onContainerExitCodes(a, "sidecar", batchv1.PodFailurePolicyOnExitCodesOpIn, 5)
			},
			pod: makePod("p", job).Phase(corev1.PodFailed).
				ExitCode("main", 5, finished).ExitCode("sidecar", 5, finished).Obj(),
			failJobMessage: "Container sidecar for pod ns/p failed with exit code 5 matching FailJob rule at index 0",
		},
		"exit code of an init container": {
			rule: func(a batchv1.PodFailurePolicyAction) batchv1.PodFailurePolicyRule {
				return onExitCodes(a, batchv1.PodFailurePolicyOnExitCodesOpIn, 7)
			},
			pod:            makePod("p", job).Phase(corev1.PodFailed).InitExitCode("setup", 7, finished).Obj(),
			failJobMessage: "Container setup for pod ns/p failed with exit code 7 matching FailJob rule at index 0",
		},
		"pod condition": {
			rule: onDisruption,
			pod: makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", 137, finished).
				Condition(corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}).Obj(),
			failJobMessage: "Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0",
		},
	}
	for matcherName, m := range matchers {
		for _, action := range []batchv1.PodFailurePolicyAction{
			batchv1.PodFailurePolicyActionFailJob,
			batchv1.PodFailurePolicyActionFailIndex,
			batchv1.PodFailurePolicyActionIgnore,
			batchv1.PodFailurePolicyActionCount,
		} {
			t.Run(string(action)+" on "+matcherName, func(t *testing.T) {
				want := podFailurePolicyResult{CountFailed: true, Action: ptr.To(action)}
				switch action {
				case batchv1.PodFailurePolicyActionFailJob:
					want.Message = ptr.To(m.failJobMessage)
				case batchv1.PodFailurePolicyActionIgnore:
					want.CountFailed = false
				}
				policy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{m.rule(action)}}
				got := runMatchPodFailurePolicy(policy, m.pod)
				if diff := cmp.Diff(want, got); diff != "" {
					t.Errorf("unexpected result (-want,+got):\n%s", diff)
				}
			})
		}
	}
}

func TestMatchPodFailurePolicy(t *testing.T) {
	job := makeJob("j").Obj()
	finished := time.Date(2026, 1, 1, 0, 1, 0, 0, time.UTC)
	noMatch := podFailurePolicyResult{CountFailed: true}
	disrupted := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}

	cases := map[string]struct {
		policy *batchv1.PodFailurePolicy
		pod    *corev1.Pod
		want   podFailurePolicyResult
	}{
		"no policy": {
			pod:  makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", 1, finished).Obj(),
			want: noMatch,
		},
		"no rules": {
			policy: &batchv1.PodFailurePolicy{},
			pod:    makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", 1, finished).Obj(),
			want:   noMatch,
		},
		"no rule matches: the failure counts and no action is returned": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 2, 3),
				onDisruption(batchv1.PodFailurePolicyActionIgnore),
			}},
			pod:  makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", 1, finished).Obj(),
			want: noMatch,
		},
		"first matching rule wins": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onDisruption(batchv1.PodFailurePolicyActionIgnore),
				onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 137),
			}},
			pod:  makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", 137, finished).Condition(disrupted).Obj(),
			want: podFailurePolicyResult{CountFailed: false, Action: ptr.To(batchv1.PodFailurePolicyActionIgnore)},
		},
		"rules that do not match are skipped; the message has the index of the matching rule": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onExitCodes(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnExitCodesOpIn, 1),
				onDisruption(batchv1.PodFailurePolicyActionIgnore),
				onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 2, 3),
			}},
			pod: makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", 3, finished).Obj(),
			want: podFailurePolicyResult{
				Message:     ptr.To("Container main for pod ns/p failed with exit code 3 matching FailJob rule at index 2"),
				CountFailed: true,
				Action:      ptr.To(batchv1.PodFailurePolicyActionFailJob),
			},
		},
		"rule with an unknown action is skipped": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onExitCodes("Retry", batchv1.PodFailurePolicyOnExitCodesOpIn, 2),
				onExitCodes(batchv1.PodFailurePolicyActionCount, batchv1.PodFailurePolicyOnExitCodesOpIn, 2),
			}},
			pod:  makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", 2, finished).Obj(),
			want: podFailurePolicyResult{CountFailed: true, Action: ptr.To(batchv1.PodFailurePolicyActionCount)},
		},
		"rule with an unknown operator never matches": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onExitCodes(batchv1.PodFailurePolicyActionIgnore, "Between", 2),
			}},
			pod:  makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", 2, finished).Obj(),
			want: noMatch,
		},
		"a running container does not match": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 1),
			}},
			pod:  makePod("p", job).Phase(corev1.PodFailed).RunningContainer("main").Obj(),
			want: noMatch,
		},
		"a pod without container statuses does not match exit codes": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 1),
			}},
			pod:  makePod("p", job).Phase(corev1.PodFailed).Obj(),
			want: noMatch,
		},
		"NotIn ignores containers that exited 0": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 111),
			}},
			pod: makePod("p", job).Phase(corev1.PodFailed).
				InitExitCode("setup", 0, finished).ExitCode("main", 111, finished).ExitCode("helper", 0, finished).Obj(),
			want: noMatch,
		},
		"NotIn [0] matches the container that failed, not the one that succeeded": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 0),
			}},
			pod: makePod("p", job).Phase(corev1.PodFailed).
				ExitCode("helper", 0, finished).ExitCode("main", 1, finished).Obj(),
			want: podFailurePolicyResult{
				Message:     ptr.To("Container main for pod ns/p failed with exit code 1 matching FailJob rule at index 0"),
				CountFailed: true,
				Action:      ptr.To(batchv1.PodFailurePolicyActionFailJob),
			},
		},
		"exit code 0 never matches In": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpIn, 0, 1),
			}},
			pod:  makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", 0, finished).Obj(),
			want: noMatch,
		},
		"negative exit codes match (Windows)": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onExitCodes(batchv1.PodFailurePolicyActionIgnore, batchv1.PodFailurePolicyOnExitCodesOpIn, -1073741510),
			}},
			pod:  makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", -1073741510, finished).Obj(),
			want: podFailurePolicyResult{CountFailed: false, Action: ptr.To(batchv1.PodFailurePolicyActionIgnore)},
		},
		"containerName restricts the rule to that container": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onContainerExitCodes(batchv1.PodFailurePolicyActionFailJob, "sidecar", batchv1.PodFailurePolicyOnExitCodesOpIn, 5),
			}},
			pod:  makePod("p", job).Phase(corev1.PodFailed).ExitCode("main", 5, finished).ExitCode("sidecar", 1, finished).Obj(),
			want: noMatch,
		},
		"containerName can name an init container": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onContainerExitCodes(batchv1.PodFailurePolicyActionFailJob, "setup", batchv1.PodFailurePolicyOnExitCodesOpIn, 5),
			}},
			pod: makePod("p", job).Phase(corev1.PodFailed).InitExitCode("setup", 5, finished).Obj(),
			want: podFailurePolicyResult{
				Message:     ptr.To("Container setup for pod ns/p failed with exit code 5 matching FailJob rule at index 0"),
				CountFailed: true,
				Action:      ptr.To(batchv1.PodFailurePolicyActionFailJob),
			},
		},
		"regular containers are matched before init containers": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onExitCodes(batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyOnExitCodesOpNotIn, 0),
			}},
			pod: makePod("p", job).Phase(corev1.PodFailed).
				InitExitCode("setup", 3, finished).ExitCode("main", 4, finished).Obj(),
			want: podFailurePolicyResult{
				Message:     ptr.To("Container main for pod ns/p failed with exit code 4 matching FailJob rule at index 0"),
				CountFailed: true,
				Action:      ptr.To(batchv1.PodFailurePolicyActionFailJob),
			},
		},
		"pod condition with another status does not match": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
				onDisruption(batchv1.PodFailurePolicyActionIgnore),
			}},
			pod: makePod("p", job).Phase(corev1.PodFailed).
				Condition(corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse}).Obj(),
			want: noMatch,
		},
		"pod condition pattern can match status False": {
			policy: &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
				Action: batchv1.PodFailurePolicyActionFailJob,
				OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
					{Type: corev1.PodReady, Status: corev1.ConditionTrue},
					{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse},
				},
			}}},
			pod: makePod("p", job).Phase(corev1.PodFailed).
				Condition(corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse,
					LastTransitionTime: metav1.NewTime(finished)}).Obj(),
			want: podFailurePolicyResult{
				Message:     ptr.To("Pod ns/p has condition DisruptionTarget matching FailJob rule at index 0"),
				CountFailed: true,
				Action:      ptr.To(batchv1.PodFailurePolicyActionFailJob),
			},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := runMatchPodFailurePolicy(tc.policy, tc.pod)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unexpected result (-want,+got):\n%s", diff)
			}
		})
	}
}
