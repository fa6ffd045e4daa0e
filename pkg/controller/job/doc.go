// Package job is the embedded Job controller of batch-apiserver: it runs the
// Pods of batch.jobs.dev Jobs in a host cluster with the behaviour of
// kube-controller-manager 1.37's job controller. It reads Jobs through the
// generated informers, writes their status through the generated clientset
// (so the API's own status rules check it), and manages Pods and Events
// through client-go in the host cluster.
//
// One policy per file, as upstream: pod_failure_policy.go, backoff_utils.go,
// success_policy.go, indexed_job_utils.go, tracking_utils.go; the loop and
// the status computation live in job_controller.go.
package job
