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

// Package job is batch-apiserver's embedded Job controller. It runs the Pods
// of batch.jobs.dev Jobs in a host cluster and behaves as the job
// controller of kube-controller-manager 1.37 does for batch/v1.
//
// A sync is three parts, each in its own place. The decide subpackage
// holds every decision as pure functions of a snapshot of the Job and its
// Pods. The act side (act.go, pods.go, scheduling.go) builds that
// snapshot, carries the decisions out through the clients (Pods, Events,
// Workloads and PodGroups in the host, Job status through our own API over
// loopback, never storage) and feeds what happened back to decide. The watch side (watch.go, orphans.go, ttl.go,
// external.go) turns informer events into queue keys and keeps the memory
// that lives between syncs: expectations, failure records, the Jobs being
// finished.
//
// Unlike kube-controller-manager, the controller shares its host with other
// batch-apiservers: it touches only the Pods that carry its server's
// identity label, and announces each Job left to another controller with
// one Event whose name is derived from the Job's UID.
package job
