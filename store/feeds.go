package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"time"
)

// Feeds is the store with the feeds of what every process commits, where
// its adapter tells of them (a Follower: natsstore's watch of its
// bucket): a cluster's nodes learn of each other's registrations,
// pushes, appends and retained records this way, polling nothing. Each
// Follow subscribes and returns once the subscription is in place, with
// the function that reads it until its context ends (nil) or the feed
// ends (an error); call it once, on a goroutine of the caller's. (The run
// function, not a feed type, so an interface of the caller's names it
// without importing this package.)
type Feeds struct {
	*Store
	f Follower
}

// Feeds is s with its adapter's feeds; false when the adapter has none
// (a process alone on its store hears its own commits already).
func (s *Store) Feeds() (Feeds, bool) {
	f, ok := s.kv.(Follower)
	return Feeds{Store: s, f: f}, ok
}

// FollowPending tells of each row made pending or rescheduled after it
// returned, by any process, with its schedule (read from its row where
// its index entry carries none); a removal from the index is not told.
func (f Feeds) FollowPending(ctx context.Context) (func(context.Context, func(Schedule)) error, error) {
	run, err := f.f.Follow(ctx, []Range{{Prefix: kState(Pending, ID{}), Fixed: 1}}, false)
	if err != nil {
		return nil, fmt.Errorf("store: following the pending index: %w", err)
	}
	return func(ctx context.Context, fn func(Schedule)) error {
		return run(ctx, func(c Change) {
			if c.Deleted {
				return
			}
			var sc Schedule
			err := f.view(ctx, func(t tx) error {
				var err error
				sc, err = t.scheduleOf(c.Key.ID, c.Value)
				return err
			})
			if err == nil {
				fn(sc) // else held aside or settled since: nothing to arm
			}
		})
	}, nil
}

// FollowAppends tells of appends to an event stream by any process (one
// call may stand for several): the cluster's observe router, which runs
// on one node, learns this way of items recorded on the others.
func (f Feeds) FollowAppends(ctx context.Context, stream string) (func(context.Context, func()) error, error) {
	run, err := f.f.Follow(ctx, []Range{{Prefix: kEventSeq(stream), Fixed: 1}}, false)
	if err != nil {
		return nil, fmt.Errorf("store: following the %s stream: %w", stream, err)
	}
	return func(ctx context.Context, fn func()) error {
		return run(ctx, func(c Change) {
			if !c.Deleted {
				fn()
			}
		})
	}, nil
}

// pushRef names one push.
type pushRef struct {
	rid string
	seq uint64
}

// pushStep is a state of a push the feed told: a push moves from one to
// the next by a write (retrying again after another attempt counts
// another).
type pushStep struct {
	state    PushState
	attempts int
}

// FollowPushes tells of each push written pending or retrying after it
// returned, by any process, of the recipients keep accepts (nil: all),
// each read from its record: the live index's entry names its
// recipient, so another recipient's push costs no read. A push written
// sending is not told (it is being sent), and each state is told once:
// an entry's change read after a later write of its push finds the later
// state, which that write's own change would tell again. The owner of a
// recipient's pushes learns this way of the pushes other processes'
// settlements wrote.
func (f Feeds) FollowPushes(ctx context.Context, keep func(rid string) bool) (func(context.Context, func(Push)) error, error) {
	run, err := f.f.Follow(ctx, []Range{{Prefix: Key{Fam: FamLivePush}}}, false)
	if err != nil {
		return nil, fmt.Errorf("store: following the outbox: %w", err)
	}
	return func(ctx context.Context, fn func(Push)) error {
		// told is the last state told of each live push: entries go when
		// the push is final (its entry deleted).
		told := map[pushRef]pushStep{}
		return run(ctx, func(c Change) {
			ref := pushRef{c.Key.Name, c.Key.Seq}
			if c.Deleted {
				delete(told, ref)
				return
			}
			if keep != nil && !keep(ref.rid) {
				return
			}
			var p Push
			if err := f.view(ctx, func(t tx) error {
				var err error
				p, err = t.getPush(ref.rid, ref.seq)
				return err
			}); err != nil || (p.State != PushPending && p.State != PushRetrying) {
				return // held aside, gone, begun or finished since
			}
			step := pushStep{p.State, p.Attempts}
			if last, ok := told[ref]; ok && last == step {
				return
			}
			told[ref] = step
			fn(p)
		})
	}, nil
}

// FollowRetained tells of the retained records of classes any process
// commits (their time indexes and, for an event class, its stream's
// events), with each record's class and time. The cluster's upkeep,
// which runs on one node, learns this way of records the others write;
// OnRetained tells of this process's alone. A class this store does not
// know is ErrUnknownClass.
func (f Feeds) FollowRetained(ctx context.Context, classes []Retained) (func(context.Context, func(Retained, time.Time)) error, error) {
	byFamily := map[Family]Retained{}
	byStream := map[string]Retained{}
	var ranges []Range
	for _, c := range classes {
		if stream, ok := c.Stream(); ok {
			name := stream
			if cp, ok := f.kv.(Copier); ok {
				if t, oneWay := cp.OneWay(stream); oneWay {
					name = t
				}
			}
			byStream[name] = c
			ranges = append(ranges, Range{Prefix: kEvent(stream, 0), Fixed: 1})
			continue
		}
		fam, err := classFamily(c)
		if err != nil {
			return nil, err
		}
		byFamily[fam] = c
		ranges = append(ranges, Range{Prefix: Key{Fam: fam}})
	}
	if len(ranges) == 0 {
		return nil, errors.New("store: following no retained class")
	}
	run, err := f.f.Follow(ctx, ranges, false)
	if err != nil {
		return nil, fmt.Errorf("store: following the retained records: %w", err)
	}
	return func(ctx context.Context, fn func(Retained, time.Time)) error {
		return run(ctx, func(ch Change) {
			if ch.Deleted {
				return
			}
			if c, ok := byFamily[ch.Key.Fam]; ok {
				fn(c, time.Unix(0, ch.Key.At).UTC())
				return
			}
			if c, ok := byStream[ch.Key.Name]; ok && ch.Key.Fam == FamEvent {
				var se storedEvent
				if json.Unmarshal(ch.Value, &se) == nil && se.V == rowVersion {
					fn(c, se.OccurredAt)
				}
				// What cannot be read is skipped: the upkeep's next read
				// of the class's oldest finds it.
			}
		})
	}, nil
}

// WaitMailbox returns nil once the recipient's mailbox holds a message
// after after (at once if it already does), or ctx's error when ctx ends
// first. It follows the mailbox's sequence key, so it wakes on an append
// any process commits, the moment the adapter tells of it; the caller
// then reads with ReadMailbox.
func (f Feeds) WaitMailbox(ctx context.Context, rid string, after uint64) error {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	run, err := f.f.Follow(wctx, []Range{{Prefix: kMailSeq(rid), Fixed: 1}}, true)
	if err != nil {
		return fmt.Errorf("store: following the mailbox of %q: %w", rid, err)
	}
	found := false
	err = run(wctx, func(c Change) {
		if !c.Deleted && len(c.Value) == 8 && binary.BigEndian.Uint64(c.Value) > after {
			found = true
			cancel()
		}
	})
	switch {
	case found:
		return nil
	case ctx.Err() != nil:
		return ctx.Err()
	case err == nil:
		err = errors.New("the feed ended")
	}
	return fmt.Errorf("store: the mailbox of %q: %w", rid, err)
}
