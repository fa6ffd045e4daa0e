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
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	utilfeature "k8s.io/apiserver/pkg/util/feature"
	featuregatetesting "k8s.io/component-base/featuregate/testing"
	"k8s.io/utils/ptr"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/apiserver"
	"github.com/batch-apiserver/batch-apiserver/pkg/features"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned/typed/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

const multiKueue = "kueue.x-k8s.io/multikueue"

// TestJobStatusRatcheting writes a Job whose status breaks a rule straight
// into etcd, as an older server might have left it, and checks what status
// writes the server then takes: by default only those that touch the broken
// field are refused; with JobStrictStatusValidation every one is.
func TestJobStatusRatcheting(t *testing.T) {
	ts := framework.StartServer(t)

	// ready > active breaks RejectMoreReadyThanActivePods.
	corrupt := func(s *batch.JobStatus) {
		s.StartTime = &metav1.Time{Time: time.Now().Truncate(time.Second)}
		s.Active = 1
		s.Ready = ptr.To[int32](3)
	}
	readyInvalid := []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueInvalid, Field: "status.ready"}}

	t.Run("ratcheted", func(t *testing.T) {
		ctx, jobs := validationContext(t), ts.Client.BatchV1().Jobs("ratcheted")
		job := writeStatusToEtcd(ctx, t, ts, createValidationJob(ctx, t, jobs, "bad-ready"), corrupt)

		unrelated := job.DeepCopy()
		unrelated.Status.Failed = 1
		job, err := jobs.UpdateStatus(ctx, unrelated, metav1.UpdateOptions{})
		if err != nil {
			t.Fatalf("a status write that leaves the bad field alone was refused: %v", err)
		}

		touching := job.DeepCopy()
		touching.Status.Ready = ptr.To[int32](2)
		_, err = jobs.UpdateStatus(ctx, touching, metav1.UpdateOptions{})
		assertInvalidCauses(t, err, readyInvalid)

		repaired := job.DeepCopy()
		repaired.Status.Ready = ptr.To[int32](1)
		if _, err := jobs.UpdateStatus(ctx, repaired, metav1.UpdateOptions{}); err != nil {
			t.Errorf("the write that repairs the status was refused: %v", err)
		}
	})

	t.Run("strict", func(t *testing.T) {
		featuregatetesting.SetFeatureGateDuringTest(t, utilfeature.DefaultFeatureGate, features.JobStrictStatusValidation, true)
		ctx, jobs := validationContext(t), ts.Client.BatchV1().Jobs("strict")
		job := writeStatusToEtcd(ctx, t, ts, createValidationJob(ctx, t, jobs, "bad-ready"), corrupt)

		unrelated := job.DeepCopy()
		unrelated.Status.Failed = 1
		_, err := jobs.UpdateStatus(ctx, unrelated, metav1.UpdateOptions{})
		assertInvalidCauses(t, err, readyInvalid)

		repaired := job.DeepCopy()
		repaired.Status.Failed = 1
		repaired.Status.Ready = ptr.To[int32](1)
		if _, err := jobs.UpdateStatus(ctx, repaired, metav1.UpdateOptions{}); err != nil {
			t.Errorf("the write that repairs the status was refused: %v", err)
		}
	})
}

// TestExternalControllerLife drives two Jobs managed by MultiKueue through
// their whole life with status writes, as the external controller would:
// one to FailureTarget then Failed, one to SuccessCriteriaMet then Complete.
// Every illegal step in between is refused with 422 at the field it breaks,
// and the legal steps are kept.
func TestExternalControllerLife(t *testing.T) {
	ts := framework.StartServer(t)
	ctx := validationContext(t)
	jobs := ts.Client.BatchV1().Jobs("multikueue")
	start := metav1.NewTime(time.Now().Truncate(time.Second))
	end := metav1.NewTime(start.Add(time.Minute))
	cond := func(t batchv1.JobConditionType) batchv1.JobCondition {
		return batchv1.JobCondition{Type: t, Status: corev1.ConditionTrue, Reason: "External", LastTransitionTime: start}
	}
	invalid := func(fields ...string) []metav1.StatusCause {
		var causes []metav1.StatusCause
		for _, f := range fields {
			causes = append(causes, metav1.StatusCause{Type: metav1.CauseTypeFieldValueInvalid, Field: f})
		}
		return causes
	}

	type step struct {
		name   string
		status func(s *batchv1.JobStatus)
		want   []metav1.StatusCause // nil: accepted
	}
	lives := map[string]struct {
		job   *batchv1.Job
		steps []step
	}{
		"failure": {job: validationJob("fails").Obj(), steps: []step{
			{name: "start", status: func(s *batchv1.JobStatus) { s.StartTime = &start; s.Active = 2; s.Ready = ptr.To[int32](1) }},
			{name: "more ready than active", status: func(s *batchv1.JobStatus) { s.Ready = ptr.To[int32](3) }, want: invalid("status.ready")},
			{name: "progress", status: func(s *batchv1.JobStatus) {
				s.Succeeded, s.CompletedIndexes, s.Ready = 1, "0", ptr.To[int32](2)
			}},
			{name: "succeeded lowered", status: func(s *batchv1.JobStatus) { s.Succeeded, s.CompletedIndexes = 0, "" }, want: invalid("status.succeeded")},
			{name: "completedIndexes out of range", status: func(s *batchv1.JobStatus) { s.CompletedIndexes = "0,4" }, want: invalid("status.completedIndexes")},
			{name: "failedIndexes overlap completedIndexes", status: func(s *batchv1.JobStatus) { s.FailedIndexes = ptr.To("0") }, want: invalid("status.failedIndexes")},
			{name: "startTime moved while running", status: func(s *batchv1.JobStatus) { s.StartTime = &end }, want: invalid("status.startTime")},
			{name: "Failed without FailureTarget", status: func(s *batchv1.JobStatus) {
				s.Active, s.Ready = 0, ptr.To[int32](0)
				s.Conditions = append(s.Conditions, cond(batchv1.JobFailed))
			}, want: invalid("status.conditions")},
			{name: "FailureTarget", status: func(s *batchv1.JobStatus) {
				s.Failed, s.FailedIndexes, s.Terminating = 1, ptr.To("1"), ptr.To[int32](2)
				s.Active, s.Ready = 0, ptr.To[int32](0)
				s.Conditions = append(s.Conditions, cond(batchv1.JobFailureTarget))
			}},
			{name: "Failed with terminating pods", status: func(s *batchv1.JobStatus) {
				s.Conditions = append(s.Conditions, cond(batchv1.JobFailed))
			}, want: invalid("status.terminating")},
			{name: "Failed", status: func(s *batchv1.JobStatus) {
				s.Terminating = ptr.To[int32](0)
				s.Conditions = append(s.Conditions, cond(batchv1.JobFailed))
			}},
			{name: "Failed removed", status: func(s *batchv1.JobStatus) { s.Conditions = s.Conditions[:1] }, want: invalid("status.conditions")},
			{name: "Complete after Failed", status: func(s *batchv1.JobStatus) {
				s.CompletionTime = &end
				s.Conditions = append(s.Conditions, cond(batchv1.JobComplete))
			}, want: invalid("status.conditions", "status.conditions", "status.conditions")},
			{name: "failed lowered", status: func(s *batchv1.JobStatus) { s.Failed = 0 }, want: invalid("status.failed")},
		}},
		"success": {job: validationJob("succeeds").Do(func(j *batchv1.Job) {
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](2)}}}
		}).Obj(), steps: []step{
			{name: "start", status: func(s *batchv1.JobStatus) { s.StartTime = &start; s.Active = 2 }},
			{name: "progress", status: func(s *batchv1.JobStatus) { s.Succeeded, s.CompletedIndexes = 2, "0-1" }},
			{name: "Complete without SuccessCriteriaMet", status: func(s *batchv1.JobStatus) {
				s.Active, s.CompletionTime = 0, &end
				s.Conditions = append(s.Conditions, cond(batchv1.JobComplete))
			}, want: invalid("status.conditions", "status.conditions")},
			{name: "SuccessCriteriaMet", status: func(s *batchv1.JobStatus) {
				s.Conditions = append(s.Conditions, cond(batchv1.JobSuccessCriteriaMet))
			}},
			{name: "Complete with active pods", status: func(s *batchv1.JobStatus) {
				s.CompletionTime = &end
				s.Conditions = append(s.Conditions, cond(batchv1.JobComplete))
			}, want: invalid("status.active")},
			{name: "Complete before startTime", status: func(s *batchv1.JobStatus) {
				s.Active, s.CompletionTime = 0, ptr.To(metav1.NewTime(start.Add(-time.Minute)))
				s.Conditions = append(s.Conditions, cond(batchv1.JobComplete))
			}, want: invalid("status.completionTime")},
			{name: "Complete without completionTime", status: func(s *batchv1.JobStatus) {
				s.Active = 0
				s.Conditions = append(s.Conditions, cond(batchv1.JobComplete))
			}, want: []metav1.StatusCause{{Type: metav1.CauseTypeFieldValueRequired, Field: "status.completionTime"}}},
			{name: "Complete", status: func(s *batchv1.JobStatus) {
				s.Active, s.CompletionTime = 0, &end
				s.Conditions = append(s.Conditions, cond(batchv1.JobComplete))
			}},
			{name: "completionTime moved", status: func(s *batchv1.JobStatus) { s.CompletionTime = ptr.To(metav1.NewTime(end.Add(time.Minute))) }, want: invalid("status.completionTime")},
			{name: "SuccessCriteriaMet removed", status: func(s *batchv1.JobStatus) { s.Conditions = s.Conditions[1:] },
				want: invalid("status.conditions", "status.conditions", "status.conditions")},
			{name: "active again", status: func(s *batchv1.JobStatus) { s.Active = 1 }, want: invalid("status.active")},
		}},
	}
	for name, life := range lives {
		t.Run(name, func(t *testing.T) {
			current, err := jobs.Create(ctx, life.job, metav1.CreateOptions{})
			if err != nil {
				t.Fatalf("creating: %v", err)
			}
			for _, s := range life.steps {
				req := current.DeepCopy()
				s.status(&req.Status)
				got, err := jobs.UpdateStatus(ctx, req, metav1.UpdateOptions{})
				if s.want == nil {
					if err != nil {
						t.Fatalf("step %q refused: %v", s.name, err)
					}
					if diff := cmp.Diff(req.Status, got.Status); diff != "" {
						t.Errorf("step %q: status not kept as written (-sent +stored):\n%s", s.name, diff)
					}
					current = got
					continue
				}
				t.Run(s.name, func(t *testing.T) { assertInvalidCauses(t, err, s.want) })
			}

			// The spec of a Job owned by another controller stays owned by it.
			req := current.DeepCopy()
			req.Spec.ManagedBy = ptr.To(batch.JobControllerName)
			_, err = jobs.Update(ctx, req, metav1.UpdateOptions{})
			assertInvalidCauses(t, err, invalid("spec.managedBy"))
		})
	}
}

// validationJob is an Indexed Job with per-index backoff, managed by MultiKueue.
func validationJob(name string) *validationJobBuilder {
	return &validationJobBuilder{batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: batchv1.JobSpec{
			Completions:          ptr.To[int32](4),
			Parallelism:          ptr.To[int32](2),
			CompletionMode:       ptr.To(batchv1.IndexedCompletion),
			BackoffLimitPerIndex: ptr.To[int32](1),
			ManagedBy:            ptr.To(multiKueue),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.36"}},
			}},
		},
	}}
}

type validationJobBuilder struct{ job batchv1.Job }

func (b *validationJobBuilder) Do(f func(*batchv1.Job)) *validationJobBuilder { f(&b.job); return b }
func (b *validationJobBuilder) Obj() *batchv1.Job                             { return b.job.DeepCopy() }

func createValidationJob(ctx context.Context, t *testing.T, jobs v1.JobInterface, name string) *batchv1.Job {
	t.Helper()
	job, err := jobs.Create(ctx, validationJob(name).Obj(), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating %s: %v", name, err)
	}
	return job
}

// writeStatusToEtcd rewrites the stored Job with a status changed by mutate,
// bypassing the API (and so validation), with the server's storage codec. It
// returns the Job once the server serves the new status.
func writeStatusToEtcd(ctx context.Context, t *testing.T, ts *framework.TestServer, job *batchv1.Job, mutate func(*batch.JobStatus)) *batchv1.Job {
	t.Helper()
	etcd := ts.EtcdClient()
	// Find the key by its suffix: the layout under the prefix (resource
	// prefix, group) belongs to the storage configuration.
	suffix := "/jobs/" + job.Namespace + "/" + job.Name
	resp, err := etcd.Get(ctx, framework.EtcdPrefix, clientv3.WithPrefix())
	if err != nil {
		t.Fatalf("listing etcd: %v", err)
	}
	var key string
	var value []byte
	for _, kv := range resp.Kvs {
		if strings.HasSuffix(string(kv.Key), suffix) {
			key, value = string(kv.Key), kv.Value
		}
	}
	if key == "" {
		t.Fatalf("no etcd key under %s ends with %s", framework.EtcdPrefix, suffix)
	}
	codec := apiserver.Codecs.LegacyCodec(batchv1.SchemeGroupVersion)
	obj, err := runtime.Decode(codec, value)
	if err != nil {
		t.Fatalf("decoding the stored Job: %v", err)
	}
	stored, ok := obj.(*batch.Job)
	if !ok {
		t.Fatalf("stored object is a %T, want *batch.Job", obj)
	}
	mutate(&stored.Status)
	data, err := runtime.Encode(codec, stored)
	if err != nil {
		t.Fatalf("encoding the Job: %v", err)
	}
	put, err := etcd.Put(ctx, key, string(data))
	if err != nil {
		t.Fatalf("writing %s to etcd: %v", key, err)
	}

	// The server sees the write through its watch cache.
	jobs := ts.Client.BatchV1().Jobs(job.Namespace)
	var served *batchv1.Job
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		served, err = jobs.Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return served.ResourceVersion == strconv.FormatInt(put.Header.Revision, 10), nil
	})
	if err != nil {
		t.Fatalf("waiting for the server to serve the status written to etcd: %v", err)
	}
	return served
}

// assertInvalidCauses checks that err is a 422 Invalid whose causes are want,
// compared by type and field in any order.
func assertInvalidCauses(t *testing.T, err error, want []metav1.StatusCause) {
	t.Helper()
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		t.Fatalf("got %v, want 422 Invalid", err)
	}
	s := status.Status()
	if s.Code != http.StatusUnprocessableEntity || s.Reason != metav1.StatusReasonInvalid || s.Details == nil {
		t.Fatalf("got %d %s (%s), want 422 Invalid with details", s.Code, s.Reason, s.Message)
	}
	sortCauses := cmpopts.SortSlices(func(a, b metav1.StatusCause) bool {
		return a.Field < b.Field || (a.Field == b.Field && a.Type < b.Type)
	})
	if diff := cmp.Diff(want, s.Details.Causes, cmpopts.IgnoreFields(metav1.StatusCause{}, "Message"), sortCauses); diff != "" {
		t.Errorf("causes (-want +got):\n%s\nmessage: %s", diff, s.Message)
	}
}

func validationContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}
