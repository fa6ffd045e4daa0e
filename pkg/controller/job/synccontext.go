package job

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// syncJobCtx is what one sync of a Job knows: the Job (a deep copy the sync
// may change), its Pods from the cache and what the sync computed so far.
type syncJobCtx struct {
	job                             *batchv1.Job
	pods                            []*corev1.Pod
	finishedCondition               *batchv1.JobCondition
	activePods                      []*corev1.Pod
	succeeded                       int32
	failed                          int32
	prevSucceededIndexes            orderedIntervals
	succeededIndexes                orderedIntervals
	failedIndexes                   *orderedIntervals
	newBackoffRecord                backoffRecord
	expectedRmFinalizers            sets.Set[types.UID]
	uncounted                       *uncountedTerminatedPods
	podsWithDelayedDeletionPerIndex map[int]*corev1.Pod
	terminating                     *int32
	ready                           int32
}

// interval is a closed range of completion indexes [First, Last].
type interval struct {
	First int
	Last  int
}

// orderedIntervals is a sorted list of disjoint, non-adjacent intervals, the
// in-memory form of status.completedIndexes and status.failedIndexes.
type orderedIntervals []interval

// backoffRecord is what the controller remembers of a Job's failures to
// delay the next Pod: how many Pods failed since the last success and when
// the last one did.
type backoffRecord struct {
	key                      string
	failuresAfterLastSuccess int32
	lastFailureTime          *time.Time
}

// uncountedTerminatedPods is status.uncountedTerminatedPods as sets.
type uncountedTerminatedPods struct {
	succeeded sets.Set[types.UID]
	failed    sets.Set[types.UID]
}

func newUncountedTerminatedPods(in batchv1.UncountedTerminatedPods) *uncountedTerminatedPods {
	return &uncountedTerminatedPods{
		succeeded: sets.New(in.Succeeded...),
		failed:    sets.New(in.Failed...),
	}
}

// Succeeded returns the UIDs of succeeded Pods not yet counted; nil-safe.
func (u *uncountedTerminatedPods) Succeeded() sets.Set[types.UID] {
	if u == nil {
		return nil
	}
	return u.succeeded
}

// Failed returns the UIDs of failed Pods not yet counted; nil-safe.
func (u *uncountedTerminatedPods) Failed() sets.Set[types.UID] {
	if u == nil {
		return nil
	}
	return u.failed
}
