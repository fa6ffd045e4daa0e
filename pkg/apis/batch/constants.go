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

package batch

// Labels, annotations and names that batch-apiserver and its controller put on
// Jobs and their Pods. They mirror upstream's batch.kubernetes.io/ names under
// our own prefix.
const (
	labelPrefix = "batch.jobs.dev/"

	// JobNameLabel is the label on a Job's pods (and template) carrying the Job's name.
	JobNameLabel = labelPrefix + "job-name"
	// ControllerUIDLabel is the label on a Job's pods (and template) carrying the Job's UID;
	// the generated selector matches it.
	ControllerUIDLabel = labelPrefix + "controller-uid"
	// LegacyJobNameLabel is the unprefixed job-name label set next to JobNameLabel, as upstream does.
	LegacyJobNameLabel = "job-name"
	// LegacyControllerUIDLabel is the unprefixed controller-uid label set next to ControllerUIDLabel.
	LegacyControllerUIDLabel = "controller-uid"
	// JobCompletionIndexAnnotation holds the completion index of a pod of an Indexed Job;
	// it is set as a label too.
	JobCompletionIndexAnnotation = labelPrefix + "job-completion-index"
	// JobTrackingFinalizer is the finalizer the controller puts on the pods it tracks.
	JobTrackingFinalizer = labelPrefix + "job-tracking"
	// JobIndexFailureCountAnnotation counts the failures of a pod's index.
	JobIndexFailureCountAnnotation = labelPrefix + "job-index-failure-count"
	// JobIndexIgnoredFailureCountAnnotation counts the ignored failures of a pod's index.
	JobIndexIgnoredFailureCountAnnotation = labelPrefix + "job-index-ignored-failure-count"
	// ServerIdentityLabel is put on every Pod the embedded controller
	// creates; its value is the identity of the batch-apiserver (one
	// identity per storage, shared by the replicas of one deployment). A
	// controller watches and touches only the Pods carrying its own, so
	// that two servers on one host cluster leave each other's Pods alone.
	ServerIdentityLabel = labelPrefix + "server-identity"
	// JobControllerName is the reserved spec.managedBy value of the embedded Job controller.
	JobControllerName = "kubernetes.io/job-controller"
)

// Reasons the controller puts on Job conditions, as upstream.
const (
	JobReasonPodFailurePolicy         = "PodFailurePolicy"
	JobReasonBackoffLimitExceeded     = "BackoffLimitExceeded"
	JobReasonDeadlineExceeded         = "DeadlineExceeded"
	JobReasonMaxFailedIndexesExceeded = "MaxFailedIndexesExceeded"
	JobReasonFailedIndexes            = "FailedIndexes"
	JobReasonSuccessPolicy            = "SuccessPolicy"
	JobReasonCompletionsReached       = "CompletionsReached"
)
