package sdk

import (
	"encoding/json"
	"errors"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// FetchRequest is a GET or HEAD the host screens and issues on the plugin's
// behalf. See [Input.Fetch].
type FetchRequest = abi.FetchRequest

// FetchResponse is the host's answer to a fetch that produced a response.
type FetchResponse = abi.FetchResponse

// Fetcher carries a fetch to the host. Inside a plugin it is the host
// function vigil_fetch; in a unit test it is whatever fake the test gives.
type Fetcher interface {
	Fetch(req FetchRequest) (FetchResponse, error)
}

// FetcherFunc adapts a function to a Fetcher.
type FetcherFunc func(FetchRequest) (FetchResponse, error)

// Fetch calls f.
func (f FetcherFunc) Fetch(req FetchRequest) (FetchResponse, error) { return f(req) }

// Input is what the host tells one observe call.
type Input struct {
	Kind    string
	WatchID string
	// Now is the host's clock. Take time from here, never from time.Now.
	Now time.Time
	// Attempt counts observations of this watch, from 1.
	Attempt int
	// Baseline is the last recorded snapshot of a standing watch; empty on
	// its first check.
	Baseline json.RawMessage

	fetcher  Fetcher
	execer   Execer
	reporter ExtractionReporter
}

// WithFetcher returns a copy of in whose fetches go to f. Tests use it to
// give a predicate recorded responses.
func (in Input) WithFetcher(f Fetcher) Input {
	in.fetcher = f
	return in
}

// ErrNoFetcher is the fetch failure of an Input built by hand without
// WithFetcher.
var ErrNoFetcher = &FetchError{Reason: abi.FetchUnavailable, Message: "this Input has no fetcher (tests: use Input.WithFetcher)"}

// Fetch asks the host to issue req. Only GET and HEAD. The host may refuse
// it before anything is sent (bad headers, a destination the plugin is not
// granted), pace it, coalesce it with identical requests, or answer from
// its cache; every such failure is a *FetchError. The JSON exchanged with
// vigil_fetch is abi.FetchRequest in and abi.FetchResponse out, with
// Failure set when there is no response.
func (in Input) Fetch(req FetchRequest) (FetchResponse, error) {
	if in.fetcher == nil {
		return FetchResponse{}, ErrNoFetcher
	}
	resp, err := in.fetcher.Fetch(req)
	if err != nil {
		return FetchResponse{}, err
	}
	if resp.Failure != nil {
		return FetchResponse{}, &FetchError{Reason: resp.Failure.Reason, Message: resp.Failure.Message}
	}
	return resp, nil
}

// ExtractionFailedRequest names the answer whose bytes failed extraction.
// See [Input.ExtractionFailed].
type ExtractionFailedRequest = abi.ExtractionFailedRequest

// ExtractionFailedResponse is the host's answer to an extraction report.
type ExtractionFailedResponse = abi.ExtractionFailedResponse

// ExtractionReporter carries an extraction failure to the host. Inside a
// plugin it is the host function vigil_extraction_failed; in a unit test,
// a Fetcher that also implements it (Harness.Observe and the SDK's observe
// take it from the Fetcher), or one given with WithExtractionReporter.
type ExtractionReporter interface {
	ExtractionFailed(req ExtractionFailedRequest) (ExtractionFailedResponse, error)
}

// WithExtractionReporter returns a copy of in whose extraction reports go
// to r.
func (in Input) WithExtractionReporter(r ExtractionReporter) Input {
	in.reporter = r
	return in
}

// ErrNoExtractionReporter is the failure of an extraction report from an
// Input without an ExtractionReporter.
var ErrNoExtractionReporter = &FetchError{Reason: abi.FetchUnavailable, Message: "this Input has no extraction reporter (tests: use Input.WithExtractionReporter)"}

// ExtractionFailed tells the host that resp, the answer to req (the
// request exactly as it was fetched), has bytes the predicate could not
// extract what it needs from: a body that is not JSON, a path that is
// absent, a page without the element it reads. The host then forgets the
// validators (ETag, Last-Modified) it stored for those bytes, so the next
// fetch of req goes out unconditional: without that, an origin answering
// 304 would re-confirm the broken extraction for as long as it kept
// answering 304. Call it where the extraction fails, and still answer
// Pending; a condition the bytes do answer (a value that is there and is
// not the one wanted) is not a failed extraction. The report is advisory:
// it reports whether validators were forgotten, and a *FetchError only
// when the host could not take the report.
func (in Input) ExtractionFailed(req FetchRequest, resp FetchResponse) (bool, error) {
	r := in.reporter
	if r == nil {
		r, _ = in.fetcher.(ExtractionReporter)
	}
	if r == nil {
		return false, ErrNoExtractionReporter
	}
	out, err := r.ExtractionFailed(ExtractionFailedRequest{Request: req, Fingerprint: resp.Fingerprint})
	if err != nil {
		return false, err
	}
	if out.Failure != nil {
		return false, &FetchError{Reason: out.Failure.Reason, Message: out.Failure.Message}
	}
	return out.Forgot, nil
}

// ExecRequest is a command the host runs on the plugin's behalf. See
// [Input.Exec].
type ExecRequest = abi.ExecRequest

// ExecResponse is the host's answer to a command that ran.
type ExecResponse = abi.ExecResponse

// Execer carries a command to the host. Inside a plugin it is the host
// function vigil_exec; in a unit test, whatever fake the test gives (a
// Fetcher passed to Harness.Observe that is also an Execer serves both).
type Execer interface {
	Exec(req ExecRequest) (ExecResponse, error)
}

// ExecerFunc adapts a function to an Execer.
type ExecerFunc func(ExecRequest) (ExecResponse, error)

// Exec calls f.
func (f ExecerFunc) Exec(req ExecRequest) (ExecResponse, error) { return f(req) }

// WithExecer returns a copy of in whose commands go to e.
func (in Input) WithExecer(e Execer) Input {
	in.execer = e
	return in
}

// ErrNoExecer is the exec failure of an Input without an Execer.
var ErrNoExecer = &FetchError{Reason: abi.ExecUnavailable, Message: "this Input has no execer (tests: use Input.WithExecer)"}

// Exec asks the host to run req: a program the operator granted this kind,
// with its arguments as a vector (no shell), in the watch's recipient's
// workspace, ended with its whole process group when its timeout passes.
// A command that ran answers its exit code and output, TimedOut when the
// timeout ended it; a command that could not run (not granted, no
// workspace, an invalid request) is a *FetchError with the reason. A
// predicate answers Pending on both a failure and a timeout: the host
// could not tell.
func (in Input) Exec(req ExecRequest) (ExecResponse, error) {
	if in.execer == nil {
		return ExecResponse{}, ErrNoExecer
	}
	resp, err := in.execer.Exec(req)
	if err != nil {
		return ExecResponse{}, err
	}
	if resp.Failure != nil {
		return ExecResponse{}, &FetchError{Reason: resp.Failure.Reason, Message: resp.Failure.Message}
	}
	return resp, nil
}

// DecodeBaseline decodes the standing watch's last snapshot into v. It
// reports false, and leaves v alone, when there is none yet: the first check.
func (in Input) DecodeBaseline(v any) (bool, error) {
	if len(in.Baseline) == 0 || string(in.Baseline) == "null" {
		return false, nil
	}
	if err := json.Unmarshal(in.Baseline, v); err != nil {
		return false, errors.Join(errors.New("sdk: baseline"), err)
	}
	return true, nil
}
