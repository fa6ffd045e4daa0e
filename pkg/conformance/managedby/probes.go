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

package managedby

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
)

// Probe names that the cell logic or the callers look for.
const (
	probeUnknown = "unknown value " + unknownValue
)

// Informational results.
const (
	// Defaulted: an object created without the field reads back with a value.
	Defaulted = "defaulted"
	// NotDefaulted: an object created without the field reads back without it.
	NotDefaulted = "not defaulted"
)

// newObject returns the template as an object named name in the kit's
// namespace, with the field set to value, or without it when value is nil.
func (p *prober) newObject(name string, value *string) *unstructured.Unstructured {
	obj := p.template.DeepCopy()
	obj.SetAPIVersion(p.gvr.GroupVersion().String())
	obj.SetKind(p.kind)
	obj.SetName(name)
	obj.SetNamespace(p.namespace)
	unstructured.RemoveNestedField(obj.Object, "status")
	if value != nil {
		// The template's own nested maps make this fail only when a parent
		// of the field is not an object, which the template would not be.
		_ = unstructured.SetNestedField(obj.Object, *value, p.field...)
	} else {
		unstructured.RemoveNestedField(obj.Object, p.field...)
	}
	return obj
}

// create creates an object and remembers it for the clean-up.
func (p *prober) create(ctx context.Context, name string, value *string) (*unstructured.Unstructured, error) {
	out, err := p.client().Create(ctx, p.newObject("mb-"+name, value), metav1.CreateOptions{})
	if err != nil {
		return nil, fmt.Errorf("creating %s: %w", name, err)
	}
	p.created = append(p.created, out.GetName())
	return out, nil
}

// valueOf reads the field of obj; ok is false when it is unset.
func (p *prober) valueOf(obj *unstructured.Unstructured) (value string, ok bool) {
	v, found, err := unstructured.NestedString(obj.Object, p.field...)
	return v, found && err == nil
}

// describe renders a stored value for the evidence.
func describe(value string, ok bool) string {
	if !ok {
		return "stored: unset"
	}
	return fmt.Sprintf("stored: %q", value)
}

// createProbe creates an object with value and records whether the server
// took it as sent.
func (p *prober) createProbe(ctx context.Context, probe, name string, value *string, expect string) Evidence {
	out, err := p.create(ctx, name, value)
	if err != nil {
		result, detail := Classify(err)
		return Evidence{Probe: probe, Result: result, Detail: detail, Expect: expect}
	}
	stored, ok := p.valueOf(out)
	result := Accepted
	if value != nil && (!ok || stored != *value) {
		result = Ignored
	}
	return Evidence{Probe: probe, Result: result, Detail: "created, " + describe(stored, ok), Expect: expect}
}

// probeOpenSet creates objects with an unknown well-formed value (counted),
// with the reserved value and without the field (both recorded only).
func (p *prober) probeOpenSet(ctx context.Context) []Evidence {
	evidence := []Evidence{
		p.createProbe(ctx, probeUnknown, "unknown", ptr.To(unknownValue), Accepted),
		p.createProbe(ctx, "reserved value "+p.reserved, "reserved", ptr.To(p.reserved), ""),
	}
	out, err := p.create(ctx, "unset", nil)
	if err != nil {
		result, detail := Classify(err)
		return append(evidence, Evidence{Probe: "created without the field", Result: result, Detail: detail})
	}
	stored, ok := p.valueOf(out)
	result := NotDefaulted
	if ok {
		result = Defaulted
	}
	return append(evidence, Evidence{Probe: "created without the field", Result: result, Detail: describe(stored, ok)})
}

// domainPrefixedValue returns a well-formed value of exactly n characters.
func domainPrefixedValue(n int) string {
	const prefix = "example.com/"
	return prefix + strings.Repeat("a", n-len(prefix))
}

// probeMaxLength creates objects with values of 63 and 64 characters.
func (p *prober) probeMaxLength(ctx context.Context) []Evidence {
	return []Evidence{
		p.createProbe(ctx, "63 characters", "length-63", ptr.To(domainPrefixedValue(63)), Accepted),
		p.createProbe(ctx, "64 characters", "length-64", ptr.To(domainPrefixedValue(64)), Refused),
	}
}

// probeFormat creates objects with malformed values, each of which a
// conforming server refuses, and with a path of several segments, which a
// domain-prefixed path allows (recorded only).
func (p *prober) probeFormat(ctx context.Context) []Evidence {
	cases := []struct {
		probe, name, value, expect string
	}{
		{"no domain prefix \"foo\"", "no-domain", "foo", Refused},
		{"upper case \"Example.com/Foo\"", "upper-case", "Example.com/Foo", Refused},
		{"empty path \"example.com/\"", "empty-path", "example.com/", Refused},
		{"empty string \"\"", "empty", "", Refused},
		{"several path segments \"example.com/a/b\"", "segments", "example.com/a/b", ""},
	}
	var evidence []Evidence
	for _, c := range cases {
		evidence = append(evidence, p.createProbe(ctx, c.probe, "format-"+c.name, ptr.To(c.value), c.expect))
	}
	return evidence
}

// nested returns {path[0]: {path[1]: ... value}}.
func nested(path []string, value any) map[string]any {
	out := map[string]any{path[len(path)-1]: value}
	for i := len(path) - 2; i >= 0; i-- {
		out = map[string]any{path[i]: out}
	}
	return out
}

// jsonPointer returns the JSON pointer (RFC 6901) of a field path.
func jsonPointer(path []string) string {
	escape := strings.NewReplacer("~", "~0", "/", "~1")
	var b strings.Builder
	for _, s := range path {
		b.WriteString("/" + escape.Replace(s))
	}
	return b.String()
}

// changeFunc writes value into the field of the stored object obj.
type changeFunc func(ctx context.Context, obj *unstructured.Unstructured, value string) error

// changeByUpdate replaces the whole object (PUT).
func (p *prober) changeByUpdate(ctx context.Context, obj *unstructured.Unstructured, value string) error {
	// The resource's own controller may write an object it reconciles (one
	// created without the field) right after its creation: change the copy
	// the server has now, as any client would, so that the answer is about
	// the field and not a lost race.
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		current, err := p.client().Get(ctx, obj.GetName(), metav1.GetOptions{})
		if err != nil {
			return err
		}
		if err := unstructured.SetNestedField(current.Object, value, p.field...); err != nil {
			return fmt.Errorf("setting %s: %w", strings.Join(p.field, "."), err)
		}
		_, err = p.client().Update(ctx, current, metav1.UpdateOptions{})
		return err
	})
}

// changeByPatch returns a change through a patch of type pt built by body.
func (p *prober) changeByPatch(pt types.PatchType, body func(obj *unstructured.Unstructured, value string) any) changeFunc {
	return func(ctx context.Context, obj *unstructured.Unstructured, value string) error {
		data, err := json.Marshal(body(obj, value))
		if err != nil {
			return fmt.Errorf("encoding the %s patch: %w", pt, err)
		}
		opts := metav1.PatchOptions{}
		if pt == types.ApplyPatchType {
			opts.FieldManager = fieldManager
			// Forced, so that the server's validation answers, not the
			// conflict with the creator's ownership of the field.
			opts.Force = ptr.To(true)
		}
		_, err = p.client().Patch(ctx, obj.GetName(), pt, data, opts)
		return err
	}
}

// mergeBody is the body of a JSON merge patch or strategic merge patch.
func (p *prober) mergeBody(_ *unstructured.Unstructured, value string) any {
	return nested(p.field, value)
}

// jsonPatchBody replaces the field, or adds it to an object without it.
func (p *prober) jsonPatchBody(obj *unstructured.Unstructured, value string) any {
	op := "replace"
	if _, ok := p.valueOf(obj); !ok {
		op = "add"
	}
	return []map[string]any{{"op": op, "path": jsonPointer(p.field), "value": value}}
}

// applyBody is a server-side apply configuration that owns only the field.
func (p *prober) applyBody(obj *unstructured.Unstructured, value string) any {
	body := nested(p.field, value)
	body["apiVersion"] = obj.GetAPIVersion()
	body["kind"] = obj.GetKind()
	body["metadata"] = map[string]any{"name": obj.GetName(), "namespace": obj.GetNamespace()}
	return body
}

// changeProbe writes value through change into the stored object obj and
// records whether the server refused the write, stored the value, or kept
// the old one.
func (p *prober) changeProbe(ctx context.Context, probe string, obj *unstructured.Unstructured, value, expect string, change changeFunc) Evidence {
	result, detail := Classify(change(ctx, obj, value))
	if result != Accepted {
		return Evidence{Probe: probe, Result: result, Detail: detail, Expect: expect}
	}
	got, err := p.client().Get(ctx, obj.GetName(), metav1.GetOptions{})
	if err != nil {
		result, detail := Classify(err)
		if result != Failed {
			result, detail = Failed, "reading back: "+detail
		}
		return Evidence{Probe: probe, Result: result, Detail: detail, Expect: expect}
	}
	stored, ok := p.valueOf(got)
	result = Accepted
	if !ok || stored != value {
		result = Ignored
	}
	return Evidence{Probe: probe, Result: result, Detail: "write taken, " + describe(stored, ok), Expect: expect}
}

// probeImmutable tries to change the value through every write path, each
// on an object of its own, and to set it on an object created without it.
func (p *prober) probeImmutable(ctx context.Context) []Evidence {
	changes := []struct {
		probe, name string
		change      changeFunc
	}{
		{"update (PUT)", "update", p.changeByUpdate},
		{"JSON merge patch", "merge-patch", p.changeByPatch(types.MergePatchType, p.mergeBody)},
		{"JSON patch", "json-patch", p.changeByPatch(types.JSONPatchType, p.jsonPatchBody)},
		{"strategic merge patch", "strategic-patch", p.changeByPatch(types.StrategicMergePatchType, p.mergeBody)},
		{"server-side apply", "apply", p.changeByPatch(types.ApplyPatchType, p.applyBody)},
	}
	var evidence []Evidence
	for _, c := range changes {
		obj, err := p.create(ctx, "immutable-"+c.name, ptr.To(unknownValue))
		if err != nil {
			evidence = append(evidence, setupFailed(c.probe, err, Refused))
			continue
		}
		evidence = append(evidence, p.changeProbe(ctx, c.probe, obj, otherValue, Refused, c.change))
	}
	const setProbe = "set on an object created without it (update)"
	obj, err := p.create(ctx, "immutable-set", nil)
	if err != nil {
		return append(evidence, setupFailed(setProbe, err, Refused))
	}
	return append(evidence, p.changeProbe(ctx, setProbe, obj, unknownValue, Refused, p.changeByUpdate))
}

// setupFailed records a probe whose object could not be made.
func setupFailed(probe string, err error, expect string) Evidence {
	_, detail := Classify(err)
	return Evidence{Probe: probe, Result: Failed, Detail: "setting up: " + detail, Expect: expect}
}

// probeImmutableStatus changes the value in a write of the status
// subresource, which must be refused or leave the stored value alone.
func (p *prober) probeImmutableStatus(ctx context.Context) []Evidence {
	const probe = "status subresource update (PUT /status)"
	if !p.hasStatus {
		return []Evidence{{Probe: probe, Result: Skipped, Detail: "the resource has no status subresource"}}
	}
	obj, err := p.create(ctx, "immutable-status", ptr.To(unknownValue))
	if err != nil {
		return []Evidence{setupFailed(probe, err, RefusedOrIgnored)}
	}
	change := func(ctx context.Context, obj *unstructured.Unstructured, value string) error {
		obj = obj.DeepCopy()
		if err := unstructured.SetNestedField(obj.Object, value, p.field...); err != nil {
			return fmt.Errorf("setting %s: %w", strings.Join(p.field, "."), err)
		}
		_, err := p.client().UpdateStatus(ctx, obj, metav1.UpdateOptions{})
		return err
	}
	return []Evidence{p.changeProbe(ctx, probe, obj, otherValue, RefusedOrIgnored, change)}
}

// writeStatus replaces the status of the named object through the status
// subresource.
func (p *prober) writeStatus(ctx context.Context, name string, status map[string]any) error {
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		obj, err := p.client().Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		obj.Object["status"] = status
		_, err = p.client().UpdateStatus(ctx, obj, metav1.UpdateOptions{})
		return err
	})
}

// statusTimes are the two instants the status probes use, one minute apart,
// in the past and whole seconds as the API keeps them.
func statusTimes() (start, end string) {
	t := time.Now().UTC().Truncate(time.Second).Add(-10 * time.Minute)
	return t.Format(time.RFC3339), t.Add(time.Minute).Format(time.RFC3339)
}

// condition is a Job condition of the given type with status True.
func condition(conditionType, at string) map[string]any {
	return map[string]any{
		"type":               conditionType,
		"status":             "True",
		"reason":             "Conformance",
		"message":            "written by managedby-conformance",
		"lastProbeTime":      at,
		"lastTransitionTime": at,
	}
}

// statusProbe is one step sequence of the status contract: the writes before
// the last must be taken, the last must be refused.
type statusProbe struct {
	probe, name string
	writes      []map[string]any
}

// statusProbes returns the status contract probes.
func statusProbes() []statusProbe {
	start, end := statusTimes()
	complete := func(conditions ...string) map[string]any {
		var list []any
		for _, c := range conditions {
			list = append(list, condition(c, end))
		}
		return map[string]any{"startTime": start, "completionTime": end, "succeeded": int64(1), "conditions": list}
	}
	return []statusProbe{
		{"succeeded decreases (2 to 1)", "decreasing", []map[string]any{
			{"succeeded": int64(2)},
			{"succeeded": int64(1)},
		}},
		{"Complete=True removed", "complete-removed", []map[string]any{
			complete("SuccessCriteriaMet", "Complete"),
			complete("SuccessCriteriaMet"),
		}},
		{"completionTime before startTime", "completion-before-start", []map[string]any{
			{"startTime": end, "completionTime": start, "succeeded": int64(1), "conditions": []any{
				condition("SuccessCriteriaMet", end), condition("Complete", end),
			}},
		}},
		{"Complete and Failed together", "complete-and-failed", []map[string]any{
			complete("SuccessCriteriaMet", "Complete", "FailureTarget", "Failed"),
		}},
		{"Failed without FailureTarget", "failed-without-target", []map[string]any{
			{"startTime": start, "failed": int64(1), "conditions": []any{condition("Failed", end)}},
		}},
		{"Complete without SuccessCriteriaMet", "complete-without-criteria", []map[string]any{
			complete("Complete"),
		}},
	}
}

// probeStatusContract writes, on externally managed objects, Job status that
// breaks the status contract, each of which a conforming server refuses.
func (p *prober) probeStatusContract(ctx context.Context) []Evidence {
	switch {
	case !p.hasStatus:
		return []Evidence{{Probe: "status contract", Result: Skipped, Detail: "the resource has no status subresource"}}
	case !p.jobShaped:
		return []Evidence{{Probe: "status contract", Result: Skipped, Detail: "the template's status is not shaped like a Job's"}}
	}
	var evidence []Evidence
	for _, sp := range statusProbes() {
		evidence = append(evidence, p.runStatusProbe(ctx, sp))
	}
	return evidence
}

// runStatusProbe runs one status probe on an object of its own.
func (p *prober) runStatusProbe(ctx context.Context, sp statusProbe) Evidence {
	obj, err := p.create(ctx, "status-"+sp.name, ptr.To(unknownValue))
	if err != nil {
		return setupFailed(sp.probe, err, Refused)
	}
	last := len(sp.writes) - 1
	for i, status := range sp.writes[:last] {
		if err := p.writeStatus(ctx, obj.GetName(), status); err != nil {
			_, detail := Classify(err)
			return Evidence{Probe: sp.probe, Result: Failed, Detail: fmt.Sprintf("setting up, write %d: %s", i+1, detail), Expect: Refused}
		}
	}
	result, detail := Classify(p.writeStatus(ctx, obj.GetName(), sp.writes[last]))
	if result == Accepted {
		detail = "status written"
	}
	return Evidence{Probe: sp.probe, Result: result, Detail: detail, Expect: Refused}
}

// probeReconcile watches an externally managed object, which nothing may
// touch, and one with the reserved value, which the controller must touch.
func (p *prober) probeReconcile(ctx context.Context, externalOK bool) []Evidence {
	if !p.cfg.Reconcile {
		return []Evidence{{Probe: "reconcile", Result: Skipped, Detail: "not asked to (no controller, or --no-reconcile)"}}
	}
	var evidence []Evidence
	if externalOK {
		evidence = append(evidence, p.watchProbe(ctx, "external value "+unknownValue, "reconcile-external", unknownValue, Untouched))
	} else {
		evidence = append(evidence, Evidence{Probe: "external value " + unknownValue, Result: Skipped, Detail: "the server did not take the value"})
	}
	return append(evidence, p.watchProbe(ctx, "reserved value "+p.reserved, "reconcile-reserved", p.reserved, Reconciled))
}

// watchProbe creates an object with value and reports whether anything
// reconciled it within the wait.
func (p *prober) watchProbe(ctx context.Context, probe, name, value, expect string) Evidence {
	obj, err := p.create(ctx, name, ptr.To(value))
	if err != nil {
		return setupFailed(probe, err, expect)
	}
	var what string
	// The reads use the caller's context, not the poll's: a client-side rate
	// limiter refuses a request that might end after the poll's deadline,
	// which would turn "nothing happened until the end" into an error.
	err = wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, p.wait, true, func(context.Context) (bool, error) {
		var err error
		what, err = p.touched(ctx, obj)
		return what != "", err
	})
	switch {
	case err == nil:
		return Evidence{Probe: probe, Result: Reconciled, Detail: what, Expect: expect}
	case wait.Interrupted(err) && ctx.Err() == nil:
		return Evidence{Probe: probe, Result: Untouched, Detail: fmt.Sprintf("resourceVersion, status and Pods unchanged for %s", p.wait), Expect: expect}
	}
	_, detail := Classify(err)
	return Evidence{Probe: probe, Result: Failed, Detail: detail, Expect: expect}
}

// touched says what, if anything, shows that something reconciled the
// object since it was created as created.
func (p *prober) touched(ctx context.Context, created *unstructured.Unstructured) (string, error) {
	obj, err := p.client().Get(ctx, created.GetName(), metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", created.GetName(), err)
	}
	if obj.GetResourceVersion() != created.GetResourceVersion() {
		return fmt.Sprintf("resourceVersion %s became %s", created.GetResourceVersion(), obj.GetResourceVersion()), nil
	}
	if status, ok := obj.Object["status"].(map[string]any); ok && len(status) > 0 {
		return "status written", nil
	}
	if !p.pods {
		return "", nil
	}
	pods, err := p.cfg.Dynamic.Resource(podGVR).Namespace(p.namespace).List(ctx, metav1.ListOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return "", fmt.Errorf("listing pods: %w", err)
	}
	if pods == nil {
		return "", nil
	}
	for _, pod := range pods.Items {
		for _, ref := range pod.GetOwnerReferences() {
			if ref.UID == created.GetUID() {
				return fmt.Sprintf("Pod %s owned by it", pod.GetName()), nil
			}
		}
	}
	return "", nil
}
