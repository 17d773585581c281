package scheduler

import (
	"context"
	"fmt"
	"maps"
	"time"

	"github.com/vigilhq/vigil/store"
)

// PokeKeys makes every pending watch of kind whose partition key is one
// of keys due now (an inbound hook's event, through the kind's wake):
// the watches are found in the store's index by partition key, and poked
// as Poke pokes a subject's, coalesced: a watch already due is not queued
// twice, and one being probed is probed once more after, so a flood of
// events costs one probe per watch per probe time. Only the watches of
// the partitions this scheduler owns are poked. It returns how many it
// woke.
func (s *Scheduler) PokeKeys(ctx context.Context, kind string, keys []string) (int, error) {
	if len(keys) == 0 {
		return 0, nil
	}
	ids, err := s.cfg.Store.PendingByKey(ctx, kind, keys)
	if err != nil {
		return 0, fmt.Errorf("scheduler: poke %d keys of %s: %w", len(keys), kind, err)
	}
	return s.pokeIDs(ctx, ids, true), nil
}

// markPoked records that an event poked id at now. Its lock is mu.
func (s *Scheduler) markPoked(id store.ID, now int64) { s.pokedAt[id] = now }

// probeCadence is the cadence a probe of w at now carries to its fetches:
// the watch's every, or, for a watch an event poked since its last probe,
// the time since that poke, so the look the event asked for reads the
// resource anew (a read made since the poke, another watch's of the same
// resource included, still serves it). The kind's min_read_interval and
// the issuer's min_interval floor it still.
func (s *Scheduler) probeCadence(id store.ID, w store.Watch, now time.Time) time.Duration {
	every := time.Duration(w.Every)
	s.mu.Lock()
	at, ok := s.pokedAt[id]
	delete(s.pokedAt, id)
	s.mu.Unlock()
	if !ok {
		return every
	}
	return min(every, max(time.Duration(now.UnixNano()-at), time.Millisecond))
}

// SetFallbacks puts in force each hooked kind's fallback cadence: the
// every a watch of the kind registered from now on gets when its
// registration leaves every to the default, since an event brings its
// look forward. A watch registered before keeps its cadence. Nil: none.
func (s *Scheduler) SetFallbacks(f map[string]time.Duration) {
	c := maps.Clone(f)
	s.fallbacks.Store(&c)
}

// fallbackOf is kind's fallback cadence, if a hook wakes it.
func (s *Scheduler) fallbackOf(kind string) (time.Duration, bool) {
	p := s.fallbacks.Load()
	if p == nil {
		return 0, false
	}
	f, ok := (*p)[kind]
	return f, ok && f > 0
}
