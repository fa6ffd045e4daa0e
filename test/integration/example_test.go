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
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/examples/client/jobwatch"
	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// TestClientExample runs the clientset example (examples/client) against the
// server: it applies its Job and waits on its informer while the test, as
// the Job controller would (no controller runs Pods here), writes the Job's
// status through to Complete. The example must see the end and report it.
func TestClientExample(t *testing.T) {
	ts := framework.StartServer(t)
	ctx := testContext(t)
	ns, name := "example", "jobwatch"

	type result struct {
		job *batchv1.Job
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		var out bytes.Buffer
		job, err := jobwatch.Run(ctx, ts.Client, ns, name, &out)
		done <- result{job, out.String(), err}
	}()

	// The Job as the example applied it.
	jobs := ts.Client.BatchV1().Jobs(ns)
	var job *batchv1.Job
	err := wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, testTimeout, true, func(ctx context.Context) (bool, error) {
		var err error
		job, err = jobs.Get(ctx, name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("waiting for the example's Job: %v", err)
	}
	if got := len(ptr.Deref(job.Spec.PodFailurePolicy, batchv1.PodFailurePolicy{}).Rules); got != 3 {
		t.Errorf("the applied Job has %d pod failure policy rules, want 3", got)
	}
	if diff := cmp.Diff([]string{jobwatch.FieldManager}, fieldManagers(job)); diff != "" {
		t.Errorf("managers of the applied Job (-want +got):\n%s", diff)
	}

	// Its life as the Job controller would write it: started, all three
	// indexes succeeded, SuccessCriteriaMet, then Complete.
	start := metav1.NewTime(time.Now().Truncate(time.Second))
	end := metav1.NewTime(start.Add(time.Second))
	cond := func(typ batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: typ, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: end, LastProbeTime: end}
	}
	steps := []func(s *batchv1.JobStatus){
		func(s *batchv1.JobStatus) { s.StartTime, s.Active, s.Ready = &start, 3, ptr.To[int32](0) },
		func(s *batchv1.JobStatus) {
			s.Active, s.Succeeded, s.CompletedIndexes = 0, 3, "0-2"
			s.Conditions = append(s.Conditions, cond(batchv1.JobSuccessCriteriaMet, batch.JobReasonCompletionsReached))
		},
		func(s *batchv1.JobStatus) {
			s.CompletionTime = &end
			s.Conditions = append(s.Conditions, cond(batchv1.JobComplete, batch.JobReasonCompletionsReached))
		},
	}
	for i, step := range steps {
		req := job.DeepCopy()
		step(&req.Status)
		if job, err = jobs.UpdateStatus(ctx, req, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("status step %d: %v", i, err)
		}
	}

	var r result
	select {
	case r = <-done:
	case <-ctx.Done():
		t.Fatal("the example did not return after the Job completed")
	}
	if r.err != nil {
		t.Fatalf("the example failed: %v", r.err)
	}
	if c := jobwatch.Finished(r.job); c == nil || c.Type != batchv1.JobComplete {
		t.Errorf("the example returned a Job finished with %v, want Complete", c)
	}
	for _, want := range []string{
		"Job example/jobwatch finished: Complete (CompletionsReached)",
		"SuccessCriteriaMet", "Complete",
	} {
		if !strings.Contains(r.out, want) {
			t.Errorf("the example's output lacks %q:\n%s", want, r.out)
		}
	}
	t.Logf("example output:\n%s", r.out)
}

// fieldManagers lists the managers of the object's managed fields.
func fieldManagers(obj metav1.Object) []string {
	var managers []string
	for _, f := range obj.GetManagedFields() {
		managers = append(managers, f.Manager)
	}
	return managers
}
