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

package bjob

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/kubectl/pkg/util/templates"

	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// Exit codes of wait.
const (
	waitFailed   = 1
	waitTimedOut = 2
)

// jobResource names a Job in wait's lines, as kubectl names objects.
const jobResource = "job.batch.jobs.dev/"

func (r *root) newWaitCommand() *cobra.Command {
	timeout := 30 * time.Second
	cmd := &cobra.Command{
		Use:   "wait NAME...",
		Short: "Wait until Jobs are Complete or Failed",
		Long: templates.LongDesc(`
			Wait until each Job has ended, Complete or Failed, and print one line per
			Job, in the order given, with the condition's reason and message.

			Exit status: 0 when every Job is Complete, 1 when any Failed (or could
			not be read), 2 when the timeout came first.`),
		Example: templates.Examples(`
			# Wait up to 10 minutes for two Jobs
			kubectl bjob wait pi sample --timeout=10m && echo all Complete

			# Check once, without waiting
			kubectl bjob wait pi --timeout=0`),
		Args:              cobra.MinimumNArgs(1),
		ValidArgsFunction: r.completeJobNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.runWait(cmd.Context(), args, timeout)
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", timeout, "How long to wait; zero checks once, a negative value waits a week.")
	return cmd
}

// outcome is how waiting for one Job ended.
type outcome struct {
	line string
	code int
}

func (r *root) runWait(ctx context.Context, names []string, timeout time.Duration) error {
	c, err := r.clients()
	if err != nil {
		return err
	}
	if timeout < 0 {
		timeout = 7 * 24 * time.Hour
	}
	waitCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	results := make([]outcome, len(names))
	done := make(chan struct{})
	for i, name := range names {
		go func() {
			defer func() { done <- struct{}{} }()
			if timeout == 0 {
				results[i] = r.checkOnce(ctx, c, name)
				return
			}
			results[i] = r.waitOne(waitCtx, c, name, timeout)
		}()
	}
	for range names {
		<-done
	}
	code := 0
	for _, res := range results {
		fmt.Fprintln(r.streams.Out, res.line)
		code = max(code, res.code)
	}
	if code != 0 {
		return &ExitError{Code: code}
	}
	return nil
}

// checkOnce reads the Job once: --timeout=0.
func (r *root) checkOnce(ctx context.Context, c *Clients, name string) outcome {
	job, err := c.Jobs.BatchV1().Jobs(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return outcome{line: jobResource + name + ": " + err.Error(), code: waitFailed}
	}
	if res, ended := jobOutcome(job); ended {
		return res
	}
	return stillRunning(name, job, 0)
}

func (r *root) waitOne(ctx context.Context, c *Clients, name string, timeout time.Duration) outcome {
	jobs := c.Jobs.BatchV1().Jobs(c.Namespace)
	byName := fields.OneTermEqualSelector("metadata.name", name).String()
	var last *batchv1.Job
	failed := func(err error) outcome {
		if ctx.Err() != nil {
			return stillRunning(name, last, timeout)
		}
		return outcome{line: jobResource + name + ": " + err.Error(), code: waitFailed}
	}
	// Read the Job, then watch it from that version; when the watch ends
	// (the server closes watches now and then), read it again.
	for {
		job, err := jobs.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return failed(err)
		}
		last = job
		if res, ended := jobOutcome(job); ended {
			return res
		}
		w, err := jobs.Watch(ctx, metav1.ListOptions{FieldSelector: byName, ResourceVersion: job.ResourceVersion})
		if err != nil {
			return failed(err)
		}
		res, ended, err := watchUntilEnded(ctx, w, name, &last)
		w.Stop()
		switch {
		case err != nil:
			return failed(err)
		case ended:
			return res
		case ctx.Err() != nil:
			return stillRunning(name, last, timeout)
		}
	}
}

// watchUntilEnded reads w until the Job ends, the watch closes or ctx is
// done; last is the Job as last seen.
func watchUntilEnded(ctx context.Context, w watch.Interface, name string, last **batchv1.Job) (outcome, bool, error) {
	for {
		select {
		case <-ctx.Done():
			return outcome{}, false, nil
		case ev, ok := <-w.ResultChan():
			if !ok || ev.Type == watch.Error {
				return outcome{}, false, nil
			}
			job, isJob := ev.Object.(*batchv1.Job)
			if !isJob || job.Name != name {
				continue
			}
			if ev.Type == watch.Deleted {
				return outcome{}, false, fmt.Errorf("jobs.batch.jobs.dev %q was deleted", name)
			}
			*last = job
			if res, ended := jobOutcome(job); ended {
				return res, true, nil
			}
		}
	}
}

// jobOutcome is the line and code of a Job that has ended, and whether it
// has.
func jobOutcome(job *batchv1.Job) (outcome, bool) {
	for _, cond := range job.Status.Conditions {
		if cond.Status != corev1.ConditionTrue {
			continue
		}
		code := 0
		switch cond.Type {
		case batchv1.JobComplete:
		case batchv1.JobFailed:
			code = waitFailed
		default:
			continue
		}
		parts := []string{jobResource + job.Name + " " + string(cond.Type)}
		if cond.Reason != "" {
			parts = append(parts, cond.Reason)
		}
		if cond.Message != "" {
			parts = append(parts, cond.Message)
		}
		return outcome{line: strings.Join(parts, ": "), code: code}, true
	}
	return outcome{}, false
}

// stillRunning is the line of a Job the timeout caught before it ended.
func stillRunning(name string, job *batchv1.Job, timeout time.Duration) outcome {
	var s batchv1.JobStatus
	if job != nil {
		s = job.Status
	}
	return outcome{
		line: fmt.Sprintf("%s%s timed out after %v: %d Active / %d Succeeded / %d Failed",
			jobResource, name, timeout, s.Active, s.Succeeded, s.Failed),
		code: waitTimedOut,
	}
}
