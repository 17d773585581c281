package natsstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigilhq/vigil/store"
)

// Key layout of the outbox.
//
//	ob.<tok rid>.<seq>         a push record
//	ol.<tok rid>.<seq>         live index: the push is not final (value: rid)
//	pa.<time>.<tok rid>.<seq>  final pushes by when they became final (value: rid)
func pushKey(rid string, seq uint64) string     { return "ob." + tok(rid) + "." + hex16(seq) }
func livePushKey(rid string, seq uint64) string { return "ol." + tok(rid) + "." + hex16(seq) }
func pushAtKey(at time.Time, rid string, seq uint64) string {
	return "pa." + timeTok(at) + "." + tok(rid) + "." + hex16(seq)
}
func messageAtKey(at time.Time, rid string, seq uint64) string {
	return "ma." + timeTok(at) + "." + tok(rid) + "." + hex16(seq)
}

func getPush(t *txn, rid string, seq uint64) (store.Push, error) {
	e, err := t.get(pushKey(rid, seq))
	if err != nil {
		return store.Push{}, err
	}
	if !e.exists {
		return store.Push{}, store.ErrNotFound
	}
	p, err := store.DecodePush(e.val)
	if err != nil {
		return store.Push{}, fmt.Errorf("%w (push %s/%d held aside: %v)", store.ErrNotFound, rid, seq, err)
	}
	return p, nil
}

// putPush writes p and keeps the live and time indexes in step.
func putPush(t *txn, p store.Push) error {
	b, err := store.EncodePush(p)
	if err != nil {
		return err
	}
	t.put(pushKey(p.Recipient, p.Seq), b)
	if p.State.Final() {
		t.put(pushAtKey(p.UpdatedAt, p.Recipient, p.Seq), []byte(p.Recipient))
		t.del(livePushKey(p.Recipient, p.Seq))
		return nil
	}
	t.put(livePushKey(p.Recipient, p.Seq), []byte(p.Recipient))
	return nil
}

// LivePushes calls fn with every push that is not final, by recipient and
// then in mailbox order, reading the live index and those records.
func (s *Store) LivePushes(ctx context.Context, fn func(store.Push) error) error {
	return s.LivePushesOf(ctx, nil, fn)
}

// LivePushesOf is LivePushes for the recipients keep accepts (nil: all):
// the live index's entry carries its recipient, so another recipient's
// push costs its key, never its record.
func (s *Store) LivePushesOf(ctx context.Context, keep func(rid string) bool, fn func(store.Push) error) error {
	keys, err := s.scan(ctx, "ol.>", false)
	if err != nil {
		return err
	}
	t := s.newTxn(ctx)
	var live []store.Push
	for _, k := range keys {
		parts := strings.Split(k.key, ".")
		seq, ok := parseHex16(parts[len(parts)-1])
		if !ok || (keep != nil && !keep(string(k.val))) {
			continue
		}
		p, err := getPush(t, string(k.val), seq)
		if errors.Is(err, store.ErrNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		if !p.State.Final() {
			live = append(live, p)
		}
	}
	slices.SortFunc(live, func(a, b store.Push) int {
		return cmp.Or(strings.Compare(a.Recipient, b.Recipient), cmp.Compare(a.Seq, b.Seq))
	})
	for _, p := range live {
		if err := fn(p); err != nil {
			return err
		}
	}
	return nil
}

// RecoverPushes makes every push found sending unknown, each in a commit
// fenced on its record, and returns the pushes it changed. Call it once at
// start, before any push is begun; on a cluster, RecoverPushesOf.
func (s *Store) RecoverPushes(ctx context.Context, at time.Time) ([]store.Push, error) {
	return s.RecoverPushesOf(ctx, at, nil)
}

// RecoverPushesOf is RecoverPushes for the recipients keep accepts (nil:
// all): a cluster node calls it for the recipients whose push partition
// it has just gained, so it never turns unknown a push another live node
// owns and may be sending.
func (s *Store) RecoverPushesOf(ctx context.Context, at time.Time, keep func(rid string) bool) ([]store.Push, error) {
	var sending []store.Push
	if err := s.LivePushesOf(ctx, keep, func(p store.Push) error {
		if p.State == store.PushSending {
			sending = append(sending, p)
		}
		return nil
	}); err != nil {
		return nil, err
	}
	var out []store.Push
	const batch = 200
	for i := 0; i < len(sending); i += batch {
		part := sending[i:min(i+batch, len(sending))]
		var done []store.Push
		err := s.update(ctx, "recover", func(t *txn) error {
			done = done[:0]
			for _, old := range part {
				p, err := getPush(t, old.Recipient, old.Seq)
				if errors.Is(err, store.ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if p.State != store.PushSending {
					continue // finished meanwhile
				}
				p.State, p.NextAttempt, p.UpdatedAt = store.PushUnknown, nil, at.UTC()
				p.LastError = "the host stopped while the request was in flight"
				if err := putPush(t, p); err != nil {
					return err
				}
				done = append(done, p)
			}
			return nil
		})
		if err != nil {
			return nil, err
		}
		out = append(out, done...)
	}
	if len(out) > 0 {
		s.noteRetained(store.RetainedPushes, at)
	}
	return out, nil
}

// BeginPush marks a pending or retrying push sending, counting the
// attempt, and returns it with its message and recipient, in one commit
// fenced on the push's revision: two senders never both begin it.
// store.ErrPushState if the push is in another state; store.ErrNotFound
// (with the push marked failed) if its message or recipient is gone.
func (s *Store) BeginPush(ctx context.Context, rid string, seq uint64, at time.Time) (store.Push, store.Message, store.RecipientRecord, error) {
	var p store.Push
	var m store.Message
	var rec store.RecipientRecord
	err := s.update(ctx, "begin-push", func(t *txn) error {
		var err error
		p, err = getPush(t, rid, seq)
		if errors.Is(err, store.ErrNotFound) {
			return store.ErrPushState
		}
		if err != nil {
			return err
		}
		if p.State != store.PushPending && p.State != store.PushRetrying {
			return store.ErrPushState
		}
		m, err = getMessage(t, rid, seq)
		if err == nil {
			rec, _, err = getRecipient(t, rid)
			t.fence(recipientRecKey(rid))
		}
		if errors.Is(err, store.ErrNotFound) {
			p.State, p.NextAttempt, p.UpdatedAt = store.PushFailed, nil, at.UTC()
			p.LastError = "the message or its recipient no longer exists"
			return putPush(t, p)
		}
		if err != nil {
			return err
		}
		p.State, p.NextAttempt, p.UpdatedAt = store.PushSending, nil, at.UTC()
		p.Attempts++
		return putPush(t, p)
	})
	if err == nil && p.State == store.PushFailed {
		s.noteRetained(store.RetainedPushes, p.UpdatedAt)
		err = fmt.Errorf("%w: push %s/%d: %s", store.ErrNotFound, rid, seq, p.LastError)
	}
	return p, m, rec, err
}

// FinishPush records what became of an attempt BeginPush started.
// store.ErrPushState if the push is not sending any more.
func (s *Store) FinishPush(ctx context.Context, p store.Push) error {
	if p.State == store.PushSending || !p.State.Valid() {
		return fmt.Errorf("store: finish a push as %q", p.State)
	}
	err := s.update(ctx, "finish-push", func(t *txn) error {
		cur, err := getPush(t, p.Recipient, p.Seq)
		if errors.Is(err, store.ErrNotFound) {
			return store.ErrPushState
		}
		if err != nil {
			return err
		}
		if cur.State != store.PushSending {
			return store.ErrPushState
		}
		return putPush(t, p)
	})
	if err == nil && p.State.Final() {
		s.noteRetained(store.RetainedPushes, p.UpdatedAt)
	}
	return err
}

// PrunePushes deletes final pushes last changed before cutoff, with
// their index entries, and returns how many; a live push is never
// pruned. It decodes every record: Prune's backstop.
func (s *Store) PrunePushes(ctx context.Context, cutoff time.Time) (int, error) {
	keys, err := s.scan(ctx, "ob.>", false)
	if err != nil {
		return 0, err
	}
	var victims []store.Push
	for _, k := range keys {
		p, err := store.DecodePush(k.val)
		if err != nil || !p.State.Final() || !p.UpdatedAt.Before(cutoff) {
			continue
		}
		victims = append(victims, p)
	}
	return s.deleteInBatches(ctx, len(victims), func(t *txn, i int) (bool, error) {
		p := victims[i]
		cur, err := getPush(t, p.Recipient, p.Seq)
		if err != nil || !cur.State.Final() || !cur.UpdatedAt.Equal(p.UpdatedAt) {
			return false, nil
		}
		t.del(pushKey(p.Recipient, p.Seq))
		t.del(pushAtKey(p.UpdatedAt, p.Recipient, p.Seq))
		return true, nil
	})
}

// deleteInBatches runs del for 0..n-1, a bounded number per commit, and
// returns how many it deleted in commits that succeeded.
func (s *Store) deleteInBatches(ctx context.Context, n int, del func(t *txn, i int) (bool, error)) (int, error) {
	const batch = 200
	total := 0
	for i := 0; i < n; i += batch {
		end := min(i+batch, n)
		deleted := 0
		err := s.update(ctx, "prune", func(t *txn) error {
			deleted = 0
			for j := i; j < end; j++ {
				ok, err := del(t, j)
				if err != nil {
					return err
				}
				if ok {
					deleted++
				}
			}
			return nil
		})
		if err != nil {
			return total, err
		}
		total += deleted
	}
	return total, nil
}
