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

// Package decide holds every decision of the embedded Job controller as
// pure functions of a snapshot: whether a Job has come to an end and how,
// which Pods to delete and to create, what to write in the Job's status in
// the two writes of the finalizer protocol, which finalizers to remove,
// which Events to record and when to look at the Job again. The decisions
// are those of kube-controller-manager 1.37's Job controller; the
// controller package around it only carries them out.
//
// plan.go has the three steps of a sync and their types; decide.go orders
// the policies, each of which lives in a file of its own: podfailurepolicy,
// successpolicy, backoff, perindex, deadline, suspend, replacement,
// scaledown, creation, tracking (the finalizer protocol), indexes (the
// index lists of the status) and ttl. job.go has the facts the event
// handlers need as well. The scheduling objects of WorkloadWithJob are
// decided apart, before the Pods, in three steps (workload, podgroup,
// mincount; scheduling has the mode).
package decide
