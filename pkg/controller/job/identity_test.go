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

package job

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
)

// TestTwoServersOnOneHost: two controllers of different identities share a
// host cluster and an unfiltered Pod cache, each with a Job ns/j of its
// own. Each creates and finishes its own Pods and never writes to the
// other's, whatever path it takes: syncs, Pod events, the orphan sweep,
// the orphan worker.
func TestTwoServersOnOneHost(t *testing.T) {
	kube := newFakeHost()
	servers := map[string]*fixture{}
	jobs := map[string]string{"server-a": "uid-a", "server-b": "uid-b"}
	for id := range jobs {
		servers[id] = newFixture(t, fixtureOptions{kube: kube, cfg: Config{Identity: id, DeletePodsOfDeletedJobs: true}})
	}
	for id, f := range servers {
		job := started(makeJob("j").UID(types.UID(jobs[id])).Generated()).Obj()
		f.addJobs(t, job)
		if err := f.syncJob(t, job); err != nil {
			t.Fatalf("%s: first sync: %v", id, err)
		}
	}

	// Both servers' Pods succeed, and both caches show all of them.
	pods, err := kube.CoreV1().Pods("ns").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	creator := map[string]string{}
	for i := range pods.Items {
		p := pods.Items[i].DeepCopy()
		creator[p.Name] = p.Labels[batch.ServerIdentityLabel]
		p.Status.Phase = corev1.PodSucceeded
		p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{FinishedAt: metav1.NewTime(testNow.Add(-time.Minute))},
		}}}
		if _, err := kube.CoreV1().Pods("ns").UpdateStatus(context.Background(), p, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
		for _, f := range servers {
			if err := f.podStore.Add(p); err != nil {
				t.Fatal(err)
			}
		}
	}
	if diff := cmp.Diff(map[string]bool{"server-a": true, "server-b": true}, setOf(creator)); diff != "" || len(creator) != 2 {
		t.Fatalf("identities of the %d pods created (-want +got):\n%s", len(creator), diff)
	}

	for id, f := range servers {
		job, err := f.Controller.jobs.get("ns", "j")
		if err != nil {
			t.Fatal(err)
		}
		if err := f.syncJob(t, job); err != nil {
			t.Fatalf("%s: second sync: %v", id, err)
		}
		for name := range creator {
			p, err := f.podLister.Pods("ns").Get(name)
			if err != nil {
				t.Fatal(err)
			}
			f.onPodAdd(f.logger(), p)
			f.onPodUpdate(f.logger(), p, p)
			f.onPodDelete(f.logger(), p, false)
			if err := f.syncOrphans(f.ctx, orphanKey{namespace: "ns", name: name}); err != nil {
				t.Fatalf("%s: syncOrphans %s: %v", id, name, err)
			}
		}
		f.sweepOrphans(f.logger())
	}

	// Every Pod write, by the server whose Pod it touched: each server
	// patched its own Pod's finalizer once and nothing else.
	touched := map[string][]string{}
	for _, a := range kube.Actions() {
		var name string
		switch a := a.(type) {
		case clienttesting.PatchAction:
			name = a.GetName()
		case clienttesting.DeleteAction:
			name = a.GetName()
		default:
			continue
		}
		if a.GetResource().Resource == "pods" {
			touched[creator[name]] = append(touched[creator[name]], a.GetVerb())
		}
	}
	want := map[string][]string{"server-a": {"patch"}, "server-b": {"patch"}}
	if diff := cmp.Diff(want, touched); diff != "" {
		t.Errorf("pod writes by the owner of the pod (-want +got):\n%s", diff)
	}
	for id, f := range servers {
		w := f.written()
		if len(w) == 0 || w[len(w)-1].Succeeded != 1 {
			t.Errorf("%s: status writes %+v, want the job's own pod counted", id, w)
		}
	}
}

func setOf(m map[string]string) map[string]bool {
	s := map[string]bool{}
	for _, v := range m {
		s[v] = true
	}
	return s
}
