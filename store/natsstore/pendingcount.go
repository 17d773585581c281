package natsstore

import (
	"context"
	"strconv"
	"sync"

	"github.com/vigilhq/vigil/store"
)

// pendingCountKey holds a recipient's count of pending rows, in decimal:
//
//	pc.<tok recipient>  how many rp.<tok recipient>.* entries there are
//
// The count is kept in the batches that add and remove the recipient's
// rp. entries (createRow, rewriteRow), each of which reads it and so
// writes it fenced on the revision read: two commits that move one
// recipient's count never both land on the same value, and the count is
// exact, not a cache. It makes CountPending, on the registration path,
// one read instead of a listing of the recipient's index (a KV watch of
// the whole rp. range per registration). The price is that those commits
// for one recipient now all write one key: in one process they take the
// recipient's countMu stripe (so a burst goes one at a time instead of
// refusing itself round after round), across nodes they contend as a
// recipient's mail already does.
func pendingCountKey(rid string) string { return "pc." + tok(rid) }

// pendingCount is rid's count of pending rows as t sees it. A recipient
// with no count key (one whose pending rows a build before the counts
// wrote, or an import dropped the count of) is counted from its rp.
// index, and the count key's absence is what t read: a commit that
// writes the count from that listing is refused if any other commit
// wrote a count since, and every commit that moves an rp. entry writes
// one, so the listing cannot be stale when the commit lands. (A node of
// an older build, which moves rp. entries without the count, would leave
// it off: every node of a cluster runs a build that keeps it.)
func pendingCount(t *txn, rid string) (int, error) {
	e, err := t.get(pendingCountKey(rid))
	if err != nil {
		return 0, err
	}
	if e.exists {
		if n, err := strconv.Atoi(string(e.val)); err == nil && n >= 0 {
			return n, nil
		}
		// Unreadable: count again; the commit rewrites it, fenced.
	}
	return t.s.countKeys(t.ctx, "rp."+tok(rid)+".>")
}

// addPending moves rid's count of pending rows by d in t. Call it in the
// same transition that puts or deletes the rp. entry, before or after:
// a listing sees the bucket as committed, never t's own writes.
func addPending(t *txn, rid string, d int) error {
	t.serialise(t.s.countLock(rid))
	n, err := pendingCount(t, rid)
	if err != nil {
		return err
	}
	t.put(pendingCountKey(rid), strconv.AppendInt(nil, int64(max(n+d, 0)), 10))
	return nil
}

// countLock is the stripe of countMu that serialises rid's count.
func (s *Store) countLock(rid string) *sync.Mutex { return &s.countMu[stripe(rid, len(s.countMu))] }

// startCreate begins a transition that creates w: a pending row takes
// its recipient's count stripe before anything is read (so no run under
// it reads stale), and the keys the creation reads are read at once
// (with extra, the recipient's record for CreateIfRunning).
func startCreate(t *txn, w store.Watch, extra ...string) error {
	keys := append([]string{rowKey(w.ID)}, extra...)
	if w.State == store.Pending {
		t.serialise(t.s.countLock(w.Recipient.ID))
		keys = append(keys, pendingCountKey(w.Recipient.ID))
	}
	return t.prefetch(keys...)
}

// CountPending counts a recipient's pending watches from its count key
// (one read; a listing of its pending index when it has none yet), and
// stops at upTo (upTo <= 0: all).
func (s *Store) CountPending(ctx context.Context, recipient string, upTo int) (int, error) {
	var n int
	err := s.view(ctx, func(t *txn) error {
		var err error
		n, err = pendingCount(t, recipient)
		return err
	})
	if upTo > 0 {
		n = min(n, upTo)
	}
	return n, err
}
