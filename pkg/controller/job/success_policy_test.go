package job

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2/ktesting"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

type successPolicyResult struct {
	Message string
	Met     bool
}

func TestMatchSuccessPolicy(t *testing.T) {
	met := func(msg string) successPolicyResult { return successPolicyResult{Message: msg, Met: true} }
	cases := map[string]struct {
		rules            []batchv1.SuccessPolicyRule // nil: no success policy
		completions      int32
		succeededIndexes orderedIntervals
		want             successPolicyResult
	}{
		"no success policy": {
			completions:      10,
			succeededIndexes: orderedIntervals{{First: 0, Last: 9}},
		},
		"no rules": {
			rules:            []batchv1.SuccessPolicyRule{},
			completions:      10,
			succeededIndexes: orderedIntervals{{First: 0, Last: 9}},
		},
		"no succeeded index": {
			rules:       []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](1)}},
			completions: 10,
		},
		"succeededIndexes only: all of them succeeded": {
			rules:            []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0-2")}},
			completions:      10,
			succeededIndexes: orderedIntervals{{First: 0, Last: 2}, {First: 4, Last: 7}},
			want:             met("Matched rules at index 0"),
		},
		"succeededIndexes only: one of them did not succeed": {
			rules:            []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0-3")}},
			completions:      10,
			succeededIndexes: orderedIntervals{{First: 0, Last: 2}, {First: 4, Last: 7}},
		},
		"succeededIndexes only: indexes beyond completions are dropped": {
			rules:            []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("3-20")}},
			completions:      5,
			succeededIndexes: orderedIntervals{{First: 3, Last: 4}},
			want:             met("Matched rules at index 0"),
		},
		"succeededIndexes that cannot be parsed: the rule is skipped": {
			rules:            []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("invalid-form")}},
			completions:      10,
			succeededIndexes: orderedIntervals{{First: 0, Last: 9}},
		},
		"succeededCount only: reached": {
			rules:            []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](3)}},
			completions:      10,
			succeededIndexes: orderedIntervals{{First: 0, Last: 1}, {First: 5, Last: 5}},
			want:             met("Matched rules at index 0"),
		},
		"succeededCount only: one short": {
			rules:            []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](4)}},
			completions:      10,
			succeededIndexes: orderedIntervals{{First: 0, Last: 1}, {First: 5, Last: 5}},
		},
		"both: enough of the indexes succeeded": {
			rules:            []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("3-6"), SucceededCount: ptr.To[int32](2)}},
			completions:      10,
			succeededIndexes: orderedIntervals{{First: 0, Last: 2}, {First: 4, Last: 7}},
			want:             met("Matched rules at index 0"),
		},
		"both: succeeded indexes outside the rule do not count": {
			rules:            []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("3-6"), SucceededCount: ptr.To[int32](2)}},
			completions:      10,
			succeededIndexes: orderedIntervals{{First: 0, Last: 2}, {First: 6, Last: 9}},
		},
		"multiple rules: the message names the first matching rule": {
			rules: []batchv1.SuccessPolicyRule{
				{SucceededIndexes: ptr.To("9")},
				{SucceededIndexes: ptr.To("4,6")},
				{SucceededCount: ptr.To[int32](1)},
			},
			completions:      10,
			succeededIndexes: orderedIntervals{{First: 0, Last: 2}, {First: 4, Last: 7}},
			want:             met("Matched rules at index 1"),
		},
		"multiple rules all matching: the first one": {
			rules: []batchv1.SuccessPolicyRule{
				{SucceededIndexes: ptr.To("0,1")},
				{SucceededIndexes: ptr.To("5")},
			},
			completions:      10,
			succeededIndexes: orderedIntervals{{First: 0, Last: 2}, {First: 4, Last: 7}},
			want:             met("Matched rules at index 0"),
		},
		"multiple rules, none matching": {
			rules: []batchv1.SuccessPolicyRule{
				{SucceededIndexes: ptr.To("9")},
				{SucceededCount: ptr.To[int32](8)},
				{SucceededIndexes: ptr.To("0-4"), SucceededCount: ptr.To[int32](5)},
			},
			completions:      10,
			succeededIndexes: orderedIntervals{{First: 0, Last: 2}, {First: 4, Last: 7}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			logger, _ := ktesting.NewTestContext(t)
			var policy *batchv1.SuccessPolicy
			if tc.rules != nil {
				policy = &batchv1.SuccessPolicy{Rules: tc.rules}
			}
			msg, ok := matchSuccessPolicy(logger, policy, tc.completions, tc.succeededIndexes)
			if diff := cmp.Diff(tc.want, successPolicyResult{Message: msg, Met: ok}); diff != "" {
				t.Errorf("unexpected result (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSuccessPolicyMatchSucceededIndexesRule(t *testing.T) {
	cases := map[string]struct {
		ruleIndexes      orderedIntervals
		succeededIndexes orderedIntervals
		succeededCount   *int32
		want             bool
	}{
		"rule is a proper subset": {
			ruleIndexes:      orderedIntervals{{First: 2, Last: 4}, {First: 6, Last: 8}},
			succeededIndexes: orderedIntervals{{First: 1, Last: 9}},
			want:             true,
		},
		"rule equals succeeded": {
			ruleIndexes:      orderedIntervals{{First: 1, Last: 3}, {First: 6, Last: 9}},
			succeededIndexes: orderedIntervals{{First: 1, Last: 3}, {First: 6, Last: 9}},
			want:             true,
		},
		"rule spans several succeeded intervals with a gap": {
			ruleIndexes:      orderedIntervals{{First: 1, Last: 9}},
			succeededIndexes: orderedIntervals{{First: 1, Last: 4}, {First: 6, Last: 9}},
		},
		"rule overlaps succeeded at the start": {
			ruleIndexes:      orderedIntervals{{First: 0, Last: 3}},
			succeededIndexes: orderedIntervals{{First: 1, Last: 5}},
		},
		"rule overlaps succeeded at the start; succeededCount reached": {
			ruleIndexes:      orderedIntervals{{First: 0, Last: 3}},
			succeededIndexes: orderedIntervals{{First: 1, Last: 5}},
			succeededCount:   ptr.To[int32](3),
			want:             true,
		},
		"rule overlaps succeeded at the end": {
			ruleIndexes:      orderedIntervals{{First: 4, Last: 9}},
			succeededIndexes: orderedIntervals{{First: 1, Last: 7}},
		},
		"rule overlaps several succeeded intervals; succeededCount reached": {
			ruleIndexes:      orderedIntervals{{First: 0, Last: 3}, {First: 6, Last: 9}},
			succeededIndexes: orderedIntervals{{First: 1, Last: 2}, {First: 4, Last: 7}, {First: 9, Last: 9}},
			succeededCount:   ptr.To[int32](5),
			want:             true,
		},
		"rule overlaps several succeeded intervals; succeededCount one short": {
			ruleIndexes:      orderedIntervals{{First: 0, Last: 3}, {First: 6, Last: 9}},
			succeededIndexes: orderedIntervals{{First: 1, Last: 2}, {First: 4, Last: 7}, {First: 9, Last: 9}},
			succeededCount:   ptr.To[int32](6),
		},
		"no succeeded index": {
			ruleIndexes: orderedIntervals{{First: 0, Last: 3}},
		},
		"disjoint": {
			ruleIndexes:      orderedIntervals{{First: 0, Last: 3}},
			succeededIndexes: orderedIntervals{{First: 4, Last: 9}},
			succeededCount:   ptr.To[int32](1),
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			got := matchSucceededIndexesRule(tc.ruleIndexes, tc.succeededIndexes, tc.succeededCount)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("unexpected result (-want,+got):\n%s", diff)
			}
		})
	}
}

func TestSuccessPolicyCriteriaMetCondition(t *testing.T) {
	metTrue := batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue}
	metFalse := batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionFalse}
	complete := batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}
	cases := map[string]struct {
		conditions []batchv1.JobCondition
		want       *batchv1.JobCondition
	}{
		"no conditions":            {},
		"SuccessCriteriaMet True":  {conditions: []batchv1.JobCondition{complete, metTrue}, want: &metTrue},
		"SuccessCriteriaMet False": {conditions: []batchv1.JobCondition{metFalse}},
		"another condition True":   {conditions: []batchv1.JobCondition{complete}},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			job := makeJob("j").Indexed(3).Status(batchv1.JobStatus{Conditions: tc.conditions}).Obj()
			got := hasSuccessCriteriaMetCondition(job)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("hasSuccessCriteriaMetCondition (-want,+got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.want != nil, isSuccessCriteriaMetCondition(got)); diff != "" {
				t.Errorf("isSuccessCriteriaMetCondition of the result (-want,+got):\n%s", diff)
			}
		})
	}
	for name, tc := range map[string]struct {
		cond *batchv1.JobCondition
		want bool
	}{
		"nil":                      {},
		"SuccessCriteriaMet True":  {cond: &metTrue, want: true},
		"SuccessCriteriaMet False": {cond: &metFalse},
		"Complete True":            {cond: &complete},
	} {
		t.Run("isSuccessCriteriaMetCondition "+name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, isSuccessCriteriaMetCondition(tc.cond)); diff != "" {
				t.Errorf("(-want,+got):\n%s", diff)
			}
		})
	}
}
