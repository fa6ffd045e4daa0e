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

// Package v1 holds the batch.jobs.dev/v1 Job as the Kueue integration reads
// and writes it. The server's API has the JSON shape of batch/v1's Job, so
// the spec and status are k8s.io/api's batch/v1 structs at the Kubernetes
// version Kueue builds against; only the kind's group differs. A field the
// server knows and these structs do not is never lost: the integration
// writes through merge patches of what it changed, never whole updates.
//
// +k8s:deepcopy-gen=package
// +groupName=batch.jobs.dev
package v1
