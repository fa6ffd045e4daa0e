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
	"bytes"
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/duration"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/kubectl/pkg/describe"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
	"github.com/batch-apiserver/batch-apiserver/pkg/generated/clientset/versioned/scheme"
)

// indexesSoftLimit is how many characters of a list of indexes describe
// prints before it cuts the list at the next comma, as kubectl does.
const indexesSoftLimit = 50

func (r *root) newDescribeCommand() *cobra.Command {
	showEvents := true
	cmd := &cobra.Command{
		Use:   "describe [NAME...]",
		Short: "Show a Job's spec, status, policies and Events",
		Long: templates.LongDesc(`
			Show what "kubectl describe job" shows for a batch/v1 Job (selector,
			parallelism, completions, Pods statuses, completed indexes, the Pod
			template, Events), and what it leaves out: managedBy and whether
			batch-apiserver's controller runs the Job, the pod failure policy,
			per-index backoff, the success policy, the Pod replacement policy,
			terminating Pods and the Job's conditions.

			Without a name it describes every Job of the namespace (-A: of every
			namespace).`),
		Example: templates.Examples(`
			# Describe one Job
			kubectl bjob describe pi

			# Describe every Job of every namespace, without their Events
			kubectl bjob describe -A --show-events=false`),
		ValidArgsFunction: r.completeJobNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.runDescribe(cmd.Context(), args, showEvents)
		},
	}
	cmd.Flags().BoolVar(&showEvents, "show-events", true, "If true, display the Events of each Job.")
	cmd.Flags().BoolVarP(&r.allNamespaces, "all-namespaces", "A", false, "If present, describe the Jobs of every namespace (only without names).")
	return cmd
}

func (r *root) runDescribe(ctx context.Context, names []string, showEvents bool) error {
	c, err := r.clients()
	if err != nil {
		return err
	}
	var jobs []*batchv1.Job
	var errs []error
	if len(names) == 0 {
		ns := c.Namespace
		if r.allNamespaces {
			ns = metav1.NamespaceAll
		}
		list, err := c.Jobs.BatchV1().Jobs(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		for i := range list.Items {
			jobs = append(jobs, &list.Items[i])
		}
	} else {
		if r.allNamespaces {
			return fmt.Errorf("-A describes every Job and takes no names")
		}
		for _, name := range names {
			job, err := c.Jobs.BatchV1().Jobs(c.Namespace).Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				errs = append(errs, err)
				continue
			}
			jobs = append(jobs, job)
		}
	}
	for i, job := range jobs {
		var events *corev1.EventList
		if showEvents {
			// As kubectl describe: a Job whose Events cannot be read is
			// still described, without them.
			events, _ = c.Kube.CoreV1().Events(job.Namespace).SearchWithContext(ctx, scheme.Scheme, job)
		}
		if i > 0 {
			fmt.Fprint(r.streams.Out, "\n\n")
		}
		fmt.Fprint(r.streams.Out, describeJob(job, events))
	}
	return utilerrors.NewAggregate(errs)
}

// describeJob renders a Job as kubectl describe does: the lines kubectl
// prints for a batch/v1 Job, with the same labels and values, and ours
// among them.
func describeJob(job *batchv1.Job, events *corev1.EventList) string {
	var buf bytes.Buffer
	tw := tabwriter.NewWriter(&buf, 0, 8, 2, ' ', 0)
	w := describe.NewPrefixWriter(tw)
	spec, status := &job.Spec, &job.Status

	w.Write(describe.LEVEL_0, "Name:\t%s\n", job.Name)
	w.Write(describe.LEVEL_0, "Namespace:\t%s\n", job.Namespace)
	if sel, err := metav1.LabelSelectorAsSelector(spec.Selector); err != nil {
		w.Write(describe.LEVEL_0, "Selector:\tFailed to get selector: %s\n", err)
	} else {
		w.Write(describe.LEVEL_0, "Selector:\t%s\n", sel)
	}
	writeMap(w, "Labels", job.Labels, "=", nil)
	writeMap(w, "Annotations", job.Annotations, ": ", []string{corev1.LastAppliedConfigAnnotation})
	if ref := metav1.GetControllerOf(job); ref != nil {
		w.Write(describe.LEVEL_0, "Controlled By:\t%s/%s\n", ref.Kind, ref.Name)
	}
	if spec.ManagedBy != nil {
		w.Write(describe.LEVEL_0, "Managed By:\t%s\n", managedBy(*spec.ManagedBy))
	}
	optional(w, "Parallelism", spec.Parallelism)
	if spec.Completions == nil {
		w.Write(describe.LEVEL_0, "Completions:\t<unset>\n")
	} else {
		w.Write(describe.LEVEL_0, "Completions:\t%d\n", *spec.Completions)
	}
	optional(w, "Completion Mode", spec.CompletionMode)
	optional(w, "Suspend", spec.Suspend)
	optional(w, "Backoff Limit", spec.BackoffLimit)
	optional(w, "Backoff Limit Per Index", spec.BackoffLimitPerIndex)
	optional(w, "Max Failed Indexes", spec.MaxFailedIndexes)
	optional(w, "Pod Replacement Policy", spec.PodReplacementPolicy)
	optional(w, "TTL Seconds After Finished", spec.TTLSecondsAfterFinished)
	if status.StartTime != nil {
		w.Write(describe.LEVEL_0, "Start Time:\t%s\n", status.StartTime.Format(time.RFC1123Z))
	}
	if status.CompletionTime != nil {
		w.Write(describe.LEVEL_0, "Completed At:\t%s\n", status.CompletionTime.Format(time.RFC1123Z))
		if status.StartTime != nil {
			w.Write(describe.LEVEL_0, "Duration:\t%s\n", duration.HumanDuration(status.CompletionTime.Sub(status.StartTime.Time)))
		}
	}
	if spec.ActiveDeadlineSeconds != nil {
		w.Write(describe.LEVEL_0, "Active Deadline Seconds:\t%ds\n", *spec.ActiveDeadlineSeconds)
	}
	ready := ""
	if status.Ready != nil {
		ready = fmt.Sprintf(" (%d Ready)", *status.Ready)
	}
	w.Write(describe.LEVEL_0, "Pods Statuses:\t%d Active%s / %d Succeeded / %d Failed\n", status.Active, ready, status.Succeeded, status.Failed)
	optional(w, "Terminating", status.Terminating)
	if spec.CompletionMode != nil && *spec.CompletionMode == batchv1.IndexedCompletion {
		w.Write(describe.LEVEL_0, "Completed Indexes:\t%s\n", shortIndexes(status.CompletedIndexes))
		if spec.BackoffLimitPerIndex != nil {
			w.Write(describe.LEVEL_0, "Failed Indexes:\t%s\n", shortIndexes(ptrValue(status.FailedIndexes)))
		}
	}
	writePodFailurePolicy(w, spec.PodFailurePolicy)
	writeSuccessPolicy(w, spec.SuccessPolicy)
	writeConditions(w, status.Conditions)
	describe.DescribePodTemplate(&spec.Template, w)
	if events != nil {
		describe.DescribeEvents(events, w)
	}
	_ = tw.Flush()
	return buf.String()
}

// managedBy says who reconciles a Job whose spec.managedBy is set.
func managedBy(v string) string {
	if v == batch.JobControllerName {
		return v
	}
	return v + " (batch-apiserver's Job controller leaves this Job alone)"
}

// optional writes "Title:\tvalue" when v is set.
func optional[T any](w describe.PrefixWriter, title string, v *T) {
	if v != nil {
		w.Write(describe.LEVEL_0, "%s:\t%v\n", title, *v)
	}
}

func ptrValue[T any](v *T) T {
	var zero T
	if v == nil {
		return zero
	}
	return *v
}

// writeMap writes labels (sep "=") or annotations (sep ": ") one a line,
// sorted, continuation lines indented under the first value; long or
// multi-line annotation values go below their key, cut at maxValueLen.
func writeMap(w describe.PrefixWriter, title string, m map[string]string, sep string, skip []string) {
	const maxValueLen = 140
	w.Write(describe.LEVEL_0, "%s:\t", title)
	keys := make([]string, 0, len(m))
	for k := range m {
		if !slices.Contains(skip, k) {
			keys = append(keys, k)
		}
	}
	if len(keys) == 0 {
		w.WriteLine("<none>")
		return
	}
	slices.Sort(keys)
	for i, k := range keys {
		if i > 0 {
			w.Write(describe.LEVEL_0, "\t")
		}
		v := m[k]
		if sep == "=" {
			w.Write(describe.LEVEL_0, "%s=%s\n", k, v)
			continue
		}
		v = strings.TrimSuffix(v, "\n")
		if len(k)+len(v)+2 <= maxValueLen && !strings.Contains(v, "\n") {
			w.Write(describe.LEVEL_0, "%s: %s\n", k, v)
			continue
		}
		w.Write(describe.LEVEL_0, "%s:\n", k)
		for _, line := range strings.Split(v, "\n") {
			if len(line) > maxValueLen-2 {
				line = line[:maxValueLen-2] + "..."
			}
			w.Write(describe.LEVEL_0, "\t  %s\n", line)
		}
	}
}

// shortIndexes cuts a long list of indexes at the first comma past
// indexesSoftLimit characters.
func shortIndexes(s string) string {
	if s == "" {
		return "<none>"
	}
	if len(s) <= indexesSoftLimit {
		return s
	}
	cut := strings.IndexByte(s[indexesSoftLimit:], ',')
	if cut < 0 {
		return s
	}
	return s[:indexesSoftLimit+cut+1] + "..."
}

// writePodFailurePolicy writes one line per rule, in order: the action and
// what the rule matches.
func writePodFailurePolicy(w describe.PrefixWriter, p *batchv1.PodFailurePolicy) {
	if p == nil {
		return
	}
	w.Write(describe.LEVEL_0, "Pod Failure Policy:\n")
	for _, rule := range p.Rules {
		var match string
		switch {
		case rule.OnExitCodes != nil:
			codes := make([]string, len(rule.OnExitCodes.Values))
			for i, v := range rule.OnExitCodes.Values {
				codes[i] = strconv.Itoa(int(v))
			}
			match = fmt.Sprintf("exit code %s [%s]", rule.OnExitCodes.Operator, strings.Join(codes, ","))
			if rule.OnExitCodes.ContainerName != nil {
				match += " in container " + *rule.OnExitCodes.ContainerName
			}
		default:
			conds := make([]string, len(rule.OnPodConditions))
			for i, c := range rule.OnPodConditions {
				conds[i] = fmt.Sprintf("%s=%s", c.Type, c.Status)
			}
			match = "pod condition " + strings.Join(conds, " or ")
		}
		w.Write(describe.LEVEL_1, "%s:\t%s\n", rule.Action, match)
	}
}

// writeSuccessPolicy writes one line per rule: the indexes and the count
// that make the Job succeed.
func writeSuccessPolicy(w describe.PrefixWriter, p *batchv1.SuccessPolicy) {
	if p == nil {
		return
	}
	w.Write(describe.LEVEL_0, "Success Policy:\n")
	for i, rule := range p.Rules {
		var parts []string
		if rule.SucceededIndexes != nil {
			parts = append(parts, "succeeded indexes "+*rule.SucceededIndexes)
		}
		if rule.SucceededCount != nil {
			parts = append(parts, fmt.Sprintf("succeeded count %d", *rule.SucceededCount))
		}
		w.Write(describe.LEVEL_1, "Rule %d:\t%s\n", i+1, strings.Join(parts, ", "))
	}
}

// writeConditions writes the Job's conditions as a table, in the order of
// the status.
func writeConditions(w describe.PrefixWriter, conds []batchv1.JobCondition) {
	if len(conds) == 0 {
		return
	}
	w.Write(describe.LEVEL_0, "Conditions:\n")
	w.Write(describe.LEVEL_1, "Type\tStatus\tReason\tMessage\n")
	w.Write(describe.LEVEL_1, "----\t------\t------\t-------\n")
	for _, c := range conds {
		w.Write(describe.LEVEL_1, "%s\t%s\t%s\t%s\n", c.Type, c.Status, c.Reason, c.Message)
	}
}
