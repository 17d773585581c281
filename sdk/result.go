package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// Outcome is what a settled or changed observation concluded.
type Outcome struct {
	// Result is a short machine word: "fired", "success", "failure", …
	Result string
	// Summary is one human line.
	Summary string
	// Detail is any JSON-marshallable value with the specifics.
	Detail any
}

// Result is an observation's answer. Build it with [Pending], [Settled],
// [Changed] or [Baseline]; the zero Result is refused, so an observe that
// forgets to answer is a loud error and never a silent "not yet".
type Result struct {
	status    string
	note      string
	nextCheck time.Time
	outcome   *Outcome
	baseline  any
	hasBase   bool
}

// Pending answers "not yet, or I cannot tell". note says which, for the
// watch's diagnostics.
func Pending(note string) Result { return Result{status: abi.StatusPending, note: note} }

// Settled answers with a final outcome.
func Settled(o Outcome) Result { return Result{status: abi.StatusSettled, outcome: &o} }

// Changed is for standing kinds: the subject changed in a way the recipient
// should hear about. baseline is the new snapshot; the host persists it
// before it mails the outcome.
func Changed(o Outcome, baseline any) Result {
	return Result{status: abi.StatusChanged, outcome: &o, baseline: baseline, hasBase: true}
}

// Baseline records this snapshot silently and answers pending. For a
// standing kind it is the answer to the first check, and to a change nobody
// needs to hear about. Any kind may use it to keep what it must remember
// between probes (the http kind's first fingerprint): the host stores it
// when it moves and hands it back as Input.Baseline.
func Baseline(b any) Result {
	return Result{status: abi.StatusPending, baseline: b, hasBase: true}
}

// CheckAt hints when the subject can next change (a timer's instant). The
// host honours it within [now + the minimum interval, the deadline]. Only a
// pending result carries a hint; on any other it is ignored.
func (r Result) CheckAt(t time.Time) Result {
	if r.status == abi.StatusPending {
		r.nextCheck = t
	}
	return r
}

// ErrEmptyResult is the error for a zero Result.
var ErrEmptyResult = errors.New("sdk: empty result: answer with Pending, Settled, Changed or Baseline")

// wire turns r into the contract's shape, refusing combinations the
// contract does not allow.
func (r Result) wire(standing bool) (abi.ObserveResponse, error) {
	out := abi.ObserveResponse{Status: r.status, Note: r.note}
	switch r.status {
	case "":
		return out, ErrEmptyResult
	case abi.StatusPending:
		if !r.nextCheck.IsZero() {
			t := r.nextCheck.UTC()
			out.NextCheck = &t
		}
	case abi.StatusSettled:
		if standing {
			return out, errors.New("sdk: a standing kind never settles: answer Changed or Baseline")
		}
	case abi.StatusChanged:
		if !standing {
			return out, errors.New("sdk: Changed is for standing kinds only: answer Settled")
		}
	}
	if r.hasBase {
		b, err := json.Marshal(r.baseline)
		if err != nil {
			return out, fmt.Errorf("sdk: baseline: %w", err)
		}
		out.Baseline = b
	}
	if r.outcome != nil {
		if r.outcome.Result == "" {
			return out, errors.New("sdk: outcome needs a result")
		}
		o := abi.Outcome{Result: r.outcome.Result, Summary: r.outcome.Summary}
		if r.outcome.Detail != nil {
			d, err := json.Marshal(r.outcome.Detail)
			if err != nil {
				return out, fmt.Errorf("sdk: outcome detail: %w", err)
			}
			o.Detail = d
		}
		out.Outcome = &o
	}
	return out, nil
}

// Status is the result's status: abi.StatusPending, StatusSettled or
// StatusChanged ("" for the zero Result).
func (r Result) Status() string { return r.status }

// Note is a pending result's note.
func (r Result) Note() string { return r.note }

// NextCheck is the hint set with CheckAt; zero when none.
func (r Result) NextCheck() time.Time { return r.nextCheck }

// Outcome is a settled or changed result's outcome; false when there is
// none.
func (r Result) Outcome() (Outcome, bool) {
	if r.outcome == nil {
		return Outcome{}, false
	}
	return *r.outcome, true
}

// Baseline is a standing result's snapshot; false when there is none.
func (r Result) Baseline() (any, bool) { return r.baseline, r.hasBase }
