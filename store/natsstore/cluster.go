package natsstore

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/vigilhq/vigil/store"
)

// What a node of a cluster needs of its store beside the storage seam:
// the JetStream context its leases bucket opens on (one connection per
// node), one partition's pending schedule when the node takes that
// partition's lease, a feed of the rows that become pending anywhere,
// so the owner of a watch registered on another node arms it at once,
// and a feed of the outbox's pushes, so the owner of a recipient's pushes
// sends those another node's settlements wrote.

// JetStream is the store's JetStream context, on its connection: the
// cluster's leases bucket (host/cluster) is opened on it, with the
// store's replica count, so a node holds one connection to the servers.
func (s *Store) JetStream() jetstream.JetStream { return s.js }

// Bucket is the store's bucket name, which names the cluster: a node's
// subjects beside the store (host/probeshare) carry it, so two clusters
// sharing a NATS system do not hear each other.
func (s *Store) Bucket() string { return s.bucket }

// ForEachPendingIn calls fn with the schedule of every pending watch of
// partition p of n (store.ID.Partition, the scheduler's partition, never
// this package's Partition), as ForEachPending does for all of them. It
// returns how many of p's it skipped as held aside.
func (s *Store) ForEachPendingIn(ctx context.Context, p, n int, fn func(store.Schedule) error) (int, error) {
	if n < 1 || p < 0 || p >= n {
		return 0, fmt.Errorf("%w: partition %d of %d", ErrBadConfig, p, n)
	}
	return s.forEachPendingWhere(ctx, func(id store.ID) bool { return id.Partition(n) == p }, fn)
}

// forEachPendingWhere is ForEachPending over the ids keep accepts: an
// index entry of another partition costs its key, never its row.
func (s *Store) forEachPendingWhere(ctx context.Context, keep func(store.ID) bool, fn func(store.Schedule) error) (int, error) {
	keys, err := s.scan(ctx, "s.pending.>", false)
	if err != nil {
		return 0, err
	}
	held := 0
	t := s.newTxn(ctx)
	for _, k := range keys {
		if err := ctx.Err(); err != nil {
			return held, err
		}
		sc, ok, err := scheduleOf(t, k.key, k.val)
		switch {
		case err != nil:
			held++
			continue
		case !ok || !keep(sc.ID):
			continue
		}
		if err := fn(sc); err != nil {
			return held, err
		}
	}
	return held, nil
}

// scheduleOf decodes a pending index entry, read from its row when the
// entry carries no schedule; ok false for a key that names no id; an
// error for a row held aside or no longer pending.
func scheduleOf(t *txn, key string, val []byte) (store.Schedule, bool, error) {
	var sc store.Schedule
	var ok bool
	if sc.ID, ok = idOf(key); !ok {
		return sc, false, nil
	}
	if decodeSchedule(val, &sc) {
		return sc, true, nil
	}
	w, err := getRow(t, sc.ID)
	if err != nil {
		return sc, true, err
	}
	if w.State != store.Pending {
		return sc, true, store.ErrNotPending
	}
	sc.Every, sc.Attempts = time.Duration(w.Every), w.Attempts
	if w.ExpiresAt != nil {
		sc.Expires = *w.ExpiresAt
	}
	return sc, true, nil
}

// FollowPending subscribes to the pending index (s.pending.*) and returns
// once the subscription is in place, with the function that reads it:
// run calls fn with the schedule of each row that becomes pending or is
// rescheduled after FollowPending returned, by any process on the
// cluster, until ctx ends (nil) or the servers end the feed (an error),
// and stops the subscription before it returns; call it once, on a
// goroutine of the caller's. It is JetStream's push, and polls nothing; a
// removal from the index is not told. fn must return quickly: the feed
// waits on it. (The run function, not a feed type, so an interface of the
// caller's names it without importing this package.)
func (s *Store) FollowPending(ctx context.Context) (run func(context.Context, func(store.Schedule)) error, err error) {
	w, err := s.kv.Watch(ctx, "s.pending.*", jetstream.UpdatesOnly())
	if err != nil {
		return nil, fmt.Errorf("natsstore: following the pending index: %w", err)
	}
	f := &pendingFeed{s: s, w: w}
	return f.run, nil
}

type pendingFeed struct {
	s *Store
	w jetstream.KeyWatcher
}

func (f *pendingFeed) run(ctx context.Context, fn func(store.Schedule)) error {
	return follow(ctx, f.w, "the pending index's feed ended", func(e jetstream.KeyValueEntry) {
		sc, ok, err := scheduleOf(f.s.newTxn(ctx), e.Key(), e.Value())
		if err != nil || !ok {
			return // held aside or settled since: nothing to arm
		}
		fn(sc)
	})
}

// FollowAppends subscribes to appends to an event stream by any process
// on the cluster (JetStream's push of the stream's last sequence) and
// returns once the subscription is in place, with the function that
// reads it, as FollowPending does: run calls fn after each append (one
// call may stand for several). The cluster's observe router, which runs
// on one node, learns this way of items recorded on the others.
func (s *Store) FollowAppends(ctx context.Context, stream string) (run func(context.Context, func()) error, err error) {
	w, err := s.kv.Watch(ctx, eventSeqKey(stream), jetstream.UpdatesOnly())
	if err != nil {
		return nil, fmt.Errorf("natsstore: following the %s stream: %w", stream, err)
	}
	f := &appendFeed{w: w}
	return f.run, nil
}

type appendFeed struct{ w jetstream.KeyWatcher }

func (f *appendFeed) run(ctx context.Context, fn func()) error {
	return follow(ctx, f.w, "an event stream's feed ended", func(e jetstream.KeyValueEntry) {
		fn()
	})
}

// FollowPushes subscribes to the outbox's live index (ol.*.*) and returns
// once the subscription is in place, with the function that reads it, as
// FollowPending does: run calls fn with each push record written pending
// or retrying after FollowPushes returned, by any process on the cluster
// (a push written sending is not told: it is being sent), of the
// recipients keep accepts when it is asked (nil: all), each read from its
// record: the index entry carries its recipient, so another recipient's
// push costs no read. The owner of a recipient's pushes learns this way
// of the pushes other nodes' settlements wrote, without polling.
func (s *Store) FollowPushes(ctx context.Context, keep func(rid string) bool) (run func(context.Context, func(store.Push)) error, err error) {
	w, err := s.kv.Watch(ctx, "ol.*.*", jetstream.UpdatesOnly())
	if err != nil {
		return nil, fmt.Errorf("natsstore: following the outbox: %w", err)
	}
	f := &pushFeed{s: s, w: w, keep: keep}
	return f.run, nil
}

type pushFeed struct {
	s    *Store
	w    jetstream.KeyWatcher
	keep func(rid string) bool
}

func (f *pushFeed) run(ctx context.Context, fn func(store.Push)) error {
	return follow(ctx, f.w, "the outbox's feed ended", func(e jetstream.KeyValueEntry) {
		key := e.Key()
		seq, ok := parseHex16(key[strings.LastIndexByte(key, '.')+1:])
		if !ok || (f.keep != nil && !f.keep(string(e.Value()))) {
			return
		}
		p, err := getPush(f.s.newTxn(ctx), string(e.Value()), seq)
		if err != nil || (p.State != store.PushPending && p.State != store.PushRetrying) {
			return // held aside, gone, begun or finished since
		}
		fn(p)
	})
}

// FollowRetained subscribes to the retained records of classes that any
// process on the cluster commits (JetStream's push of their time
// indexes sa./ma./pa. and, for an event class, its stream's events) and
// returns once the subscription is in place, with the function that
// reads it, as FollowPending does: run calls fn with each new record's
// class and time until ctx ends (nil) or the servers end the feed (an
// error). The cluster's upkeep, which runs on one node, learns this way
// of records the others write; OnRetained tells of this Store's alone.
// A class this store does not know is ErrUnknownClass.
func (s *Store) FollowRetained(ctx context.Context, classes []store.Retained) (run func(context.Context, func(store.Retained, time.Time)) error, err error) {
	f := &retainedFeed{index: map[string]store.Retained{}, events: map[string]store.Retained{}}
	var keys []string
	for _, c := range classes {
		if stream, ok := c.Stream(); ok {
			pfx := eventPrefix(stream)
			f.events[pfx] = c
			keys = append(keys, pfx+"*")
			continue
		}
		pfx, err := classIndex(c)
		if err != nil {
			return nil, err
		}
		f.index[pfx] = c
		keys = append(keys, pfx+">")
	}
	if len(keys) == 0 {
		return nil, errors.New("natsstore: following no retained class")
	}
	if f.w, err = s.kv.WatchFiltered(ctx, keys, jetstream.UpdatesOnly()); err != nil {
		return nil, fmt.Errorf("natsstore: following the retained records: %w", err)
	}
	return f.run, nil
}

type retainedFeed struct {
	w      jetstream.KeyWatcher
	index  map[string]store.Retained // "sa." → its class
	events map[string]store.Retained // "ev.<tok stream>." → its class
}

func (f *retainedFeed) run(ctx context.Context, fn func(store.Retained, time.Time)) error {
	return follow(ctx, f.w, "the retained records' feed ended", func(e jetstream.KeyValueEntry) {
		if c, at, ok := f.record(e.Key(), e.Value()); ok {
			fn(c, at)
		}
	})
}

// record is the class and time of a retained record's key: a time
// index entry's time is in its key, an event's in its value. What it
// cannot read is skipped: the upkeep's next read of the class's oldest
// finds it.
func (f *retainedFeed) record(key string, val []byte) (store.Retained, time.Time, bool) {
	parts := strings.SplitN(key, ".", 3)
	if len(parts) != 3 {
		return "", time.Time{}, false
	}
	if c, ok := f.index[parts[0]+"."]; ok {
		n, valid := parseTimeTok(parts[1])
		return c, time.Unix(0, n).UTC(), valid
	}
	if c, ok := f.events[parts[0]+"."+parts[1]+"."]; ok {
		var se storedEvent
		if err := json.Unmarshal(val, &se); err != nil || se.V != rowVersion {
			return "", time.Time{}, false
		}
		return c, se.OccurredAt, true
	}
	return "", time.Time{}, false
}

// follow reads a feed's watcher until ctx ends (nil) or the servers end
// it (an error saying which feed), calling put with each entry written
// after the subscription (never a deletion or a purge), and stops the
// watcher either way.
func follow(ctx context.Context, w jetstream.KeyWatcher, feed string, put func(jetstream.KeyValueEntry)) error {
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
				return errors.New("natsstore: " + feed)
			}
			if e != nil && e.Operation() == jetstream.KeyValuePut {
				put(e)
			}
		}
	}
}
