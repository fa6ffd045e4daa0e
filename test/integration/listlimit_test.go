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
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/batch-apiserver/batch-apiserver/test/integration/framework"
)

// TestListLimit checks that a list with a negative or zero limit is answered
// as kube-apiserver 1.37 answers it: neither the ListOptions validation nor the
// storage layer refuses a negative limit, both treat any limit <= 0 as "no
// limit", so the whole list comes back in one page with no continue token.
func TestListLimit(t *testing.T) {
	ts := framework.StartServer(t)
	ctx := testContext(t)
	clientset := newTestClient(t, ts)
	ns := testNamespace(t)
	jobs := clientset.BatchV1().Jobs(ns)
	names := []string{"a", "b", "c"}
	for _, name := range names {
		if _, err := jobs.Create(ctx, newTestJob(ns, name).Obj(), metav1.CreateOptions{}); err != nil {
			t.Fatalf("creating job %s: %v", name, err)
		}
	}

	type page struct {
		Names    []string
		Continue bool
	}
	for _, tc := range []struct {
		name string
		opts metav1.ListOptions
		want page
	}{
		{name: "limit -1", opts: metav1.ListOptions{Limit: -1}, want: page{Names: names}},
		{name: "limit -1 from the watch cache", opts: metav1.ListOptions{Limit: -1, ResourceVersion: "0"}, want: page{Names: names}},
		{name: "limit -1 resourceVersionMatch NotOlderThan", opts: metav1.ListOptions{Limit: -1, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, ResourceVersion: "1"}, want: page{Names: names}},
		{name: "limit 0", opts: metav1.ListOptions{}, want: page{Names: names}},
		// The value just inside paging, so the cases above prove the limit was sent.
		{name: "limit 1", opts: metav1.ListOptions{Limit: 1}, want: page{Names: names[:1], Continue: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			list, err := jobs.List(ctx, tc.opts)
			if err != nil {
				t.Fatalf("listing jobs with %+v: %v", tc.opts, err)
			}
			got := page{Continue: list.Continue != ""}
			for _, job := range list.Items {
				got.Names = append(got.Names, job.Name)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("list with %+v (-want +got):\n%s", tc.opts, diff)
			}
		})
	}
}
