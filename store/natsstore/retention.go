package natsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/vigilhq/vigil/store"
)

// OnRetained sets fn to be told, after each commit of this Store that
// wrote a retained record, its class and time; nil stops the calls. fn
// runs on the writer's goroutine and must not block. Commits of other
// processes are not told.
func (s *Store) OnRetained(fn func(c store.Retained, at time.Time)) {
	if fn == nil {
		s.retained.Store(nil)
		return
	}
	s.retained.Store(&fn)
}

func (s *Store) noteRetained(c store.Retained, at time.Time) {
	if fn := s.retained.Load(); fn != nil {
		(*fn)(c, at)
	}
}

// classIndex is the time index of a class not keyed by time.
func classIndex(c store.Retained) (string, error) {
	switch c {
	case store.RetainedSettled:
		return "sa.", nil
	case store.RetainedMessages:
		return "ma.", nil
	case store.RetainedPushes:
		return "pa.", nil
	case store.RetainedIdem:
		return "ia.", nil
	}
	return "", fmt.Errorf("%w: %q", store.ErrUnknownClass, c)
}

// Oldest returns the time of c's oldest record, or ok false when c holds
// none. It lists the class's index keys (no values): JetStream orders a
// bucket by write, not by key, so there is no one-entry seek.
func (s *Store) Oldest(ctx context.Context, c store.Retained) (at time.Time, ok bool, err error) {
	if stream, isEvents := c.Stream(); isEvents {
		evs, err := s.ReadEvents(ctx, stream, 0, 1)
		if err != nil || len(evs) == 0 {
			return time.Time{}, false, err
		}
		return evs[0].OccurredAt, true, nil
	}
	pfx, err := classIndex(c)
	if err != nil {
		return time.Time{}, false, err
	}
	keys, err := s.scan(ctx, pfx+">", true)
	if err != nil || len(keys) == 0 {
		return time.Time{}, false, err
	}
	n, valid := parseTimeTok(strings.SplitN(keys[0].key, ".", 3)[1])
	if !valid {
		return time.Time{}, false, fmt.Errorf("%w: index key %q", store.ErrCorrupt, keys[0].key)
	}
	return time.Unix(0, n).UTC(), true, nil
}

// maxPruneBatch bounds one PruneOldest commit: four keys per record at
// most stay inside maxBatch.
const maxPruneBatch = 200

// PruneOldest deletes up to limit (at most 200 per call) of c's records
// older than cutoff, oldest first, in one commit, and returns how many
// entries it took off c's order. A pending row, a live push and a
// held-aside record are never deleted.
func (s *Store) PruneOldest(ctx context.Context, c store.Retained, cutoff time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, fmt.Errorf("store: prune a batch of %d", limit)
	}
	limit = min(limit, maxPruneBatch)
	if stream, ok := c.Stream(); ok {
		n, _, err := s.pruneEventBatch(ctx, stream, cutoff, limit)
		return n, err
	}
	pfx, err := classIndex(c)
	if err != nil {
		return 0, err
	}
	keys, err := s.scan(ctx, pfx+">", false)
	if err != nil {
		return 0, err
	}
	cut := atNanos(cutoff)
	var victims []kvEntry
	for _, k := range keys {
		if len(victims) == limit {
			break
		}
		n, ok := parseTimeTok(strings.SplitN(k.key, ".", 3)[1])
		if !ok {
			return 0, fmt.Errorf("%w: index key %q", store.ErrCorrupt, k.key)
		}
		if n >= cut {
			break
		}
		victims = append(victims, k)
	}
	if len(victims) == 0 {
		return 0, nil
	}
	err = s.update(ctx, "prune", func(t *txn) error {
		for _, v := range victims {
			if err := s.drop(t, c, v); err != nil {
				return err
			}
			t.del(v.key)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	return len(victims), nil
}

// drop deletes the record an index entry names, if it still carries the
// entry's time and may be deleted.
func (s *Store) drop(t *txn, c store.Retained, v kvEntry) error {
	parts := strings.Split(v.key, ".")
	at, _ := parseTimeTok(parts[1])
	switch c {
	case store.RetainedIdem:
		return dropIdem(t, v.key, at)
	case store.RetainedSettled:
		id, ok := idOf(v.key)
		if !ok {
			return fmt.Errorf("%w: settled index entry %q", store.ErrCorrupt, v.key)
		}
		w, err := getRow(t, id)
		if err != nil {
			return nil // gone, or held aside: never ours to delete
		}
		if w.State == store.Pending || w.SettledAt == nil || atNanos(*w.SettledAt) != at {
			return nil
		}
		deleteRow(t, w)
	case store.RetainedMessages, store.RetainedPushes:
		seq, ok := parseHex16(parts[len(parts)-1])
		if !ok {
			return fmt.Errorf("%w: index entry %q", store.ErrCorrupt, v.key)
		}
		rid := string(v.val)
		if c == store.RetainedMessages {
			m, err := getMessage(t, rid, seq)
			if err == nil && atNanos(m.At) == at {
				t.del(mailKey(rid, seq))
			}
			return nil
		}
		p, err := getPush(t, rid, seq)
		if err == nil && p.State.Final() && atNanos(p.UpdatedAt) == at {
			t.del(pushKey(rid, seq))
		}
	}
	return nil
}

// deleteRow deletes a settled row and its index entries.
func deleteRow(t *txn, w store.Watch) {
	t.del(rowKey(w.ID))
	t.del(stateKey(w.State, w.ID))
	t.del(recipientKey(w.Recipient.ID, w.ID))
	if w.SettledAt != nil {
		t.del(settledAtKey(*w.SettledAt, w.ID))
	}
}

// Prune deletes rows settled before cutoff, and mailbox messages and
// final outbox records older than it, and returns how many; pending and
// held-aside rows are never pruned. It decodes every row, message and
// push: the backstop PruneOldest's indexes make rare.
func (s *Store) Prune(ctx context.Context, cutoff time.Time) (int, error) {
	total := 0
	msgs, err := s.scan(ctx, "mb.>", false)
	if err != nil {
		return 0, err
	}
	type msgRef struct {
		rid string
		m   store.Message
	}
	var oldMsgs []msgRef
	for _, k := range msgs {
		var sm storedMessage
		if json.Unmarshal(k.val, &sm) != nil || sm.V != rowVersion || !sm.At.Before(cutoff) {
			continue
		}
		// The recipient is in the at index's value; find it by the message.
		oldMsgs = append(oldMsgs, msgRef{m: sm.Message, rid: strings.Split(k.key, ".")[1]})
	}
	n, err := s.deleteInBatches(ctx, len(oldMsgs), func(t *txn, i int) (bool, error) {
		r := oldMsgs[i]
		key := "mb." + r.rid + "." + hex16(r.m.Seq)
		e, err := t.get(key)
		if err != nil || !e.exists {
			return false, err
		}
		t.del(key)
		t.del("ma." + timeTok(r.m.At) + "." + r.rid + "." + hex16(r.m.Seq))
		return true, nil
	})
	total += n
	if err != nil {
		return total, err
	}
	n, err = s.PrunePushes(ctx, cutoff)
	total += n
	if err != nil {
		return total, err
	}
	rows, err := s.scan(ctx, "w.>", false)
	if err != nil {
		return total, err
	}
	var victims []store.ID
	for _, k := range rows {
		w, err := store.DecodeRow([]byte(k.key), k.val)
		if err == nil && w.State != store.Pending && w.SettledAt != nil && w.SettledAt.Before(cutoff) {
			victims = append(victims, w.ID)
		}
	}
	n, err = s.deleteInBatches(ctx, len(victims), func(t *txn, i int) (bool, error) {
		w, err := getRow(t, victims[i])
		if err != nil || w.State == store.Pending || w.SettledAt == nil || !w.SettledAt.Before(cutoff) {
			return false, nil
		}
		deleteRow(t, w)
		return true, nil
	})
	return total + n, err
}
