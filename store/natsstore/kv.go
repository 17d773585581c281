package natsstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vigilhq/vigil/store"
)

var (
	_ store.KV       = (*Store)(nil)
	_ store.Tx       = (*txn)(nil)
	_ store.Follower = (*Store)(nil)
	_ store.Copier   = (*Store)(nil)
)

// Update implements store.KV: fn in a transition committed as one
// atomic batch, each key it read and writes (and each it fenced)
// expected at the revision read, run again on what is there now each
// time the batch loses a race (store.ErrBusy after maxAttempts runs); an
// owner's transition also fenced on its row's partition (fence.go).
// o.Committed and then o.Then are called once the batch is stored, with
// the transition's stripe still held, so those of one hint come in
// commit order.
func (s *Store) Update(ctx context.Context, o store.TxOptions, fn func(store.Tx) error) error {
	var h held
	defer h.release()
	if o.Serial != "" {
		mu := s.stripe(o.Serial)
		mu.Lock()
		h.mu = mu
	}
	err := s.updateHeld(ctx, o.Name, &h, func(t *txn) error {
		if o.Owner != (store.ID{}) {
			if err := s.ownerOf(t, o.Owner); err != nil {
				return err
			}
		}
		return fn(t)
	})
	if err != nil {
		return err
	}
	if o.Committed != nil {
		o.Committed()
	}
	if o.Then != nil {
		o.Then()
	}
	return nil
}

// View implements store.KV: fn on reads alone, each from the stream's
// leader when it is made.
func (s *Store) View(ctx context.Context, fn func(store.Tx) error) error {
	return s.view(ctx, func(t *txn) error { return fn(t) })
}

// DueBucket is the width of the due index's buckets here
// (store.Plan.DueBucket): a window's scan lists a minute's keys a
// request, never every pending watch's. A minute holds what a host
// registers for one instant of a minute's spread; the scheduler's window
// spans a few.
const DueBucket = time.Minute

// Plan implements store.KV: a scan here is a listing of the keys under
// a subject (JetStream orders a bucket by write, not by key), every read
// a round trip, a batch at most maxBatch messages, and a value at most
// what one message holds (maxValue).
func (s *Store) Plan() store.Plan {
	return store.Plan{Remote: true, RecipientPending: true, DueBucket: DueBucket, MaxWrites: 800, MaxValue: s.maxValue()}
}

// msgRoom is what a value leaves of a message for its subject and the
// headers a commit sets (batch, expected sequence and its subject,
// message id, TTL, operation): each is under a few hundred bytes.
const msgRoom = 64 << 10

// maxValue is the largest value one message of the bucket holds: the
// server's max payload (1 MiB unless its operator set another), or the
// stream's own max message size where one is set, less msgRoom (half
// of a message smaller than twice that).
func (s *Store) maxValue() int {
	limit := s.nc.MaxPayload()
	if s.stream != nil {
		if m := int64(s.stream.CachedInfo().Config.MaxMsgSize); m > 0 && m < limit {
			limit = m
		}
	}
	return int(limit - min(msgRoom, limit/2))
}

// stripe is the mutex of hint's stripe.
func (s *Store) stripe(hint string) *sync.Mutex { return &s.stripes[stripe(hint, len(s.stripes))] }

func (t *txn) Get(k store.Key) ([]byte, bool, error) {
	key, err := keyOf(k)
	if err != nil {
		return nil, false, err
	}
	e, err := t.get(key)
	if err != nil || !e.exists {
		return nil, false, err
	}
	if store.KeysAlone(k.Fam) {
		return nil, true, nil
	}
	return e.val, true, nil
}

func (t *txn) Put(k store.Key, v []byte) {
	key, err := keyOf(k)
	if err != nil {
		t.fail(err)
		return
	}
	t.put(key, valueOf(k, v))
}

func (t *txn) Delete(k store.Key) {
	key, err := keyOf(k)
	if err != nil {
		t.fail(err)
		return
	}
	t.del(key)
}

func (t *txn) Fence(k store.Key) {
	key, err := keyOf(k)
	if err != nil {
		t.fail(err)
		return
	}
	if _, read := t.reads[key]; !read {
		if _, err := t.get(key); err != nil {
			t.fail(err)
			return
		}
	}
	t.fence(key)
}

func (t *txn) Prefetch(ks ...store.Key) error {
	keys := make([]string, 0, len(ks))
	for _, k := range ks {
		key, err := keyOf(k)
		if err != nil {
			return err
		}
		keys = append(keys, key)
	}
	return t.prefetch(keys...)
}

func (t *txn) Serialise(hint string) { t.serialise(t.s.stripe(hint)) }

// Scan lists the range's keys under its subject pattern (with their
// values unless the range wants keys alone), reads them back, keeps each
// as read by this transition (so a Get of it is answered from the scan,
// and a write of it expects its revision) and gives them in key order.
func (t *txn) Scan(r store.Range, fn func(store.Key, []byte) (bool, error)) error {
	pat, err := pattern(r)
	if err != nil {
		return err
	}
	// The families of keys alone keep their recipient as their value:
	// read it, to name a recipient a key holds one way.
	metaOnly := r.KeysOnly && !store.KeysAlone(r.Prefix.Fam)
	entries, err := t.s.scan(t.ctx, pat, metaOnly)
	if err != nil {
		return err
	}
	type found struct {
		k store.Key
		v []byte
	}
	keys := make([]found, 0, len(entries))
	fixed := r.Prefix.Fam.Parts()[:min(r.Fixed, len(r.Prefix.Fam.Parts()))]
	for _, e := range entries {
		k, ok := parseKey(e.key, e.val)
		if !ok {
			continue
		}
		// The pattern matched the fixed parts' tokens: they are the
		// prefix's, a name kept one way included.
		for _, p := range fixed {
			switch p {
			case store.PartName:
				k.Name, k.OneWay = r.Prefix.Name, k.OneWay&^store.OneWayName|r.Prefix.OneWay&store.OneWayName
			case store.PartSub:
				k.Sub, k.OneWay = r.Prefix.Sub, k.OneWay&^store.OneWaySub|r.Prefix.OneWay&store.OneWaySub
			}
		}
		if !r.Contains(k) {
			continue
		}
		if !metaOnly {
			if _, written := t.widx[e.key]; !written {
				t.reads[e.key] = entry{val: e.val, rev: e.rev, exists: true}
			}
		}
		v := e.val
		if store.KeysAlone(k.Fam) {
			v = nil
		}
		keys = append(keys, found{k, v})
	}
	slices.SortStableFunc(keys, func(a, b found) int { return store.Compare(a.k, b.k) })
	for _, f := range keys {
		more, err := fn(f.k, f.v)
		if err != nil || !more {
			return err
		}
	}
	return nil
}

// fail records a write this transition cannot make (a key of no family):
// its commit fails with it.
func (t *txn) fail(err error) {
	if t.err == nil {
		t.err = err
	}
}

// Follow implements store.Follower: a watch of the bucket on the
// ranges' subject patterns, JetStream's push, polling nothing.
func (s *Store) Follow(ctx context.Context, ranges []store.Range, current bool) (func(context.Context, func(store.Change)) error, error) {
	var pats []string
	for _, r := range ranges {
		p, err := pattern(r)
		if err != nil {
			return nil, err
		}
		pats = append(pats, p)
	}
	if len(pats) == 0 {
		return nil, errors.New("natsstore: following no range")
	}
	var opts []jetstream.WatchOpt
	if !current {
		opts = append(opts, jetstream.UpdatesOnly())
	}
	w, err := s.kv.WatchFiltered(ctx, pats, opts...)
	if err != nil {
		return nil, fmt.Errorf("natsstore: following %s: %w", strings.Join(pats, " "), err)
	}
	return func(ctx context.Context, fn func(store.Change)) error {
		defer func() { _ = w.Stop() }()
		for {
			select {
			case <-ctx.Done():
				return nil
			case e, ok := <-w.Updates():
				if !ok {
					if ctx.Err() != nil {
						return nil
					}
					return fmt.Errorf("natsstore: the feed of %s ended", strings.Join(pats, " "))
				}
				if e == nil {
					continue // the keys as they were are told
				}
				k, ok := parseKey(e.Key(), e.Value())
				if !ok {
					continue
				}
				c := store.Change{Key: k, Value: e.Value(), Deleted: e.Operation() != jetstream.KeyValuePut}
				if store.KeysAlone(k.Fam) || c.Deleted {
					c.Value = nil
				}
				fn(c)
			}
		}
	}, nil
}

// ExportKeys implements store.Copier: every key of a family in the
// bucket, in the order the bucket holds them (by write), through a watch
// that reads each key as it was when the watch reached it.
func (s *Store) ExportKeys(ctx context.Context, fn func(store.Key, []byte) error) error {
	return s.each(ctx, func(e kvEntry) error {
		if ownKey(e.key) {
			return nil
		}
		k, ok := parseKey(e.key, e.val)
		if !ok {
			return fmt.Errorf("%w: key %q", store.ErrUnknownRecord, e.key)
		}
		v := e.val
		if store.KeysAlone(k.Fam) || len(v) == 0 {
			v = nil
		}
		return fn(k, v)
	})
}

// ImportKeys implements store.Copier: kvs in atomic batches of at most
// maxBatch keys, unconditionally.
func (s *Store) ImportKeys(ctx context.Context, kvs []store.KeyValue) error {
	for len(kvs) > 0 {
		n := min(len(kvs), maxBatch)
		t := s.newTxn(ctx)
		for _, kv := range kvs[:n] {
			if kv.Deleted {
				t.Delete(kv.Key)
			} else {
				t.Put(kv.Key, kv.Value)
			}
		}
		if t.err != nil {
			return t.err
		}
		if err := t.commit("import"); err != nil {
			return err
		}
		kvs = kvs[n:]
	}
	return nil
}

// OneWay implements store.Copier: a name whose token is a hash.
func (s *Store) OneWay(name string) (string, bool) {
	t := tok(name)
	return t, strings.HasPrefix(t, "=h")
}

// each calls fn with every live key of the bucket and its value, as a
// watch delivers them, and returns once the watch has delivered what was
// there when it started.
func (s *Store) each(ctx context.Context, fn func(kvEntry) error) error {
	w, err := s.kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return fmt.Errorf("natsstore: reading the bucket: %w", err)
	}
	return drain(ctx, w, "reading the bucket", fn)
}
