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

package framework

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned"
)

// WriteLoadManager is the managedBy of the Jobs the write load creates:
// the Job controller leaves them alone, so only the load writes their
// status.
const WriteLoadManager = "faults.e2e.jobs.dev/writer"

// AckedWrites records what the server acknowledged (2xx) and what was
// attempted, per Job: the status.active value of the last acknowledged and
// of the last attempted status update (0 for the create alone), and the
// failed requests by HTTP code.
type AckedWrites struct {
	mu        sync.Mutex
	acked     map[string]int32
	attempted map[string]int32
	creates   int
	updates   int
	failures  map[string]int
	// examples holds the first message of each failure kind but
	// connection errors, for the log.
	examples map[string]string
}

// NewAckedWrites returns an empty record.
func NewAckedWrites() *AckedWrites {
	return &AckedWrites{acked: map[string]int32{}, attempted: map[string]int32{}, failures: map[string]int{}, examples: map[string]string{}}
}

func (a *AckedWrites) attempt(name string, active int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.attempted[name] = active
}

func (a *AckedWrites) ack(name string, active int32) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if active == 0 {
		a.creates++
	} else {
		a.updates++
	}
	a.acked[name] = active
}

func (a *AckedWrites) fail(err error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	reason := "connection"
	if status, ok := err.(apierrors.APIStatus); ok {
		reason = fmt.Sprint(status.Status().Code)
		if _, seen := a.examples[reason]; !seen {
			a.examples[reason] = status.Status().Message + " at " + time.Now().Format("15:04:05.000")
		}
	} else if _, seen := a.examples[reason]; !seen {
		a.examples[reason] = err.Error() + " at " + time.Now().Format("15:04:05.000")
	}
	a.failures[reason]++
}

// Counts returns how many creates and status updates were acknowledged.
func (a *AckedWrites) Counts() (creates, updates int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.creates, a.updates
}

// Failures returns the failed requests by HTTP code ("connection" when
// no answer came) and the first message of each.
func (a *AckedWrites) Failures() (byCode map[string]int, examples map[string]string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	return maps.Clone(a.failures), maps.Clone(a.examples)
}

// ClientErrors lists the failures answered with a 4xx: a server fault must
// never look like the client's error (wrong credentials, a missing Job).
func (a *AckedWrites) ClientErrors() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	var out []string
	for code, n := range a.failures {
		if code[0] == '4' {
			out = append(out, fmt.Sprintf("%d writes answered %s: %s", n, code, a.examples[code]))
		}
	}
	sort.Strings(out)
	return out
}

// WriteLoadJob is the Job the load creates: small, valid, managed elsewhere.
func WriteLoadJob(name string) *batchv1.Job {
	managedBy := WriteLoadManager
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"e2e": "faults"}},
		Spec: batchv1.JobSpec{
			ManagedBy: &managedBy,
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "main", Image: "busybox:1.36", Command: []string{"true"}}},
			}},
		},
	}
}

// RunWriteLoad runs writers until ctx is done: each creates a Job, then
// updates its status three times (active 1, 2, 3), then the next Job.
// Errors are recorded, and each writer keeps going.
func RunWriteLoad(ctx context.Context, client versioned.Interface, ns, prefix string, writers int, acked *AckedWrites) *sync.WaitGroup {
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			jobs := client.BatchV1().Jobs(ns)
			for n := 0; ctx.Err() == nil; n++ {
				name := fmt.Sprintf("%s-w%d-%d", prefix, w, n)
				acked.attempt(name, 0)
				job, err := jobs.Create(ctx, WriteLoadJob(name), metav1.CreateOptions{})
				if err != nil {
					if ctx.Err() == nil {
						acked.fail(err)
					}
					select {
					case <-ctx.Done():
					case <-time.After(50 * time.Millisecond):
					}
					continue
				}
				acked.ack(name, 0)
				now := metav1.Now()
				for active := int32(1); active <= 3 && ctx.Err() == nil; active++ {
					job.Status.StartTime = &now
					job.Status.Active = active
					acked.attempt(name, active)
					updated, err := jobs.UpdateStatus(ctx, job, metav1.UpdateOptions{})
					if err != nil {
						if ctx.Err() == nil {
							acked.fail(err)
						}
						break
					}
					acked.ack(name, active)
					job = updated
				}
			}
		})
	}
	return &wg
}

// Verify checks that every write acknowledged before it was called is
// stored: each acknowledged create is there, and each Job's status holds
// its last acknowledged update or a later attempted one, never less. The
// load may go on meanwhile. Jobs named with prefix that were never written
// count as wrong too. It returns how many Jobs were found intact and what
// was lost or wrong.
func (a *AckedWrites) Verify(ctx context.Context, client versioned.Interface, ns, prefix string) (found int, lost []string, err error) {
	a.mu.Lock()
	acked := maps.Clone(a.acked)
	a.mu.Unlock()
	list, err := client.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return 0, nil, fmt.Errorf("listing the Jobs the load wrote: %w", err)
	}
	a.mu.Lock()
	attempted := maps.Clone(a.attempted)
	a.mu.Unlock()
	stored := map[string]int32{}
	for _, j := range list.Items {
		stored[j.Name] = j.Status.Active
	}
	for name, want := range acked {
		got, ok := stored[name]
		switch {
		case !ok:
			lost = append(lost, name+": missing")
		case got < want || got > attempted[name]:
			lost = append(lost, fmt.Sprintf("%s: status.active %d, acknowledged %d, last attempted %d", name, got, want, attempted[name]))
		default:
			found++
		}
	}
	for name := range stored {
		// Other loads wrote in the same namespace under other prefixes.
		if !strings.HasPrefix(name, prefix) || name == prefix {
			continue
		}
		if _, ok := attempted[name]; !ok {
			lost = append(lost, name+": stored but never written")
		}
	}
	sort.Strings(lost)
	return found, lost, nil
}

// WriteLoadClient is a clientset for cfg without client-side throttling,
// whose requests fail fast once the server is gone.
func WriteLoadClient(cfg *rest.Config) (versioned.Interface, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.QPS = -1
	cfg.Timeout = 10 * time.Second
	return versioned.NewForConfig(cfg)
}
