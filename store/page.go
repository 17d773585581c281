package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// DefaultPageBudget is how many index entries one page examines at most
// when Query.Budget is zero.
const DefaultPageBudget = 10_000

// Query selects one page of rows, oldest first.
type Query struct {
	Filter
	// After resumes the walk after this id (exclusive); the zero ID starts
	// at the oldest row. Any id will do, not only one that was returned:
	// ids sort by creation time, so After is a position in that order.
	After ID
	// Limit bounds the rows returned; it must be at least 1.
	Limit int
	// Budget bounds the index entries one page examines (0 is
	// DefaultPageBudget). A page that spends it before it is full ends
	// early, short or even empty, with Next set: a filter that matches
	// few rows never makes one request walk the whole store.
	Budget int
	// Match, when set, keeps only the decoded rows it accepts (who may
	// see a row, for one); like Kind, it is checked within the budget.
	Match func(Watch) bool
}

// Page is one page of a listing.
type Page struct {
	Watches []Watch
	// HeldAside counts the rows this page stepped over because this build
	// cannot read them.
	HeldAside int
	// Next is where the following page starts (pass it as After); the
	// zero ID when the walk reached the end.
	Next ID
}

// indexRange is the narrowest index for f, and whether it is of f's
// state (so the state needs no further check): the recipient's pending
// rows (where the plan keeps them), the recipient's rows, the state's,
// else the rows themselves.
func (s *Store) indexRange(f Filter) (r Range, byState bool) {
	switch {
	case f.Recipient != "" && f.State == Pending && s.plan.RecipientPending:
		return Range{Prefix: kRecipientPending(f.Recipient, ID{}), Fixed: 1, KeysOnly: true}, true
	case f.Recipient != "":
		return Range{Prefix: kRecipient(f.Recipient, ID{}), Fixed: 1, KeysOnly: true}, false
	case f.State != "":
		return Range{Prefix: kState(f.State, ID{}), Fixed: 1, KeysOnly: true}, true
	}
	return Range{Prefix: kRow(ID{})}, false
}

// rowOf reads the row a key of an index names: from v when the key is
// the row's own (a scan of the rows gives them), else by its id. found
// false for an entry whose row is gone; an *UnreadableError when held
// aside.
func (t tx) rowOf(k Key, v []byte) (Watch, bool, error) {
	if k.Fam != FamRow {
		return t.readRow(k.ID)
	}
	w, err := DecodeRow(k.ID[:], v)
	return w, true, err
}

// List returns the readable rows matching f, oldest first, and how many
// rows it skipped because they are held aside.
func (s *Store) List(ctx context.Context, f Filter) ([]Watch, int, error) {
	var out []Watch
	held, err := s.ForEach(ctx, f, func(w Watch) error {
		out = append(out, w)
		return nil
	})
	return out, held, err
}

// ForEach calls fn with each readable row matching f, oldest first,
// without holding them all, walking the narrowest index f allows, and
// returns how many rows it skipped because they are held aside. An
// error from fn stops the walk and is returned.
func (s *Store) ForEach(ctx context.Context, f Filter, fn func(Watch) error) (int, error) {
	held := 0
	err := s.view(ctx, func(t tx) error {
		held = 0
		r, _ := s.indexRange(f)
		return t.Scan(r, func(k Key, v []byte) (bool, error) {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			w, found, err := t.rowOf(k, v)
			var ue *UnreadableError
			switch {
			case errors.As(err, &ue):
				held++
				return true, nil
			case err != nil:
				return false, err
			case !found:
				return true, nil // an index entry whose row is gone
			}
			if (f.State != "" && w.State != f.State) || (f.Kind != "" && w.Kind != f.Kind) || (f.RegisteredBy != "" && w.RegisteredBy != f.RegisteredBy) {
				return true, nil
			}
			if w.State == Pending {
				sc, _, err := t.readSchedule(w.ID)
				if err != nil && !errors.Is(err, ErrNotPending) {
					return false, err
				}
				w.NextCheck = sc.Next
			}
			return true, fn(w)
		})
	})
	return held, err
}

// ForEachPending calls fn with the schedule of every pending watch, read
// from the pending index alone (a row whose index entry carries no
// schedule is read whole), and returns how many it skipped as held
// aside.
func (s *Store) ForEachPending(ctx context.Context, fn func(Schedule) error) (int, error) {
	return s.forEachPendingWhere(ctx, nil, fn)
}

// ForEachPendingIn is ForEachPending for the pending watches of
// partition p of n (ID.Partition): an index entry of another partition
// costs its key, never its row.
func (s *Store) ForEachPendingIn(ctx context.Context, p, n int, fn func(Schedule) error) (int, error) {
	if n < 1 || p < 0 || p >= n {
		return 0, fmt.Errorf("store: partition %d of %d", p, n)
	}
	return s.forEachPendingWhere(ctx, func(id ID) bool { return id.Partition(n) == p }, fn)
}

func (s *Store) forEachPendingWhere(ctx context.Context, keep func(ID) bool, fn func(Schedule) error) (int, error) {
	held := 0
	err := s.view(ctx, func(t tx) error {
		held = 0
		r := Range{Prefix: kState(Pending, ID{}), Fixed: 1, Want: 256}
		return t.Scan(r, func(k Key, v []byte) (bool, error) {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			if keep != nil && !keep(k.ID) {
				return true, nil
			}
			sc, err := t.scheduleOf(k.ID, v)
			if err != nil {
				held++
				return true, nil
			}
			return true, fn(sc)
		})
	})
	return held, err
}

// scheduleOf decodes a pending index entry, reading its row when the
// entry carries no schedule (an older layout's): an error for a row held
// aside or no longer pending.
func (t tx) scheduleOf(id ID, v []byte) (Schedule, error) {
	sc := Schedule{ID: id}
	if decodeSchedule(v, &sc) {
		return sc, nil
	}
	w, err := t.getRow(id)
	if err != nil {
		return sc, err
	}
	if w.State != Pending {
		return sc, ErrNotPending
	}
	sc.Every, sc.Attempts = time.Duration(w.Every), w.Attempts
	if w.ExpiresAt != nil {
		sc.Expires = *w.ExpiresAt
	}
	return sc, nil
}

// ListPage returns one page of the readable rows matching q, oldest
// first. It walks the narrowest index the filter allows (the
// recipient's, else the state's, else the rows) from q.After, examining
// at most q.Budget entries: a state filter on a recipient's index is
// checked by key where reads are local, and only rows that match every
// filter but the kind are decoded. Kind, RegisteredBy and Match have no
// index; they are checked on the decoded row, within the page's budget.
func (s *Store) ListPage(ctx context.Context, q Query) (Page, error) {
	if q.Limit < 1 {
		return Page{}, fmt.Errorf("store: list page: limit %d, want at least 1", q.Limit)
	}
	budget := q.Budget
	if budget <= 0 {
		budget = DefaultPageBudget
	}
	var p Page
	err := s.view(ctx, func(t tx) error {
		p = Page{}
		r, byState := s.indexRange(q.Filter)
		if q.After != (ID{}) {
			from := r.Prefix
			from.ID = q.After
			r = r.FromKey(from)
		}
		examined := 0
		var last ID
		return t.Scan(r, func(k Key, v []byte) (bool, error) {
			if err := ctx.Err(); err != nil {
				return false, err
			}
			if k.ID == q.After && q.After != (ID{}) {
				return true, nil // the cursor itself: the page starts after it
			}
			if len(p.Watches) == q.Limit || examined == budget {
				p.Next = last // another entry follows: the walk goes on from here
				return false, nil
			}
			examined++
			last = k.ID
			if q.State != "" && !byState && !s.plan.Remote {
				if _, ok, err := t.Get(kState(q.State, k.ID)); err != nil || !ok {
					return err == nil, err
				}
			}
			w, found, err := t.rowOf(k, v)
			var ue *UnreadableError
			switch {
			case errors.As(err, &ue):
				p.HeldAside++
				return true, nil
			case err != nil:
				return false, err
			case !found:
				return true, nil // an index entry whose row is gone
			}
			if (q.Kind != "" && w.Kind != q.Kind) || (q.State != "" && w.State != q.State) ||
				(q.RegisteredBy != "" && w.RegisteredBy != q.RegisteredBy) || (q.Match != nil && !q.Match(w)) {
				return true, nil
			}
			p.Watches = append(p.Watches, w)
			return true, nil
		})
	})
	return p, err
}

// CountByState counts readable and held-aside rows by the state index,
// reading keys only.
func (s *Store) CountByState(ctx context.Context) (map[State]int, error) {
	out := map[State]int{}
	err := s.view(ctx, func(t tx) error {
		clear(out)
		return countRuns(ctx, t, Range{Prefix: Key{Fam: FamState}, KeysOnly: true},
			func(k Key) string { return k.Sub },
			func(sub string, n int) { out[State(sub)] += n })
	})
	return out, err
}

// countRuns counts r's keys by the name of(k) gives each, a run of equal
// names at a time (the keys come in order, so the name's part is a run
// when it is the first the range leaves open).
func countRuns(ctx context.Context, t tx, r Range, of func(Key) string, add func(string, int)) error {
	var name string
	run, n := 0, 0
	err := t.Scan(r, func(k Key, _ []byte) (bool, error) {
		if n++; n%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return false, err
			}
		}
		if v := of(k); run == 0 || v != name {
			if run > 0 {
				add(name, run)
			}
			name, run = v, 0
		}
		run++
		return true, nil
	})
	if run > 0 {
		add(name, run)
	}
	return err
}

// CountPendingByKind counts the pending rows by kind from the
// pending-by-kind index's keys: no value is read and no row decoded. A
// held-aside row has no entry and is not counted.
func (s *Store) CountPendingByKind(ctx context.Context) (map[string]int, error) {
	out := map[string]int{}
	err := s.view(ctx, func(t tx) error {
		clear(out)
		return countRuns(ctx, t, Range{Prefix: Key{Fam: FamPendingKind}, KeysOnly: true},
			func(k Key) string { return k.Name },
			func(kind string, n int) { out[kind] += n })
	})
	return out, err
}

// The pending-by-kind index holds one entry per pending row, written in
// the transaction that makes the row pending and deleted in the one that
// moves it out. Rows an older build wrote have none: New, while the
// marker "pkv" is absent and the layout may hold such rows
// (Plan.Backfill), indexes every pending row from the state index in
// batches (each its own transaction, reading each row's kind), then
// writes the marker; an interrupted backfill runs again whole at the next
// New.
func (s *Store) backfillPendingKinds(ctx context.Context) error {
	batch := min(pendingKindsBatch, s.batch())
	var after *ID
	for {
		done := false
		var last ID
		err := s.update(ctx, TxOptions{Name: "backfill-pending-kinds"}, func(t tx) error {
			done = false
			if _, ok, err := t.Get(kMarker(pendingKindsMarkerName)); err != nil || ok {
				done = ok
				return err
			}
			r := Range{Prefix: kState(Pending, ID{}), Fixed: 1, KeysOnly: true}
			if after != nil {
				r = r.FromKey(kState(Pending, *after))
			}
			var ids []ID
			if err := t.Scan(r, func(k Key, _ []byte) (bool, error) {
				if after != nil && k.ID == *after {
					return true, nil
				}
				ids = append(ids, k.ID)
				return len(ids) < batch, nil
			}); err != nil {
				return err
			}
			for _, id := range ids {
				w, found, err := t.readRow(id)
				var ue *UnreadableError
				switch {
				case !found, errors.As(err, &ue):
					continue // a dangling entry, or held aside: no entry
				case err != nil:
					return err
				}
				if w.State == Pending {
					t.Put(kPendingKind(w.Kind, w.ID), nil)
				}
			}
			if len(ids) < batch {
				done = true
				t.Put(kMarker(pendingKindsMarkerName), nil)
				return nil
			}
			last = ids[len(ids)-1]
			return nil
		})
		if err != nil {
			return fmt.Errorf("store: indexing pending rows by kind: %w", err)
		}
		if done {
			return nil
		}
		after = &last
	}
}

// pendingKindsBatch bounds how many pending rows one backfill
// transaction reads and indexes.
const pendingKindsBatch = 1000

// pendingKindsMarkerName is the marker that says the pending-by-kind
// index covers every pending row.
const pendingKindsMarkerName = "pkv"
