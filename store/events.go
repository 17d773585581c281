package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Event is one fact on the host's event log. Events live in named streams
// ("fetch", "fetch.dead_letters", …), each with its own gapless sequence,
// and Key is the event's idempotency key within its stream: appending a
// second event under a key already present never adds a row.
type Event struct {
	Seq        uint64          `json:"seq"`
	Stream     string          `json:"stream"`
	Key        string          `json:"key"`
	Type       string          `json:"type"`
	OccurredAt time.Time       `json:"occurred_at"`
	Payload    json.RawMessage `json:"payload"`
	// Actor is who caused the event, kept for audit. It is part of no
	// identity: a repeat by another actor is still a repeat.
	Actor string `json:"actor,omitempty"`
	// Run names the run that caused it (an observed record's reporter
	// passes it), kept for audit beside Actor and, like Actor, part of no
	// identity.
	Run string `json:"run,omitempty"`
	// Address is the key the event is addressed to (an observed thread's
	// key), derived from the payload, so it is no part of the comparison
	// either.
	Address string `json:"address,omitempty"`
}

// ErrEventConflict is an append whose key already names an event with
// another type or payload.
var ErrEventConflict = errors.New("store: the event key already names a different event")

// MaxEventKey bounds an event key and a stream name.
const MaxEventKey = 1024

type storedEvent struct {
	V int `json:"v"`
	Event
}

// CheckEvent is what every backend's AppendEvent asks of an event: a
// stream of 1 to MaxEventKey bytes without a NUL, a key of 1 to
// MaxEventKey bytes and a type.
func CheckEvent(e Event) error {
	switch {
	case e.Stream == "" || len(e.Stream) > MaxEventKey || bytes.IndexByte([]byte(e.Stream), 0) >= 0:
		return fmt.Errorf("store: event stream %q: want 1-%d bytes, no NUL", e.Stream, MaxEventKey)
	case e.Key == "" || len(e.Key) > MaxEventKey:
		return fmt.Errorf("store: event key: want 1-%d bytes", MaxEventKey)
	case e.Type == "":
		return errors.New("store: event type is empty")
	}
	return nil
}

// errNotThere is sameEvent's "no event has this key yet".
var errNotThere = errors.New("store: no event under this key")

func (t tx) getEvent(stream string, seq uint64) (Event, error) {
	v, ok, err := t.Get(kEvent(stream, seq))
	if err != nil {
		return Event{}, err
	}
	if !ok {
		return Event{}, fmt.Errorf("%w: event %s/%d", ErrNotFound, stream, seq)
	}
	return decodeEvent(stream, seq, v)
}

func decodeEvent(stream string, seq uint64, v []byte) (Event, error) {
	var se storedEvent
	if err := json.Unmarshal(v, &se); err != nil || se.V != rowVersion {
		return Event{}, fmt.Errorf("%w: event %s/%d is held aside (unreadable by this build)", ErrCorrupt, stream, seq)
	}
	return se.Event, nil
}

// sameEvent looks up the event under e's key: found is false when there
// is none; otherwise duplicate says it has e's type and payload, and a
// different one is an error wrapping ErrEventConflict.
func (t tx) sameEvent(e Event) (prev Event, found, duplicate bool, err error) {
	seq, found, err := t.seqOf(kEventKey(e.Stream, e.Key))
	if err != nil || !found {
		return Event{}, found, false, err
	}
	prev, err = t.getEvent(e.Stream, seq)
	if err != nil {
		return Event{}, true, false, err
	}
	if prev.Type == e.Type && bytes.Equal(prev.Payload, e.Payload) {
		return prev, true, true, nil
	}
	return prev, true, false, fmt.Errorf("%w: stream %s, key %s", ErrEventConflict, e.Stream, e.Key)
}

// AppendEvent appends e to e.Stream under the next sequence number, unless
// an event with e.Key is already in the stream. Then nothing is written,
// and it returns that event with duplicate true when it has the same Type
// and Payload bytes, or with an error wrapping ErrEventConflict when it
// does not. Callers encode payloads deterministically (encoding/json of a
// struct does), so a repeat compares equal. The key's entry and the
// stream's sequence are read and written in the append's transaction, so
// two appends of one key add one event. A creating request's
// idempotency key is checked first: a repeat of a keyed record is
// answered its first answer, never "duplicate".
func (s *Store) AppendEvent(ctx context.Context, e Event) (out Event, duplicate bool, err error) {
	if err := CheckEvent(e); err != nil {
		return Event{}, false, err
	}
	idem := IdemOf(ctx)
	lookup := func(t tx) error {
		if idem != nil {
			if err := t.prefetch(kIdem(idem.Principal, idem.Key), kEventKey(e.Stream, e.Key)); err != nil {
				return err
			}
		}
		if err := t.checkIdem(idem); err != nil {
			return err
		}
		prev, found, dup, err := t.sameEvent(e)
		if err == nil && !found {
			return errNotThere
		}
		out, duplicate = prev, dup
		return err
	}
	if !s.plan.Remote {
		// A repeat is answered from a read alone, outside the stream's
		// serialisation; an event not yet there is looked for again in
		// the append, where the append decides.
		switch err := s.view(ctx, lookup); {
		case err == nil:
			return out, duplicate, nil
		case errors.Is(err, ErrEventConflict):
			return out, false, err
		case !errors.Is(err, errNotThere):
			return Event{}, false, err
		}
	}
	err = s.update(ctx, TxOptions{Name: "event", Serial: streamHint(e.Stream)}, func(t tx) error {
		out, duplicate = Event{}, false
		if err := lookup(t); !errors.Is(err, errNotThere) {
			return err
		}
		last, _, err := t.seqOf(kEventSeq(e.Stream))
		if err != nil {
			return err
		}
		ev := e
		ev.Seq = last + 1
		b, err := json.Marshal(storedEvent{V: rowVersion, Event: ev})
		if err != nil {
			return err
		}
		seq := seqBytes(ev.Seq)
		t.Put(kEvent(ev.Stream, ev.Seq), b)
		t.Put(kEventKey(ev.Stream, ev.Key), seq)
		t.Put(kEventSeq(ev.Stream), seq)
		out = ev
		return t.keepIdem(idem, ev)
	})
	if err != nil && !errors.Is(err, ErrEventConflict) {
		return Event{}, false, err
	}
	if err == nil && !duplicate {
		s.noteRetained(RetainedEvents(e.Stream), out.OccurredAt)
		s.noteIdem(idem)
	}
	return out, duplicate, err
}

// EventByKey returns the event of stream with idempotency key key, or an
// error wrapping ErrNotFound.
func (s *Store) EventByKey(ctx context.Context, stream, key string) (Event, error) {
	var out Event
	err := s.view(ctx, func(t tx) error {
		v, ok, err := t.Get(kEventKey(stream, key))
		if err != nil {
			return err
		}
		if !ok || len(v) != 8 {
			return fmt.Errorf("%w: event %s key %s", ErrNotFound, stream, key)
		}
		out, err = t.getEvent(stream, binary.BigEndian.Uint64(v))
		return err
	})
	return out, err
}

// ReadEvents returns up to limit events of stream with Seq after after, in
// order. An event this build cannot decode is skipped, never an error for
// the others.
func (s *Store) ReadEvents(ctx context.Context, stream string, after uint64, limit int) ([]Event, error) {
	var out []Event
	err := s.view(ctx, func(t tx) error {
		out = out[:0]
		var err error
		out, err = t.readEvents(ctx, stream, after, limit, out)
		return err
	})
	return out, err
}

// readEvents appends to out up to limit readable events of stream after
// after.
func (t tx) readEvents(ctx context.Context, stream string, after uint64, limit int, out []Event) ([]Event, error) {
	r := Range{Prefix: kEvent(stream, 0), Fixed: 1}
	if !t.s.plan.Remote {
		r.Want = min(max(limit, 1), 100)
		n := 0
		err := t.Scan(r.FromKey(kEvent(stream, after+1)), func(k Key, v []byte) (bool, error) {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			if ev, err := decodeEvent(stream, k.Seq, v); err == nil {
				out = append(out, ev)
				n++
			}
			return n < limit, nil
		})
		return out, err
	}
	last, _, err := t.seqOf(kEventSeq(stream))
	if err != nil {
		return out, err
	}
	for n := 0; n < limit && after < last; {
		seqs, err := t.seqsAfter(r, func(seq uint64) Key { return kEvent(stream, seq) }, after, last, limit-n)
		if err != nil || len(seqs) == 0 {
			return out, err
		}
		for _, seq := range seqs {
			ev, err := t.getEvent(stream, seq)
			if err == nil {
				out = append(out, ev)
				n++
			} else if !errors.Is(err, ErrNotFound) && !errors.Is(err, ErrCorrupt) {
				return out, err
			}
			after = seq
		}
	}
	return out, nil
}

// LastEventSeq is the sequence number of the last event ever appended to
// stream (0 when none was): how many it has had, pruned ones included.
// It reads one key.
func (s *Store) LastEventSeq(ctx context.Context, stream string) (uint64, error) {
	var seq uint64
	err := s.view(ctx, func(t tx) error {
		var err error
		seq, _, err = t.seqOf(kEventSeq(stream))
		return err
	})
	return seq, err
}

// PruneEvents deletes the events of stream that occurred before cutoff,
// oldest first, with their idempotency keys, and stops at the first event
// at or after cutoff (a stream is appended in time order). Once an event
// is pruned its key may be appended again.
func (s *Store) PruneEvents(ctx context.Context, stream string, cutoff time.Time) (int, error) {
	total := 0
	for {
		n, _, err := s.pruneEventBatch(ctx, stream, 0, cutoff, s.batch())
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// pruneEventBatch deletes, in one transaction, up to limit of stream's
// events that occurred before cutoff, oldest first from the seq from,
// with their idempotency keys. Held-aside events are stepped over and
// kept. It returns how many, and the seq after the last one.
func (s *Store) pruneEventBatch(ctx context.Context, stream string, from uint64, cutoff time.Time, limit int) (int, uint64, error) {
	n := 0
	var next uint64
	err := s.update(ctx, TxOptions{Name: "prune-events"}, func(t tx) error {
		n, next = 0, 0
		r := Range{Prefix: kEvent(stream, 0), Fixed: 1}
		return t.Scan(r.FromKey(kEvent(stream, from)), func(k Key, v []byte) (bool, error) {
			ev, err := decodeEvent(stream, k.Seq, v)
			if err != nil {
				return true, nil // held aside: not ours to delete
			}
			if !ev.OccurredAt.Before(cutoff) {
				return false, nil
			}
			t.Delete(k)
			t.Delete(kEventKey(stream, ev.Key))
			n++
			next = k.Seq + 1
			return n < limit, nil
		})
	})
	return n, next, err
}
