package store

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/vigilhq/vigil/api"
)

// Idempotency keys. A creating request may carry a key its client chose
// (the API's Idempotency-Key header: api.ValidIdempotencyKey says what a
// key is). The write it names keeps, in the
// same transaction, a record under (principal, key): a fingerprint of the
// request and the answer it was given. A request that comes again with
// the key finds the record, and is answered the first answer (the same
// request) or refused (another request under the key); it writes
// nothing. What is shared by every backend is here: the record, its
// codec, and the decision (Idem.Check, Idem.Record); a backend only reads
// and writes the record's key inside the transaction of the write.
//
// Which writes honour a key: the one write of each creating request,
// given its Idem through the context (WithIdem): CreateIfRunning and
// Create (a watch), AppendEvent (an observed record), ClaimWork and
// CompleteWorkAs (a Work), ReportPhase and ReportActivity (a recipient's
// reports). Every other write ignores it.

// Fingerprint is a request's digest: what a second request under the
// same key must repeat to be answered again.
type Fingerprint [sha256.Size]byte

// FingerprintOf digests a request's method, target and body, each
// length-prefixed so no two requests share a digest by moving bytes
// from one part to another.
func FingerprintOf(method, target string, body []byte) Fingerprint {
	h := sha256.New()
	for _, part := range [][]byte{[]byte(method), []byte(target), body} {
		var n [8]byte
		binary.BigEndian.PutUint64(n[:], uint64(len(part)))
		h.Write(n[:])
		h.Write(part)
	}
	var f Fingerprint
	h.Sum(f[:0])
	return f
}

// Answer is a request's answer as its key keeps it: what a repeat of the
// request is answered, byte for byte.
type Answer struct {
	Status int
	// Location is the answer's Location header, if it had one.
	Location string
	Body     []byte
	// Unkept, when not zero, is the size of a body too large to keep
	// (its record would have been over the store's bound on a value,
	// MaxValue): the record holds the status and no body, and a repeat
	// of the request cannot be answered as the first was.
	Unkept int
}

// storedAnswer is an Answer's encoding: a body that is JSON (every
// answer the API keeps) as JSON, a value of the record's own, any other
// body as base64 (Go's encoding of bytes).
type storedAnswer struct {
	Status   int             `json:"status"`
	Location string          `json:"location,omitempty"`
	JSON     json.RawMessage `json:"json,omitempty"`
	Body     []byte          `json:"body,omitempty"`
	Unkept   int             `json:"unkept,omitempty"`
}

func (a Answer) stored() storedAnswer {
	s := storedAnswer{Status: a.Status, Location: a.Location, Unkept: a.Unkept}
	if isCompactJSON(a.Body) {
		s.JSON = a.Body
	} else {
		s.Body = a.Body
	}
	return s
}

func (s storedAnswer) answer() Answer {
	a := Answer{Status: s.Status, Location: s.Location, Body: s.Body, Unkept: s.Unkept}
	if len(s.JSON) > 0 {
		a.Body = s.JSON
	}
	return a
}

// isCompactJSON says whether b is a JSON value as encoding/json writes
// it (no space outside its strings), so kept as JSON it reads back as
// the same bytes.
func isCompactJSON(b []byte) bool {
	if len(b) == 0 || !json.Valid(b) {
		return false
	}
	var c bytes.Buffer
	if json.Compact(&c, b) != nil {
		return false
	}
	return bytes.Equal(c.Bytes(), b)
}

// IdemRecord is what the store keeps under an idempotency key: whose key,
// the request it named, when, and the answer it was given.
type IdemRecord struct {
	Principal   string
	Key         string
	Fingerprint Fingerprint
	At          time.Time
	Answer      Answer
}

// Idem is a creating write's key, given to the store through the
// context. Answer renders the request's answer from what the write
// wrote (the backend calls it inside the transaction, on every run, with
// the value the method returns: a Watch, an Event, a Work, a
// RecipientRecord), so the answer is kept by the commit that makes it
// true.
type Idem struct {
	Principal   string
	Key         string
	Fingerprint Fingerprint
	// At is when the request came: the record's time, from which its
	// retention runs (RetainedIdem).
	At     time.Time
	Answer func(written any) (Answer, error)
}

// ErrIdemReused: the request's idempotency key already names another
// request of its principal (another method, target or body); nothing was
// written.
var ErrIdemReused = errors.New("store: the idempotency key names another request")

// Replay is a write refused because its key already names a committed
// write of the same request: nothing was written, and Record holds the
// answer the first was given.
type Replay struct{ Record IdemRecord }

func (r *Replay) Error() string {
	return fmt.Sprintf("store: idempotency key %q was used at %s: its answer is %d", r.Record.Key, r.Record.At.Format(time.RFC3339Nano), r.Record.Answer.Status)
}

type idemContextKey struct{}

// WithIdem returns ctx carrying i, for the one write of a creating
// request.
func WithIdem(ctx context.Context, i *Idem) context.Context {
	return context.WithValue(ctx, idemContextKey{}, i)
}

// IdemOf is the Idem ctx carries, or nil.
func IdemOf(ctx context.Context) *Idem {
	i, _ := ctx.Value(idemContextKey{}).(*Idem)
	return i
}

// Check decides, inside a write's transaction, what the record found
// under the key means: v is its stored value, nil when there is none.
// Nil: the write goes on (and writes the record, Record). A *Replay: the
// same request was written before; the write is refused and answered
// with the first answer. ErrIdemReused: the key names another request.
func (i *Idem) Check(v []byte) error {
	if v == nil {
		return nil
	}
	r, err := DecodeIdem(v)
	if err != nil {
		return err
	}
	if r.Principal != i.Principal || r.Key != i.Key || r.Fingerprint != i.Fingerprint {
		return fmt.Errorf("%w: key %q was used at %s", ErrIdemReused, i.Key, r.At.Format(time.RFC3339Nano))
	}
	return &Replay{Record: r}
}

// Record renders the answer of what the write wrote and returns the
// record to keep under the key, encoded, at most limit bytes: a record
// over it is kept without the answer's body (Answer.Unkept), so a write
// whose answer is large still commits, and its key still names it.
func (i *Idem) Record(written any, limit int) ([]byte, error) {
	if i.Answer == nil {
		return nil, fmt.Errorf("store: idempotency key %q without an answer", i.Key)
	}
	a, err := i.Answer(written)
	if err != nil {
		return nil, fmt.Errorf("store: rendering the answer of key %q: %w", i.Key, err)
	}
	r := IdemRecord{Principal: i.Principal, Key: i.Key, Fingerprint: i.Fingerprint, At: i.At.UTC(), Answer: a}
	b, err := EncodeIdem(r)
	if err != nil || len(b) <= limit {
		return b, err
	}
	r.Answer.Body, r.Answer.Unkept = nil, len(a.Body)
	return EncodeIdem(r)
}

// storedIdem is an idempotency record's encoding.
type storedIdem struct {
	V           int          `json:"v"`
	Principal   string       `json:"principal"`
	Key         string       `json:"key"`
	Fingerprint []byte       `json:"fingerprint"`
	At          time.Time    `json:"at"`
	Answer      storedAnswer `json:"answer"`
}

// EncodeIdem is the one encoding of an idempotency record, for every
// backend (an export carries it between them). The answer's body is
// JSON inside the record where it is JSON, not base64: a third larger,
// it once put a Work's claim over what a JetStream message holds.
func EncodeIdem(r IdemRecord) ([]byte, error) {
	var b bytes.Buffer
	e := json.NewEncoder(&b)
	e.SetEscapeHTML(false) // the body's bytes as they are
	err := e.Encode(storedIdem{V: rowVersion, Principal: r.Principal, Key: r.Key, Fingerprint: r.Fingerprint[:], At: r.At.UTC(), Answer: r.Answer.stored()})
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), err
}

// DecodeIdem undoes EncodeIdem; a record it cannot read is ErrCorrupt.
func DecodeIdem(b []byte) (IdemRecord, error) {
	var s storedIdem
	if err := json.Unmarshal(b, &s); err != nil {
		return IdemRecord{}, fmt.Errorf("%w: idempotency record: %v", ErrCorrupt, err)
	}
	if s.V != rowVersion || len(s.Fingerprint) != len(Fingerprint{}) || s.Principal == "" || !api.ValidIdempotencyKey(s.Key) {
		return IdemRecord{}, fmt.Errorf("%w: idempotency record of version %d", ErrCorrupt, s.V)
	}
	r := IdemRecord{Principal: s.Principal, Key: s.Key, At: s.At, Answer: s.Answer.answer()}
	copy(r.Fingerprint[:], s.Fingerprint)
	return r, nil
}

// RetainedIdem is the class of idempotency records, ordered by when
// their request came (IdemRecord.At); internal/upkeep keeps them 24 hours.
const RetainedIdem Retained = "idempotency_keys"

// checkIdem is the first step of a write that honours an idempotency
// key: i (nil when the request carries none) checked against the record
// under its key (Idem.Check). The key is read, and written by keepIdem
// in the same transaction, so of two writes under one key at once one
// commits and the other runs again and finds the record.
func (t tx) checkIdem(i *Idem) error {
	if i == nil {
		return nil
	}
	v, ok, err := t.Get(kIdem(i.Principal, i.Key))
	if err != nil {
		return err
	}
	if !ok {
		return i.Check(nil)
	}
	return i.Check(v)
}

// keepIdem writes i's record of what the write wrote, and its time
// index entry; nothing when i is nil.
func (t tx) keepIdem(i *Idem, written any) error {
	if i == nil {
		return nil
	}
	b, err := i.Record(written, t.s.maxValue())
	if err != nil {
		return err
	}
	t.Put(kIdem(i.Principal, i.Key), b)
	t.Put(kIdemAt(i), nil)
	return nil
}

// noteIdem tells the retention of a committed idempotency record.
func (s *Store) noteIdem(i *Idem) {
	if i != nil {
		s.noteRetained(RetainedIdem, i.At)
	}
}

// GetIdem reads principal's idempotency record under key: ErrNotFound
// when there is none.
func (s *Store) GetIdem(ctx context.Context, principal, key string) (IdemRecord, error) {
	var out IdemRecord
	err := s.view(ctx, func(t tx) error {
		v, ok, err := t.Get(kIdem(principal, key))
		if err != nil {
			return err
		}
		if !ok {
			return fmt.Errorf("%w: idempotency key %q of %s", ErrNotFound, key, principal)
		}
		out, err = DecodeIdem(v)
		return err
	})
	return out, err
}
