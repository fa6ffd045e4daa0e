// +k8s:deepcopy-gen=package
// +groupName=batch.jobs.dev

// Package batch is the internal (hub) version of the batch.jobs.dev API. Every
// served version converts through it.
package batch
