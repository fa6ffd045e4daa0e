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
	"net/http"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// Cell values.
const (
	// Yes means every counted probe of the cell saw the conforming behaviour.
	Yes = "y"
	// No means at least one counted probe saw something else.
	No = "n"
	// NotMeasured means the cell has no counted probe that ran.
	NotMeasured = "not measured"
)

// Probe results.
const (
	// Accepted: the server took the request and stored what was sent.
	Accepted = "accepted"
	// Refused: the server answered 400, 403 or 422.
	Refused = "refused"
	// Ignored: the server took the request but the stored value did not change.
	Ignored = "ignored"
	// NotServed: the server does not serve this kind of request (405, 415).
	NotServed = "not served"
	// Reconciled: something wrote the object or made Pods for it within the wait.
	Reconciled = "reconciled"
	// Untouched: nothing wrote the object or made Pods for it within the wait.
	Untouched = "not reconciled"
	// Failed: the probe could not run (an unexpected answer or no answer).
	Failed = "error"
	// Skipped: the probe was not run, Detail says why.
	Skipped = NotMeasured
)

// Expectations a probe can carry besides a single result.
const (
	// RefusedOrIgnored passes when the change was refused or did not stick.
	RefusedOrIgnored = "refused or ignored"
)

// Evidence is what one probe saw.
type Evidence struct {
	// Probe names what was tried.
	Probe string `json:"probe"`
	// Result is one of the probe results above.
	Result string `json:"result"`
	// Detail is the server's answer or the value read back.
	Detail string `json:"detail,omitempty"`
	// Expect is the result a conforming server gives; empty for evidence
	// that is recorded but does not count for the cell.
	Expect string `json:"expect,omitempty"`
}

// passes reports whether the probe saw what its expectation asks for.
func (e Evidence) passes() bool {
	if e.Expect == RefusedOrIgnored {
		return e.Result == Refused || e.Result == Ignored
	}
	return e.Result == e.Expect
}

// Verdict turns the evidence of one cell into its value: not measured when
// no counted probe ran to an answer or one could not run, y when every
// counted probe that the server serves passes, n otherwise. A request kind the
// server does not serve (for example strategic merge patch on a custom
// resource) neither passes nor fails.
func Verdict(evidence []Evidence) string {
	counted := 0
	ok := true
	for _, e := range evidence {
		if e.Expect == "" {
			continue
		}
		switch e.Result {
		case Failed, Skipped:
			return NotMeasured
		case NotServed:
			continue
		}
		counted++
		ok = ok && e.passes()
	}
	if counted == 0 {
		return NotMeasured
	}
	if ok {
		return Yes
	}
	return No
}

// Cells is the row's verdicts, one per question the kit asks.
type Cells struct {
	// OpenSet: an unknown, well-formed value is accepted.
	OpenSet string `json:"openSet"`
	// MaxLength63: a value of 63 characters is accepted and one of 64 refused.
	MaxLength63 string `json:"maxLength63"`
	// Format: every malformed value is refused.
	Format string `json:"format"`
	// Immutable: update, every served patch type and apply refuse a change.
	Immutable string `json:"immutable"`
	// ImmutableStatus: a write of the status subresource does not change it.
	ImmutableStatus string `json:"immutableStatus"`
	// ValidatesStatus: the status subresource refuses Job status that breaks
	// the status contract of externally managed Jobs.
	ValidatesStatus string `json:"validatesStatus"`
	// SkipsReconcile: nothing reconciles an externally managed object, and
	// the built-in controller reconciles one with the reserved value.
	SkipsReconcile string `json:"skipsReconcile"`
}

// Cell names, the keys of Row.Evidence.
const (
	CellOpenSet         = "openSet"
	CellMaxLength63     = "maxLength63"
	CellFormat          = "format"
	CellImmutable       = "immutable"
	CellImmutableStatus = "immutableStatus"
	CellValidatesStatus = "validatesStatus"
	CellSkipsReconcile  = "skipsReconcile"
)

// cellNames lists the cells in the order of the table's columns.
var cellNames = []string{CellOpenSet, CellMaxLength63, CellFormat, CellImmutable, CellImmutableStatus, CellValidatesStatus, CellSkipsReconcile}

// CellsFrom computes every cell from the evidence, keyed by cell name.
func CellsFrom(evidence map[string][]Evidence) Cells {
	return Cells{
		OpenSet:         Verdict(evidence[CellOpenSet]),
		MaxLength63:     Verdict(evidence[CellMaxLength63]),
		Format:          Verdict(evidence[CellFormat]),
		Immutable:       Verdict(evidence[CellImmutable]),
		ImmutableStatus: Verdict(evidence[CellImmutableStatus]),
		ValidatesStatus: Verdict(evidence[CellValidatesStatus]),
		SkipsReconcile:  Verdict(evidence[CellSkipsReconcile]),
	}
}

// Row is the kit's result for one resource.
type Row struct {
	// Resource is the resource as given, RESOURCE.VERSION.GROUP.
	Resource string `json:"resource"`
	// Cells holds the verdicts.
	Cells Cells `json:"cells"`
	// Evidence holds what each probe saw, keyed by cell name.
	Evidence map[string][]Evidence `json:"evidence"`
}

// MarkdownHeader returns the header and separator lines of the table.
func MarkdownHeader() string {
	return "| resource | " + strings.Join(cellNames, " | ") + " |\n" +
		"|---" + strings.Repeat("|---", len(cellNames)) + "|\n"
}

// Markdown returns the row as one line of the table.
func (r Row) Markdown() string {
	c := r.Cells
	values := []string{c.OpenSet, c.MaxLength63, c.Format, c.Immutable, c.ImmutableStatus, c.ValidatesStatus, c.SkipsReconcile}
	return "| " + r.Resource + " | " + strings.Join(values, " | ") + " |\n"
}

// Classify turns the error of a request into a probe result and the detail
// to record: refusals are the client errors a validating server answers with,
// "not served" the answers of a server without that kind of request, and
// anything else means the probe could not run.
func Classify(err error) (result, detail string) {
	if err == nil {
		return Accepted, ""
	}
	var status apierrors.APIStatus
	if !errors.As(err, &status) {
		return Failed, err.Error()
	}
	s := status.Status()
	detail = fmt.Sprintf("HTTP %d %s: %s", s.Code, s.Reason, s.Message)
	switch s.Code {
	case http.StatusBadRequest, http.StatusForbidden, http.StatusUnprocessableEntity:
		return Refused, detail
	case http.StatusMethodNotAllowed, http.StatusUnsupportedMediaType:
		return NotServed, detail
	}
	return Failed, detail
}
