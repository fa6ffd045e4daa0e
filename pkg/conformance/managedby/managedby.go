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

// Package managedby measures how an API server treats the managedBy field of
// a Job-like resource (KEP-4368): which values it accepts, whether the field
// is immutable through every write path, whether the status subresource
// holds externally managed objects to the Job status contract, and whether a
// controller leaves externally managed objects alone. It works on any
// resource through the dynamic client, in a namespace of its own that it
// removes afterwards together with every object it made.
package managedby

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
)

// JobControllerValue is the reserved managedBy value of Jobs: the built-in
// Job controller reconciles Jobs that carry it (or no value).
const JobControllerValue = "kubernetes.io/job-controller"

// DefaultReconcileWait is how long the reconcile probes watch an object.
const DefaultReconcileWait = 10 * time.Second

// Config says what to measure and through which clients.
type Config struct {
	// Dynamic reaches the resource, namespaces and Pods.
	Dynamic dynamic.Interface
	// Discovery tells the resource's kind, scope and subresources.
	Discovery discovery.DiscoveryInterface
	// Resource is RESOURCE.VERSION.GROUP, as kubectl spells it
	// (jobs.v1.batch.jobs.dev, jobs.v1.batch).
	Resource string
	// Field is the dotted path of the managedBy field; spec.managedBy when empty.
	Field string
	// Template is a minimal valid object of the resource; when nil, the
	// built-in Job template is used for Job resources of the groups batch
	// and batch.jobs.dev.
	Template *unstructured.Unstructured
	// Reserved is the value that hands the object to the built-in
	// controller; JobControllerValue when empty.
	Reserved string
	// Reconcile runs the reconcile probes; without it, skipsReconcile is not
	// measured.
	Reconcile bool
	// ReconcileWait bounds the reconcile probes; DefaultReconcileWait when zero.
	ReconcileWait time.Duration
}

// Values the probes write.
const (
	unknownValue = "example.com/conformance"
	otherValue   = "example.com/conformance-changed"
	fieldManager = "managedby-conformance"
)

// Run measures the resource and returns its row. The error is non-nil when a
// probe could not run (the row then says "not measured" for its cell) or the
// objects could not be cleaned up; a cell that is n is not an error.
func Run(ctx context.Context, cfg Config) (Row, error) {
	p, err := newProber(cfg)
	if err != nil {
		return Row{}, err
	}
	if err := p.setUpNamespace(ctx); err != nil {
		return Row{}, err
	}
	evidence := p.probeAll(ctx)
	cleanupErr := p.cleanUp(context.WithoutCancel(ctx))

	row := Row{Resource: cfg.Resource, Cells: CellsFrom(evidence), Evidence: evidence}
	var errs []error
	for _, name := range cellNames {
		for _, e := range evidence[name] {
			if e.Result == Failed {
				errs = append(errs, fmt.Errorf("probe %q of %s could not run: %s", e.Probe, name, e.Detail))
			}
		}
	}
	if cleanupErr != nil {
		errs = append(errs, cleanupErr)
	}
	return row, errors.Join(errs...)
}

// prober holds what the probes share.
type prober struct {
	cfg        Config
	gvr        schema.GroupVersionResource
	kind       string
	field      []string
	template   *unstructured.Unstructured
	jobShaped  bool
	hasStatus  bool
	reserved   string
	wait       time.Duration
	namespaces bool
	pods       bool

	namespace string
	created   []string
}

// newProber resolves the resource through discovery and picks the template.
func newProber(cfg Config) (*prober, error) {
	gvr, _ := schema.ParseResourceArg(cfg.Resource)
	if gvr == nil || gvr.Resource == "" || gvr.Version == "" {
		return nil, fmt.Errorf("resource %q: want RESOURCE.VERSION.GROUP, such as jobs.v1.batch", cfg.Resource)
	}
	p := &prober{
		cfg:      cfg,
		gvr:      *gvr,
		field:    strings.Split(cmp.Or(cfg.Field, "spec.managedBy"), "."),
		reserved: cmp.Or(cfg.Reserved, JobControllerValue),
		wait:     cmp.Or(cfg.ReconcileWait, DefaultReconcileWait),
	}
	resources, err := cfg.Discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return nil, fmt.Errorf("discovering %s: %w", gvr.GroupVersion(), err)
	}
	found := false
	for _, r := range resources.APIResources {
		switch r.Name {
		case gvr.Resource:
			found = true
			p.kind = r.Kind
			if !r.Namespaced {
				return nil, fmt.Errorf("resource %s is cluster-scoped; the kit measures namespaced resources", cfg.Resource)
			}
		case gvr.Resource + "/status":
			p.hasStatus = true
		}
	}
	if !found {
		return nil, fmt.Errorf("resource %s is not served", cfg.Resource)
	}
	p.namespaces, p.pods = coreServes(cfg.Discovery)

	switch {
	case cfg.Template != nil:
		p.template = cfg.Template.DeepCopy()
		p.jobShaped = looksLikeJob(p.template)
	case isBuiltInJob(p.gvr):
		p.template = builtInJob()
		p.jobShaped = true
	default:
		return nil, fmt.Errorf("resource %s has no built-in template; give one", cfg.Resource)
	}
	return p, nil
}

// coreServes reports whether the server serves namespaces and Pods: an
// aggregated server alone serves neither.
func coreServes(d discovery.DiscoveryInterface) (namespaces, pods bool) {
	resources, err := d.ServerResourcesForGroupVersion("v1")
	if err != nil {
		return false, false
	}
	for _, r := range resources.APIResources {
		namespaces = namespaces || r.Name == "namespaces"
		pods = pods || r.Name == "pods"
	}
	return namespaces, pods
}

var (
	namespaceGVR = schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}
	podGVR       = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
)

// setUpNamespace creates the kit's namespace, or, on a server that has no
// namespaces of its own, picks a fresh name that no object uses.
func (p *prober) setUpNamespace(ctx context.Context) error {
	if !p.namespaces {
		p.namespace = "managedby-conformance-" + utilrand.String(6)
		return nil
	}
	ns := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1",
		"kind":       "Namespace",
		"metadata":   map[string]any{"generateName": "managedby-conformance-"},
	}}
	out, err := p.cfg.Dynamic.Resource(namespaceGVR).Create(ctx, ns, metav1.CreateOptions{})
	if err != nil {
		return fmt.Errorf("creating the kit's namespace: %w", err)
	}
	p.namespace = out.GetName()
	return nil
}

// cleanUp deletes every object the probes made, waits until they are gone,
// and deletes the namespace it created.
func (p *prober) cleanUp(ctx context.Context) error {
	client := p.client()
	var errs []error
	for _, name := range p.created {
		err := client.Delete(ctx, name, metav1.DeleteOptions{PropagationPolicy: ptr.To(metav1.DeletePropagationBackground)})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting %s/%s: %w", p.namespace, name, err))
		}
	}
	err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		list, err := client.List(ctx, metav1.ListOptions{})
		if err != nil {
			return false, err
		}
		return len(list.Items) == 0, nil
	})
	if err != nil {
		errs = append(errs, fmt.Errorf("waiting for the objects in %s to go: %w", p.namespace, err))
	}
	if p.namespaces {
		err := p.cfg.Dynamic.Resource(namespaceGVR).Delete(ctx, p.namespace, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("deleting namespace %s: %w", p.namespace, err))
		}
	}
	return errors.Join(errs...)
}

// client is the resource in the kit's namespace.
func (p *prober) client() dynamic.ResourceInterface {
	return p.cfg.Dynamic.Resource(p.gvr).Namespace(p.namespace)
}

// probeAll runs every probe, in the order of the cells.
func (p *prober) probeAll(ctx context.Context) map[string][]Evidence {
	evidence := map[string][]Evidence{}
	evidence[CellOpenSet] = p.probeOpenSet(ctx)
	evidence[CellMaxLength63] = p.probeMaxLength(ctx)
	evidence[CellFormat] = p.probeFormat(ctx)
	externalOK := slices.ContainsFunc(evidence[CellOpenSet], func(e Evidence) bool {
		return e.Probe == probeUnknown && e.Result == Accepted
	})
	if externalOK {
		evidence[CellImmutable] = p.probeImmutable(ctx)
		evidence[CellImmutableStatus] = p.probeImmutableStatus(ctx)
		evidence[CellValidatesStatus] = p.probeStatusContract(ctx)
	} else {
		why := fmt.Sprintf("needs an object with the value %q, which the server did not take", unknownValue)
		evidence[CellImmutable] = []Evidence{{Probe: "immutability", Result: Skipped, Detail: why}}
		evidence[CellImmutableStatus] = []Evidence{{Probe: "status write", Result: Skipped, Detail: why}}
		evidence[CellValidatesStatus] = []Evidence{{Probe: "status contract", Result: Skipped, Detail: why}}
	}
	evidence[CellSkipsReconcile] = p.probeReconcile(ctx, externalOK)
	return evidence
}
