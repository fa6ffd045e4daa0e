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

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

func TestSuccessPolicyMet(t *testing.T) {
	type met struct {
		Message string
		Met     bool
	}
	rules := func(rs ...batchv1.SuccessPolicyRule) *batchv1.SuccessPolicy { return &batchv1.SuccessPolicy{Rules: rs} }
	cases := map[string]struct {
		policy      *batchv1.SuccessPolicy
		completions int32
		succeeded   string
		want        met
	}{
		"no policy":              {completions: 5, succeeded: "0-4"},
		"no rules":               {policy: rules(), completions: 5, succeeded: "0-4"},
		"nothing succeeded":      {policy: rules(succeededCount(0)), completions: 5},
		"indexes: all succeeded": {policy: rules(succeededIndexes("1,3")), completions: 5, succeeded: "0-3", want: met{"Matched rules at index 0", true}},
		"indexes: one missing":   {policy: rules(succeededIndexes("1,4")), completions: 5, succeeded: "0-3"},
		"indexes beyond completions are dropped from the rule": {
			policy: rules(succeededIndexes("1,7")), completions: 5, succeeded: "1", want: met{"Matched rules at index 0", true},
		},
		"a rule left with no index is passed over": {
			policy: rules(succeededIndexes("7-9"), succeededCount(1)), completions: 5, succeeded: "1", want: met{"Matched rules at index 1", true},
		},
		"a rule whose indexes cannot be read is passed over": {
			policy: rules(succeededIndexes("a-b")), completions: 5, succeeded: "0-4",
		},
		"count: reached":                    {policy: rules(succeededCount(2)), completions: 5, succeeded: "0,4", want: met{"Matched rules at index 0", true}},
		"count: one short":                  {policy: rules(succeededCount(3)), completions: 5, succeeded: "0,4"},
		"indexes and count: enough of them": {policy: rules(succeededOf("0-3", 2)), completions: 5, succeeded: "1,3", want: met{"Matched rules at index 0", true}},
		"indexes and count: successes outside the rule do not count": {
			policy: rules(succeededOf("0-1", 2)), completions: 5, succeeded: "1-4",
		},
		"indexes and count: all of the rule's indexes suffice without the count": {
			policy: rules(succeededOf("1", 5)), completions: 5, succeeded: "1", want: met{"Matched rules at index 0", true},
		},
		"the first matching rule names the message": {
			policy: rules(succeededCount(4), succeededIndexes("0"), succeededCount(1)), completions: 5, succeeded: "0",
			want: met{"Matched rules at index 1", true},
		},
		"all rules matching: the first": {
			policy: rules(succeededCount(1), succeededIndexes("0")), completions: 5, succeeded: "0", want: met{"Matched rules at index 0", true},
		},
		"no rule matching":                        {policy: rules(succeededCount(3), succeededIndexes("4")), completions: 5, succeeded: "0,1"},
		"a rule with neither field never matches": {policy: rules(batchv1.SuccessPolicyRule{}), completions: 5, succeeded: "0-4"},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			msg, ok := successPolicyMet(tc.policy, tc.completions, parseIndexSet(tc.succeeded, int(tc.completions)))
			if diff := cmp.Diff(tc.want, met{msg, ok}); diff != "" {
				t.Errorf("successPolicyMet (-want +got):\n%s", diff)
			}
		})
	}
}
