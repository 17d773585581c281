package store

import (
	"encoding/json"
	"fmt"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/vigilhq/vigil/sdk/abi"
)

// State is a watch's lifecycle state.
type State string

// States. pending is the only one that changes; the others are final.
const (
	Pending       State = "pending"
	Fired         State = "fired"
	Expired       State = "expired"
	Cancelled     State = "cancelled"
	Undeliverable State = "undeliverable"
	Unwatchable   State = "unwatchable"
)

// States lists every state this build knows.
func States() []State {
	return []State{Pending, Fired, Expired, Cancelled, Undeliverable, Unwatchable}
}

// Valid reports whether s is a state this build knows.
func (s State) Valid() bool {
	return slices.Contains(States(), s)
}

// Receipt says what became of a watch's delivery.
type Receipt string

// Receipts. unknown means the outcome was persisted and the delivery's fate
// is not known (a crash, a timeout after sending); it is never retried.
const (
	ReceiptNone      Receipt = "none"
	ReceiptDelivered Receipt = "delivered"
	ReceiptRejected  Receipt = "rejected"
	ReceiptUnknown   Receipt = "unknown"
)

// Valid reports whether r is a receipt this build knows.
func (r Receipt) Valid() bool {
	switch r {
	case ReceiptNone, ReceiptDelivered, ReceiptRejected, ReceiptUnknown:
		return true
	}
	return false
}

// Recipient is who a watch belongs to: where its outcome is delivered.
type Recipient struct {
	ID string `json:"id"`
}

// Outcome is what a settled watch concluded.
type Outcome struct {
	Result  string          `json:"result"`
	Summary string          `json:"summary,omitempty"`
	Detail  json.RawMessage `json:"detail,omitempty"`
}

// MaxOutcome bounds an outcome as the store keeps it, on a settled row
// and in its mailed message (its result, summary and detail together),
// in bytes: a plugin's default output cap, so a row with its params
// (64 KiB) and its baseline, and a message, stay well within MaxValue,
// and a settlement always commits. A kind that can say more (the
// observe.thread kind's items) says at most this much a time; an
// outcome over it is kept Bounded.
const MaxOutcome = 256 << 10

// maxSummary is a summary's share of an outcome cut to MaxOutcome.
const maxSummary = 4 << 10

// OutcomeDropped is the detail of an outcome whose own detail was over
// MaxOutcome: how many bytes of it were dropped.
type OutcomeDropped struct {
	DroppedBytes int `json:"dropped_bytes"`
}

// Bounded is o as the store keeps it: o itself when its result, summary
// and detail fit MaxOutcome; else its detail replaced by an
// OutcomeDropped saying its size, and its result and summary cut to
// their first bytes (whole characters) where they are long. The watch is
// still answered, with what fits.
func (o Outcome) Bounded() Outcome {
	if len(o.Result)+len(o.Summary)+len(o.Detail) <= MaxOutcome {
		return o
	}
	if len(o.Detail) > 0 {
		d, _ := json.Marshal(OutcomeDropped{DroppedBytes: len(o.Detail)})
		o.Detail = d
	}
	o.Result = cutUTF8(o.Result, maxSummary)
	o.Summary = cutUTF8(o.Summary, maxSummary)
	return o
}

// bounded is Bounded of a settlement's outcome, nil kept nil.
func bounded(o *Outcome) *Outcome {
	if o == nil {
		return nil
	}
	b := o.Bounded()
	return &b
}

// cutUTF8 is s cut to at most n bytes, at a character's boundary.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Watch is one row.
type Watch struct {
	ID        ID              `json:"id"`
	Kind      string          `json:"kind"`
	Params    json.RawMessage `json:"params"`
	Recipient Recipient       `json:"recipient"`
	// RegisteredBy is the principal that registered the watch, when that
	// is not the host itself (a standing watch the host reconciles has
	// none). The watch belongs to its recipient; the registering
	// principal may show and cancel it too.
	RegisteredBy string  `json:"registered_by,omitempty"`
	State        State   `json:"state"`
	Receipt      Receipt `json:"receipt"`
	// Every is the stored re-check cadence, never derived from other fields.
	Every     Duration   `json:"every"`
	Standing  bool       `json:"standing,omitempty"`
	CreatedAt time.Time  `json:"created_at"`
	ExpiresAt *time.Time `json:"expires_at,omitempty"` // nil only for standing watches
	SettledAt *time.Time `json:"settled_at,omitempty"`
	Outcome   *Outcome   `json:"outcome,omitempty"`
	Attempts  int        `json:"attempts"`
	LastNote  string     `json:"last_note,omitempty"`
	// LastFault is why the last probe that was persisted could not answer
	// (a timeout, a trap, a plugin error); nil once one answers.
	LastFault *Fault          `json:"last_fault,omitempty"`
	Baseline  json.RawMessage `json:"baseline,omitempty"`
	// Subject names what a pushed watch waits on ("work/<id>"); the host
	// wakes the pending watches of a subject when it changes, instead of
	// probing them on a cadence. Empty for probed kinds.
	Subject string `json:"subject,omitempty"`
	// PartitionKey is the key its kind's admit named (the resource the
	// watch reads: a commit, an issue, a URL), or "": a pending watch
	// with one is in FamPendingKey, so an event naming the key makes it
	// due now.
	PartitionKey string `json:"partition_key,omitempty"`
	// NextCheck is a pending watch's durable next check: when its kind
	// last asked to be probed again, where that differs from its cadence.
	// It is kept in the pending index beside the schedule, not in the row
	// (zero: none).
	NextCheck time.Time `json:"-"`
	// Token is the hash (captoken.Hash) of the capability token the watch
	// answers to (a signal's URL), or "": kept on the stored row and in
	// FamToken, written and deleted with the row, and never in the
	// watch's JSON (a listing shows no part of it).
	Token string `json:"-"`
}

// Fault is a probe that produced no answer: its reason (timeout, trap,
// memory, output_too_large, bad_output, raised, instantiate, or error for
// a call that failed otherwise) and what went wrong.
type Fault struct {
	Reason  string `json:"reason"`
	Message string `json:"message,omitempty"`
}

// Equal reports whether f and g say the same (both nil included).
func (f *Fault) Equal(g *Fault) bool {
	if f == nil || g == nil {
		return f == g
	}
	return *f == *g
}

// Duration is a time.Duration stored as a Go duration string.
type Duration time.Duration

// MarshalJSON writes "30s".
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// UnmarshalJSON reads "30s".
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err != nil {
		return err
	}
	v, err := time.ParseDuration(s)
	if err != nil {
		return err
	}
	*d = Duration(v)
	return nil
}

// rowVersion is the schema version of the rows this build writes. A row
// with another version is held aside.
const rowVersion = 1

// row is a Watch as stored: the schema version first.
type row struct {
	V int `json:"v"`
	Watch
	Token string `json:"token,omitempty"`
}

// EncodeRow is w as every backend stores it, and as an export carries it.
func EncodeRow(w Watch) ([]byte, error) {
	return json.Marshal(row{V: rowVersion, Watch: w, Token: w.Token})
}

// UnreadableError is a row this build cannot decode. It is held aside.
type UnreadableError struct {
	Key []byte
	Err error
}

func (e *UnreadableError) Error() string {
	return fmt.Sprintf("store: row %x held aside: %v", e.Key, e.Err)
}

func (e *UnreadableError) Unwrap() error { return e.Err }

// DecodeRow decodes a stored row strictly: another schema version, an
// unknown field or an unknown state means a newer build wrote it, and
// decoding it leniently (then writing it back) would lose what it knows.
func DecodeRow(key, b []byte) (Watch, error) {
	// One strict decode: a newer row fails it (an unknown field) or fails
	// the version check after it (same fields, newer meaning).
	var r row
	if err := abi.StrictUnmarshal(b, &r); err != nil {
		return Watch{}, &UnreadableError{Key: key, Err: err}
	}
	if r.V != rowVersion {
		return Watch{}, &UnreadableError{Key: key, Err: fmt.Errorf("row version %d, this build reads %d", r.V, rowVersion)}
	}
	if !r.State.Valid() || !r.Receipt.Valid() {
		return Watch{}, &UnreadableError{Key: key, Err: fmt.Errorf("state %q receipt %q", r.State, r.Receipt)}
	}
	r.Watch.Token = r.Token
	return r.Watch, nil
}
