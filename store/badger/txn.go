package badger

import (
	"context"
	"errors"
	"fmt"
	"sync"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/vigilhq/vigil/store"
)

// maxCommitAttempts bounds how often a transaction that lost a conflict
// runs; past it the commit is store.ErrBusy.
const maxCommitAttempts = 9

// stripe serialises the transactions of the hints in its slot.
type stripe struct {
	// mu is held by one transaction of the stripe at a time, from the run
	// that takes it to the end of its commit (not its sync).
	mu sync.Mutex
	// tail, guarded by mu, is closed once the then of the last commit of
	// the stripe that had one has returned; nil before any.
	tail chan struct{}
}

// hold is the stripe one Update holds across its runs, or none.
type hold struct {
	kv *KV
	st *stripe
}

// take locks hint's stripe, unless the update holds one already (or is
// a view's).
func (h *hold) take(hint string) {
	if h.kv == nil || h.st != nil {
		return
	}
	st := &h.kv.stripes[int(store.SlotOf(hint))%len(h.kv.stripes)]
	st.mu.Lock()
	h.st = st
}

func (h *hold) release() {
	if h.st != nil {
		h.st.mu.Unlock()
	}
}

// Update implements store.KV: fn in a read-write transaction, run again
// on a write conflict (two transitions of the same keys at once: the
// loser reads again), committed, and returned once the commit is
// durable as Options ask: with SyncWrites, once a sync that started
// after the commit has finished. o.Then is called after that, after the
// then of every earlier commit of the same stripe.
func (s *KV) Update(ctx context.Context, o store.TxOptions, fn func(store.Tx) error) error {
	t := &tx{h: hold{kv: s}} // one for every run: the stripe is held across them
	if o.Serial != "" {
		t.h.take(o.Serial)
	}
	return s.update(ctx, o.Client, &t.h, func(txn *badgerdb.Txn) error {
		t.txn, t.err = txn, nil
		if err := fn(t); err != nil {
			return err
		}
		return t.err
	}, o.Committed, o.Then)
}

// update runs f and commits it as Update does, with h's stripe (when it
// holds one: it may take it during a run) released once committed, not
// around the wait for the sync: writers serialised on a stripe still
// share syncs. Every write of the store goes through it.
func (s *KV) update(ctx context.Context, client bool, h *hold, f func(txn *badgerdb.Txn) error, committed, then func()) (err error) {
	if h == nil {
		h = &hold{kv: s}
	}
	if err := s.disk.admit(client); err != nil {
		h.release()
		return err
	}
	var prev, mine chan struct{}
	if s.group != nil {
		s.group.begin()
	}
	err = s.commit(ctx, f, func() {
		if committed != nil {
			committed()
		}
		if then != nil && h.st != nil {
			prev, mine = h.st.tail, make(chan struct{})
			h.st.tail = mine
		}
	})
	h.release()
	if s.group != nil {
		s.group.end()
		if err == nil {
			err = s.group.wait()
		}
	}
	if mine != nil {
		defer close(mine) // even if then panics: the next must not hang
		if prev != nil {
			<-prev
		}
	}
	if err == nil && then != nil {
		then()
	}
	return err
}

// commit runs f in a read-write transaction and commits it, and calls
// committed if the commit succeeded.
func (s *KV) commit(ctx context.Context, f func(txn *badgerdb.Txn) error, committed func()) error {
	for attempt := 0; ; attempt++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		err := s.open(func() error { return s.db.Update(f) })
		if errors.Is(err, badgerdb.ErrConflict) {
			if attempt < maxCommitAttempts-1 {
				continue
			}
			err = fmt.Errorf("%w (%d attempts): %w", store.ErrBusy, maxCommitAttempts, err)
		}
		if err == nil {
			committed()
		}
		return err
	}
}

// View implements store.KV: fn in a read transaction.
func (s *KV) View(ctx context.Context, fn func(store.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	return s.open(func() error {
		return s.db.View(func(txn *badgerdb.Txn) error { return fn(&tx{txn: txn}) })
	})
}

// open runs a transaction, f, unless Close has begun (ErrClosed), and
// holds Close off until it returns.
func (s *KV) open(f func() error) error {
	s.gate.Lock()
	if s.closed {
		s.gate.Unlock()
		return ErrClosed
	}
	s.inflight++
	s.gate.Unlock()
	defer func() {
		s.gate.Lock()
		if s.inflight--; s.inflight == 0 && s.closed {
			s.idle.Broadcast()
		}
		s.gate.Unlock()
	}()
	return f()
}

// tx is one badger transaction as a store.Tx. Badger checks at the
// commit every key the transaction read, by Get or by iteration, so a
// fence is a read.
type tx struct {
	txn *badgerdb.Txn
	h   hold // a View's holds nothing
	// err is the first write's error, returned at the commit.
	err error
	// buf is a Get's key, which badger does not keep.
	buf []byte
}

func (t *tx) Get(k store.Key) ([]byte, bool, error) {
	key, err := appendKey(t.buf[:0], k, len(layouts[k.Fam].segs))
	if err != nil {
		return nil, false, err
	}
	t.buf = key
	item, err := t.txn.Get(key)
	if errors.Is(err, badgerdb.ErrKeyNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	v, err := item.ValueCopy(nil)
	return v, err == nil, err
}

func (t *tx) Put(k store.Key, v []byte) {
	key, err := keyOf(k)
	if err == nil {
		err = t.txn.Set(key, v)
	}
	t.fail(err)
}

func (t *tx) Delete(k store.Key) {
	key, err := keyOf(k)
	if err == nil {
		err = t.txn.Delete(key)
	}
	t.fail(err)
}

func (t *tx) fail(err error) {
	if err != nil && t.err == nil {
		t.err = err
	}
}

// Fence reads k, so the commit checks it (a key the transaction already
// read is checked anyway).
func (t *tx) Fence(k store.Key) {
	key, err := keyOf(k)
	if err == nil {
		_, err = t.txn.Get(key)
	}
	if err != nil && !errors.Is(err, badgerdb.ErrKeyNotFound) {
		t.fail(err)
	}
}

// Prefetch does nothing: a Get is a local read.
func (t *tx) Prefetch(...store.Key) error { return nil }

func (t *tx) Serialise(hint string) { t.h.take(hint) }

// Scan iterates the range's prefix in badger's key order, which is the
// parts' order: each layout's parts sort as their values do.
func (t *tx) Scan(r store.Range, fn func(store.Key, []byte) (bool, error)) error {
	l, ok := layouts[r.Prefix.Fam]
	if !ok {
		return fmt.Errorf("%w: family %q", store.ErrUnknownRecord, r.Prefix.Fam)
	}
	fixed := min(r.Fixed, len(l.segs))
	pfx, err := appendKey(nil, r.Prefix, fixed)
	if err != nil {
		return err
	}
	size := 100
	if r.Want > 0 {
		size = min(r.Want, size)
	}
	it := t.txn.NewIterator(badgerdb.IteratorOptions{Prefix: pfx, PrefetchValues: !r.KeysOnly, PrefetchSize: size})
	defer it.Close()
	if r.Seek {
		from, err := keyOf(r.From)
		if err != nil {
			return err
		}
		it.Seek(from)
	} else {
		it.Rewind()
	}
	// The names of the parts the range fixes are the prefix's; the others
	// are made strings once per run of equal ones.
	fixesName, fixesSub := fixesPart(l, fixed, store.PartName), fixesPart(l, fixed, store.PartSub)
	var names, subs interned
	var p parsed
	for ; it.Valid(); it.Next() {
		item := it.Item()
		if l.pfx == "" {
			p, ok = parseKey(item.Key())
			ok = ok && p.k.Fam == r.Prefix.Fam
		} else {
			// No family's prefix begins another's: every key under
			// this one is of the range's family.
			ok = p.in(r.Prefix.Fam, &l, item.Key()[len(l.pfx):])
		}
		if !ok {
			continue
		}
		k := p.k
		if fixesName {
			if string(p.name) != r.Prefix.Name {
				continue // a longer name under the prefix: not the range's
			}
			k.Name = r.Prefix.Name
		} else {
			k.Name = names.of(p.name)
		}
		if fixesSub {
			if string(p.sub) != r.Prefix.Sub {
				continue
			}
			k.Sub = r.Prefix.Sub
		} else {
			k.Sub = subs.of(p.sub)
		}
		var more bool
		if r.KeysOnly {
			more, err = fn(k, nil)
		} else {
			verr := item.Value(func(v []byte) error {
				more, err = fn(k, v)
				return nil
			})
			if verr != nil {
				return verr
			}
		}
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// fixesPart says whether the first fixed parts of l include p.
func fixesPart(l layout, fixed int, p store.Part) bool {
	for _, s := range l.segs[:fixed] {
		if s.p == p {
			return true
		}
	}
	return false
}

// interned makes a name a string once per run of equal names.
type interned struct {
	s string
	n bool
}

func (i *interned) of(b []byte) string {
	if b == nil {
		return ""
	}
	if !i.n || string(b) != i.s {
		i.s, i.n = string(b), true
	}
	return i.s
}
