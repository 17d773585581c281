package store

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/dgraph-io/badger/v4"
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

// ListPage returns one page of the readable rows matching q, oldest
// first. It walks the narrowest index the filter allows (the recipient's,
// else the state's, else the rows) from q.After: a state filter on a
// recipient's index is checked by key, without decoding the row, and only
// rows that match every filter but the kind are decoded. Kind,
// RegisteredBy and Match have no index; they are checked on the decoded
// row, within the page's budget.
func (s *Badger) ListPage(ctx context.Context, q Query) (Page, error) {
	if q.Limit < 1 {
		return Page{}, fmt.Errorf("store: list page: limit %d, want at least 1", q.Limit)
	}
	budget := q.Budget
	if budget <= 0 {
		budget = DefaultPageBudget
	}
	var p Page
	err := s.db.View(func(txn *badger.Txn) error {
		prefix, byState := indexPrefix(q.Filter)
		start := prefix
		if q.After != (ID{}) {
			start = append(append(bytes.Clone(prefix), q.After[:]...), 0)
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		examined := 0
		var last ID
		for it.Seek(start); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			key := it.Item().Key()
			if len(key) != len(prefix)+len(ID{}) {
				continue // not an entry of this index
			}
			if len(p.Watches) == q.Limit || examined == budget {
				p.Next = last // another entry follows: the walk goes on from here
				return nil
			}
			examined++
			copy(last[:], key[len(prefix):])
			if q.State != "" && !byState {
				if _, err := txn.Get(stateKey(q.State, last)); errors.Is(err, badger.ErrKeyNotFound) {
					continue
				} else if err != nil {
					return err
				}
			}
			w, err := readRow(txn, last)
			var ue *UnreadableError
			switch {
			case errors.Is(err, badger.ErrKeyNotFound):
				continue // an index entry whose row is gone
			case errors.As(err, &ue):
				p.HeldAside++
				continue
			case err != nil:
				return err
			}
			if (q.Kind != "" && w.Kind != q.Kind) || (q.State != "" && w.State != q.State) ||
				(q.RegisteredBy != "" && w.RegisteredBy != q.RegisteredBy) || (q.Match != nil && !q.Match(w)) {
				continue
			}
			p.Watches = append(p.Watches, w)
		}
		return nil
	})
	return p, err
}

// indexPrefix is the narrowest index for f, and whether it is the state
// index (so the state needs no further check).
func indexPrefix(f Filter) (prefix []byte, byState bool) {
	switch {
	case f.Recipient != "":
		return append(append(append([]byte{}, recipientPfx...), f.Recipient...), 0), false
	case f.State != "":
		return append(append(append([]byte{}, statePrefix...), f.State...), '/'), true
	}
	return rowPrefix, false
}

// CountPending counts a recipient's pending watches, stopping at upTo (a
// count of upTo means "at least upTo"; upTo <= 0 counts them all). Away
// from upTo it answers from the count the commits keep (pendingcount.go);
// near it, and for a recipient not counted yet, it walks the recipient's
// index by key and asks the pending index about each, decoding no row:
// the cost is the recipient's own rows, never the store's.
func (s *Badger) CountPending(ctx context.Context, recipient string, upTo int) (int, error) {
	if c, ok := s.pending.get(recipient); ok && (upTo <= 0 || c < upTo-recountMargin(upTo)) {
		return c, nil
	}
	n, err := s.countPending(ctx, recipient, upTo)
	// A walk that stopped at upTo counted "at least upTo": kept as the
	// count, it would be low by whatever lay beyond, and trusted once
	// cancels took it away from the bound.
	if err == nil && (upTo <= 0 || n < upTo) {
		s.pending.set(recipient, n)
	}
	return n, err
}

// countPending is CountPending's exact walk.
func (s *Badger) countPending(ctx context.Context, recipient string, upTo int) (int, error) {
	n := 0
	err := s.db.View(func(txn *badger.Txn) error {
		prefix, _ := indexPrefix(Filter{Recipient: recipient})
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		var id ID
		for it.Rewind(); it.Valid() && (upTo <= 0 || n < upTo); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			key := it.Item().Key()
			if len(key) != len(prefix)+len(id) {
				continue
			}
			copy(id[:], key[len(prefix):])
			switch _, err := txn.Get(stateKey(Pending, id)); {
			case err == nil:
				n++
			case !errors.Is(err, badger.ErrKeyNotFound):
				return err
			}
		}
		return nil
	})
	return n, err
}
