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

	corev1 "k8s.io/api/core/v1"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// successPolicyMet tells whether the succeeded indexes of an Indexed Job
// satisfy a rule of its successPolicy and, when they do, the message of the
// SuccessCriteriaMet condition, which names the first such rule. A rule's
// succeededIndexes keep only the indexes below completions; a rule left
// with none can never be met and is passed over.
func successPolicyMet(policy *batchv1.SuccessPolicy, completions int32, succeeded indexSet) (string, bool) {
	if policy == nil || len(succeeded) == 0 {
		return "", false
	}
	for i, rule := range policy.Rules {
		if ruleMet(rule, completions, succeeded) {
			return fmt.Sprintf("Matched rules at index %d", i), true
		}
	}
	return "", false
}

func ruleMet(rule batchv1.SuccessPolicyRule, completions int32, succeeded indexSet) bool {
	if rule.SucceededIndexes == nil {
		return rule.SucceededCount != nil && succeeded.count() >= int(*rule.SucceededCount)
	}
	wanted := parseIndexSet(*rule.SucceededIndexes, int(completions))
	if len(wanted) == 0 {
		return false
	}
	got := wanted.overlap(succeeded)
	if rule.SucceededCount != nil && got >= int(*rule.SucceededCount) {
		return true
	}
	return got == wanted.count()
}

// successCriteriaMet returns the Job's SuccessCriteriaMet condition when it
// is True: a success an earlier sync declared, which this one carries on.
func successCriteriaMet(status *batchv1.JobStatus) *batchv1.JobCondition {
	return trueCondition(status, batchv1.JobSuccessCriteriaMet)
}

// trueCondition returns the condition of type t when its status is True.
func trueCondition(status *batchv1.JobStatus, t batchv1.JobConditionType) *batchv1.JobCondition {
	if c := findCondition(status.Conditions, t); c != nil && c.Status == corev1.ConditionTrue {
		return c
	}
	return nil
}

func findCondition(list []batchv1.JobCondition, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range list {
		if list[i].Type == t {
			return &list[i]
		}
	}
	return nil
}
