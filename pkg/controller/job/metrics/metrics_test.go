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

package metrics

import (
	"strings"
	"testing"

	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/component-base/metrics/testutil"
)

// TestRegisteredMetrics checks that Register exposes the metrics under
// upstream's names, help texts and labels. Multi-line help texts are written
// with \n escapes, as the text exposition format carries them.
func TestRegisteredMetrics(t *testing.T) {
	Register()
	// A second call must not panic on duplicate registration.
	Register()

	cases := []struct {
		name     string
		observe  func()
		metric   string
		expected string
	}{
		{
			name: "jobs by external controller",
			observe: func() {
				JobByExternalControllerTotal.Reset()
				JobByExternalControllerTotal.WithLabelValues("example.com/multikueue").Inc()
				JobByExternalControllerTotal.WithLabelValues("example.com/multikueue").Inc()
			},
			metric: "job_controller_jobs_by_external_controller_total",
			expected: `
# HELP job_controller_jobs_by_external_controller_total [ALPHA] The number of Jobs managed by an external controller
# TYPE job_controller_jobs_by_external_controller_total counter
job_controller_jobs_by_external_controller_total{controller_name="example.com/multikueue"} 2
`,
		},
		{
			name: "sync duration",
			observe: func() {
				JobSyncDurationSeconds.Reset()
				JobSyncDurationSeconds.WithLabelValues("Indexed", "success", JobSyncActionPodsCreated).Observe(0.01)
			},
			metric: "job_controller_job_sync_duration_seconds",
			expected: `
# HELP job_controller_job_sync_duration_seconds [STABLE] The time it took to sync a job
# TYPE job_controller_job_sync_duration_seconds histogram
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="0.004"} 0
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="0.008"} 0
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="0.016"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="0.032"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="0.064"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="0.128"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="0.256"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="0.512"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="1.024"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="2.048"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="4.096"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="8.192"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="16.384"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="32.768"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="65.536"} 1
job_controller_job_sync_duration_seconds_bucket{action="pods_created",completion_mode="Indexed",result="success",le="+Inf"} 1
job_controller_job_sync_duration_seconds_sum{action="pods_created",completion_mode="Indexed",result="success"} 0.01
job_controller_job_sync_duration_seconds_count{action="pods_created",completion_mode="Indexed",result="success"} 1
`,
		},
		{
			name: "terminated pods with tracking finalizer",
			observe: func() {
				TerminatedPodsTrackingFinalizerTotal.Reset()
				TerminatedPodsTrackingFinalizerTotal.WithLabelValues(Add).Inc()
				TerminatedPodsTrackingFinalizerTotal.WithLabelValues(Delete).Inc()
			},
			metric: "job_controller_terminated_pods_tracking_finalizer_total",
			expected: `
# HELP job_controller_terminated_pods_tracking_finalizer_total [BETA] The number of terminated pods (phase=Failed|Succeeded)\nthat have the finalizer batch.kubernetes.io/job-tracking\nThe event label can be "add" or "delete".
# TYPE job_controller_terminated_pods_tracking_finalizer_total counter
job_controller_terminated_pods_tracking_finalizer_total{event="add"} 1
job_controller_terminated_pods_tracking_finalizer_total{event="delete"} 1
`,
		},
		{
			name: "pods creation",
			observe: func() {
				JobPodsCreationTotal.Reset()
				JobPodsCreationTotal.WithLabelValues(PodRecreateFailed, Failed).Inc()
			},
			metric: "job_controller_job_pods_creation_total",
			expected: `
# HELP job_controller_job_pods_creation_total [ALPHA] The number of Pods created by the Job controller labelled with a reason for the Pod creation.\nThis metric also distinguishes between Pods created using different PodReplacementPolicy settings.\nPossible values of the "reason" label are:\n"new", "recreate_terminating_or_failed", "recreate_failed".\nPossible values of the "status" label are:\n"succeeded", "failed".
# TYPE job_controller_job_pods_creation_total counter
job_controller_job_pods_creation_total{reason="recreate_failed",status="failed"} 1
`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.observe()
			if err := testutil.GatherAndCompare(legacyregistry.DefaultGatherer, strings.NewReader(tc.expected), tc.metric); err != nil {
				t.Error(err)
			}
		})
	}
}
