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

package managedby

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// isBuiltInJob reports whether the kit knows a minimal valid object of the
// resource: the Jobs of batch and of batch.jobs.dev share one shape.
func isBuiltInJob(gvr schema.GroupVersionResource) bool {
	return gvr.Resource == "jobs" && (gvr.Group == "batch" || gvr.Group == "batch.jobs.dev")
}

// builtInJob returns the smallest Job every server takes: one container
// that never restarts; the server defaults the rest.
func builtInJob() *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"spec": map[string]any{
			"template": map[string]any{
				"spec": map[string]any{
					"restartPolicy": "Never",
					"containers": []any{
						map[string]any{"name": "main", "image": "registry.k8s.io/pause:3.10"},
					},
				},
			},
		},
	}}
}

// looksLikeJob reports whether a template's status has the shape of a
// Job's, so that the Job status contract applies to it: its kind is Job, or
// its status carries Job counters or conditions.
func looksLikeJob(template *unstructured.Unstructured) bool {
	if template.GetKind() == "Job" {
		return true
	}
	status, ok := template.Object["status"].(map[string]any)
	if !ok {
		return false
	}
	for _, key := range []string{"conditions", "succeeded", "failed", "startTime"} {
		if _, ok := status[key]; ok {
			return true
		}
	}
	return false
}
