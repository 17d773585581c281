package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigilhq/vigil/sdk/abi"
)

// RecipientStatus is a recipient's lifecycle state. Only a running
// recipient receives messages and keeps pending watches.
type RecipientStatus string

// Recipient statuses.
const (
	StatusRunning RecipientStatus = "running"
	StatusPaused  RecipientStatus = "paused"
	StatusStopped RecipientStatus = "stopped"
)

// Valid reports whether s is a status this build knows.
func (s RecipientStatus) Valid() bool {
	return s == StatusRunning || s == StatusPaused || s == StatusStopped
}

// Webhook is where a recipient's messages are also POSTed. Secret is
// write-only: stored, used to sign, never returned or logged.
type Webhook struct {
	URL    string `json:"url"`
	Secret string `json:"secret"`
	// DisabledAt is set when the receiver answered 410 Gone: no push goes
	// to the URL after it, until the recipient sets its webhook again.
	DisabledAt *time.Time `json:"disabled_at,omitempty"`
	// DisabledReason says why, for the recipient's view.
	DisabledReason string `json:"disabled_reason,omitempty"`
}

// Active reports whether messages are pushed to w.
func (w *Webhook) Active() bool { return w != nil && w.URL != "" && w.DisabledAt == nil }

// Ref is one subject attached to a recipient: while the recipient runs,
// the reconciler keeps exactly one standing watch of Kind with Params.
type Ref struct {
	Kind   string          `json:"kind"`
	Params json.RawMessage `json:"params"`
}

// RecipientRecord is a recipient as stored.
type RecipientRecord struct {
	ID      string          `json:"id"`
	Status  RecipientStatus `json:"status"`
	Webhook *Webhook        `json:"webhook,omitempty"`
	Refs    []Ref           `json:"refs,omitempty"`
	// Workspace is the directory the recipient works in: where a command
	// the exec capability runs for one of its watches runs, and nowhere
	// else. Empty: none declared.
	Workspace string    `json:"workspace,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Phase is what the recipient last said it is working on, nil before
	// any report; Activity the counts that move while it works. Both are
	// written by ReportPhase and ReportActivity only, and kept by
	// PutRecipient.
	Phase    *Phase   `json:"phase,omitempty"`
	Activity Activity `json:"activity,omitzero"`
	// ReminderEvery is the recipient's opt-in to the phase reminder
	// (internal/reminder): how often it is checked and how old a report must
	// be; zero is no reminder. Written by SetReminder only, kept by
	// PutRecipient.
	ReminderEvery Duration `json:"reminder_every,omitempty"`
	// Heartbeats are the recipient's declared heartbeats
	// (internal/heartbeat), each with the token of its ping URL and its
	// last ping. PutRecipient keeps each one's last ping while its name
	// and token stay; Ping writes it.
	Heartbeats []Heartbeat `json:"heartbeats,omitempty"`
}

// Heartbeat is one heartbeat a recipient declared: missed when no ping
// comes within Period plus Grace of the last one.
type Heartbeat struct {
	Name   string   `json:"name"`
	Period Duration `json:"period"`
	Grace  Duration `json:"grace"`
	// Token is the ping URL's capability token, kept in the record (shown
	// to whoever may act for the recipient, as a webhook's secret is
	// kept); its hash names the heartbeat in FamToken.
	Token string `json:"token"`
	// LastPing is the last ping's time (zero: none yet), and Failed and
	// Note what it said: a ping to /fail reports a failure at once, and
	// its body, bounded, is the note.
	LastPing time.Time `json:"last_ping,omitzero"`
	Failed   bool      `json:"failed,omitempty"`
	Note     string    `json:"note,omitempty"`
}

// Phase is a recipient's reported phase: a short name (build, review,
// handoff, blocked, …) and optional text, with who reported it and when.
type Phase struct {
	Name string `json:"name"`
	Text string `json:"text,omitempty"`
	// ReportedBy is the principal that reported it. Seeded is true when
	// that principal was not acting as the recipient itself (an operator,
	// or the host, setting a phase on its behalf): such a phase is not the
	// recipient's own claim.
	ReportedBy string    `json:"reported_by"`
	Seeded     bool      `json:"seeded,omitempty"`
	ReportedAt time.Time `json:"reported_at"`
}

// Activity is the counts that move while a recipient works. They only
// grow (saturating at the largest uint64); At is the last report.
type Activity struct {
	Replies   uint64    `json:"replies"`
	ToolCalls uint64    `json:"tool_calls"`
	At        time.Time `json:"at,omitzero"`
}

// Add adds replies and toolCalls to the counts, saturating, and sets At
// to at in UTC.
func (a *Activity) Add(replies, toolCalls uint64, at time.Time) {
	a.Replies = addSaturating(a.Replies, replies)
	a.ToolCalls = addSaturating(a.ToolCalls, toolCalls)
	a.At = at.UTC()
}

type storedRecipient struct {
	V int `json:"v"`
	RecipientRecord
}

// EncodeRecipient is r as every backend stores it, and as an export
// carries it.
func EncodeRecipient(r RecipientRecord) ([]byte, error) {
	return json.Marshal(storedRecipient{V: rowVersion, RecipientRecord: r})
}

// DecodeRecipient decodes a stored recipient strictly: one this build
// cannot read (another version, an unknown field or status) is held aside,
// ErrNotFound naming why.
func DecodeRecipient(id string, v []byte) (RecipientRecord, error) {
	var sr storedRecipient
	err := abi.StrictUnmarshal(v, &sr)
	if err == nil && (sr.V != rowVersion || !sr.Status.Valid()) {
		err = fmt.Errorf("version %d status %q", sr.V, sr.Status)
	}
	if err != nil {
		return RecipientRecord{}, fmt.Errorf("%w (recipient %q held aside: %v)", ErrNotFound, id, err)
	}
	return sr.RecipientRecord, nil
}

func addSaturating(a, b uint64) uint64 {
	if a+b < a {
		return ^uint64(0)
	}
	return a + b
}

// getRecipient reads a recipient: ErrNotFound if absent or held aside;
// present tells the two apart.
func (t tx) getRecipient(id string) (r RecipientRecord, present bool, err error) {
	v, ok, err := t.Get(kRecipientRec(id))
	if err != nil {
		return r, false, err
	}
	if !ok {
		return r, false, ErrNotFound
	}
	r, err = DecodeRecipient(id, v)
	return r, true, err
}

func (t tx) putRecipient(r RecipientRecord) error {
	b, err := EncodeRecipient(r)
	if err != nil {
		return err
	}
	t.Put(kRecipientRec(r.ID), b)
	return nil
}

// GetRecipient reads a recipient. ErrNotFound if absent.
func (s *Store) GetRecipient(ctx context.Context, id string) (RecipientRecord, error) {
	var r RecipientRecord
	err := s.view(ctx, func(t tx) error {
		var err error
		r, _, err = t.getRecipient(id)
		return err
	})
	return r, err
}

// recipientRoom is what a recipient's record, as PutRecipient writes it,
// leaves under the store's bound on a value for its reports to grow it
// (a phase of at most a few hundred bytes, its activity, its reminder).
const recipientRoom = 8 << 10

// PutRecipient writes a recipient, keeping its creation time, its phase,
// activity and reminder opt-in (which only their own calls write, so a
// client replacing the record cannot erase a report or race one), and
// returns the record as it was before; existed is false for a new
// recipient. A record over the store's bound on a value less room for
// its reports (its refs' params, which a client sends, are what grow it)
// is refused, nothing written: a *ValueTooLargeError.
func (s *Store) PutRecipient(ctx context.Context, r RecipientRecord) (prev RecipientRecord, existed bool, err error) {
	if !r.Status.Valid() {
		return prev, false, fmt.Errorf("store: recipient status %q", r.Status)
	}
	err = s.update(ctx, TxOptions{Name: "put-recipient"}, func(t tx) error {
		// w afresh on each run: a run after a lost race must not keep
		// what an earlier run took from a record deleted since.
		w := r
		old, _, gerr := t.getRecipient(r.ID)
		switch {
		case gerr == nil:
			prev, existed = old, true
			w.CreatedAt = old.CreatedAt
			w.Phase, w.Activity, w.ReminderEvery = old.Phase, old.Activity, old.ReminderEvery
			w.Heartbeats = keepPings(old.Heartbeats, w.Heartbeats)
		case errors.Is(gerr, ErrNotFound):
			prev, existed = RecipientRecord{}, false
		default:
			return gerr
		}
		b, err := EncodeRecipient(w)
		if err != nil {
			return err
		}
		if limit := s.maxValue() - recipientRoom; len(b) > limit {
			return &ValueTooLargeError{Fam: FamRecipient, Size: len(b), Limit: limit}
		}
		if err := t.moveHeartbeatTokens(w.ID, prev.Heartbeats, w.Heartbeats); err != nil {
			return err
		}
		t.Put(kRecipientRec(w.ID), b)
		return nil
	})
	return prev, existed, err
}

// keepPings is the heartbeats put with the last ping of each one of old
// with the same name and token (a changed period or grace keeps it; a
// new token is a new heartbeat).
func keepPings(old, put []Heartbeat) []Heartbeat {
	if len(put) == 0 {
		return nil
	}
	out := slices.Clone(put)
	for i := range out {
		for _, o := range old {
			if o.Name == out[i].Name && o.Token == out[i].Token {
				out[i].LastPing, out[i].Failed, out[i].Note = o.LastPing, o.Failed, o.Note
			}
		}
	}
	return out
}

// ErrUnknownHeartbeat: a ping names a heartbeat the recipient no longer
// declares.
var ErrUnknownHeartbeat = errors.New("store: the recipient declares no such heartbeat")

// Ping records a heartbeat's ping at at (failed, with note, for a
// failure's) on its recipient's record, and returns the record: one
// write. ErrNotFound if the recipient does not exist;
// ErrUnknownHeartbeat if it declares no heartbeat of that name.
func (s *Store) Ping(ctx context.Context, id, name string, at time.Time, failed bool, note string) (RecipientRecord, error) {
	var found bool
	rec, err := s.editRecipient(ctx, nil, id, func(r *RecipientRecord) {
		found = false
		for i := range r.Heartbeats {
			if r.Heartbeats[i].Name == name {
				found = true
				r.Heartbeats[i].LastPing, r.Heartbeats[i].Failed, r.Heartbeats[i].Note = at.UTC(), failed, note
			}
		}
	})
	if err == nil && !found {
		return RecipientRecord{}, ErrUnknownHeartbeat
	}
	return rec, err
}

// ReportPhase sets a recipient's phase and returns the record.
// ErrNotFound if the recipient does not exist: a report never creates one.
func (s *Store) ReportPhase(ctx context.Context, id string, p Phase) (RecipientRecord, error) {
	p.ReportedAt = p.ReportedAt.UTC()
	return s.editRecipient(ctx, IdemOf(ctx), id, func(r *RecipientRecord) { r.Phase = &p })
}

// ReportActivity adds replies and toolCalls to a recipient's activity
// counts (saturating), sets its At, and returns the record. ErrNotFound if
// the recipient does not exist.
func (s *Store) ReportActivity(ctx context.Context, id string, replies, toolCalls uint64, at time.Time) (RecipientRecord, error) {
	return s.editRecipient(ctx, IdemOf(ctx), id, func(r *RecipientRecord) {
		r.Activity.Add(replies, toolCalls, at)
	})
}

// SetReminder sets a recipient's reminder opt-in (zero: none) and returns
// the record. ErrNotFound if the recipient does not exist.
func (s *Store) SetReminder(ctx context.Context, id string, every time.Duration) (RecipientRecord, error) {
	if every < 0 {
		return RecipientRecord{}, fmt.Errorf("store: reminder interval %s", every)
	}
	return s.editRecipient(ctx, nil, id, func(r *RecipientRecord) { r.ReminderEvery = Duration(every) })
}

// editRecipient applies f to a stored recipient in one transaction,
// honouring idem, the idempotency key of the request it answers (nil:
// none).
func (s *Store) editRecipient(ctx context.Context, idem *Idem, id string, f func(*RecipientRecord)) (RecipientRecord, error) {
	var out RecipientRecord
	err := s.update(ctx, TxOptions{Name: "edit-recipient"}, func(t tx) error {
		if idem != nil {
			if err := t.prefetch(kIdem(idem.Principal, idem.Key), kRecipientRec(id)); err != nil {
				return err
			}
		}
		if err := t.checkIdem(idem); err != nil {
			return err
		}
		r, _, err := t.getRecipient(id)
		if err != nil {
			return err
		}
		f(&r)
		out = r
		if err := t.putRecipient(r); err != nil {
			return err
		}
		return t.keepIdem(idem, r)
	})
	if err == nil {
		s.noteIdem(idem)
	}
	return out, err
}

// EnsureRecipient returns the recipient, creating it running with a
// mailbox only if it does not exist; a held-aside record is never
// overwritten.
func (s *Store) EnsureRecipient(ctx context.Context, id string, now time.Time) (RecipientRecord, error) {
	if !s.plan.Remote {
		// Almost always the recipient exists: a read, no commit.
		if r, err := s.GetRecipient(ctx, id); err == nil {
			return r, nil
		}
	}
	var out RecipientRecord
	err := s.update(ctx, TxOptions{Name: "ensure-recipient"}, func(t tx) error {
		r, present, err := t.getRecipient(id)
		if err == nil {
			out = r
			return nil
		}
		if present || !errors.Is(err, ErrNotFound) {
			return err // held aside: never overwrite it
		}
		out = RecipientRecord{ID: id, Status: StatusRunning, CreatedAt: now.UTC(), UpdatedAt: now.UTC()}
		return t.putRecipient(out)
	})
	return out, err
}

// ListRecipients returns every readable recipient, by id.
func (s *Store) ListRecipients(ctx context.Context) ([]RecipientRecord, error) {
	var out []RecipientRecord
	err := s.view(ctx, func(t tx) error {
		out = out[:0]
		return t.Scan(Range{Prefix: Key{Fam: FamRecipient}}, func(k Key, v []byte) (bool, error) {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			if r, err := DecodeRecipient(k.Name, v); err == nil {
				out = append(out, r)
			}
			return true, nil
		})
	})
	// A name an adapter keeps one way sorts by its form there: by id.
	slices.SortFunc(out, func(a, b RecipientRecord) int { return strings.Compare(a.ID, b.ID) })
	return out, err
}

// DeleteRecipient removes a recipient's record; a count of no pending
// rows goes with it (one of rows still pending stays with them). Its
// mailbox stays until the retention prunes it. ErrNotFound if absent.
func (s *Store) DeleteRecipient(ctx context.Context, id string) error {
	return s.update(ctx, TxOptions{Name: "delete-recipient"}, func(t tx) error {
		if _, ok, err := t.Get(kRecipientRec(id)); err != nil {
			return err
		} else if !ok {
			return ErrNotFound
		}
		if old, _, err := t.getRecipient(id); err == nil {
			if err := t.moveHeartbeatTokens(id, old.Heartbeats, nil); err != nil {
				return err
			}
		}
		t.Delete(kRecipientRec(id))
		c, ok, err := t.Get(kPendingCount(id))
		if err != nil {
			return err
		}
		if ok && string(c) == "0" {
			t.Delete(kPendingCount(id))
		}
		return nil
	})
}

// PendingRecipients calls fn with each recipient id the recipients' index
// names, once each, in order, without reading a row: where the plan
// keeps each recipient's pending rows (Plan.RecipientPending), the
// recipients with a pending row; else the recipients with any row, each
// name found by a seek past the one before (a recipient's rows cost one
// seek, not a read each). A name an adapter keeps one way is read from
// one of its rows. For a start-up pass that must find the recipients
// pending rows name without a record, where listing every pending row
// would decode them all.
func (s *Store) PendingRecipients(ctx context.Context, fn func(id string) error) error {
	var names []string
	err := s.view(ctx, func(t tx) error {
		names = names[:0]
		fam := FamRecipientIndex
		if s.plan.RecipientPending {
			fam = FamRecipientPending
		}
		name := func(k Key) (string, error) {
			if k.OneWay&OneWayName == 0 {
				return k.Name, nil
			}
			w, found, err := t.readRow(k.ID)
			if err != nil || !found {
				return "", nil // held aside or gone: its name stays unknown
			}
			return w.Recipient.ID, nil
		}
		if s.plan.Remote {
			// One listing of the family's keys, their names in runs.
			last, lastWay := "", uint8(0)
			first := true
			return t.Scan(Range{Prefix: Key{Fam: fam}, KeysOnly: true}, func(k Key, _ []byte) (bool, error) {
				if err := ctx.Err(); err != nil {
					return false, err
				}
				if !first && k.Name == last && k.OneWay == lastWay {
					return true, nil
				}
				first, last, lastWay = false, k.Name, k.OneWay
				n, err := name(k)
				if n != "" {
					names = append(names, n)
				}
				return true, err
			})
		}
		var maxID ID
		for i := range maxID {
			maxID[i] = 0xff
		}
		r := Range{Prefix: Key{Fam: fam}, KeysOnly: true, Want: 1}
		for {
			if err := ctx.Err(); err != nil {
				return err
			}
			var found *Key
			if err := t.Scan(r, func(k Key, _ []byte) (bool, error) {
				if r.Seek && k.Name == r.From.Name {
					return true, nil // the seek's own name, at the greatest id
				}
				found = &k
				return false, nil
			}); err != nil {
				return err
			}
			if found == nil {
				return nil
			}
			n, err := name(*found)
			if err != nil {
				return err
			}
			if n != "" {
				names = append(names, n)
			}
			r = r.FromKey(Key{Fam: fam, Name: found.Name, ID: maxID})
		}
	})
	if err != nil {
		return err
	}
	for _, n := range names {
		if err := fn(n); err != nil {
			return err
		}
	}
	return nil
}

// ForEachPendingOfKind calls fn with each readable pending row of kind,
// found by the pending-by-kind index: the cost is that kind's pending
// rows, never the store's.
func (s *Store) ForEachPendingOfKind(ctx context.Context, kind string, fn func(Watch) error) error {
	var ids []ID
	if err := s.view(ctx, func(t tx) error {
		ids = ids[:0]
		return t.Scan(Range{Prefix: kPendingKind(kind, ID{}), Fixed: 1, KeysOnly: true}, func(k Key, _ []byte) (bool, error) {
			ids = append(ids, k.ID)
			return true, ctx.Err()
		})
	}); err != nil {
		return err
	}
	for _, id := range ids {
		w, err := s.Get(ctx, id)
		switch {
		case errors.Is(err, ErrNotFound):
			continue
		case err != nil:
			return err
		case w.State != Pending:
			continue
		}
		if err := fn(w); err != nil {
			return err
		}
	}
	return nil
}
