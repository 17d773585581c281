package conformance

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"
)

// Status is one check's result.
type Status string

// Statuses. A check is skipped when it does not apply (a standing check on
// a kind that is not standing) or when what it needs failed first (it
// says which check to fix).
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is one check's outcome.
type Result struct {
	ID     string `json:"id"`
	Level  Level  `json:"level"`
	Status Status `json:"status"`
	// Message says what the check saw: why it failed or was skipped, or a
	// note on a pass.
	Message string `json:"message,omitempty"`
	// Why and Fix are the check's spec (docs/conformance.md).
	Why      string        `json:"why"`
	Fix      string        `json:"fix,omitempty"`
	Duration time.Duration `json:"duration_ns"`
}

// Report is the suite's verdict on one plugin file.
type Report struct {
	SuiteVersion int    `json:"suite_version"`
	File         string `json:"file"`
	SHA256       string `json:"sha256"`
	Kind         string `json:"kind,omitempty"`
	Version      string `json:"version,omitempty"`
	Standing     bool   `json:"standing"`
	// Passed is true when no required check failed.
	Passed   bool          `json:"passed"`
	Results  []Result      `json:"results"`
	Duration time.Duration `json:"duration_ns"`
}

// Result returns the result of check id.
func (r Report) Result(id string) (Result, bool) {
	for _, res := range r.Results {
		if res.ID == id {
			return res, true
		}
	}
	return Result{}, false
}

// Failed lists the ids of the required checks that failed.
func (r Report) Failed() []string {
	var out []string
	for _, res := range r.Results {
		if res.Status == Fail && res.Level == Required {
			out = append(out, res.ID)
		}
	}
	return out
}

// Warnings lists the ids of the advisory checks that failed: reported,
// never gating.
func (r Report) Warnings() []string {
	var out []string
	for _, res := range r.Results {
		if res.Status == Fail && res.Level == Advisory {
			out = append(out, res.ID)
		}
	}
	return out
}

// label is how a result reads in the table: an advisory failure is a
// warning, since it does not gate.
func (res Result) label() string {
	switch {
	case res.Status == Fail && res.Level == Advisory:
		return "warn"
	case res.Status == Fail:
		return "FAIL"
	}
	return string(res.Status)
}

// WriteText writes the report as a table: check, level, result, and what
// the check saw (its why, on a pass), then how to fix each failure.
func (r Report) WriteText(w io.Writer) error {
	name := r.Kind
	if name == "" {
		name = "(kind unknown)"
	}
	if _, err := fmt.Fprintf(w, "vigil conformance suite %d: %s %s (%s)\n\n", r.SuiteVersion, name, r.Version, r.File); err != nil {
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "CHECK\tLEVEL\tRESULT\tDETAIL")
	var failed []Result
	for _, res := range r.Results {
		detail := res.Message
		if detail == "" {
			detail = res.Why
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", res.ID, res.Level, res.label(), oneLine(detail, 160))
		if res.Status == Fail {
			failed = append(failed, res)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, res := range failed {
		fmt.Fprintf(w, "\n%s %s:\n  %s\n  why: %s\n  fix: %s\n", res.label(), res.ID, res.Message, res.Why, res.Fix)
	}
	verdict := "PASS: every required check passed"
	if !r.Passed {
		verdict = fmt.Sprintf("FAIL: %d required check(s) failed: %s", len(r.Failed()), strings.Join(r.Failed(), ", "))
	}
	if w := r.Warnings(); len(w) > 0 {
		verdict += fmt.Sprintf("; %d warning(s): %s", len(w), strings.Join(w, ", "))
	}
	_, err := fmt.Fprintf(w, "\n%s (%s)\n", verdict, r.Duration.Round(time.Millisecond))
	return err
}

func oneLine(s string, max int) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > max {
		s = s[:max-1] + "…"
	}
	return s
}

// WriteJUnit writes the report as JUnit XML, one testcase per check: a
// required failure is a <failure>, a skip is <skipped>, and an advisory
// failure passes with its message in <system-out>, since it does not gate.
func (r Report) WriteJUnit(w io.Writer) error {
	type failure struct {
		Message string `xml:"message,attr"`
		Type    string `xml:"type,attr"`
		Body    string `xml:",chardata"`
	}
	type skipped struct {
		Message string `xml:"message,attr"`
	}
	type testcase struct {
		Name      string   `xml:"name,attr"`
		Classname string   `xml:"classname,attr"`
		Time      string   `xml:"time,attr"`
		Failure   *failure `xml:"failure,omitempty"`
		Skipped   *skipped `xml:"skipped,omitempty"`
		SystemOut string   `xml:"system-out,omitempty"`
	}
	type property struct {
		Name  string `xml:"name,attr"`
		Value string `xml:"value,attr"`
	}
	type testsuite struct {
		XMLName    xml.Name   `xml:"testsuite"`
		Name       string     `xml:"name,attr"`
		Tests      int        `xml:"tests,attr"`
		Failures   int        `xml:"failures,attr"`
		Skipped    int        `xml:"skipped,attr"`
		Time       string     `xml:"time,attr"`
		Properties []property `xml:"properties>property"`
		Cases      []testcase `xml:"testcase"`
	}
	secs := func(d time.Duration) string { return fmt.Sprintf("%.3f", d.Seconds()) }
	ts := testsuite{
		Name: "vigil conformance: " + r.Kind, Tests: len(r.Results), Time: secs(r.Duration),
		Properties: []property{
			{"suite_version", fmt.Sprint(r.SuiteVersion)}, {"file", r.File}, {"sha256", r.SHA256},
			{"kind", r.Kind}, {"version", r.Version},
		},
	}
	for _, res := range r.Results {
		tc := testcase{Name: res.ID, Classname: "vigil.conformance." + string(res.Level), Time: secs(res.Duration)}
		switch {
		case res.Status == Fail && res.Level == Required:
			ts.Failures++
			tc.Failure = &failure{Message: oneLine(res.Message, 200), Type: res.ID,
				Body: res.Message + "\nwhy: " + res.Why + "\nfix: " + res.Fix}
		case res.Status == Fail:
			tc.SystemOut = "warning: advisory check failed: " + res.Message + "\nfix: " + res.Fix
		case res.Status == Skip:
			ts.Skipped++
			tc.Skipped = &skipped{Message: res.Message}
		}
		ts.Cases = append(ts.Cases, tc)
	}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(ts); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}
