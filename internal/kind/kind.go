package kind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// Kind is one kind of watch. Every method must honour ctx and be safe for
// concurrent use.
type Kind interface {
	// Info describes the kind; its Kind field is the name it serves.
	Info() Info
	// Admit decides whether a watch may be written: an Admission, a
	// *api.Error (the watch must not be written), or an error when the kind
	// could not answer. A kind whose params name a record of the host (a
	// Work item, a watch, a recipient, a scope) admits only one req's
	// Caller may read (MayRead), and refuses one it may not with a
	// *HiddenError, which answers exactly as an unknown id.
	Admit(ctx context.Context, req AdmitRequest) (Admission, error)
	// Observe makes one bounded observation of a watch. A fault is a
	// pending Observation with Fault set; the error is for what is not "I
	// could not tell" (ErrUnknownKind, ErrRaised, ctx ending).
	Observe(ctx context.Context, req abi.ObserveRequest) (Observation, error)
}

// AdmitRequest is what admission is asked: a watch's params, whose watch
// it would be, and who registers it.
type AdmitRequest struct {
	Params json.RawMessage
	// Recipient is the id of the recipient the watch would wake.
	Recipient string
	// Caller is the principal registering the watch, as admission may ask
	// of it; nil reads nothing.
	Caller Caller
}

// Caller is the principal registering a watch, as admission asks of it:
// "may it read this record?". The API's principal (internal/authz) answers
// with its grant, by the same rule as the route that shows the record; the
// host's own registrations are HostCaller's.
type Caller interface {
	// MayRead is nil when the caller may read o, else an error saying what
	// its grant lacks, for the log (never for the answer, which must not
	// tell a hidden record from a missing one).
	MayRead(o Object) error
}

// ObjectClass is what kind of record an Object names.
type ObjectClass int

// The records a watch's params may name.
const (
	// ObjectWork is a Work item: ID, Scope, and Recipient, its claimer
	// ("" while unclaimed).
	ObjectWork ObjectClass = iota + 1
	// ObjectWatch is a watch: ID, Recipient, RegisteredBy.
	ObjectWatch
	// ObjectRecipient is a recipient's record and mailbox: Recipient.
	ObjectRecipient
	// ObjectScope is an observe scope's Work list: Scope.
	ObjectScope
)

// Object is a record of the host a watch's params name.
type Object struct {
	Class        ObjectClass
	ID           string
	Scope        string
	Recipient    string
	RegisteredBy string
}

// ErrNoCaller is MayRead's answer for an admission nobody asked for: a
// nil Caller reads nothing.
var ErrNoCaller = errors.New("no caller: the registration names no principal")

// MayRead asks c whether it may read o; a nil c may not (ErrNoCaller).
func MayRead(c Caller, o Object) error {
	if c == nil {
		return ErrNoCaller
	}
	return c.MayRead(o)
}

// HostCaller is the host registering a watch of its own (the recipients'
// reconciler keeping a recipient's standing watches, each admitted with
// its writer's grant when the record was put): it reads every record.
type HostCaller struct{}

// MayRead implements Caller: the host reads everything.
func (HostCaller) MayRead(Object) error { return nil }

var _ Caller = HostCaller{}

// HiddenError is admission's refusal of a record the caller may not read.
// It reads as NotFound, the kind's refusal of an id that does not exist,
// byte for byte, so the answer tells neither whether the record exists
// nor whose it is; Reason (what the caller's grant lacks) is for the log.
type HiddenError struct {
	NotFound *api.Error
	Reason   error
}

func (e *HiddenError) Error() string { return e.NotFound.Error() }

// Unwrap is NotFound alone: the API answers it, never the reason.
func (e *HiddenError) Unwrap() error { return e.NotFound }

// Settler is a Kind that hears of each of its watches' settlements once
// the outcome is persisted and before it is delivered (a pushed kind
// records what its wake carried). It must not block for long.
type Settler interface {
	Settled(ctx context.Context, w store.Watch)
}

// Info describes a kind.
type Info struct {
	Kind         string        `json:"kind"`
	File         string        `json:"file"`
	SHA256       string        `json:"sha256"`
	Version      string        `json:"version"`
	Summary      string        `json:"summary"`
	Standing     bool          `json:"standing"`
	DefaultEvery time.Duration `json:"default_every"`
	Capabilities []string      `json:"capabilities"`
	Grants       abi.Grants    `json:"grants"`
	// Observable is false when the kind needs a capability its entry does
	// not grant; Setting then names what to change.
	Observable bool            `json:"observable"`
	Setting    string          `json:"setting,omitempty"`
	Example    json.RawMessage `json:"example,omitempty"`
	Schema     json.RawMessage `json:"params_schema"`
	// Pushed kinds are built into the host, not plugins: their watches are
	// woken when their subject changes, never probed on a cadence.
	Pushed bool `json:"pushed,omitempty"`
	// Capability says each watch of the kind answers to a capability URL
	// (a signal's): its registration carries a token the caller made
	// (internal/captoken), kept by the store as its hash only, and shown
	// once in the registration's answer.
	Capability bool `json:"capability,omitempty"`
	// Wakes says the kind maps an inbound event to the partition keys of
	// the watches it concerns (its plugin exports wake): the kind is a
	// Waker, and a hook source may name it.
	Wakes bool `json:"wakes,omitempty"`
	// Source is where the plugin came from: "bundled" (embedded in the
	// binary), the plugin directory's path, the path of a file loaded on
	// its own (vigil plugin try FILE), or "pushed" for a kind built into
	// the host (Pushed).
	Source string `json:"source"`
}

// Admission is admit's "yes", with what the kind said of the subject.
type Admission struct {
	// Deadline is the subject's natural deadline, or zero.
	Deadline time.Time
	// Destinations are where the kind said the watch will fetch, each
	// checked against the kind's grants and destination guard.
	Destinations []abi.Destination
	// Subject and Params come from a pushed kind's admission only: what
	// the watch waits on, and its params as the host completed them (nil:
	// as registered).
	Subject string
	Params  json.RawMessage
	// PartitionKey is the resource the watch reads (a ticket, a URL),
	// when the kind names one: every watch on one key lands in one
	// partition of a cluster, so one node reads the resource for all of
	// them. Empty: the watch's partition is random.
	PartitionKey string
	// NextCheck is the first time the watch is worth probing (a timer's
	// instant), when the kind can tell: the scheduler arms the new watch
	// there, clamped to [now, the deadline], instead of at once. Zero:
	// at once.
	NextCheck time.Time
}

// Observation is the answer of one observe call.
type Observation struct {
	Status    string // abi.StatusPending, StatusSettled or StatusChanged
	Note      string
	NextCheck time.Time // zero: no hint
	Outcome   *abi.Outcome
	Baseline  json.RawMessage
	// Type is the message type a change is mailed as; empty is
	// store.MessageChanged. Only the host's own kinds set it (the phase
	// reminder's store.MessageReminder): the plugin runtime never does, so
	// a plugin cannot pass its change off as a notice of the host's.
	Type store.MessageType
	// Fault is set when the kind could not answer (timeout, trap, memory,
	// output over the cap or off contract). The observation is then
	// pending: "I could not tell" is never a failed outcome.
	Fault *CallError
}

// Sentinel errors; the structured errors below answer errors.Is with them.
var (
	// ErrUnknownKind: no registered kind has the name.
	ErrUnknownKind = errors.New("no plugin for kind")
	// ErrRaised: the kind answered an error (a plugin's error_set), such
	// as a call for a kind it does not serve.
	ErrRaised = errors.New("plugin raised an error")
	// ErrFault: the kind timed out, trapped, ran out of memory or broke
	// the output contract.
	ErrFault = errors.New("plugin fault")
)

// Fault reasons.
const (
	FaultTimeout  = "timeout"
	FaultTrap     = "trap"
	FaultMemory   = "memory"
	FaultTooLarge = "output_too_large"
	FaultContract = "bad_output"
	FaultRaised   = "raised"
	FaultInstance = "instantiate"
)

// CallError is a call that produced no usable answer.
type CallError struct {
	Kind   string
	Export string
	Reason string // one of the Fault* constants
	Err    error
}

func (e *CallError) Error() string {
	return fmt.Sprintf("plugin %s: %s: %s: %v", e.Kind, e.Export, e.Reason, e.Err)
}

func (e *CallError) Unwrap() []error {
	if e.Reason == FaultRaised {
		return []error{ErrRaised, e.Err}
	}
	return []error{ErrFault, e.Err}
}

type recipientKey struct{}

// WithRecipient tells the call made with ctx whose watch it observes; a
// plugin's vigil_exec runs commands in that recipient's workspace.
func WithRecipient(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, recipientKey{}, id)
}

// RecipientFrom is the recipient WithRecipient put in ctx, or "".
func RecipientFrom(ctx context.Context) string {
	id, _ := ctx.Value(recipientKey{}).(string)
	return id
}

type registrantKey struct{}

// WithRegistrant tells the call made with ctx who registered the watch it
// observes (its registered_by): a command runs in that principal's
// workspace (WorkspaceOwner).
func WithRegistrant(ctx context.Context, principal string) context.Context {
	return context.WithValue(ctx, registrantKey{}, principal)
}

// RegistrantFrom is the principal WithRegistrant put in ctx, or "".
func RegistrantFrom(ctx context.Context) string {
	p, _ := ctx.Value(registrantKey{}).(string)
	return p
}

// LocalPrincipal is the one principal of a server without tokens (which
// binds to loopback only): it acts as every recipient, and configuration
// names it, as a reporter for example, to act from the same machine in
// development. internal/authz and internal/httpapi use this name.
const LocalPrincipal = "local"

// WorkspaceOwner is the recipient whose workspace a watch's commands run
// in: the one named like the principal that registered it (seed 002: a
// command runs in the workspace that registered it, so an orchestrator's
// watch for a worker runs in the orchestrator's tree), or the watch's
// recipient when the host registered it or the local principal did.
func WorkspaceOwner(recipient, registeredBy string) string {
	if registeredBy == "" || registeredBy == LocalPrincipal {
		return recipient
	}
	return registeredBy
}

type cadenceKey struct{}

// WithCadence tells the call made with ctx the cadence of the watch it
// observes (its every): a fetch the plugin makes may then be answered
// from a result younger than that cadence, so watches of one resource
// share one read per interval.
func WithCadence(ctx context.Context, every time.Duration) context.Context {
	return context.WithValue(ctx, cadenceKey{}, every)
}

// CadenceFrom is the cadence WithCadence put in ctx, or 0.
func CadenceFrom(ctx context.Context) time.Duration {
	d, _ := ctx.Value(cadenceKey{}).(time.Duration)
	return d
}

// Multi serves several kinds by name, as the plugin runtime does. Its
// Admit takes the params alone: a plugin reads no record of the host, so
// its params can name none a caller might not read.
type Multi interface {
	Lookup(name string) (Info, bool)
	Admit(ctx context.Context, name string, params json.RawMessage) (Admission, error)
	Observe(ctx context.Context, req abi.ObserveRequest) (Observation, error)
}

// Of is the kind m serves as name, as a Kind, or false when m serves no
// such kind. Its Info is what m said when Of was called; its calls go to m
// as they are made.
func Of(m Multi, name string) (Kind, bool) {
	info, ok := m.Lookup(name)
	if !ok {
		return nil, false
	}
	return multiKind{m: m, info: info}, true
}

type multiKind struct {
	m    Multi
	info Info
}

func (k multiKind) Info() Info { return k.info }

func (k multiKind) Admit(ctx context.Context, req AdmitRequest) (Admission, error) {
	return k.m.Admit(ctx, k.info.Kind, req.Params)
}

func (k multiKind) Observe(ctx context.Context, req abi.ObserveRequest) (Observation, error) {
	return k.m.Observe(ctx, req)
}
