package store

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// Raw export and import of a store's records, for `vigil store copy`
// (store/storecopy): every key of a family and its value as stored,
// through the adapter's raw copy (Copier), so a record read from one
// adapter is written to another as it was: the same rows, index
// entries, mailbox and event seqs and values, byte for byte. Held-aside
// rows are records like any other. The derived keys (a recipient's count
// and index of pending rows, FamPendingCount and FamRecipientPending;
// the due index, FamDue) and the store's markers are not copied: an
// import derives the destination's own from the records it writes.

// ErrUnknownRecord: a key no family of this build names. A copy stops
// on it rather than leave it behind.
var ErrUnknownRecord = errors.New("store: a record of no known family")

// ErrUntranslatable: a key holding a name its adapter keeps one way
// (Key.OneWay) that no record carries, so its record cannot be written
// to another adapter.
var ErrUntranslatable = errors.New("store: a key's name is kept one way and no record carries it")

// derived says whether a family's keys are the store's own, not records
// a copy carries.
func derived(f Family) bool {
	return f == FamPendingCount || f == FamRecipientPending || f == FamMarker || f == FamDue
}

func (s *Store) copier() (Copier, error) {
	c, ok := s.kv.(Copier)
	if !ok {
		return nil, fmt.Errorf("store: the adapter %T copies no keys", s.kv)
	}
	return c, nil
}

// ExportRecords calls fn with every record of the store (its key, with
// every name as it is, and its value), from one state of the store
// where the adapter reads one (badger), else key by key as each was when
// read (the source of a copy must not be served meanwhile). Where the
// adapter keeps a long name one way, the records are read twice: first
// for the names the values carry, then for the records; a key holding
// one no record names is ErrUntranslatable.
func (s *Store) ExportRecords(ctx context.Context, fn func(KeyValue) error) error {
	c, err := s.copier()
	if err != nil {
		return err
	}
	names := map[string]string{}
	if _, oneWay := c.OneWay(strings.Repeat("n", 1024)); oneWay {
		learn := func(n string) {
			if t, ok := c.OneWay(n); ok {
				names[t] = n
			}
		}
		if err := c.ExportKeys(ctx, func(k Key, v []byte) error { learnNames(k.Fam, v, learn); return nil }); err != nil {
			return err
		}
	}
	return c.ExportKeys(ctx, func(k Key, v []byte) error {
		if derived(k.Fam) {
			return nil
		}
		for _, part := range []struct {
			bit  uint8
			name *string
		}{{OneWayName, &k.Name}, {OneWaySub, &k.Sub}} {
			if k.OneWay&part.bit == 0 {
				continue
			}
			n, ok := names[*part.name]
			if !ok {
				return fmt.Errorf("%w: %s key %s", ErrUntranslatable, k.Fam, *part.name)
			}
			*part.name = n
			k.OneWay &^= part.bit
		}
		return fn(KeyValue{Key: k, Value: v})
	})
}

// learnNames passes each name a record's value carries to learn.
func learnNames(f Family, v []byte, learn func(string)) {
	switch f {
	case FamRecipient, FamRow, FamPush, FamEvent, FamWork, FamIdem:
	default:
		return
	}
	var r struct {
		ID        json.RawMessage `json:"id"`
		Recipient json.RawMessage `json:"recipient"`
		Kind      string          `json:"kind"`
		Subject   string          `json:"subject"`
		Stream    string          `json:"stream"`
		Key       string          `json:"key"`
		Scope     string          `json:"scope"`
		ThreadKey string          `json:"thread_key"`
		Principal string          `json:"principal"`
	}
	if json.Unmarshal(v, &r) != nil {
		return
	}
	var str string
	for _, raw := range []json.RawMessage{r.ID, r.Recipient} {
		if json.Unmarshal(raw, &str) == nil {
			learn(str)
		}
	}
	var nested struct {
		ID string `json:"id"`
	}
	if json.Unmarshal(r.Recipient, &nested) == nil {
		learn(nested.ID)
	}
	for _, n := range []string{r.Kind, r.Subject, r.Stream, r.Key, r.Scope, r.ThreadKey, r.Principal} {
		learn(n)
	}
}

// ImportRecords writes recs as they are, overwriting by key, and checks
// nothing: it is for a copy into a store no one serves, whose caches
// (the retention's floors) it leaves as they were, so the store is to be
// closed and opened again before it is served. A pending row brings its
// entry of its recipient's pending rows where the plan keeps them, and
// its recipient's count is dropped (here and in memory), to be counted
// again at its next use; a pending state entry brings its due index
// entry.
func (s *Store) ImportRecords(ctx context.Context, recs []KeyValue) error {
	c, err := s.copier()
	if err != nil {
		return err
	}
	out := make([]KeyValue, 0, len(recs)+len(recs)/4+1)
	if len(recs) > 0 {
		// The records may be an older build's, without their time index:
		// the next start runs the retention's backstop again.
		out = append(out, KeyValue{Key: kMarker(indexedMarkerName), Deleted: true})
	}
	for _, r := range recs {
		if derived(r.Key.Fam) {
			continue
		}
		out = append(out, r)
		if r.Key.Fam == FamState && r.Key.Sub == string(Pending) {
			// The due index's entry, from the schedule the state entry
			// carries; one of an older layout carries none, and the
			// next open indexes it (the marker dropped).
			sc := Schedule{ID: r.Key.ID}
			if decodeSchedule(r.Value, &sc) {
				out = append(out, KeyValue{Key: s.dueKey(r.Key.ID, sc.Next), Value: r.Value})
			} else {
				out = append(out, KeyValue{Key: kMarker(dueMarkerName), Deleted: true})
			}
		}
		if r.Key.Fam != FamRow {
			continue
		}
		// A row this build cannot decode is held aside and has none, as
		// in the source.
		if w, err := DecodeRow(r.Key.ID[:], r.Value); err == nil && w.State == Pending {
			if s.plan.RecipientPending {
				out = append(out, KeyValue{Key: kRecipientPending(w.Recipient.ID, w.ID)})
			}
			out = append(out, KeyValue{Key: kPendingCount(w.Recipient.ID), Deleted: true})
		}
	}
	defer func() {
		for _, kv := range out {
			if kv.Key.Fam == FamPendingCount {
				s.counts.forget(kv.Key.Name)
			}
		}
	}()
	return c.ImportKeys(ctx, out)
}
