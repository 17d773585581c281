package natsstore

import "context"

// LastEventSeq is the sequence number of the last event ever appended to
// stream (0 when none was): how many it has had, pruned ones included.
// It reads one key, as badger's does.
func (s *Store) LastEventSeq(ctx context.Context, stream string) (uint64, error) {
	var seq uint64
	err := s.view(ctx, func(t *txn) error {
		var err error
		seq, err = lastSeq(t, eventSeqKey(stream))
		return err
	})
	return seq, err
}
