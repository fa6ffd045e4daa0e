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

package integration

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// TestStandaloneDeletePropagation checks that no propagation policy leaves a
// Job stuck behind a finalizer in standalone mode, which has no garbage
// collector to remove one.
func TestStandaloneDeletePropagation(t *testing.T) {
	ts := framework.StartServer(t)
	ctx := context.Background()
	for _, policy := range []metav1.DeletionPropagation{metav1.DeletePropagationOrphan, metav1.DeletePropagationForeground, metav1.DeletePropagationBackground} {
		t.Run(string(policy), func(t *testing.T) {
			jobs := ts.Client.BatchV1().Jobs(metav1.NamespaceDefault)
			name := "delete-" + strings.ToLower(string(policy))
			job := newTestJob(metav1.NamespaceDefault, name).Obj()
			if _, err := jobs.Create(ctx, job, metav1.CreateOptions{}); err != nil {
				t.Fatalf("create: %v", err)
			}
			if err := jobs.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: &policy}); err != nil {
				t.Fatalf("delete: %v", err)
			}
			_, err := jobs.Get(ctx, name, metav1.GetOptions{})
			if !apierrors.IsNotFound(err) {
				t.Fatalf("get after delete with %s: want NotFound, got %v", policy, err)
			}
		})
	}
}
