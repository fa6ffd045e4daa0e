package job

import (
	"sync"
	"time"

	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
)

// expectationsTimeout is how long a Job waits for the Pod creations and
// deletions it expects before it syncs anyway. It bounds the stall when a
// watch event is lost; upstream's controller.ExpectationsTimeout.
const expectationsTimeout = 5 * time.Minute

// controllerExpectations records, per Job key, how many Pod creations and
// deletions the controller issued and has not yet seen in the Pod informer,
// so that a sync does not act again on a cache that lags its own writes.
// It is upstream's controller.ControllerExpectations with an injected clock.
type controllerExpectations struct {
	clock clock.PassiveClock

	mu      sync.Mutex
	records map[string]*expectationRecord
}

// expectationRecord is what one Job still expects to observe.
type expectationRecord struct {
	add int64
	del int64
	// timestamp is when the expectations were set; raising or lowering them
	// does not move it, so a Job cannot wait longer than expectationsTimeout
	// after its last create/delete round.
	timestamp time.Time
}

func (r *expectationRecord) fulfilled() bool {
	return r.add <= 0 && r.del <= 0
}

// newControllerExpectations returns empty expectations whose expiry is
// measured with clk.
func newControllerExpectations(clk clock.PassiveClock) *controllerExpectations {
	return &controllerExpectations{clock: clk, records: map[string]*expectationRecord{}}
}

// getExpectations returns the pending creations and deletions of key.
func (e *controllerExpectations) getExpectations(key string) (add, del int64, exists bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.records[key]
	if !ok {
		return 0, 0, false
	}
	return r.add, r.del, true
}

// satisfiedExpectations reports whether the Job key may act on the Pods it
// sees: it never set expectations, all of them were observed, or they expired.
func (e *controllerExpectations) satisfiedExpectations(logger klog.Logger, key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.records[key]
	switch {
	case !ok:
		// A new Job, or one that has not created or deleted Pods since the
		// controller started.
		logger.V(4).Info("Controller either never recorded expectations, or the ttl expired", "controller", key)
		return true
	case r.fulfilled():
		logger.V(4).Info("Controller expectations fulfilled", "controller", key, "add", r.add, "del", r.del)
		return true
	case e.clock.Since(r.timestamp) > expectationsTimeout:
		// A watch event was probably lost; sync rather than wait forever.
		logger.V(4).Info("Controller expectations expired", "controller", key, "add", r.add, "del", r.del)
		return true
	default:
		logger.V(4).Info("Controller still waiting on expectations", "controller", key, "add", r.add, "del", r.del)
		return false
	}
}

// setExpectations replaces the expectations of key, restarting its timeout.
func (e *controllerExpectations) setExpectations(logger klog.Logger, key string, add, del int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.records[key] = &expectationRecord{add: int64(add), del: int64(del), timestamp: e.clock.Now()}
	logger.V(4).Info("Setting expectations", "controller", key, "add", add, "del", del)
}

// expectCreations sets key to expect adds creations and no deletions.
func (e *controllerExpectations) expectCreations(logger klog.Logger, key string, adds int) {
	e.setExpectations(logger, key, adds, 0)
}

// expectDeletions sets key to expect dels deletions and no creations.
func (e *controllerExpectations) expectDeletions(logger klog.Logger, key string, dels int) {
	e.setExpectations(logger, key, 0, dels)
}

// lowerExpectations decrements the pending counts of key, if it has any
// expectations.
func (e *controllerExpectations) lowerExpectations(logger klog.Logger, key string, add, del int) {
	e.adjust(logger, key, -int64(add), -int64(del), "Lowered expectations")
}

// raiseExpectations increments the pending counts of key, if it has any
// expectations.
func (e *controllerExpectations) raiseExpectations(logger klog.Logger, key string, add, del int) {
	e.adjust(logger, key, int64(add), int64(del), "Raised expectations")
}

func (e *controllerExpectations) adjust(logger klog.Logger, key string, add, del int64, msg string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.records[key]
	if !ok {
		return
	}
	r.add += add
	r.del += del
	logger.V(4).Info(msg, "controller", key, "add", r.add, "del", r.del)
}

// creationObserved records that one expected Pod creation of key was seen
// (or will never be: the create failed).
func (e *controllerExpectations) creationObserved(logger klog.Logger, key string) {
	e.lowerExpectations(logger, key, 1, 0)
}

// deletionObserved records that one expected Pod deletion of key was seen
// (or will never be: the delete failed).
func (e *controllerExpectations) deletionObserved(logger klog.Logger, key string) {
	e.lowerExpectations(logger, key, 0, 1)
}

// deleteExpectations forgets key, for a Job that is gone.
func (e *controllerExpectations) deleteExpectations(logger klog.Logger, key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.records[key]; ok {
		delete(e.records, key)
		logger.V(4).Info("Deleted expectations", "controller", key)
	}
}
