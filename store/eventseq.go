package store

import (
	"context"

	"github.com/dgraph-io/badger/v4"
)

// LastEventSeq is the sequence number of the last event ever appended to
// stream (0 when none was): how many it has had, pruned ones included.
// It reads one key.
func (s *Badger) LastEventSeq(ctx context.Context, stream string) (uint64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	var seq uint64
	err := s.db.View(func(txn *badger.Txn) error {
		var err error
		seq, _, err = getSeq(txn, eventSeqKey(stream))
		return err
	})
	return seq, err
}
