package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
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

var (
	eventPfx    = []byte("ev/") // ev/<stream>\x00<seq>  -> storedEvent
	eventKeyPfx = []byte("ek/") // ek/<stream>\x00<key>  -> seq
	eventSeqPfx = []byte("es/") // es/<stream>           -> last seq
)

func eventStreamPrefix(stream string) []byte {
	return append(append(append([]byte{}, eventPfx...), stream...), 0)
}

func eventKey(stream string, seq uint64) []byte {
	return binary.BigEndian.AppendUint64(eventStreamPrefix(stream), seq)
}

func eventIndexKey(stream, key string) []byte {
	return append(append(append(append([]byte{}, eventKeyPfx...), stream...), 0), key...)
}

func eventSeqKey(stream string) []byte {
	return append(append([]byte{}, eventSeqPfx...), stream...)
}

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

// AppendEvent appends e to e.Stream under the next sequence number, unless
// an event with e.Key is already in the stream. Then nothing is written,
// and it returns that event with duplicate true when it has the same Type
// and Payload bytes, or with an error wrapping ErrEventConflict when it
// does not. Callers encode payloads deterministically (encoding/json of a
// struct does), so a repeat compares equal.
func (s *Badger) AppendEvent(ctx context.Context, e Event) (out Event, duplicate bool, err error) {
	if err := CheckEvent(e); err != nil {
		return Event{}, false, err
	}
	// A repeat is answered from a read alone, without the append lock or a
	// write transaction; an event not yet there is looked for again under
	// the lock, where the append decides.
	idem := IdemOf(ctx)
	err = s.db.View(func(txn *badger.Txn) error {
		// The key first: a repeat of a keyed record is answered its first
		// answer, never "duplicate" (the record and its key commit
		// together, so one read sees both or neither).
		if err := checkIdem(txn, idem); err != nil {
			return err
		}
		var found bool
		out, found, duplicate, err = sameEvent(txn, e)
		if err == nil && !found {
			return errNotThere
		}
		return err
	})
	switch {
	case err == nil:
		return out, duplicate, nil
	case errors.Is(err, ErrEventConflict):
		return out, false, err
	case !errors.Is(err, errNotThere):
		return Event{}, false, err
	}
	err = s.updateLocked(ctx, &s.eventMu, func(txn *badger.Txn) error {
		if err := checkIdem(txn, idem); err != nil {
			return err
		}
		prev, found, dup, err := sameEvent(txn, e)
		if found || err != nil {
			out, duplicate = prev, dup
			return err
		}
		last, _, err := getSeq(txn, eventSeqKey(e.Stream))
		if err != nil {
			return err
		}
		e.Seq = last + 1
		b, err := json.Marshal(storedEvent{V: rowVersion, Event: e})
		if err != nil {
			return err
		}
		seqBytes := binary.BigEndian.AppendUint64(nil, e.Seq)
		for _, kv := range [][2][]byte{
			{eventKey(e.Stream, e.Seq), b},
			{eventIndexKey(e.Stream, e.Key), seqBytes},
			{eventSeqKey(e.Stream), seqBytes},
		} {
			if err := txn.Set(kv[0], kv[1]); err != nil {
				return err
			}
		}
		out = e
		return keepIdem(txn, idem, e)
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

// errNotThere is sameEvent's "no event has this key yet".
var errNotThere = errors.New("store: no event under this key")

// sameEvent looks up the event under e's key: found is false when there is
// none; otherwise duplicate says it has e's type and payload, and a
// different one is an error wrapping ErrEventConflict.
func sameEvent(txn *badger.Txn, e Event) (prev Event, found, duplicate bool, err error) {
	seq, found, err := getSeq(txn, eventIndexKey(e.Stream, e.Key))
	if err != nil || !found {
		return Event{}, found, false, err
	}
	prev, err = getEvent(txn, e.Stream, seq)
	if err != nil {
		return Event{}, true, false, err
	}
	if prev.Type == e.Type && bytes.Equal(prev.Payload, e.Payload) {
		return prev, true, true, nil
	}
	return prev, true, false, fmt.Errorf("%w: stream %s, key %s", ErrEventConflict, e.Stream, e.Key)
}

// getSeq reads a big-endian sequence number; found is false when k is
// absent.
func getSeq(txn *badger.Txn, k []byte) (seq uint64, found bool, err error) {
	item, err := txn.Get(k)
	if errors.Is(err, badger.ErrKeyNotFound) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, err
	}
	err = item.Value(func(v []byte) error {
		if len(v) != 8 {
			return fmt.Errorf("%w: sequence at %q", ErrCorrupt, k)
		}
		seq = binary.BigEndian.Uint64(v)
		return nil
	})
	return seq, true, err
}

func getEvent(txn *badger.Txn, stream string, seq uint64) (Event, error) {
	item, err := txn.Get(eventKey(stream, seq))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Event{}, fmt.Errorf("%w: event %s/%d", ErrNotFound, stream, seq)
	}
	if err != nil {
		return Event{}, err
	}
	var se storedEvent
	if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &se) }); err != nil || se.V != rowVersion {
		return Event{}, fmt.Errorf("%w: event %s/%d is held aside (unreadable by this build)", ErrCorrupt, stream, seq)
	}
	return se.Event, nil
}

// EventByKey returns the event of stream with idempotency key key, or an
// error wrapping ErrNotFound.
func (s *Badger) EventByKey(ctx context.Context, stream, key string) (Event, error) {
	var out Event
	err := s.db.View(func(txn *badger.Txn) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		seq, found, err := getSeq(txn, eventIndexKey(stream, key))
		if err != nil {
			return err
		}
		if !found {
			return fmt.Errorf("%w: event %s key %s", ErrNotFound, stream, key)
		}
		out, err = getEvent(txn, stream, seq)
		return err
	})
	return out, err
}

// ReadEvents returns up to limit events of stream with Seq after after, in
// order. An event this build cannot decode is skipped, never an error for
// the others.
func (s *Badger) ReadEvents(ctx context.Context, stream string, after uint64, limit int) ([]Event, error) {
	var out []Event
	err := s.db.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{Prefix: eventStreamPrefix(stream), PrefetchValues: true, PrefetchSize: min(max(limit, 1), 100)})
		defer it.Close()
		for it.Seek(eventKey(stream, after+1)); it.Valid() && len(out) < limit; it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			var se storedEvent
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &se) }); err != nil || se.V != rowVersion {
				continue
			}
			out = append(out, se.Event)
		}
		return nil
	})
	return out, err
}

// PruneEvents deletes the events of stream that occurred before cutoff,
// oldest first, with their idempotency keys, and stops at the first event
// at or after cutoff (a stream is appended in time order). Once an event
// is pruned its key may be appended again.
func (s *Badger) PruneEvents(ctx context.Context, stream string, cutoff time.Time) (int, error) {
	total := 0
	for {
		n := 0
		done := false
		err := s.update(ctx, func(txn *badger.Txn) error {
			it := txn.NewIterator(badger.IteratorOptions{Prefix: eventStreamPrefix(stream), PrefetchValues: true})
			defer it.Close()
			var dels [][]byte
			for it.Rewind(); it.Valid(); it.Next() {
				if len(dels) >= pruneBatch {
					break
				}
				var se storedEvent
				if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &se) }); err != nil || se.V != rowVersion {
					continue // held aside: not ours to delete
				}
				if !se.OccurredAt.Before(cutoff) {
					done = true
					break
				}
				dels = append(dels, it.Item().KeyCopy(nil), eventIndexKey(stream, se.Key))
				n++
			}
			if !it.Valid() {
				done = true
			}
			for _, k := range dels {
				if err := txn.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += n
		if done || n == 0 {
			return total, nil
		}
	}
}
