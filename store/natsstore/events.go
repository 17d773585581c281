package natsstore

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/vigilhq/vigil/store"
)

// Key layout of the event log.
//
//	es.<tok stream>              the stream's last seq (8 bytes)
//	ev.<tok stream>.<seq>        an event
//	ek.<tok stream>.<tok key>    the seq under an idempotency key
func eventSeqKey(stream string) string { return "es." + tok(stream) }
func eventPrefix(stream string) string { return "ev." + tok(stream) + "." }
func eventKey(stream string, seq uint64) string {
	return eventPrefix(stream) + hex16(seq)
}
func eventIndexKey(stream, key string) string { return "ek." + tok(stream) + "." + tok(key) }

type storedEvent struct {
	V int `json:"v"`
	store.Event
}

func getEvent(t *txn, stream string, seq uint64) (store.Event, error) {
	e, err := t.get(eventKey(stream, seq))
	if err != nil {
		return store.Event{}, err
	}
	if !e.exists {
		return store.Event{}, fmt.Errorf("%w: event %s/%d", store.ErrNotFound, stream, seq)
	}
	var se storedEvent
	if err := json.Unmarshal(e.val, &se); err != nil || se.V != rowVersion {
		return store.Event{}, fmt.Errorf("%w: event %s/%d is held aside (unreadable by this build)", store.ErrCorrupt, stream, seq)
	}
	return se.Event, nil
}

// sameEvent looks up the event under e's key, as package store's does.
func sameEvent(t *txn, e store.Event) (prev store.Event, found, duplicate bool, err error) {
	ie, err := t.get(eventIndexKey(e.Stream, e.Key))
	if err != nil || !ie.exists {
		return store.Event{}, false, false, err
	}
	if len(ie.val) != 8 {
		return store.Event{}, true, false, fmt.Errorf("%w: event key index %s/%s", store.ErrCorrupt, e.Stream, e.Key)
	}
	prev, err = getEvent(t, e.Stream, binary.BigEndian.Uint64(ie.val))
	if err != nil {
		return store.Event{}, true, false, err
	}
	if prev.Type == e.Type && bytes.Equal(prev.Payload, e.Payload) {
		return prev, true, true, nil
	}
	return prev, true, false, fmt.Errorf("%w: stream %s, key %s", store.ErrEventConflict, e.Stream, e.Key)
}

// AppendEvent appends e to e.Stream under the next sequence number,
// unless an event with e.Key is already in the stream: then it returns
// that event, duplicate true for the same type and payload, an error
// wrapping store.ErrEventConflict otherwise. The key's index entry and
// the stream's sequence are written with the revisions read, so two
// appends of one key (from any process) add one event.
func (s *Store) AppendEvent(ctx context.Context, e store.Event) (out store.Event, duplicate bool, err error) {
	if err := store.CheckEvent(e); err != nil {
		return store.Event{}, false, err
	}
	idem := store.IdemOf(ctx)
	err = s.update(ctx, "event", func(t *txn) error {
		// The key first: a repeat of a keyed record is answered its first
		// answer, never "duplicate".
		if idem != nil {
			if err := t.prefetch(append(idemKeyOf(idem), eventIndexKey(e.Stream, e.Key))...); err != nil {
				return err
			}
		}
		if err := checkIdem(t, idem); err != nil {
			return err
		}
		prev, found, dup, err := sameEvent(t, e)
		if found || err != nil {
			out, duplicate = prev, dup
			return err
		}
		last, err := lastSeq(t, eventSeqKey(e.Stream))
		if err != nil {
			return err
		}
		ev := e
		ev.Seq = last + 1
		b, err := json.Marshal(storedEvent{V: rowVersion, Event: ev})
		if err != nil {
			return err
		}
		seq := binary.BigEndian.AppendUint64(nil, ev.Seq)
		t.put(eventKey(ev.Stream, ev.Seq), b)
		t.put(eventIndexKey(ev.Stream, ev.Key), seq)
		t.put(eventSeqKey(ev.Stream), seq)
		out, duplicate = ev, false
		return keepIdem(t, idem, ev)
	})
	if err != nil && !errors.Is(err, store.ErrEventConflict) {
		return store.Event{}, false, err
	}
	if err == nil && !duplicate {
		s.noteRetained(store.RetainedEvents(e.Stream), out.OccurredAt)
		s.noteIdem(idem)
	}
	return out, duplicate, err
}

// EventByKey returns the event of stream with idempotency key key, or an
// error wrapping store.ErrNotFound.
func (s *Store) EventByKey(ctx context.Context, stream, key string) (store.Event, error) {
	var out store.Event
	err := s.view(ctx, func(t *txn) error {
		ie, err := t.get(eventIndexKey(stream, key))
		if err != nil {
			return err
		}
		if !ie.exists || len(ie.val) != 8 {
			return fmt.Errorf("%w: event %s key %s", store.ErrNotFound, stream, key)
		}
		out, err = getEvent(t, stream, binary.BigEndian.Uint64(ie.val))
		return err
	})
	return out, err
}

// ReadEvents returns up to limit events of stream with Seq after after,
// in order; an event this build cannot decode is skipped.
func (s *Store) ReadEvents(ctx context.Context, stream string, after uint64, limit int) ([]store.Event, error) {
	var out []store.Event
	err := s.view(ctx, func(t *txn) error {
		last, err := lastSeq(t, eventSeqKey(stream))
		if err != nil {
			return err
		}
		for len(out) < limit && after < last {
			seqs, err := s.seqsAfter(ctx, t, eventPrefix(stream), after, last, limit-len(out))
			if err != nil || len(seqs) == 0 {
				return err
			}
			for _, seq := range seqs {
				ev, err := getEvent(t, stream, seq)
				if err == nil {
					out = append(out, ev)
				} else if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrCorrupt) {
					return err
				}
				after = seq
			}
		}
		return nil
	})
	return out, err
}

// PruneEvents deletes the events of stream that occurred before cutoff,
// oldest first, with their idempotency keys, and stops at the first
// event at or after cutoff. Once pruned, a key may be appended again.
func (s *Store) PruneEvents(ctx context.Context, stream string, cutoff time.Time) (int, error) {
	total := 0
	for {
		n, _, err := s.pruneEventBatch(ctx, stream, cutoff, 200)
		total += n
		if err != nil || n == 0 {
			return total, err
		}
	}
}

// pruneEventBatch deletes up to limit of stream's oldest events before
// cutoff in one commit, and returns how many and the seq after the last.
func (s *Store) pruneEventBatch(ctx context.Context, stream string, cutoff time.Time, limit int) (int, uint64, error) {
	keys, err := s.scan(ctx, eventPrefix(stream)+">", true)
	if err != nil {
		return 0, 0, err
	}
	n := 0
	var next uint64
	err = s.update(ctx, "prune-events", func(t *txn) error {
		n, next = 0, 0
		for _, k := range keys {
			if n >= limit {
				break
			}
			seq, ok := parseHex16(strings.TrimPrefix(k.key, eventPrefix(stream)))
			if !ok {
				continue
			}
			ev, err := getEvent(t, stream, seq)
			if err != nil {
				continue // held aside, or gone: not ours to delete
			}
			if !ev.OccurredAt.Before(cutoff) {
				break
			}
			t.del(eventKey(stream, seq))
			t.del(eventIndexKey(stream, ev.Key))
			n++
			next = seq + 1
		}
		return nil
	})
	return n, next, err
}
