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
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// ev builds one piece of evidence.
func ev(probe, result, expect string) Evidence {
	return Evidence{Probe: probe, Result: result, Expect: expect}
}

func TestVerdict(t *testing.T) {
	cases := []struct {
		name     string
		evidence []Evidence
		want     string
	}{
		{"no evidence", nil, NotMeasured},
		{"only informational evidence", []Evidence{ev("reserved", Accepted, "")}, NotMeasured},
		{"skipped", []Evidence{ev("status contract", Skipped, "")}, NotMeasured},
		{"every probe passes", []Evidence{ev("63", Accepted, Accepted), ev("64", Refused, Refused)}, Yes},
		{"63 refused", []Evidence{ev("63", Refused, Accepted), ev("64", Refused, Refused)}, No},
		{"64 accepted", []Evidence{ev("63", Accepted, Accepted), ev("64", Accepted, Refused)}, No},
		{"informational evidence does not fail the cell", []Evidence{ev("foo", Refused, Refused), ev("a/b", Accepted, "")}, Yes},
		{"one malformed value accepted", []Evidence{ev("foo", Refused, Refused), ev("upper", Accepted, Refused)}, No},
		{"a probe that could not run", []Evidence{ev("update", Refused, Refused), ev("apply", Failed, Refused)}, NotMeasured},
		{"a probe that could not run wins over a failure", []Evidence{ev("update", Accepted, Refused), ev("apply", Failed, Refused)}, NotMeasured},
		{"a counted probe skipped", []Evidence{ev("external", Skipped, Untouched), ev("reserved", Reconciled, Reconciled)}, NotMeasured},
		{"patch type not served neither passes nor fails", []Evidence{ev("update", Refused, Refused), ev("strategic", NotServed, Refused)}, Yes},
		{"patch type not served next to an accepted change", []Evidence{ev("update", Accepted, Refused), ev("strategic", NotServed, Refused)}, No},
		{"nothing served", []Evidence{ev("strategic", NotServed, Refused)}, NotMeasured},
		{"an immutable change silently dropped is not a refusal", []Evidence{ev("update", Ignored, Refused)}, No},
		{"status write refused", []Evidence{ev("status", Refused, RefusedOrIgnored)}, Yes},
		{"status write ignored", []Evidence{ev("status", Ignored, RefusedOrIgnored)}, Yes},
		{"status write changed the value", []Evidence{ev("status", Accepted, RefusedOrIgnored)}, No},
		{"unknown value stored as something else", []Evidence{ev("unknown", Ignored, Accepted)}, No},
		{"reconcile as expected", []Evidence{ev("external", Untouched, Untouched), ev("reserved", Reconciled, Reconciled)}, Yes},
		{"external object reconciled", []Evidence{ev("external", Reconciled, Untouched), ev("reserved", Reconciled, Reconciled)}, No},
		{"reserved object not reconciled", []Evidence{ev("external", Untouched, Untouched), ev("reserved", Untouched, Reconciled)}, No},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, Verdict(tc.evidence)); diff != "" {
				t.Errorf("Verdict (-want +got):\n%s", diff)
			}
		})
	}
}

func TestCellsFrom(t *testing.T) {
	evidence := map[string][]Evidence{
		CellOpenSet:         {ev("unknown", Accepted, Accepted), ev("unset", NotDefaulted, "")},
		CellMaxLength63:     {ev("63", Accepted, Accepted), ev("64", Accepted, Refused)},
		CellFormat:          {ev("foo", Refused, Refused)},
		CellImmutable:       {ev("update", Refused, Refused), ev("strategic", NotServed, Refused)},
		CellImmutableStatus: {ev("status", Accepted, RefusedOrIgnored)},
		CellValidatesStatus: {ev("status contract", Skipped, "")},
	}
	want := Cells{
		OpenSet:         Yes,
		MaxLength63:     No,
		Format:          Yes,
		Immutable:       Yes,
		ImmutableStatus: No,
		ValidatesStatus: NotMeasured,
		SkipsReconcile:  NotMeasured,
	}
	if diff := cmp.Diff(want, CellsFrom(evidence)); diff != "" {
		t.Errorf("CellsFrom (-want +got):\n%s", diff)
	}
}

func TestClassify(t *testing.T) {
	gr := schema.GroupResource{Group: "batch.jobs.dev", Resource: "jobs"}
	invalid := apierrors.NewInvalid(schema.GroupKind{Group: "batch.jobs.dev", Kind: "Job"}, "j",
		field.ErrorList{field.Invalid(field.NewPath("spec", "managedBy"), "x", "field is immutable")})
	// What kube-apiserver answers a strategic merge patch of a custom resource.
	unsupported := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 415, Reason: metav1.StatusReasonUnsupportedMediaType,
		Message: "the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
	}}
	cases := []struct {
		name       string
		err        error
		wantResult string
		wantDetail string
	}{
		{"no error", nil, Accepted, ""},
		{"invalid", invalid, Refused, `HTTP 422 Invalid: Job.batch.jobs.dev "j" is invalid: spec.managedBy: Invalid value: "x": field is immutable`},
		{"wrapped invalid", fmt.Errorf("creating j: %w", invalid), Refused, `HTTP 422 Invalid: Job.batch.jobs.dev "j" is invalid: spec.managedBy: Invalid value: "x": field is immutable`},
		{"bad request", apierrors.NewBadRequest("no"), Refused, "HTTP 400 BadRequest: no"},
		{"forbidden by admission", apierrors.NewForbidden(gr, "j", errors.New("denied")), Refused, `HTTP 403 Forbidden: jobs.batch.jobs.dev "j" is forbidden: denied`},
		{"patch type not served", unsupported, NotServed, "HTTP 415 UnsupportedMediaType: the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml"},
		{"method not allowed", apierrors.NewMethodNotSupported(gr, "patch"), NotServed, `HTTP 405 MethodNotAllowed: patch is not supported on resources of kind "jobs.batch.jobs.dev"`},
		{"not found", apierrors.NewNotFound(gr, "j"), Failed, `HTTP 404 NotFound: jobs.batch.jobs.dev "j" not found`},
		{"conflict", apierrors.NewConflict(gr, "j", errors.New("stale")), Failed, `HTTP 409 Conflict: Operation cannot be fulfilled on jobs.batch.jobs.dev "j": stale`},
		{"no answer", errors.New("dial tcp: connection refused"), Failed, "dial tcp: connection refused"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			result, detail := Classify(tc.err)
			if diff := cmp.Diff([]string{tc.wantResult, tc.wantDetail}, []string{result, detail}); diff != "" {
				t.Errorf("Classify (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMarkdown(t *testing.T) {
	row := Row{
		Resource: "jobs.v1.batch",
		Cells: Cells{
			OpenSet: Yes, MaxLength63: Yes, Format: No, Immutable: Yes,
			ImmutableStatus: Yes, ValidatesStatus: Yes, SkipsReconcile: NotMeasured,
		},
	}
	want := "| resource | openSet | maxLength63 | format | immutable | immutableStatus | validatesStatus | skipsReconcile |\n" +
		"|---|---|---|---|---|---|---|---|\n" +
		"| jobs.v1.batch | y | y | n | y | y | y | not measured |\n"
	if diff := cmp.Diff(want, MarkdownHeader()+row.Markdown()); diff != "" {
		t.Errorf("markdown (-want +got):\n%s", diff)
	}
}
