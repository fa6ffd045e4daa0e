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
	"bufio"
	"context"
	"fmt"
	"io"
	"slices"
	"strconv"
	"sync"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/kubectl/pkg/cmd/util/podcmd"
	"k8s.io/kubectl/pkg/util/templates"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

type logsOptions struct {
	index     int
	allPods   bool
	follow    bool
	previous  bool
	container string
	prefix    bool
}

func (r *root) newLogsCommand() *cobra.Command {
	o := logsOptions{index: -1}
	cmd := &cobra.Command{
		Use:   "logs NAME",
		Short: "Print the logs of a Job's Pods, by completion index",
		Long: templates.LongDesc(`
			Print the logs of a Job's Pods, each line prefixed with the Pod and
			container it comes from, as "kubectl logs --prefix" does.

			By default it reads one Pod per completion index of an Indexed Job
			(the newest one, the last attempt) and the newest Pod of any other
			Job; --all-pods reads every Pod the Job still has, earlier attempts
			included, in index order.`),
		Example: templates.Examples(`
			# The logs of the last attempt of each index
			kubectl bjob logs sample

			# Follow the Pod of index 3
			kubectl bjob logs sample --index 3 -f

			# The previous run of container "worker" in every Pod of the Job
			kubectl bjob logs sample --all-pods --previous -c worker`),
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: r.completeJobNames,
		RunE: func(cmd *cobra.Command, args []string) error {
			return r.runLogs(cmd.Context(), args[0], o)
		},
	}
	cmd.Flags().IntVar(&o.index, "index", o.index, "Only the Pods of this completion index (Indexed Jobs).")
	cmd.Flags().BoolVar(&o.allPods, "all-pods", false, "Every Pod of the Job (or of the index), not only the newest.")
	cmd.Flags().BoolVarP(&o.follow, "follow", "f", false, "Specify if the logs should be streamed.")
	cmd.Flags().BoolVarP(&o.previous, "previous", "p", false, "Print the logs of the previous instance of the container, if it restarted.")
	cmd.Flags().StringVarP(&o.container, "container", "c", "", "Print the logs of this container (default: the Pod's default container).")
	cmd.Flags().BoolVar(&o.prefix, "prefix", true, "Prefix each log line with the Pod and container name.")
	return cmd
}

func (r *root) runLogs(ctx context.Context, name string, o logsOptions) error {
	c, err := r.clients()
	if err != nil {
		return err
	}
	job, err := c.Jobs.BatchV1().Jobs(c.Namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return err
	}
	pods, err := jobPods(ctx, c, job)
	if err != nil {
		return err
	}
	pods = choosePods(pods, o.index, o.allPods)
	if len(pods) == 0 {
		if o.index >= 0 {
			return fmt.Errorf("job %s has no Pods of index %d", name, o.index)
		}
		return fmt.Errorf("job %s has no Pods", name)
	}
	type source struct {
		pod       *corev1.Pod
		container string
	}
	var sources []source
	for _, p := range pods {
		ctr, err := podcmd.FindOrDefaultContainerByName(p, o.container, false, r.streams.ErrOut)
		if err != nil {
			return err
		}
		sources = append(sources, source{p, ctr.Name})
	}
	out := &lockedWriter{w: r.streams.Out}
	stream := func(s source) error {
		opts := &corev1.PodLogOptions{Container: s.container, Follow: o.follow, Previous: o.previous}
		rc, err := c.Kube.CoreV1().Pods(s.pod.Namespace).GetLogs(s.pod.Name, opts).Stream(ctx)
		if err != nil {
			return fmt.Errorf("reading the logs of pod %s: %w", s.pod.Name, err)
		}
		defer rc.Close()
		prefix := ""
		if o.prefix {
			prefix = fmt.Sprintf("[pod/%s/%s] ", s.pod.Name, s.container)
		}
		return copyLines(out, rc, prefix)
	}
	if !o.follow {
		// One after another, so that each Pod's lines stay together.
		var errs []error
		for _, s := range sources {
			if err := stream(s); err != nil {
				errs = append(errs, err)
			}
		}
		return utilerrors.NewAggregate(errs)
	}
	// Following never ends on its own: every Pod at once.
	errs := make([]error, len(sources))
	var wg sync.WaitGroup
	for i, s := range sources {
		wg.Go(func() { errs[i] = stream(s) })
	}
	wg.Wait()
	return utilerrors.NewAggregate(errs)
}

// jobPods lists the Pods the Job's selector matches, in the Job's namespace.
func jobPods(ctx context.Context, c *Clients, job *batchv1.Job) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		return nil, fmt.Errorf("the selector of job %s: %w", job.Name, err)
	}
	list, err := c.Kube.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil, fmt.Errorf("listing the pods of job %s: %w", job.Name, err)
	}
	pods := make([]*corev1.Pod, 0, len(list.Items))
	for i := range list.Items {
		pods = append(pods, &list.Items[i])
	}
	return pods, nil
}

// podIndex is a Pod's completion index, -1 when it has none.
func podIndex(p *corev1.Pod) int {
	v, ok := p.Labels[batch.JobCompletionIndexAnnotation]
	if !ok {
		v, ok = p.Annotations[batch.JobCompletionIndexAnnotation]
	}
	if !ok {
		return -1
	}
	i, err := strconv.Atoi(v)
	if err != nil {
		return -1
	}
	return i
}

// choosePods keeps the Pods of index (all indexes when it is negative) and,
// unless all is set, the newest Pod of each index; it returns them by index,
// then oldest first.
func choosePods(pods []*corev1.Pod, index int, all bool) []*corev1.Pod {
	var kept []*corev1.Pod
	for _, p := range pods {
		if index < 0 || podIndex(p) == index {
			kept = append(kept, p)
		}
	}
	slices.SortFunc(kept, func(a, b *corev1.Pod) int {
		if d := podIndex(a) - podIndex(b); d != 0 {
			return d
		}
		if d := a.CreationTimestamp.Compare(b.CreationTimestamp.Time); d != 0 {
			return d
		}
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	if all {
		return kept
	}
	var newest []*corev1.Pod
	for i, p := range kept {
		if i+1 == len(kept) || podIndex(kept[i+1]) != podIndex(p) {
			newest = append(newest, p)
		}
	}
	return newest
}

// copyLines copies r to w a line at a time, each line prefixed; a last line
// without its newline gets one.
func copyLines(w io.Writer, r io.Reader, prefix string) error {
	br := bufio.NewReader(r)
	for {
		line, err := br.ReadString('\n')
		if len(line) > 0 {
			if line[len(line)-1] != '\n' {
				line += "\n"
			}
			if _, werr := io.WriteString(w, prefix+line); werr != nil {
				return werr
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// lockedWriter lets the followed Pods write whole lines to one stream.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}
