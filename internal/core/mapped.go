package core

import (
	"context"
	"errors"
	"time"

	"github.com/vigilhq/vigil/store/badger"
)

// MappedBudget is how much resident file-backed memory the host keeps
// before it hands the store's mapped table pages back (the binary's own
// pages count in it too: about 50 MiB); TrimEvery how often it looks,
// and TrimSoon how soon it looks first, and again after a look that
// trimmed (a compaction maps pages at tens of MiB a second while it
// runs).
// Both keep a host that waits on millions of watches at the resident
// size of what it works on: the pages a compaction wrote or a read
// touched would otherwise stay counted until the kernel wanted them.
const (
	MappedBudget = 128 << 20
	TrimEvery    = 30 * time.Second
	TrimSoon     = time.Second
)

// mappedTrimmer is a store adapter whose files are mapped into the
// process, with a way to hand their resident pages back (*badger.KV).
type mappedTrimmer interface {
	TrimMapped(budget int64) (badger.MappedTrim, error)
}

// TrimMapped hands the store's mapped table pages back to the kernel
// when the process's resident file-backed memory is over budget, once.
// ok is false when the store maps nothing the host can trim (a cluster's
// store, or a platform without the means), which a caller stops asking
// after.
func (c *Core) TrimMapped(budget int64) (t badger.MappedTrim, ok bool) {
	tr, is := c.Store.KV().(mappedTrimmer)
	if !is {
		return t, false
	}
	t, err := tr.TrimMapped(budget)
	switch {
	case errors.Is(err, badger.ErrTrimUnsupported):
		c.log.Info("the store's mapped table pages are left to the kernel", "reason", err)
		return t, false
	case err != nil:
		c.log.Warn("trimming the store's mapped table pages", "err", err)
	case t.Trimmed > 0:
		c.log.Debug("trimmed the store's mapped table pages", "file_resident", t.FileResident, "tables", t.Tables, "trimmed", t.Trimmed)
	}
	return t, true
}

// trimLoop calls TrimMapped with MappedBudget every TrimEvery, or
// TrimSoon after a call that trimmed and at first (a start is when badger
// compacts what the last run's close flushed), until ctx ends; once the
// store says it cannot, it only waits for the end (a returning run would
// stop the core's others).
func (c *Core) trimLoop(ctx context.Context) error {
	t := c.clock.NewTimer(TrimSoon)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C():
		}
		tr, ok := c.TrimMapped(MappedBudget)
		if !ok {
			<-ctx.Done()
			return nil
		}
		next := TrimEvery
		if tr.Trimmed > 0 {
			next = TrimSoon
		}
		t.Reset(next)
	}
}
