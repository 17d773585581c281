package natsstore

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/vigilhq/vigil/store"
)

// Key layout of the watch rows. <id> is the 26-character text form,
// which sorts as the ids do.
//
//	w.<id>                  the row (JSON, schema version first)
//	s.<state>.<id>          state index; a pending row's carries its schedule
//	r.<tok recipient>.<id>  recipient index
//	rp.<tok recipient>.<id> a recipient's pending rows
//	pc.<tok recipient>      how many it has (pendingcount.go)
//	sj.<tok subject>        the pending ids of a subject, 16 bytes each
//	sa.<time>.<id>          settled_at index (retention)
func rowKey(id store.ID) string                   { return "w." + id.String() }
func stateKey(st store.State, id store.ID) string { return "s." + string(st) + "." + id.String() }
func recipientKey(rid string, id store.ID) string { return "r." + tok(rid) + "." + id.String() }
func recipientPendingKey(rid string, id store.ID) string {
	return "rp." + tok(rid) + "." + id.String()
}
func subjectKey(subject string) string             { return "sj." + tok(subject) }
func settledAtKey(t time.Time, id store.ID) string { return "sa." + timeTok(t) + "." + id.String() }

// rowVersion is the schema version of the rows this build writes, as in
// package store.
const rowVersion = 1

// idOf is the id ending a key.
func idOf(key string) (store.ID, bool) {
	i := strings.LastIndexByte(key, '.')
	id, err := store.ParseID(key[i+1:])
	return id, err == nil
}

// readRow reads and decodes a row: found false when absent, an
// *UnreadableError when held aside.
func readRow(t *txn, id store.ID) (w store.Watch, found bool, err error) {
	e, err := t.get(rowKey(id))
	if err != nil || !e.exists {
		return store.Watch{}, false, err
	}
	w, err = store.DecodeRow([]byte(rowKey(id)), e.val)
	return w, true, err
}

// getRow is readRow with a pending row's next check from its index
// entry, and an absent or held-aside row store.ErrNotFound.
func getRow(t *txn, id store.ID) (store.Watch, error) {
	w, found, err := readRow(t, id)
	var ue *store.UnreadableError
	switch {
	case errors.As(err, &ue):
		return store.Watch{}, fmt.Errorf("%w (%v)", store.ErrNotFound, ue)
	case err != nil:
		return store.Watch{}, err
	case !found:
		return store.Watch{}, store.ErrNotFound
	}
	if w.State != store.Pending {
		return w, nil
	}
	sc, ok, err := readSchedule(t, id)
	if err != nil && !errors.Is(err, store.ErrNotPending) {
		return store.Watch{}, err
	}
	if ok {
		w.NextCheck = sc.Next
	}
	return w, nil
}

// readSchedule decodes id's pending index entry; store.ErrNotPending if
// it has none.
func readSchedule(t *txn, id store.ID) (sc store.Schedule, ok bool, err error) {
	e, err := t.get(stateKey(store.Pending, id))
	if err != nil {
		return sc, false, err
	}
	if !e.exists {
		return sc, false, store.ErrNotPending
	}
	sc.ID = id
	return sc, decodeSchedule(e.val, &sc), nil
}

func putRow(t *txn, w store.Watch) error {
	b, err := store.EncodeRow(w)
	if err != nil {
		return err
	}
	t.put(rowKey(w.ID), b)
	return nil
}

// Create writes a new row. store.ErrExists if the id is taken.
func (s *Store) Create(ctx context.Context, w store.Watch) error {
	if !w.State.Valid() || !w.Receipt.Valid() {
		return fmt.Errorf("store: create: state %q receipt %q", w.State, w.Receipt)
	}
	idem := store.IdemOf(ctx)
	err := s.update(ctx, "create", func(t *txn) error {
		if err := startCreate(t, w, idemKeyOf(idem)...); err != nil {
			return err
		}
		if err := checkIdem(t, idem); err != nil {
			return err
		}
		if err := createRow(t, w); err != nil {
			return err
		}
		return keepIdem(t, idem, w)
	})
	if err == nil {
		s.noteIdem(idem)
	}
	if err == nil && w.State != store.Pending && w.SettledAt != nil {
		s.noteRetained(store.RetainedSettled, *w.SettledAt)
	}
	return err
}

// createRow writes a new row and its indexes: the row's own write is
// fenced on the key having no row, so two creates of one id never both
// win.
func createRow(t *txn, w store.Watch) error {
	e, err := t.get(rowKey(w.ID))
	if err != nil {
		return err
	}
	if e.exists {
		return store.ErrExists
	}
	if err := putRow(t, w); err != nil {
		return err
	}
	t.put(recipientKey(w.Recipient.ID, w.ID), nil)
	t.put(stateKey(w.State, w.ID), scheduleValue(w))
	indexSettled(t, w)
	if w.State == store.Pending {
		t.put(recipientPendingKey(w.Recipient.ID, w.ID), nil)
		if err := addPending(t, w.Recipient.ID, 1); err != nil {
			return err
		}
		t.put(pendingKindKey(w.Kind, w.ID), nil)
		if w.Subject != "" {
			return editSubject(t, w.Subject, w.ID, true)
		}
	}
	return nil
}

func indexSettled(t *txn, w store.Watch) {
	if w.State != store.Pending && w.SettledAt != nil {
		t.put(settledAtKey(*w.SettledAt, w.ID), nil)
	}
}

// Get reads a row. store.ErrNotFound if absent or held aside.
func (s *Store) Get(ctx context.Context, id store.ID) (store.Watch, error) {
	var w store.Watch
	err := s.view(ctx, func(t *txn) error {
		var err error
		w, err = getRow(t, id)
		return err
	})
	return w, err
}

// transition rewrites a row and moves its indexes in one commit,
// conditional on the row's revision.
func (s *Store) transition(ctx context.Context, kind string, id store.ID, f func(w *store.Watch) error) (store.Watch, error) {
	return s.transitionAs(ctx, kind, id, false, f)
}

// ownerTransition is a transition only the row's owner makes (a probe's
// record, a baseline): fenced on its partition's epoch (fence.go).
func (s *Store) ownerTransition(ctx context.Context, kind string, id store.ID, f func(w *store.Watch) error) (store.Watch, error) {
	return s.transitionAs(ctx, kind, id, true, f)
}

func (s *Store) transitionAs(ctx context.Context, kind string, id store.ID, owner bool, f func(w *store.Watch) error) (store.Watch, error) {
	var out store.Watch
	var from store.State
	err := s.update(ctx, kind, func(t *txn) error {
		if owner {
			if err := s.ownerOf(t, id); err != nil {
				return err
			}
		}
		w, err := getRow(t, id)
		if err != nil {
			return err
		}
		from = w.State
		if err := f(&w); err != nil {
			return err
		}
		if err := rewriteRow(t, from, w); err != nil {
			return err
		}
		out = w
		return nil
	})
	if err == nil && from == store.Pending && out.State != store.Pending && out.SettledAt != nil {
		s.noteRetained(store.RetainedSettled, *out.SettledAt)
	}
	return out, err
}

// rewriteRow writes w, which was in state from, and moves its indexes.
func rewriteRow(t *txn, from store.State, w store.Watch) error {
	if err := putRow(t, w); err != nil {
		return err
	}
	switch {
	case w.State != from:
		t.del(stateKey(from, w.ID))
		t.put(stateKey(w.State, w.ID), scheduleValue(w))
		indexSettled(t, w)
		if from == store.Pending {
			t.del(recipientPendingKey(w.Recipient.ID, w.ID))
			if err := addPending(t, w.Recipient.ID, -1); err != nil {
				return err
			}
			t.del(pendingKindKey(w.Kind, w.ID))
			if w.Subject != "" {
				return editSubject(t, w.Subject, w.ID, false)
			}
		}
	case w.State == store.Pending:
		t.put(stateKey(w.State, w.ID), scheduleValue(w))
	}
	return nil
}

// subjectIDs reads a subject's pending ids.
func subjectIDs(t *txn, subject string) ([]store.ID, error) {
	e, err := t.get(subjectKey(subject))
	if err != nil || !e.exists {
		return nil, err
	}
	v := e.val
	if len(v)%16 != 0 {
		return nil, fmt.Errorf("%w: subject index of %q", store.ErrCorrupt, subject)
	}
	var out []store.ID
	for ; len(v) > 0; v = v[16:] {
		out = append(out, store.ID(v[:16]))
	}
	return out, nil
}

// editSubject adds id to, or removes it from, subject's pending ids.
func editSubject(t *txn, subject string, id store.ID, add bool) error {
	ids, err := subjectIDs(t, subject)
	if err != nil {
		return err
	}
	ids = slices.DeleteFunc(ids, func(x store.ID) bool { return x == id })
	if add {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		t.del(subjectKey(subject))
		return nil
	}
	v := make([]byte, 0, len(ids)*16)
	for _, x := range ids {
		v = append(v, x[:]...)
	}
	t.put(subjectKey(subject), v)
	return nil
}

// PendingBySubject returns the pending watches whose Subject is subject.
func (s *Store) PendingBySubject(ctx context.Context, subject string) ([]store.ID, error) {
	var out []store.ID
	err := s.view(ctx, func(t *txn) error {
		var err error
		out, err = subjectIDs(t, subject)
		return err
	})
	return out, err
}

// Settle makes a pending row final and returns it. store.ErrNotPending
// if it is no longer pending.
func (s *Store) Settle(ctx context.Context, id store.ID, st store.Settlement) (store.Watch, error) {
	if st.State == store.Pending || !st.State.Valid() || !st.Receipt.Valid() {
		return store.Watch{}, fmt.Errorf("store: settle to %q/%q", st.State, st.Receipt)
	}
	return s.transition(ctx, "settle", id, func(w *store.Watch) error {
		if w.State != store.Pending {
			return store.ErrNotPending
		}
		st.ApplyTo(w)
		return nil
	})
}

// SetReceipt records a settled row's delivery receipt; a rejected fired,
// expired or unwatchable row becomes undeliverable. store.ErrNotFound if
// absent.
func (s *Store) SetReceipt(ctx context.Context, id store.ID, r store.Receipt) (store.Watch, error) {
	if !r.Valid() {
		return store.Watch{}, fmt.Errorf("store: receipt %q", r)
	}
	return s.transition(ctx, "receipt", id, func(w *store.Watch) error {
		if w.State == store.Pending {
			return fmt.Errorf("store: receipt for a pending watch %s", id)
		}
		w.Receipt = r
		if r == store.ReceiptRejected && (w.State == store.Fired || w.State == store.Expired || w.State == store.Unwatchable) {
			w.State = store.Undeliverable
		}
		return nil
	})
}

// CarryBaseline records a standing row's new baseline.
// store.ErrNotPending if it is no longer pending.
func (s *Store) CarryBaseline(ctx context.Context, id store.ID, baseline json.RawMessage, attempts int, note string) error {
	_, err := s.ownerTransition(ctx, "carry", id, func(w *store.Watch) error {
		if w.State != store.Pending {
			return store.ErrNotPending
		}
		carry(w, baseline, attempts, note)
		return nil
	})
	return err
}

func carry(w *store.Watch, baseline json.RawMessage, attempts int, note string) {
	w.Baseline, w.Attempts, w.LastNote, w.LastFault = baseline, attempts, note, nil
}

// SetNextCheck records a pending row's durable next check (zero: none),
// rewriting its pending index entry alone, conditional on the entry's
// revision: a settlement that removed it first wins. store.ErrNotPending
// if the row is no longer pending.
func (s *Store) SetNextCheck(ctx context.Context, id store.ID, next time.Time) error {
	return s.update(ctx, "next", func(t *txn) error {
		if err := s.ownerOf(t, id); err != nil {
			return err
		}
		sc, ok, err := readSchedule(t, id)
		if err != nil {
			return err
		}
		var w store.Watch
		if !ok {
			if w, err = getRow(t, id); err != nil {
				return err
			}
			if w.State != store.Pending {
				return store.ErrNotPending
			}
		} else {
			w = store.Watch{State: store.Pending, Every: store.Duration(sc.Every), Attempts: sc.Attempts}
			if !sc.Expires.IsZero() {
				w.ExpiresAt = &sc.Expires
			}
		}
		w.NextCheck = next
		t.put(stateKey(store.Pending, id), scheduleValue(w))
		return nil
	})
}

// RecordProbe records what a pending row's probes have seen, in one
// commit. store.ErrNotPending if it is no longer pending.
func (s *Store) RecordProbe(ctx context.Context, id store.ID, p store.Probe) error {
	_, err := s.ownerTransition(ctx, "probe", id, func(w *store.Watch) error {
		if w.State != store.Pending {
			return store.ErrNotPending
		}
		w.Attempts, w.LastNote, w.LastFault, w.NextCheck = p.Attempts, p.Note, p.Fault, p.NextCheck
		return nil
	})
	return err
}

// List returns the readable rows matching f, oldest first, and how many
// it skipped as held aside.
func (s *Store) List(ctx context.Context, f store.Filter) ([]store.Watch, int, error) {
	var out []store.Watch
	held, err := s.ForEach(ctx, f, func(w store.Watch) error {
		out = append(out, w)
		return nil
	})
	return out, held, err
}

// ForEach calls fn with each readable row matching f, oldest first. It
// walks the recipient's index when f names one, else the state's, else
// the rows.
func (s *Store) ForEach(ctx context.Context, f store.Filter, fn func(store.Watch) error) (int, error) {
	held := 0
	err := s.view(ctx, func(t *txn) error {
		pattern, _ := indexPattern(f)
		keys, err := s.scan(ctx, pattern, pattern != "w.>")
		if err != nil {
			return err
		}
		for _, k := range keys {
			if err := ctx.Err(); err != nil {
				return err
			}
			id, ok := idOf(k.key)
			if !ok {
				continue
			}
			if k.val != nil {
				t.reads[k.key] = entry{val: k.val, rev: k.rev, exists: true}
			}
			w, found, err := readRow(t, id)
			var ue *store.UnreadableError
			switch {
			case errors.As(err, &ue):
				held++
				continue
			case err != nil:
				return err
			case !found:
				continue // an index entry whose row is gone
			}
			if w.State == store.Pending {
				if sc, ok, err := readSchedule(t, id); err == nil && ok {
					w.NextCheck = sc.Next
				} else if err != nil && !errors.Is(err, store.ErrNotPending) {
					return err
				}
			}
			if (f.State != "" && w.State != f.State) || (f.Kind != "" && w.Kind != f.Kind) || (f.RegisteredBy != "" && w.RegisteredBy != f.RegisteredBy) {
				continue
			}
			if err := fn(w); err != nil {
				return err
			}
		}
		return nil
	})
	return held, err
}

// indexPattern is the narrowest index for f, and whether it is the state
// index.
func indexPattern(f store.Filter) (string, bool) {
	switch {
	case f.Recipient != "" && f.State == store.Pending:
		return "rp." + tok(f.Recipient) + ".>", true
	case f.Recipient != "":
		return "r." + tok(f.Recipient) + ".>", false
	case f.State != "":
		return "s." + string(f.State) + ".>", true
	}
	return "w.>", false
}

// CountByState counts readable and held-aside rows by the state index,
// reading keys only.
func (s *Store) CountByState(ctx context.Context) (map[store.State]int, error) {
	keys, err := s.scan(ctx, "s.>", true)
	if err != nil {
		return nil, err
	}
	out := map[store.State]int{}
	for _, k := range keys {
		parts := strings.SplitN(k.key, ".", 3)
		if len(parts) == 3 {
			out[store.State(parts[1])]++
		}
	}
	return out, nil
}

// scheduleValue is a pending row's state-index value, as package store
// lays it out: every, deadline and attempts (20 bytes), then the durable
// next check when there is one (28).
func scheduleValue(w store.Watch) []byte {
	if w.State != store.Pending {
		return nil
	}
	b := make([]byte, 0, 28)
	b = binary.BigEndian.AppendUint64(b, uint64(w.Every))
	var exp int64
	if w.ExpiresAt != nil {
		exp = w.ExpiresAt.UnixNano()
	}
	b = binary.BigEndian.AppendUint64(b, uint64(exp))
	b = binary.BigEndian.AppendUint32(b, uint32(w.Attempts))
	if !w.NextCheck.IsZero() {
		b = binary.BigEndian.AppendUint64(b, uint64(w.NextCheck.UnixNano()))
	}
	return b
}

func decodeSchedule(v []byte, sc *store.Schedule) bool {
	if len(v) != 20 && len(v) != 28 {
		return false
	}
	sc.Every = time.Duration(binary.BigEndian.Uint64(v[0:8]))
	if exp := int64(binary.BigEndian.Uint64(v[8:16])); exp != 0 {
		sc.Expires = time.Unix(0, exp).UTC()
	}
	sc.Attempts = int(binary.BigEndian.Uint32(v[16:20]))
	if len(v) == 28 {
		sc.Next = time.Unix(0, int64(binary.BigEndian.Uint64(v[20:28]))).UTC()
	}
	return true
}

// ForEachPending calls fn with the schedule of every pending watch, read
// from the pending index alone (an entry with no schedule is read from
// its row). It returns how many it skipped as held aside.
func (s *Store) ForEachPending(ctx context.Context, fn func(store.Schedule) error) (int, error) {
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
		var sc store.Schedule
		var ok bool
		if sc.ID, ok = idOf(k.key); !ok {
			continue
		}
		if !decodeSchedule(k.val, &sc) {
			w, err := getRow(t, sc.ID)
			if err != nil || w.State != store.Pending {
				held++
				continue
			}
			sc.Every, sc.Attempts = time.Duration(w.Every), w.Attempts
			if w.ExpiresAt != nil {
				sc.Expires = *w.ExpiresAt
			}
		}
		if err := fn(sc); err != nil {
			return held, err
		}
	}
	return held, nil
}

// ListPage returns one page of the readable rows matching q, oldest
// first, from q.After, examining at most q.Budget index entries (see
// the package doc for what a page costs here).
func (s *Store) ListPage(ctx context.Context, q store.Query) (store.Page, error) {
	if q.Limit < 1 {
		return store.Page{}, fmt.Errorf("store: list page: limit %d, want at least 1", q.Limit)
	}
	budget := q.Budget
	if budget <= 0 {
		budget = store.DefaultPageBudget
	}
	pattern, _ := indexPattern(q.Filter)
	keys, err := s.scan(ctx, pattern, true)
	if err != nil {
		return store.Page{}, err
	}
	after := q.After.String()
	start, _ := slices.BinarySearchFunc(keys, after, func(k kvEntry, a string) int {
		return strings.Compare(k.key[strings.LastIndexByte(k.key, '.')+1:], a)
	})
	if q.After == (store.ID{}) {
		start = 0
	} else if start < len(keys) && strings.HasSuffix(keys[start].key, after) {
		start++
	}
	var p store.Page
	t := s.newTxn(ctx)
	examined := 0
	var last store.ID
	for _, k := range keys[start:] {
		if err := ctx.Err(); err != nil {
			return store.Page{}, err
		}
		id, ok := idOf(k.key)
		if !ok {
			continue
		}
		if len(p.Watches) == q.Limit || examined == budget {
			p.Next = last
			return p, nil
		}
		examined++
		last = id
		w, found, err := readRow(t, id)
		var ue *store.UnreadableError
		switch {
		case errors.As(err, &ue):
			p.HeldAside++
			continue
		case err != nil:
			return store.Page{}, err
		case !found:
			continue
		}
		if (q.Kind != "" && w.Kind != q.Kind) || (q.State != "" && w.State != q.State) ||
			(q.RegisteredBy != "" && w.RegisteredBy != q.RegisteredBy) || (q.Match != nil && !q.Match(w)) {
			continue
		}
		p.Watches = append(p.Watches, w)
	}
	return p, nil
}
