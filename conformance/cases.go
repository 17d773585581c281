package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// caseFile is one of an author's data-driven cases: a file in the cases
// directory. The suite admits Params, then observes them at Now (with
// Baseline, for a standing kind) while the fake fetch replays Fetch, and
// compares the answer with Expect. See docs/conformance.md.
type caseFile struct {
	Description string          `json:"description,omitempty"`
	Params      json.RawMessage `json:"params"`
	Now         time.Time       `json:"now"`
	Attempt     int             `json:"attempt,omitempty"`
	Baseline    json.RawMessage `json:"baseline,omitempty"`
	Fetch       []caseFetch     `json:"fetch,omitempty"`
	Expect      caseExpect      `json:"expect"`
}

// caseFetch is one recorded exchange: the request it answers and the
// response.
type caseFetch struct {
	Request  caseRequest  `json:"request"`
	Response caseResponse `json:"response"`
}

// caseRequest matches a request by method (default GET) and URL: exactly
// (url), by prefix (url_prefix) or by a regular expression matched
// anywhere in the URL (url_regex; anchor it with ^ and $ to match the
// whole). Exactly one of the three. The first entry in file order that
// matches answers, as often as it is asked.
type caseRequest struct {
	Method    string `json:"method,omitempty"`
	URL       string `json:"url,omitempty"`
	URLPrefix string `json:"url_prefix,omitempty"`
	URLRegex  string `json:"url_regex,omitempty"`

	re *regexp.Regexp
}

// caseResponse is what the matched request gets: an HTTP answer (status,
// headers, and a body as text in body, as a JSON value in json, or as
// base64 in body_base64), or a failure with no response. The fingerprint
// defaults to the host's: the hex SHA-256 of the body.
type caseResponse struct {
	Status      int               `json:"status,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Body        *string           `json:"body,omitempty"`
	JSON        json.RawMessage   `json:"json,omitempty"`
	BodyBase64  []byte            `json:"body_base64,omitempty"`
	Fingerprint string            `json:"fingerprint,omitempty"`
	NotModified bool              `json:"not_modified,omitempty"`
	FromCache   bool              `json:"from_cache,omitempty"`
	Failure     *abi.FetchFailure `json:"failure,omitempty"`
}

// caseExpect is the answer the case wants. Status is required; the
// others are compared only when given: outcome.result exactly,
// outcome.summary exactly, outcome.detail and baseline as JSON values,
// note_contains as a substring of the note, next_check as an instant.
type caseExpect struct {
	Status       string          `json:"status"`
	Outcome      *caseOutcome    `json:"outcome,omitempty"`
	Baseline     json.RawMessage `json:"baseline,omitempty"`
	NoteContains string          `json:"note_contains,omitempty"`
	NextCheck    *time.Time      `json:"next_check,omitempty"`
}

// caseOutcome is the outcome a case wants.
type caseOutcome struct {
	Result  string          `json:"result"`
	Summary string          `json:"summary,omitempty"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// caseSource is a case file, read and decoded (or not).
type caseSource struct {
	id   string
	file string
	c    caseFile
	err  error
}

// readCases reads every *.json in dir, in name order. A file that does not
// decode is a failing case, not an error: the error is for a directory
// that cannot be read.
func readCases(dir string) ([]caseSource, error) {
	if dir == "" {
		return nil, nil
	}
	names, err := filepath.Glob(filepath.Join(dir, "*.json"))
	if err != nil {
		return nil, err
	}
	if _, err := os.Stat(dir); err != nil {
		return nil, fmt.Errorf("cases: %w", err)
	}
	sort.Strings(names)
	out := make([]caseSource, 0, len(names))
	for _, n := range names {
		cs := caseSource{id: CasesPrefix + strings.TrimSuffix(filepath.Base(n), ".json"), file: n}
		data, err := os.ReadFile(n)
		if err == nil {
			cs.c, err = parseCase(data)
		}
		cs.err = err
		out = append(out, cs)
	}
	return out, nil
}

// parseCase decodes and checks one case file's content. Unknown fields are
// refused: a misspelt expectation must not silently expect nothing.
func parseCase(data []byte) (caseFile, error) {
	var c caseFile
	if err := abi.StrictUnmarshal(data, &c); err != nil {
		return c, err
	}
	if len(c.Params) == 0 {
		return c, errors.New("params is required")
	}
	if c.Now.IsZero() {
		return c, errors.New("now is required: the instant the host observes at")
	}
	switch c.Expect.Status {
	case abi.StatusPending, abi.StatusSettled, abi.StatusChanged:
	default:
		return c, fmt.Errorf("expect.status %q: want pending, settled or changed", c.Expect.Status)
	}
	for i := range c.Fetch {
		if err := c.Fetch[i].check(); err != nil {
			return c, fmt.Errorf("fetch[%d]: %w", i, err)
		}
	}
	return c, nil
}

func (f *caseFetch) check() error {
	r := &f.Request
	n := 0
	for _, s := range []string{r.URL, r.URLPrefix, r.URLRegex} {
		if s != "" {
			n++
		}
	}
	if n != 1 {
		return errors.New("request: give exactly one of url, url_prefix and url_regex")
	}
	if r.URLRegex != "" {
		re, err := regexp.Compile(r.URLRegex)
		if err != nil {
			return fmt.Errorf("request.url_regex: %w", err)
		}
		r.re = re
	}
	if r.Method == "" {
		r.Method = "GET"
	}
	resp := f.Response
	bodies := 0
	if resp.Body != nil {
		bodies++
	}
	if resp.JSON != nil {
		bodies++
	}
	if resp.BodyBase64 != nil {
		bodies++
	}
	switch {
	case bodies > 1:
		return errors.New("response: give at most one of body, json and body_base64")
	case resp.Failure != nil && (resp.Status != 0 || bodies > 0):
		return errors.New("response: a failure has no status or body")
	case resp.Failure != nil && resp.Failure.Reason == "":
		return errors.New("response.failure.reason is required")
	case resp.Failure == nil && (resp.Status < 100 || resp.Status > 599):
		return errors.New("response: give a status (100-599) or a failure")
	}
	return nil
}

func (r caseRequest) matches(req abi.FetchRequest) bool {
	if !strings.EqualFold(r.Method, req.Method) {
		return false
	}
	switch {
	case r.URL != "":
		return r.URL == req.URL
	case r.URLPrefix != "":
		return strings.HasPrefix(req.URL, r.URLPrefix)
	}
	return r.re.MatchString(req.URL)
}

func (r caseResponse) wire() abi.FetchResponse {
	if r.Failure != nil {
		return abi.FetchResponse{Failure: r.Failure}
	}
	var body []byte
	switch {
	case r.Body != nil:
		body = []byte(*r.Body)
	case r.JSON != nil:
		body = r.JSON
	default:
		body = r.BodyBase64
	}
	h := make(map[string]string, len(r.Headers))
	for k, v := range r.Headers {
		h[strings.ToLower(k)] = v
	}
	fp := r.Fingerprint
	if fp == "" {
		fp = fingerprint(body)
	}
	return abi.FetchResponse{Status: r.Status, Headers: h, Body: body, Fingerprint: fp,
		NotModified: r.NotModified, FromCache: r.FromCache}
}

// runCase admits the case's params and observes them with its recorded
// responses; every request must have a recorded answer.
func (s *suite) runCase(ctx context.Context, cs caseSource) {
	t := time.Now()
	st, msg := s.caseResult(ctx, cs)
	s.record(cs.id, st, time.Since(t), "%s", msg)
}

func (s *suite) caseResult(ctx context.Context, cs caseSource) (Status, string) {
	if cs.err != nil {
		return Fail, fmt.Sprintf("%s: %v", filepath.Base(cs.file), cs.err)
	}
	c := cs.c
	if _, err := s.admit(ctx, c.Params); err != nil {
		return Fail, "the case's params are not admitted: " + err.Error()
	}
	var mu sync.Mutex
	var unmatched []string
	replay := func(req abi.FetchRequest) abi.FetchResponse {
		for _, f := range c.Fetch {
			if f.Request.matches(req) {
				return f.Response.wire()
			}
		}
		mu.Lock()
		unmatched = append(unmatched, req.Method+" "+req.URL)
		mu.Unlock()
		return failure(abi.FetchUnavailable, "the case has no recorded response for "+req.Method+" "+req.URL)
	}
	attempt := c.Attempt
	if attempt == 0 {
		attempt = 1
	}
	req := abi.ObserveRequest{Kind: s.info.Kind, WatchID: suiteWatchID, Params: c.Params, Now: c.Now, Attempt: attempt, Baseline: c.Baseline}
	call := s.observe(ctx, s.rt, "the case", req, replay)
	if len(unmatched) > 0 {
		return Fail, "requests with no recorded response: " + strings.Join(unmatched, ", ") + "; observe answered " + call.describe()
	}
	if !call.answered() {
		return Fail, "observe came back with " + call.describe()
	}
	if diff := c.Expect.diff(call.obs.Status, call.obs.Note, call.obs.NextCheck, call.obs.Outcome, call.obs.Baseline); diff != "" {
		return Fail, diff + "; the answer was " + clip(obsKey(call.obs))
	}
	msg := "answered " + call.obs.Status
	if c.Description != "" {
		msg = c.Description + ": " + msg
	}
	return Pass, msg
}

// diff says how an answer differs from the expectation, or "".
func (e caseExpect) diff(status, note string, next time.Time, o *abi.Outcome, baseline json.RawMessage) string {
	var d []string
	if status != e.Status {
		d = append(d, fmt.Sprintf("status %s, want %s", status, e.Status))
	}
	if w := e.Outcome; w != nil {
		switch {
		case o == nil:
			d = append(d, "no outcome, want result "+w.Result)
		default:
			if o.Result != w.Result {
				d = append(d, fmt.Sprintf("result %q, want %q", o.Result, w.Result))
			}
			if w.Summary != "" && o.Summary != w.Summary {
				d = append(d, fmt.Sprintf("summary %q, want %q", o.Summary, w.Summary))
			}
			if len(w.Detail) > 0 && !jsonEqual(o.Detail, w.Detail) {
				d = append(d, fmt.Sprintf("detail %s, want %s", clip(o.Detail), clip(w.Detail)))
			}
		}
	}
	if len(e.Baseline) > 0 && !jsonEqual(baseline, e.Baseline) {
		d = append(d, fmt.Sprintf("baseline %s, want %s", clip(baseline), clip(e.Baseline)))
	}
	if e.NoteContains != "" && !strings.Contains(note, e.NoteContains) {
		d = append(d, fmt.Sprintf("note %q does not contain %q", note, e.NoteContains))
	}
	if e.NextCheck != nil && !next.Equal(*e.NextCheck) {
		d = append(d, fmt.Sprintf("next_check %v, want %v", next, e.NextCheck.UTC()))
	}
	if len(d) == 0 {
		return ""
	}
	return strings.Join(d, "; ")
}
