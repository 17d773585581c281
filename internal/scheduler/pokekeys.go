package scheduler

import (
	"context"
	"fmt"
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
	return s.pokeIDs(ctx, ids), nil
}
