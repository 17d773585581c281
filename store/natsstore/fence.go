package natsstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/vigilhq/vigil/store"
)

// The partition fence. A node that gains partition p writes the epoch
// key ep.<p> (FencePartition) and keeps its revision as its token; every
// owner's transition of a row of p (ownerOf) then carries the check that
// ep.<p> is still at that revision, on the expected-sequence header's
// subject override of a message the batch writes anyway, or of a carrier
// message (a delete marker of ef.<p>) when it writes none unchecked. A
// node that gains p after this one rewrites ep.<p>, so this one's later
// commits of p are refused whole, whatever rows they touch, even a row
// nobody wrote since this one read it: the revision fence on rows alone
// cannot refuse that write.
//
//	ep.<p>   {"node":…,"at":…}: who gained p last; its revision is the token
//	ef.<p>   a delete marker, the carrier of the check when a batch has none

func epochKey(p int) string   { return "ep." + strconv.Itoa(p) }
func carrierKey(p int) string { return "ef." + strconv.Itoa(p) }

// fenceState is what this Store holds of one partition's fence: the
// token, or lost once the node has let the partition go.
type fenceState struct {
	token uint64
	lost  bool
}

// epochValue is ep.<p>'s value: for an operator reading the bucket; only
// the key's revision decides.
type epochValue struct {
	Node string    `json:"node"`
	At   time.Time `json:"at"`
}

// FencePartition makes this Store p's owner's: it writes ep.<p> (node
// and at are recorded in it) and keeps the new revision as the token
// every owner's transition of p's rows is then checked against. Any
// earlier owner's token of p stops holding at once. The node calls it
// once it holds p's lease and before it acts on any of p's rows.
func (s *Store) FencePartition(ctx context.Context, p int, node string, at time.Time) (uint64, error) {
	if p < 0 || p >= s.partitions {
		return 0, fmt.Errorf("natsstore: fence of partition %d of %d", p, s.partitions)
	}
	val, err := json.Marshal(epochValue{Node: node, At: at.UTC()})
	if err != nil {
		return 0, err
	}
	ctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	rev, err := s.kv.Put(ctx, epochKey(p), val)
	if err != nil {
		return 0, fmt.Errorf("natsstore: fencing partition %d: %w", p, storageFull(err))
	}
	s.Fence(p, rev)
	return rev, nil
}

// Fence sets p's token to a revision of ep.<p> (FencePartition's, or one
// read): the owner's transitions of p's rows are checked against it.
func (s *Store) Fence(p int, token uint64) {
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	s.fences[p] = fenceState{token: token}
}

// Unfence lets p go: from now on an owner's transition of one of p's rows
// is refused here with store.ErrNotOwner, without a round trip, until p
// is fenced again. A partition never fenced is not checked at all (a
// Store used without a cluster: a copy, the backend suite).
func (s *Store) Unfence(p int) {
	s.fenceMu.Lock()
	defer s.fenceMu.Unlock()
	s.fences[p] = fenceState{lost: true}
}

// ownerOf makes t an owner's transition of row id: checked against its
// partition's fence, or refused when the partition was let go.
func (s *Store) ownerOf(t *txn, id store.ID) error {
	p := id.Partition(s.partitions)
	s.fenceMu.Lock()
	f, ok := s.fences[p]
	s.fenceMu.Unlock()
	switch {
	case !ok:
		return nil
	case f.lost:
		return fmt.Errorf("natsstore: partition %d of %s: %w", p, id, store.ErrNotOwner)
	}
	t.epoch = &epochCheck{p: p, token: f.token}
	return nil
}

// epochCheck is a transition's fence on its partition's epoch key.
type epochCheck struct {
	p     int
	token uint64
}

// stillOwner tells a commit refused by a revision apart: ErrNotOwner when
// the epoch key has moved past the token (no run again would commit), nil
// when the refusal was a row's.
func (s *Store) stillOwner(ctx context.Context, e *epochCheck) error {
	got, err := s.last(ctx, epochKey(e.p))
	if err != nil {
		return err
	}
	if got.rev != e.token {
		return fmt.Errorf("natsstore: partition %d fenced at %d, now at %d: %w", e.p, e.token, got.rev, store.ErrNotOwner)
	}
	return nil
}
