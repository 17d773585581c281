package abi

import (
	"bytes"
	"encoding/json"
	"time"
)

// Version is the ABI string a plugin's describe must report.
const Version = "vigil.predicate/v1"

// Export names every plugin provides.
const (
	ExportDescribe = "describe"
	ExportAdmit    = "admit"
	ExportObserve  = "observe"
)

// ExportWake is the optional export that maps an inbound event to the
// partition keys of the watches it concerns (WakeRequest in, WakeResponse
// out). A plugin without it is woken by nothing but its cadence.
const ExportWake = "wake"

// Host function a plugin may import to reach the network through the host.
const (
	HostNamespace = "extism:host/user"
	HostFetch     = "vigil_fetch"
	HostExec      = "vigil_exec"
	// HostExtractionFailed tells the host that the bytes a fetch answered
	// failed the plugin's extraction (ExtractionFailedRequest in,
	// ExtractionFailedResponse out); a kind granted fetch may call it.
	HostExtractionFailed = "vigil_extraction_failed"
)

// Capabilities a plugin may declare. A plugin that declares one the operator
// has not granted is refused at registration (watch_unobservable).
const (
	CapabilityFetch = "fetch"
	CapabilityExec  = "exec"
)

// KnownCapabilities lists every capability this ABI version defines.
func KnownCapabilities() []string { return []string{CapabilityFetch, CapabilityExec} }

// Describe is the output of the describe export.
type Describe struct {
	ABI          string          `json:"abi"`
	Kind         string          `json:"kind"`
	Version      string          `json:"version"`
	Summary      string          `json:"summary"`
	Standing     bool            `json:"standing"`
	DefaultEvery string          `json:"default_every"`
	ParamsSchema json.RawMessage `json:"params_schema"`
	Capabilities []string        `json:"capabilities"`
	// Example is a params value the plugin admits; the conformance suite
	// uses it as the known-good case, and requires it (admit.example).
	// The host loads a describe without one.
	Example json.RawMessage `json:"example,omitempty"`
}

// Grants is what the operator allows a plugin: passed to admit so a
// predicate can refuse a subject it could never observe (a forge host that
// is not granted) before any watch is written.
type Grants struct {
	Capabilities []string `json:"capabilities"`
	// FetchHosts are the hosts vigil_fetch will reach for this plugin. Empty
	// means none, never any.
	FetchHosts []string `json:"fetch_hosts,omitempty"`
	// Secrets names the host-held credentials this plugin may ask
	// vigil_fetch to attach (FetchRequest.Secret). Names only: a plugin
	// never sees a secret's value.
	Secrets []string `json:"secrets,omitempty"`
	// Programs are the programs vigil_exec will run for this plugin, as
	// the operator listed them (absolute paths, or names resolved on the
	// host's PATH at load). Empty means none.
	Programs []string `json:"programs,omitempty"`
	// ExecMaxTimeout bounds one vigil_exec command ("30s"); empty without
	// the exec grant.
	ExecMaxTimeout string `json:"exec_max_timeout,omitempty"`
}

// AdmitRequest is the input of the admit export.
type AdmitRequest struct {
	Kind   string          `json:"kind"`
	Params json.RawMessage `json:"params"`
	Grants Grants          `json:"grants"`
}

// Admit refusal codes.
const (
	CodeInvalidParams = "invalid_params"
	CodeUnobservable  = "unobservable"
)

// AdmitResponse is the output of the admit export. Deadline, on an ok
// answer, is the subject's own natural deadline (a timer's instant plus a
// minute); the host uses it when the watch names none, in place of its
// open-ended default.
//
// Destinations, on an ok answer from a kind that declares the fetch
// capability, name where the watch's fetches will go (at most
// MaxDestinations, each target as ParseDestination reads it). The host
// checks each against the kind's fetch grants and its destination guard
// and refuses the watch at registration when a fetch could never be
// made. A malformed list is the plugin's fault, never the caller's.
//
// PartitionKey, on an ok answer, names the resource the watch reads (a
// URL, a ticket, a commit), at most MaxPartitionKey bytes; empty names
// none. On a cluster every watch with one key lands in one partition, so
// the one node that owns it reads the resource once per interval for all
// of them; without a key a watch's partition is drawn at random. It is
// not the pushed kinds' wake subject, and on one host it changes nothing.
// A key on a refusal, or over the bound, is the plugin's fault.
//
// NextCheck, on an ok answer, is the first time the watch is worth
// probing (a timer's instant), as an observe answer's next_check is the
// next: the host arms the new watch there, clamped to [now, the deadline],
// instead of probing it at once. Absent means at once. It is a function
// of the params alone (admit has no clock), so an instant already past is
// fine (the watch is probed at once); one before the Unix epoch
// (1970-01-01T00:00:00Z), after the natural deadline, or on a refusal is
// the plugin's fault.
type AdmitResponse struct {
	OK           bool          `json:"ok"`
	Code         string        `json:"code,omitempty"`
	Message      string        `json:"message,omitempty"`
	Field        string        `json:"field,omitempty"`
	Setting      string        `json:"setting,omitempty"`
	Deadline     *time.Time    `json:"deadline,omitempty"`
	Destinations []Destination `json:"destinations,omitempty"`
	PartitionKey string        `json:"partition_key,omitempty"`
	NextCheck    *time.Time    `json:"next_check,omitempty"`
}

// MaxPartitionKey bounds an admit answer's partition_key, in bytes: room
// for a normalized URL of the length a params schema usually allows, and
// small beside the output cap. A plugin whose key could be longer sends
// a digest of it instead (the host only hashes the key).
const MaxPartitionKey = 1024

// WakeRequest is the input of the optional wake export: one inbound event
// the host verified (a signed forge or Standard Webhooks POST). Event is
// its name as its source gives it (GitHub's X-GitHub-Event, Gitea's
// X-Gitea-Event: "check_suite", "issues"; a Standard Webhooks payload's
// type), at most MaxWakeEvent bytes of printable ASCII, possibly empty;
// Source is the scheme of the hook source it came through (SourceGitHub,
// SourceGitea, SourceStandard); Body is the event's JSON body as the
// source sent it. Nothing in it is trusted beyond its signature: a wake
// only makes watches due now, and observe still decides.
type WakeRequest struct {
	Event  string          `json:"event"`
	Source string          `json:"source"`
	Body   json.RawMessage `json:"body"`
}

// The hook sources' verification schemes, as WakeRequest.Source names
// them.
const (
	SourceGitHub   = "github"
	SourceGitea    = "gitea"
	SourceStandard = "standard"
)

// KnownSources lists every source scheme this ABI version defines.
func KnownSources() []string { return []string{SourceGitHub, SourceGitea, SourceStandard} }

// WakeResponse is the output of the wake export: the partition keys
// (exactly the strings admit answers as partition_key) of the watches
// the event concerns, at most MaxWakeKeys, each 1 to MaxPartitionKey
// bytes; [] for none. The host makes every pending watch with one of
// them due now. An answer off the contract (not this JSON, too many keys,
// an empty or too long one) or an error is a fault that wakes nothing.
type WakeResponse struct {
	Keys []string `json:"keys"`
}

// Bounds of a wake call.
const (
	// MaxWakeKeys bounds the keys one wake answer names: an event about
	// one commit, issue or URL names a handful (one per forge base URL
	// it names); the bound keeps a hostile body from making one event a
	// flood of pokes.
	MaxWakeKeys = 256
	// MaxWakeEvent bounds an event's name, in bytes.
	MaxWakeEvent = 128
)

// ObserveRequest is the input of the observe export. Now is the host's
// clock; a plugin never reads its own.
type ObserveRequest struct {
	Kind     string          `json:"kind"`
	WatchID  string          `json:"watch_id"`
	Params   json.RawMessage `json:"params"`
	Now      time.Time       `json:"now"`
	Attempt  int             `json:"attempt"`
	Baseline json.RawMessage `json:"baseline,omitempty"`
}

// Observe statuses.
const (
	StatusPending = "pending"
	StatusSettled = "settled"
	StatusChanged = "changed"
)

// Outcome is what a settled or changed observation concluded.
type Outcome struct {
	Result  string          `json:"result"`
	Summary string          `json:"summary,omitempty"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// ObserveResponse is the output of the observe export.
//
//   - pending: not yet, or I cannot tell. Note says why; NextCheck is a hint;
//     Baseline, for a standing kind, is a snapshot to record silently.
//   - settled: Outcome is final.
//   - changed: a standing kind saw a change worth mail; Baseline is the new
//     snapshot, persisted before the mail goes out.
type ObserveResponse struct {
	Status    string          `json:"status"`
	Note      string          `json:"note,omitempty"`
	NextCheck *time.Time      `json:"next_check,omitempty"`
	Outcome   *Outcome        `json:"outcome,omitempty"`
	Baseline  json.RawMessage `json:"baseline,omitempty"`
}

// FetchRequest is what a plugin passes to vigil_fetch. Only GET and HEAD.
//
// Headers and TimeoutSeconds are optional and screened before anything is
// sent (see the fetch issuer). TimeoutSeconds bounds each operation of the
// fetch (the connect, each read); absent means the host's default, and a
// timeout_seconds of 0 on the wire is refused, since zero is not a
// duration and absent is not zero (TimeoutGiven tells the two apart; a Go
// plugin, whose zero is omitted, cannot send one). Secret names a
// credential in the host's configuration that the kind is granted
// (Grants.Secrets): the host adds it as an "authorization: Bearer …"
// header at issue time, so its value is never in a watch row, in plugin
// memory or in a log.
type FetchRequest struct {
	Method         string            `json:"method"`
	URL            string            `json:"url"`
	Headers        map[string]string `json:"headers,omitempty"`
	TimeoutSeconds float64           `json:"timeout_seconds,omitempty"`
	Secret         string            `json:"secret,omitempty"`

	// timeoutGiven: the JSON decoded named timeout_seconds with a number.
	timeoutGiven bool
}

// TimeoutGiven reports whether the request names a timeout: decoded from
// JSON, whether timeout_seconds was there with a number (0 included; null
// is absent); built in Go, whether TimeoutSeconds is not zero.
func (r FetchRequest) TimeoutGiven() bool { return r.timeoutGiven || r.TimeoutSeconds != 0 }

// UnmarshalJSON decodes a request strictly (an unknown field or trailing
// data is an error, as StrictUnmarshal), keeping whether timeout_seconds
// was given.
func (r *FetchRequest) UnmarshalJSON(data []byte) error {
	if string(bytes.TrimSpace(data)) == "null" {
		return nil
	}
	type plain FetchRequest // without this method
	var w struct {
		plain
		// Shallower than plain's field of the same name, so it is the one
		// decoded.
		TimeoutSeconds *float64 `json:"timeout_seconds"`
	}
	if err := StrictUnmarshal(data, &w); err != nil {
		return err
	}
	*r = FetchRequest(w.plain)
	r.TimeoutSeconds, r.timeoutGiven = 0, w.TimeoutSeconds != nil
	if w.TimeoutSeconds != nil {
		r.TimeoutSeconds = *w.TimeoutSeconds
	}
	return nil
}

// FetchResponse is what vigil_fetch answers: either a response or, when
// Failure is set, the reason no response could be had. Any HTTP answer is a
// response, a 404 or a 503 included: the plugin reads Status and decides
// (the host's event log records a status of 400 or more as an http_status
// failure, and paces the origin on 429 and 503). When NotModified is
// set the host revalidated a stored response: Status, Headers and Body are
// that stored response (its 200, not the 304), so a plugin reads the same
// fields whether or not the resource changed. FromCache says the host
// answered within the resource's interval without a request at all.
type FetchResponse struct {
	Status      int               `json:"status,omitempty"`
	Headers     map[string]string `json:"headers,omitempty"`
	Body        []byte            `json:"body,omitempty"`
	Fingerprint string            `json:"fingerprint,omitempty"`
	FromCache   bool              `json:"from_cache,omitempty"`
	NotModified bool              `json:"not_modified,omitempty"`
	Failure     *FetchFailure     `json:"failure,omitempty"`
}

// ExtractionFailedRequest is what a plugin passes to
// vigil_extraction_failed: the request it made, as it made it, and the
// Fingerprint of the answer whose bytes it could not extract what it
// needed from (not JSON, a path absent, a page without its title). The
// host then forgets the validators (ETag, Last-Modified) it stored for
// that resource, if they are the validators of those bytes: the next fetch
// goes out unconditional, and a 304 cannot re-confirm a broken extraction
// for as long as the origin keeps answering 304. A condition the bytes
// answer (a value that is there and differs from the one wanted) is not a
// failed extraction.
type ExtractionFailedRequest struct {
	Request     FetchRequest `json:"request"`
	Fingerprint string       `json:"fingerprint"`
}

// ExtractionFailedResponse is what vigil_extraction_failed answers: Forgot
// says stored validators of those bytes were forgotten (false: there were
// none, or they belong to other bytes since); Failure, when the request
// was refused or the host keeps no validators.
type ExtractionFailedResponse struct {
	Forgot  bool          `json:"forgot"`
	Failure *FetchFailure `json:"failure,omitempty"`
}

// ExecRequest is what a plugin passes to vigil_exec: a program and its
// arguments as a vector (never a command line: no shell unless the
// operator lists one as a program), a timeout, and optional standard
// input. The command runs in the workspace directory of the recipient
// named like the principal that registered the watch (else the watch's
// recipient's).
type ExecRequest struct {
	Argv           []string `json:"argv"`
	TimeoutSeconds float64  `json:"timeout_seconds,omitempty"`
	Stdin          string   `json:"stdin,omitempty"`
}

// ExecResponse is what vigil_exec answers: the command's exit, its output
// (each stream capped; Truncated says a cap was reached) and whether the
// timeout ended it, or, with Failure set, why nothing ran. A command that
// timed out was terminated with its whole process group.
type ExecResponse struct {
	ExitCode  int           `json:"exit_code"`
	Stdout    string        `json:"stdout"`
	Stderr    string        `json:"stderr"`
	Truncated bool          `json:"truncated,omitempty"`
	TimedOut  bool          `json:"timed_out,omitempty"`
	Failure   *FetchFailure `json:"failure,omitempty"`
}

// Exec failure reasons.
const (
	ExecNotGranted     = "not_granted"     // no exec grant, or a program not on its list
	ExecInvalidRequest = "invalid_request" // empty argv, a timeout out of bounds, input too large
	ExecNoWorkspace    = "no_workspace"    // the recipient declares no usable workspace directory
	ExecStartFailed    = "start_failed"    // the program could not be started
	ExecUnavailable    = "unavailable"     // this host runs no commands
)

// FetchFailure is the issuer's taxonomy of why a fetch produced no response.
type FetchFailure struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// Fetch failure reasons. The host's fetch issuer owns the full taxonomy;
// these are the ones a plugin is expected to tell apart.
const (
	FetchInvalidRequestOptions = "invalid_request_options"
	FetchDestinationRefused    = "destination_refused"
	FetchTimeout               = "timeout"
	FetchRateLimited           = "rate_limited"
	FetchTooLarge              = "too_large"
	FetchConnectFailed         = "connect_failed"
	FetchNotGranted            = "not_granted"
	FetchHTTPStatus            = "http_status"
	FetchUnavailable           = "unavailable"
)
