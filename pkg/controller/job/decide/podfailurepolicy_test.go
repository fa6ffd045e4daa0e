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
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// judged is a verdict in a form rows can spell out.
type judged struct {
	Action  string
	Ignored bool
	FailJob string
}

func judgedOf(v verdict) judged {
	j := judged{Ignored: v.ignored, FailJob: v.failJob}
	if v.action != nil {
		j.Action = string(*v.action)
	}
	return j
}

func TestJudge(t *testing.T) {
	const msg42 = "Container main for pod ns/a failed with exit code 42 matching FailJob rule at index 0"
	policy := func(rules ...batchv1.PodFailurePolicyRule) *batchv1.PodFailurePolicy {
		return &batchv1.PodFailurePolicy{Rules: rules}
	}
	cases := map[string]struct {
		policy *batchv1.PodFailurePolicy
		pod    *corev1.Pod
		want   judged
	}{
		"no policy: the failure counts": {
			pod: pod("a").Failed(t0).ExitCode("main", 42, t0).Obj(),
		},
		"no rules: the failure counts": {
			policy: policy(), pod: pod("a").Failed(t0).ExitCode("main", 42, t0).Obj(),
		},
		"exit code In: FailJob with its message": {
			policy: policy(onExit(failJob, in, 42)), pod: pod("a").Failed(t0).ExitCode("main", 42, t0).Obj(),
			want: judged{Action: "FailJob", FailJob: msg42},
		},
		"exit code not In: no rule matched": {
			policy: policy(onExit(failJob, in, 42)), pod: pod("a").Failed(t0).ExitCode("main", 1, t0).Obj(),
		},
		"exit code NotIn: matched": {
			policy: policy(onExit(count, notIn, 42)), pod: pod("a").Failed(t0).ExitCode("main", 1, t0).Obj(),
			want: judged{Action: "Count"},
		},
		"exit code NotIn a listed code: no rule matched": {
			policy: policy(onExit(count, notIn, 1)), pod: pod("a").Failed(t0).ExitCode("main", 1, t0).Obj(),
		},
		"NotIn passes over a container that exited 0": {
			policy: policy(onExit(failJob, notIn, 1)), pod: pod("a").Failed(t0).ExitCode("side", 0, t0).ExitCode("main", 1, t0).Obj(),
		},
		"NotIn [0] blames the container that failed, not the one that succeeded": {
			policy: policy(onExit(failJob, notIn, 0)), pod: pod("a").Failed(t0).ExitCode("ok", 0, t0).ExitCode("bad", 7, t0).Obj(),
			want: judged{Action: "FailJob", FailJob: "Container bad for pod ns/a failed with exit code 7 matching FailJob rule at index 0"},
		},
		"In [0] never matches": {
			policy: policy(onExit(failJob, in, 0)), pod: pod("a").Failed(t0).ExitCode("main", 0, t0).Obj(),
		},
		"negative exit codes match (Windows)": {
			policy: policy(onExit(count, in, -1073741510)), pod: pod("a").Failed(t0).ExitCode("main", -1073741510, t0).Obj(),
			want: judged{Action: "Count"},
		},
		"a container still running does not match": {
			policy: policy(onExit(failJob, notIn, 1)),
			pod: func() *corev1.Pod {
				p := pod("a").Failed(t0).Obj()
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
				return p
			}(),
		},
		"a Pod without container statuses does not match exit codes": {
			policy: policy(onExit(failJob, notIn, 1)), pod: pod("a").Failed(t0).Obj(),
		},
		"containerName restricts the rule to that container": {
			policy: policy(onExitOf("sidecar", failJob, in, 42)), pod: pod("a").Failed(t0).ExitCode("main", 42, t0).Obj(),
		},
		"containerName names an init container": {
			policy: policy(onExitOf("init", failJob, in, 5)), pod: pod("a").Failed(t0).InitExitCode("init", 5, t0).Obj(),
			want: judged{Action: "FailJob", FailJob: "Container init for pod ns/a failed with exit code 5 matching FailJob rule at index 0"},
		},
		"regular containers are looked at before init containers": {
			policy: policy(onExit(failJob, in, 5, 6)), pod: pod("a").Failed(t0).InitExitCode("init", 5, t0).ExitCode("main", 6, t0).Obj(),
			want: judged{Action: "FailJob", FailJob: "Container main for pod ns/a failed with exit code 6 matching FailJob rule at index 0"},
		},
		"a pod condition with the status: Ignore": {
			policy: policy(onCond(ignore, corev1.DisruptionTarget, corev1.ConditionTrue)), pod: pod("a").Failed(t0).Disrupted().Obj(),
			want: judged{Action: "Ignore", Ignored: true},
		},
		"a pod condition with another status does not match": {
			policy: policy(onCond(ignore, corev1.DisruptionTarget, corev1.ConditionFalse)), pod: pod("a").Failed(t0).Disrupted().Obj(),
		},
		"a pattern can match a False condition": {
			policy: policy(onCond(failJob, corev1.PodReady, corev1.ConditionFalse)), pod: pod("a").Failed(t0).Obj(),
			want: judged{Action: "FailJob", FailJob: "Pod ns/a has condition Ready matching FailJob rule at index 0"},
		},
		"the first matching rule decides": {
			policy: policy(onExit(count, in, 42), onExit(failJob, in, 42)), pod: pod("a").Failed(t0).ExitCode("main", 42, t0).Obj(),
			want: judged{Action: "Count"},
		},
		"the message names the matching rule's position": {
			policy: policy(onExit(count, in, 1), onCond(ignore, corev1.DisruptionTarget, corev1.ConditionTrue), onExit(failJob, in, 42)),
			pod:    pod("a").Failed(t0).ExitCode("main", 42, t0).Obj(),
			want:   judged{Action: "FailJob", FailJob: "Container main for pod ns/a failed with exit code 42 matching FailJob rule at index 2"},
		},
		"FailIndex counts": {
			policy: policy(onExit(failIndex, in, 3)), pod: pod("a").Failed(t0).ExitCode("main", 3, t0).Obj(),
			want: judged{Action: "FailIndex"},
		},
		"a rule with an unknown action is passed over": {
			policy: policy(onExit("Retry", in, 42), onExit(count, in, 42)), pod: pod("a").Failed(t0).ExitCode("main", 42, t0).Obj(),
			want: judged{Action: "Count"},
		},
		"a rule with an unknown operator never matches": {
			policy: policy(onExit(failJob, "Between", 42)), pod: pod("a").Failed(t0).ExitCode("main", 42, t0).Obj(),
		},
		"a rule with no requirement never matches": {
			policy: policy(batchv1.PodFailurePolicyRule{Action: failJob}), pod: pod("a").Failed(t0).ExitCode("main", 42, t0).Obj(),
		},
		"a container name that matches nothing in a multi-container Pod": {
			policy: policy(batchv1.PodFailurePolicyRule{Action: count, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To("main"), Operator: in, Values: []int32{2}}}),
			pod: pod("a").Failed(t0).ExitCode("other", 2, t0).ExitCode("main", 3, t0).Obj(),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, judgedOf(judge(tc.policy, tc.pod))); diff != "" {
				t.Errorf("judge (-want +got):\n%s", diff)
			}
		})
	}
}

func TestFailJobMessage(t *testing.T) {
	withPolicy := job("j").PodFailurePolicy(onExit(failJob, in, 42)).Obj()
	cases := map[string]struct {
		job  *batchv1.Job
		pods []*corev1.Pod
		want string
	}{
		"no policy": {
			job: job("j").Obj(), pods: pods(pod("a").Failed(t0).ExitCode("main", 42, t0)),
		},
		"no failed Pod": {
			job: withPolicy, pods: pods(pod("a").Running()),
		},
		"the first matching failed Pod names the message": {
			job: withPolicy, pods: pods(pod("a").Failed(t0).ExitCode("main", 1, t0), pod("b").Failed(t0).ExitCode("main", 42, t0), pod("c").Failed(t0).ExitCode("main", 42, t0)),
			want: "Container main for pod ns/b failed with exit code 42 matching FailJob rule at index 0",
		},
		"a Pod already counted still matches": {
			job: withPolicy, pods: pods(pod("a").Failed(t0).ExitCode("main", 42, t0).NoFinalizer()),
			want: "Container main for pod ns/a failed with exit code 42 matching FailJob rule at index 0",
		},
		"a terminating Pod counts as failed and can match": {
			job: withPolicy, pods: pods(pod("a").Running().ExitCode("main", 42, t0).Deleted(t0)),
			want: "Container main for pod ns/a failed with exit code 42 matching FailJob rule at index 0",
		},
		"with podReplacementPolicy Failed a terminating Pod does not match": {
			job:  job("j").PodReplacementPolicy(batchv1.Failed).PodFailurePolicy(onExit(failJob, in, 42)).Obj(),
			pods: pods(pod("a").Running().ExitCode("main", 42, t0).Deleted(t0)),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got, ok := failJobMessage(tc.job, tc.pods)
			if got != tc.want || ok != (tc.want != "") {
				t.Errorf("failJobMessage = %q, %v; want %q", got, ok, tc.want)
			}
		})
	}
}
