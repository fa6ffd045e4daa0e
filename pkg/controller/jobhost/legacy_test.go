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

package jobhost

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	versionedfake "github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned/fake"
)

// TestClaimUnlabelledPods checks which Pods without the identity label a
// server labels with its own: only those whose controller is a Job of its
// storage, by name and UID.
func TestClaimUnlabelledPods(t *testing.T) {
	const (
		identity = "0b5c7a4e-5d7e-4c39-9f1e-3a2b1c0d9e8f"
		other    = "6f1d2c3b-0a9e-4d8c-8b7a-1e2f3a4b5c6d"
		ours     = types.UID("11111111-1111-1111-1111-111111111111")
	)
	owned := func(apiVersion, job string, uid types.UID) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: apiVersion, Kind: "Job", Name: job, UID: uid, Controller: ptr.To(true)}}
	}
	pod := func(name string, labels map[string]string, refs []metav1.OwnerReference) runtime.Object {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: labels, OwnerReferences: refs}}
	}
	kube := fake.NewSimpleClientset(
		pod("ours", map[string]string{"job-name": "work"}, owned("batch.jobs.dev/v1", "work", ours)),
		pod("ours-v1beta1", nil, owned("batch.jobs.dev/v1beta1", "work", ours)),
		pod("same-name-other-uid", map[string]string{"job-name": "work"}, owned("batch.jobs.dev/v1", "work", "22222222-2222-2222-2222-222222222222")),
		pod("job-not-ours", nil, owned("batch.jobs.dev/v1", "gone", "33333333-3333-3333-3333-333333333333")),
		pod("upstream-job", nil, owned("batch/v1", "work", ours)),
		pod("another-servers", map[string]string{"batch.jobs.dev/server-identity": other}, owned("batch.jobs.dev/v1", "work", ours)),
		pod("not-controlled", nil, []metav1.OwnerReference{{APIVersion: "batch.jobs.dev/v1", Kind: "Job", Name: "work", UID: ours}}),
		pod("no-owner", nil, nil),
	)
	jobs := versionedfake.NewSimpleClientset(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "work", UID: ours}})

	n, err := ClaimUnlabelledPods(context.Background(), kube, jobs, identity)
	if err != nil {
		t.Fatalf("ClaimUnlabelledPods: %v", err)
	}
	if n != 2 {
		t.Errorf("ClaimUnlabelledPods labelled %d Pods, want 2", n)
	}
	list, err := kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, p := range list.Items {
		got[p.Name] = p.Labels["batch.jobs.dev/server-identity"]
	}
	want := map[string]string{
		"ours":                identity,
		"ours-v1beta1":        identity,
		"same-name-other-uid": "",
		"job-not-ours":        "",
		"upstream-job":        "",
		"another-servers":     other,
		"not-controlled":      "",
		"no-owner":            "",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("identity label of each Pod (-want +got):\n%s", diff)
	}
}

func TestLeaseFree(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	lease := func(holder string, renewedAgo time.Duration) *coordinationv1.Lease {
		return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To[int32](15),
			RenewTime: ptr.To(metav1.NewMicroTime(now.Add(-renewedAgo))),
		}}
	}
	got := map[string]bool{
		"held":                     leaseFree(lease("old_1", 5*time.Second), now),
		"released":                 leaseFree(lease("", 5*time.Second), now),
		"expired":                  leaseFree(lease("old_1", 16*time.Second), now),
		"no renew time":            leaseFree(&coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("old_1")}}, now),
		"renewed a lease duration": leaseFree(lease("old_1", 15*time.Second), now),
	}
	want := map[string]bool{"held": false, "released": true, "expired": true, "no renew time": true, "renewed a lease duration": false}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("leaseFree (-want +got):\n%s", diff)
	}
}

// TestWaitForLegacyLeaseRelease checks that the controller of a new
// release waits while an older replica holds the legacy Lease, and not
// otherwise.
func TestWaitForLegacyLeaseRelease(t *testing.T) {
	start := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	legacy := func(namespace, holder string, duration int32) *coordinationv1.Lease {
		return &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "batch-apiserver-job-controller"},
			Spec: coordinationv1.LeaseSpec{
				HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(duration),
				RenewTime: ptr.To(metav1.NewMicroTime(start)),
			},
		}
	}
	cases := map[string]struct {
		lease *coordinationv1.Lease
		// wantWait: the wait runs into the test's deadline.
		wantWait bool
	}{
		"no legacy Lease":                    {},
		"released by the last old replica":   {lease: legacy("batch-system", "", 15)},
		"expired: its holder was killed":     {lease: legacy("batch-system", "old_1", 15)},
		"held by an old replica":             {lease: legacy("batch-system", "old_1", 3600), wantWait: true},
		"a Lease of that name in another ns": {lease: legacy("elsewhere", "old_1", 3600)},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			var objects []runtime.Object
			if tc.lease != nil {
				objects = append(objects, tc.lease)
			}
			// The clock moves a second each time it is read, so that a
			// Lease expires and a free one settles within a few polls.
			now := start
			clock := func() time.Time {
				now = now.Add(time.Second)
				return now
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			err := WaitForLegacyLeaseRelease(ctx, fake.NewSimpleClientset(objects...), "batch-system", 5*time.Millisecond, 3*time.Second, clock)
			if tc.wantWait {
				if !errors.Is(err, context.DeadlineExceeded) {
					t.Errorf("WaitForLegacyLeaseRelease = %v, want it to wait until the deadline", err)
				}
				return
			}
			if err != nil {
				t.Errorf("WaitForLegacyLeaseRelease = %v, want nil", err)
			}
		})
	}
}
