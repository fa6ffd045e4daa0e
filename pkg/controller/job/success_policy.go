package job

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// matchSuccessPolicy reports whether the succeeded indexes of an Indexed Job
// meet one of the rules of its success policy, and if so the message of the
// SuccessCriteriaMet condition, naming the first matching rule. A rule whose
// succeededIndexes cannot be parsed (or lie beyond completions) is skipped.
func matchSuccessPolicy(logger klog.Logger, successPolicy *batchv1.SuccessPolicy, completions int32, succeededIndexes orderedIntervals) (string, bool) {
	if successPolicy == nil || len(succeededIndexes) == 0 {
		return "", false
	}
	for index, rule := range successPolicy.Rules {
		matched := false
		if rule.SucceededIndexes != nil {
			requiredIndexes := parseIndexesFromString(logger, *rule.SucceededIndexes, int(completions))
			if len(requiredIndexes) == 0 {
				continue
			}
			matched = matchSucceededIndexesRule(requiredIndexes, succeededIndexes, rule.SucceededCount)
		} else if rule.SucceededCount != nil {
			matched = succeededIndexes.total() >= int(*rule.SucceededCount)
		}
		if matched {
			return fmt.Sprintf("Matched rules at index %d", index), true
		}
	}
	return "", false
}

// hasSuccessCriteriaMetCondition returns the Job's SuccessCriteriaMet
// condition if it is True, nil otherwise.
func hasSuccessCriteriaMetCondition(job *batchv1.Job) *batchv1.JobCondition {
	cond := findConditionByType(job.Status.Conditions, batchv1.JobSuccessCriteriaMet)
	if isSuccessCriteriaMetCondition(cond) {
		return cond
	}
	return nil
}

// isSuccessCriteriaMetCondition reports whether cond is a True
// SuccessCriteriaMet condition.
func isSuccessCriteriaMetCondition(cond *batchv1.JobCondition) bool {
	return cond != nil && cond.Type == batchv1.JobSuccessCriteriaMet && cond.Status == corev1.ConditionTrue
}

// matchSucceededIndexesRule reports whether succeededIndexes hold all of
// ruleIndexes or, when succeededCount is set, at least succeededCount of
// them. It walks both sorted lists once, counting the overlap.
func matchSucceededIndexesRule(ruleIndexes, succeededIndexes orderedIntervals, succeededCount *int32) bool {
	var contains, si, ri int
	for ri < len(ruleIndexes) && si < len(succeededIndexes) {
		r, s := ruleIndexes[ri], succeededIndexes[si]
		if overlap := min(r.Last, s.Last) - max(r.First, s.First) + 1; overlap > 0 {
			contains += overlap
		}
		// Advance whichever interval ends first; both when they end together.
		switch {
		case s.Last < r.Last:
			si++
		case s.Last > r.Last:
			ri++
		default:
			si++
			ri++
		}
	}
	return contains == ruleIndexes.total() || (succeededCount != nil && contains >= int(*succeededCount))
}
