package sdk

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// Grants is what the operator allows this plugin, as passed to admit.
type Grants = abi.Grants

// Destination is one place a watch will fetch from: Target is an absolute
// http or https URL or host[:port], Field the param it came from ("url"),
// or "" when it came from none (a forge's default API host).
type Destination = abi.Destination

// Plugin describes one predicate kind. P is its params type: a struct with
// JSON tags, decoded strictly (an unknown field is refused).
type Plugin[P any] struct {
	// Kind is the predicate's name: a-z 0-9 . _ -, 1 to 64 bytes.
	Kind string
	// Version is the plugin's semantic version, "1.0.0".
	Version string
	// Summary is one line saying what the kind waits for.
	Summary string
	// Standing marks a subscription kind: no deadline, lives as long as its
	// recipient, answers Baseline and Changed instead of Settled.
	Standing bool
	// DefaultEvery is the re-check interval when a watch names none.
	DefaultEvery time.Duration
	// Schema is the JSON Schema of P. The host validates params against it
	// before admit runs, and names the failing field.
	Schema string
	// Capabilities the plugin needs ("fetch"). One the operator has not
	// granted makes every watch of this kind unobservable.
	Capabilities []string
	// Example is a params value the plugin admits. Set it: the conformance
	// suite requires an example its admit accepts (admit.example), and a
	// zero P is rarely one.
	Example P
	// Deadline, when set, gives a subject's natural deadline, used when a
	// watch names none: a timer's is its instant plus a minute, so a long
	// timer fires instead of expiring at the host's open-ended default.
	// Zero means no natural deadline.
	Deadline func(p P) time.Time
	// Destinations, when set, names where a watch of p will fetch, once
	// Admit has admitted p, so the host can refuse at registration a watch
	// it could never fetch for: a host outside the kind's fetch grants, or
	// an address its destination guard refuses (loopback, private,
	// link-local, metadata, localhost, the integer forms). For a URL
	// param it is one line:
	//
	//	Destinations: func(p Params) []sdk.Destination { return []sdk.Destination{{Target: p.URL, Field: "url"}} },
	//
	// A target with a Field that is not a destination (see
	// abi.ParseDestination) is that param's fault: admit answers
	// invalid_params naming it. One without a Field, more than
	// abi.MaxDestinations, or a malformed Field is the plugin's bug: admit
	// answers an error. Only a plugin with the fetch capability may set it.
	Destinations func(p P) []Destination
	// PartitionKey, when set, names the resource a watch of p reads, once
	// Admit has admitted p: the normalized URL it fetches, the ticket or
	// the commit. On a cluster every watch with one key lands on one node,
	// so that node reads the resource once per interval for all of them;
	// on one host it changes nothing. Empty names none (the watch's
	// partition is random). A key over abi.MaxPartitionKey bytes is the
	// plugin's bug: admit answers an error; hash a longer one.
	PartitionKey func(p P) string
	// FirstCheck, when set, is admit's next_check: the first time a watch
	// of p is worth probing, once Admit has admitted p. The host arms the
	// new watch there (clamped to [now, the deadline]) instead of probing
	// it at once, so a timer an hour away is probed once, at its instant,
	// not at registration too. It is a function of the params alone, like
	// Deadline: admit has no clock, and an instant already past is fine
	// (the watch is probed at once). Zero means at once. One before the
	// Unix epoch, or after Deadline's answer, is the plugin's bug: admit
	// answers an error.
	FirstCheck func(p P) time.Time
	// Wake, when set, maps an inbound event (a signed forge or Standard
	// Webhooks POST the host verified) to the partition keys of the
	// watches it concerns: exactly the strings PartitionKey answers for
	// their params. The host makes every pending watch with one of them
	// due now; observe still decides, so a wake changes when the host
	// looks, never what it concludes. Answer no keys (nil) for an event
	// the plugin does not read, and for a body it cannot read: junk is
	// no error. At most abi.MaxWakeKeys, each 1 to abi.MaxPartitionKey
	// bytes; more, or an error, wakes nothing and is reported as the
	// plugin's fault. A plugin that sets it also imports
	// github.com/vigilhq/vigil/sdk/wake, which exports the wake function
	// (only a plugin that wakes exports it, and the host reads the
	// export to know which kinds do); Register refuses the one without
	// the other.
	Wake func(e Event) ([]string, error)
	// Admit checks configuration only: params beyond the schema, and grants.
	// Return InvalidParams or Unobservable. It never reaches the network.
	// Nil admits every params value the schema accepts.
	Admit func(p P, g Grants) error
	// Observe makes one bounded observation. "I cannot tell" is Pending,
	// never an error. Return an error only for a bug: the host reports it
	// loudly as the plugin's error (as it does a call for the wrong kind)
	// and the watch stays pending.
	Observe func(p P, in Input) (Result, error)
}

// handler is a registered plugin with its params type erased. Each method
// takes the export's JSON input and returns its JSON output.
type handler interface {
	describe() ([]byte, error)
	admit(in []byte) ([]byte, error)
	observe(in []byte, f Fetcher) ([]byte, error)
	wake(in []byte) ([]byte, error)
}

// registered is the plugin the wasm exports serve; see the package doc for
// why it is package state.
var registered handler

// Register makes p the plugin this module serves. Call it once, from init.
// A plugin that fails validation, or a second Register, is not a panic: every
// export then answers with the error, so the host's load refuses the plugin
// with the reason instead of seeing a trap.
func Register[P any](p Plugin[P]) {
	if registered != nil {
		registered = errHandler{errors.New("sdk: Register called more than once")}
		return
	}
	registered = newHandler(p)
}

func newHandler[P any](p Plugin[P]) handler {
	if err := p.validate(); err != nil {
		return errHandler{err}
	}
	return &typed[P]{p: p}
}

func (p Plugin[P]) validate() error {
	var errs []error
	if err := abi.CheckKind(p.Kind); err != nil {
		errs = append(errs, err)
	}
	if !abi.ValidSemver(p.Version) {
		errs = append(errs, fmt.Errorf("version %q is not a semantic version", p.Version))
	}
	if p.Observe == nil {
		errs = append(errs, errors.New("Observe is nil"))
	}
	if !json.Valid([]byte(p.Schema)) {
		errs = append(errs, errors.New("Schema is not JSON"))
	}
	if p.Destinations != nil && !slices.Contains(p.Capabilities, abi.CapabilityFetch) {
		errs = append(errs, errors.New("Destinations is set, and the plugin does not declare the fetch capability"))
	}
	if err := wakeLinkProblem(p.Wake != nil); err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return fmt.Errorf("sdk: plugin %q: %w", p.Kind, errors.Join(errs...))
	}
	return nil
}

type errHandler struct{ err error }

func (h errHandler) describe() ([]byte, error)               { return nil, h.err }
func (h errHandler) admit([]byte) ([]byte, error)            { return nil, h.err }
func (h errHandler) observe([]byte, Fetcher) ([]byte, error) { return nil, h.err }
func (h errHandler) wake([]byte) ([]byte, error)             { return nil, h.err }

type typed[P any] struct{ p Plugin[P] }

func (t *typed[P]) describe() ([]byte, error) {
	every := ""
	if t.p.DefaultEvery > 0 {
		every = t.p.DefaultEvery.String()
	}
	caps := t.p.Capabilities
	if caps == nil {
		caps = []string{}
	}
	example, err := json.Marshal(t.p.Example)
	if err != nil {
		return nil, fmt.Errorf("sdk: example: %w", err)
	}
	return json.Marshal(abi.Describe{
		ABI:          abi.Version,
		Kind:         t.p.Kind,
		Version:      t.p.Version,
		Summary:      t.p.Summary,
		Standing:     t.p.Standing,
		DefaultEvery: every,
		ParamsSchema: json.RawMessage(t.p.Schema),
		Capabilities: caps,
		Example:      example,
	})
}

// WrongKindError is a call for a kind this plugin does not serve.
type WrongKindError struct{ Got, Want string }

func (e *WrongKindError) Error() string {
	return fmt.Sprintf("sdk: call for kind %q reached the %q plugin (a routing bug)", e.Got, e.Want)
}

func (t *typed[P]) admit(in []byte) ([]byte, error) {
	// Lenient on the envelope (a newer host may add fields), strict on the
	// params below (they are the caller's, and a typo must be refused).
	req, err := decodeAdmitRequest(in)
	if err != nil {
		return nil, fmt.Errorf("sdk: admit input: %w", err)
	}
	if req.Kind != t.p.Kind {
		return nil, &WrongKindError{Got: req.Kind, Want: t.p.Kind}
	}
	var p P
	if u, ok := any(&p).(ParamsUnmarshaler); ok {
		// The author's decoder agrees with the json tags and refuses what
		// they would refuse; it spares admit encoding/json's cost.
		err = u.UnmarshalParams(req.Params)
	} else {
		err = abi.StrictUnmarshal(req.Params, &p)
	}
	if err != nil {
		field, msg := describeDecodeError(err)
		return appendAdmitResponse(nil, abi.AdmitResponse{Code: abi.CodeInvalidParams, Field: field, Message: msg}), nil
	}
	if t.p.Admit != nil {
		err = guard(func() error { return t.p.Admit(p, req.Grants) })
	}
	var pe *PanicError
	if errors.As(err, &pe) {
		// A crash is the plugin's bug, not the params' fault: report it as
		// an error rather than a refusal that would blame the caller.
		return nil, err
	}
	resp := admitResponse(err)
	if resp.OK && t.p.Deadline != nil {
		var d time.Time
		if err := guard(func() error { d = t.p.Deadline(p); return nil }); err != nil {
			return nil, err
		}
		if !d.IsZero() {
			d = d.UTC()
			if d.Year() < 0 || d.Year() > 9999 {
				// Client input the plugin let through: still the caller's
				// to fix, and never an answer the host cannot read.
				resp = abi.AdmitResponse{Code: abi.CodeInvalidParams,
					Message: "the subject's natural deadline falls outside the years 0000-9999 that RFC 3339 can write"}
			} else {
				resp.Deadline = &d
			}
		}
	}
	if resp.OK && t.p.Destinations != nil {
		var ds []Destination
		if err := guard(func() error { ds = t.p.Destinations(p); return nil }); err != nil {
			return nil, err
		}
		refusal, err := checkDestinations(ds)
		switch {
		case err != nil:
			return nil, err
		case refusal != nil:
			resp = *refusal
		case len(ds) > 0:
			resp.Destinations = ds
		}
	}
	if resp.OK && t.p.PartitionKey != nil {
		var key string
		if err := guard(func() error { key = t.p.PartitionKey(p); return nil }); err != nil {
			return nil, err
		}
		if len(key) > abi.MaxPartitionKey {
			return nil, fmt.Errorf("sdk: PartitionKey is %d bytes, at most %d: send a digest of a longer key", len(key), abi.MaxPartitionKey)
		}
		resp.PartitionKey = key
	}
	if resp.OK && t.p.FirstCheck != nil {
		var at time.Time
		if err := guard(func() error { at = t.p.FirstCheck(p); return nil }); err != nil {
			return nil, err
		}
		if !at.IsZero() {
			at = at.UTC()
			switch {
			case at.Unix() < 0: // the host keeps a next check as unix nanoseconds
				return nil, fmt.Errorf("sdk: FirstCheck is %s, before the Unix epoch, which the host refuses: answer zero for at once", at.Format(time.RFC3339Nano))
			case resp.Deadline != nil && at.After(*resp.Deadline):
				return nil, fmt.Errorf("sdk: FirstCheck is %s, after the natural deadline %s: the watch would expire unprobed", at.Format(time.RFC3339Nano), resp.Deadline.Format(time.RFC3339Nano))
			case at.Year() > 9999:
				return nil, fmt.Errorf("sdk: FirstCheck is in year %d, beyond the years 0000-9999 that RFC 3339 can write", at.Year())
			}
			resp.NextCheck = &at
		}
	}
	return appendAdmitResponse(make([]byte, 0, 128), resp), nil
}

// checkDestinations holds what Destinations answered to the contract
// before it goes out: a refusal when a target from a param is not a
// destination (the caller's input), an error for the plugin's own bug.
func checkDestinations(ds []Destination) (*abi.AdmitResponse, error) {
	if len(ds) > abi.MaxDestinations {
		return nil, fmt.Errorf("sdk: Destinations named %d destinations, at most %d", len(ds), abi.MaxDestinations)
	}
	for i, d := range ds {
		if err := abi.CheckDestinationField(d.Field); err != nil {
			return nil, fmt.Errorf("sdk: Destinations[%d]: %w", i, err)
		}
		if _, err := abi.ParseDestination(d.Target); err != nil {
			var de *abi.DestinationError
			if d.Field == "" || !errors.As(err, &de) {
				return nil, fmt.Errorf("sdk: Destinations[%d]: %w", i, err)
			}
			return &abi.AdmitResponse{Code: abi.CodeInvalidParams, Field: d.Field,
				Message: "not a destination the host can fetch: " + de.Reason}, nil
		}
	}
	return nil, nil
}

func admitResponse(err error) abi.AdmitResponse {
	if err == nil {
		return abi.AdmitResponse{OK: true}
	}
	var pe *ParamError
	var ue *UnobservableError
	switch {
	case errors.As(err, &ue):
		return abi.AdmitResponse{Code: abi.CodeUnobservable, Message: ue.Message, Setting: ue.Setting}
	case errors.As(err, &pe):
		return abi.AdmitResponse{Code: abi.CodeInvalidParams, Message: pe.Message, Field: pe.Field}
	default:
		return abi.AdmitResponse{Code: abi.CodeInvalidParams, Message: err.Error()}
	}
}

func (t *typed[P]) observe(in []byte, f Fetcher) ([]byte, error) {
	req, err := decodeObserveRequest(in)
	if err != nil {
		return nil, fmt.Errorf("sdk: observe input: %w", err)
	}
	if req.Kind != t.p.Kind {
		return nil, &WrongKindError{Got: req.Kind, Want: t.p.Kind}
	}
	// The host admitted these params at registration (strictly, and
	// against the schema), so observe decodes them leniently and fast.
	var p P
	if u, ok := any(&p).(ParamsUnmarshaler); ok {
		err = u.UnmarshalParams(req.Params)
	} else {
		err = json.Unmarshal(req.Params, &p)
	}
	if err != nil {
		return nil, fmt.Errorf("sdk: params the host admitted do not decode: %w", err)
	}
	input := Input{
		Kind:     req.Kind,
		WatchID:  req.WatchID,
		Now:      req.Now,
		Attempt:  req.Attempt,
		Baseline: req.Baseline,
		fetcher:  f,
	}
	if e, ok := f.(Execer); ok {
		input.execer = e
	}
	var res Result
	err = guard(func() error {
		var err error
		res, err = t.p.Observe(p, input)
		return err
	})
	if err != nil {
		return nil, err
	}
	out, err := res.wire(t.p.Standing)
	if err != nil {
		return nil, err
	}
	return appendObserveResponse(make([]byte, 0, 256), out), nil
}

// PanicError is a panic in the author's code, recovered by the SDK.
type PanicError struct{ Value any }

func (e *PanicError) Error() string { return fmt.Sprintf("sdk: panic: %v", e.Value) }

// guard runs f and turns a panic into a *PanicError: a panic that escaped
// an export would trap the instance and leave it unusable.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r}
		}
	}()
	return f()
}

// describeDecodeError names the field a JSON decode failed on, where the
// error says.
func describeDecodeError(err error) (field, msg string) {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) {
		return te.Field, fmt.Sprintf("want %s, got JSON %s", te.Type, te.Value)
	}
	var fe *FieldError
	if errors.As(err, &fe) {
		if errors.Is(fe.Err, ErrUnknownField) {
			return fe.Key, "unknown field"
		}
		_, msg := describeDecodeError(fe.Err)
		return fe.Key, msg
	}
	var pe *time.ParseError
	if errors.As(err, &pe) {
		return "", "not an RFC 3339 time: " + pe.Value
	}
	const unknown = "json: unknown field "
	if s := err.Error(); strings.HasPrefix(s, unknown) {
		return strings.Trim(strings.TrimPrefix(s, unknown), `"`), "unknown field"
	}
	return "", err.Error()
}
