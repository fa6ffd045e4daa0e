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
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"testing"

	k8sbatchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/operation"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/apimachinery/pkg/util/validation/field"
	genericapirequest "k8s.io/apiserver/pkg/endpoints/request"
	"k8s.io/apiserver/pkg/registry/rest"
	upstreambatch "k8s.io/kubernetes/pkg/apis/batch"
	upstreambatchv1 "k8s.io/kubernetes/pkg/apis/batch/v1"
	upstreamjob "k8s.io/kubernetes/pkg/registry/batch/job"

	"github.com/batch-apiserver/batch-apiserver/pkg/apis/batch"
	batchv1 "github.com/batch-apiserver/batch-apiserver/pkg/apis/batch/v1"
)

// The differential tests hand the same Job to our strategy and to
// kube-apiserver's (k8s.io/kubernetes/pkg/registry/batch/job, which
// validates with pkg/apis/batch/validation and the options it derives) and
// compare the field errors by type and path. Upstream's errors are its
// strategy's, plus what kube-apiserver's declarative validation (the tags
// on the k8s.io/api types, run by the generic registry rather than by the
// strategy) adds under spec.scheduling; see withDeclarative.
//
// Our Job is upstream's with another group and another label prefix. The
// label prefix is the one difference that needs care: our generated
// selector and template labels are batch.jobs.dev/job-name and
// batch.jobs.dev/controller-uid where upstream's are batch.kubernetes.io/...;
// our validation requires ours, upstream's requires its own, and the
// ratcheting of RequirePrefixedLabels looks at whether the stored template
// has them. So the upstream copy gets every batch.jobs.dev/ key renamed to
// batch.kubernetes.io/ (in the serialized form, so that selectors, labels and
// anything else carrying the prefix move together), and the paths of
// upstream's errors get the prefix renamed back before comparison. Both
// prefixes are valid label-key prefixes well below the length limits, so
// the renaming changes no other rule's outcome.

const (
	ourPrefix      = batch.GroupName + "/"
	upstreamPrefix = "batch.kubernetes.io/"
)

var (
	ourScheme      = testScheme()
	upstreamScheme = func() *runtime.Scheme {
		s := runtime.NewScheme()
		utilruntime.Must(upstreambatch.AddToScheme(s))
		utilruntime.Must(upstreambatchv1.AddToScheme(s))
		return s
	}()
)

// decodedPair serializes job as our batch.jobs.dev/v1 and decodes that into
// both servers' internal Jobs the way each decodes a request: our v1 defaulted
// and converted by our scheme, and the same JSON (prefix renamed) as
// k8s.io/api batch/v1 defaulted and converted by upstream's.
func decodedPair(t testing.TB, job *batch.Job) (*batch.Job, *upstreambatch.Job) {
	t.Helper()
	external := &batchv1.Job{}
	if err := ourScheme.Convert(job, external, nil); err != nil {
		t.Fatalf("converting to v1: %v", err)
	}
	data, err := json.Marshal(external)
	if err != nil {
		t.Fatalf("encoding: %v", err)
	}

	oursV1 := &batchv1.Job{}
	if err := json.Unmarshal(data, oursV1); err != nil {
		t.Fatalf("decoding ours: %v", err)
	}
	ourScheme.Default(oursV1)
	ours := &batch.Job{}
	if err := ourScheme.Convert(oursV1, ours, nil); err != nil {
		t.Fatalf("converting ours to internal: %v", err)
	}

	upstreamV1 := &k8sbatchv1.Job{}
	if err := json.Unmarshal([]byte(strings.ReplaceAll(string(data), ourPrefix, upstreamPrefix)), upstreamV1); err != nil {
		t.Fatalf("decoding upstream: %v", err)
	}
	upstreamScheme.Default(upstreamV1)
	upstream := &upstreambatch.Job{}
	if err := upstreamScheme.Convert(upstreamV1, upstream, nil); err != nil {
		t.Fatalf("converting upstream to internal: %v", err)
	}
	return ours, upstream
}

// errUpstreamPanicked is returned for inputs on which kube-apiserver's
// validation panics (the apiserver's handler recovers and answers 500); such
// a case has nothing to compare.
var errUpstreamPanicked = fmt.Errorf("kube-apiserver's validation panicked")

// upstreamErrors calls validate, turning a panic into errUpstreamPanicked.
func upstreamErrors(validate func() field.ErrorList) (errs field.ErrorList, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: %v", errUpstreamPanicked, r)
		}
	}()
	return validate(), nil
}

// withDeclarative adds to errs, a strategy's errors for a batch/v1 request
// (on subresource "" or "status"; old nil on create), the errors
// kube-apiserver's declarative validation reports under spec.scheduling.
// Only those: the pod template's declarative rules (core/v1's tags) are not
// part of what these tests compare, because our template validation is
// core's hand-written one alone.
func withDeclarative(subresource string, job, old *upstreambatch.Job, errs field.ErrorList) field.ErrorList {
	ctx := genericapirequest.WithRequestInfo(context.Background(), &genericapirequest.RequestInfo{
		IsResourceRequest: true, APIGroup: "batch", APIVersion: "v1", Resource: "jobs", Subresource: subresource,
	})
	op, oldObj := operation.Create, runtime.Object(nil)
	if old != nil {
		op, oldObj = operation.Update, old
	}
	config := upstreamjob.Strategy.DeclarativeValidationConfig(ctx, job, oldObj)
	// Given no hand-written errors, it returns the declarative ones
	// kube-apiserver enforces.
	for _, e := range rest.ValidateDeclarativelyWithMigrationChecks(ctx, upstreamScheme, job, oldObj, nil, op, config) {
		if e.Field == "spec.scheduling" || strings.HasPrefix(e.Field, "spec.scheduling.") {
			errs = append(errs, e)
		}
	}
	return errs
}

// createErrors runs a create through both strategies.
func createErrors(ours *batch.Job, upstream *upstreambatch.Job) (field.ErrorList, field.ErrorList, error) {
	ctx := context.Background()
	strategy := NewStrategy(ourScheme)
	strategy.PrepareForCreate(ctx, ours)
	upstreamErrs, err := upstreamErrors(func() field.ErrorList {
		upstreamjob.Strategy.PrepareForCreate(ctx, upstream)
		return withDeclarative("", upstream, nil, upstreamjob.Strategy.Validate(ctx, upstream))
	})
	return strategy.Validate(ctx, ours), upstreamErrs, err
}

// updateErrors runs a spec update through both strategies.
func updateErrors(ours, oldOurs *batch.Job, upstream, oldUpstream *upstreambatch.Job) (field.ErrorList, field.ErrorList, error) {
	ctx := context.Background()
	strategy := NewStrategy(ourScheme)
	strategy.PrepareForUpdate(ctx, ours, oldOurs)
	upstreamErrs, err := upstreamErrors(func() field.ErrorList {
		upstreamjob.Strategy.PrepareForUpdate(ctx, upstream, oldUpstream)
		return withDeclarative("", upstream, oldUpstream, upstreamjob.Strategy.ValidateUpdate(ctx, upstream, oldUpstream))
	})
	return strategy.ValidateUpdate(ctx, ours, oldOurs), upstreamErrs, err
}

// statusUpdateErrors runs a status update through both status strategies.
func statusUpdateErrors(ours, oldOurs *batch.Job, upstream, oldUpstream *upstreambatch.Job) (field.ErrorList, field.ErrorList, error) {
	ctx := context.Background()
	strategy := NewStatusStrategy(NewStrategy(ourScheme))
	strategy.PrepareForUpdate(ctx, ours, oldOurs)
	upstreamErrs, err := upstreamErrors(func() field.ErrorList {
		upstreamjob.StatusStrategy.PrepareForUpdate(ctx, upstream, oldUpstream)
		return withDeclarative("status", upstream, oldUpstream, upstreamjob.StatusStrategy.ValidateUpdate(ctx, upstream, oldUpstream))
	})
	return strategy.ValidateUpdate(ctx, ours, oldOurs), upstreamErrs, err
}

// byTypeAndFieldMatcher is how the differential tests compare errors.
var byTypeAndFieldMatcher = field.ErrorMatcher{}.ByType().ByField()

// ourPaths renames the label prefix in the paths of upstream's errors back to ours.
func ourPaths(errs field.ErrorList) field.ErrorList {
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		c := *e
		c.Field = strings.ReplaceAll(c.Field, upstreamPrefix, ourPrefix)
		out = append(out, &c)
	}
	return out
}

// rendered renders errors by type and field, sorted, for a whole-list diff
// that keeps duplicates.
func rendered(errs field.ErrorList) []string {
	out := make([]string, 0, len(errs))
	for _, e := range errs {
		out = append(out, byTypeAndFieldMatcher.Render(e))
	}
	sort.Strings(out)
	return out
}
