package store

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
)

// readRow reads and decodes a row: found false when it is absent, an
// *UnreadableError when this build cannot read it (held aside).
func (t tx) readRow(id ID) (w Watch, found bool, err error) {
	v, ok, err := t.Get(kRow(id))
	if err != nil || !ok {
		return Watch{}, false, err
	}
	w, err = DecodeRow(id[:], v)
	return w, true, err
}

// getRow is readRow with a pending row's durable next check from its
// index entry, and an absent or held-aside row ErrNotFound.
func (t tx) getRow(id ID) (Watch, error) {
	w, found, err := t.readRow(id)
	var ue *UnreadableError
	switch {
	case errors.As(err, &ue):
		return Watch{}, fmt.Errorf("%w (%v)", ErrNotFound, ue)
	case err != nil:
		return Watch{}, err
	case !found:
		return Watch{}, ErrNotFound
	}
	if w.State != Pending {
		return w, nil
	}
	sc, _, err := t.readSchedule(id)
	if err != nil && !errors.Is(err, ErrNotPending) {
		return Watch{}, err
	}
	w.NextCheck = sc.Next
	return w, nil
}

// readSchedule decodes id's pending index entry; ok is false for an
// entry of an older layout that carries no schedule. ErrNotPending if id
// has no pending index entry.
func (t tx) readSchedule(id ID) (sc Schedule, ok bool, err error) {
	v, found, err := t.Get(kState(Pending, id))
	if err != nil {
		return Schedule{}, false, err
	}
	if !found {
		return Schedule{}, false, ErrNotPending
	}
	sc.ID = id
	return sc, decodeSchedule(v, &sc), nil
}

func (t tx) putRow(w Watch) error {
	b, err := EncodeRow(w)
	if err != nil {
		return err
	}
	t.Put(kRow(w.ID), b)
	return nil
}

// createRow writes a new row and its indexes: ErrExists when the id is
// taken (the row's key read, so of two creates of one id one commits).
func (t tx) createRow(w Watch) error {
	if _, ok, err := t.Get(kRow(w.ID)); err != nil {
		return err
	} else if ok {
		return ErrExists
	}
	if w.State == Pending {
		// First: a count read from a scan sees none of this
		// transaction's writes.
		if err := t.addPending(w.Recipient.ID, 1); err != nil {
			return err
		}
	}
	if err := t.putRow(w); err != nil {
		return err
	}
	if err := t.putToken(w); err != nil {
		return err
	}
	t.Put(kRecipient(w.Recipient.ID, w.ID), nil)
	sv := scheduleValue(w)
	t.Put(kState(w.State, w.ID), sv)
	t.indexSettled(w)
	if w.State != Pending {
		return nil
	}
	t.indexPending(w, true)
	t.putDue(w.ID, w.NextCheck, sv, nil)
	if w.Subject != "" {
		return t.editSubject(w.Subject, w.ID, true)
	}
	return nil
}

// indexPending writes (in) or deletes w's entries of the indexes of
// pending rows: by kind, by kind and partition key, and by recipient
// where the plan keeps it.
func (t tx) indexPending(w Watch, in bool) {
	keys := []Key{kPendingKind(w.Kind, w.ID)}
	if w.PartitionKey != "" {
		keys = append(keys, kPendingKey(w.Kind, w.PartitionKey, w.ID))
	}
	if t.s.plan.RecipientPending {
		keys = append(keys, kRecipientPending(w.Recipient.ID, w.ID))
	}
	for _, k := range keys {
		if in {
			t.Put(k, nil)
		} else {
			t.Delete(k)
		}
	}
}

// indexSettled writes a settled row's settled_at entry.
func (t tx) indexSettled(w Watch) {
	if w.State != Pending && w.SettledAt != nil {
		t.Put(kSettledAt(*w.SettledAt, w.ID), nil)
	}
}

// rewriteRow writes w, which was in state from, and moves its indexes.
func (t tx) rewriteRow(from State, w Watch) error {
	var oldDue Key
	if from == Pending {
		// The due entry's key before this write, from the schedule the
		// pending entry carries (read once by getRow already).
		sc, _, err := t.readSchedule(w.ID)
		if err != nil && !errors.Is(err, ErrNotPending) {
			return err
		}
		oldDue = t.s.dueKey(w.ID, sc.Next)
	}
	if from != w.State && (from == Pending || w.State == Pending) {
		// The count first, as createRow does.
		d := 1
		if from == Pending {
			d = -1
		}
		if err := t.addPending(w.Recipient.ID, d); err != nil {
			return err
		}
	}
	if err := t.putRow(w); err != nil {
		return err
	}
	switch {
	case w.State != from:
		t.Delete(kState(from, w.ID))
		sv := scheduleValue(w)
		t.Put(kState(w.State, w.ID), sv)
		if from == Pending || w.State == Pending {
			t.indexPending(w, w.State == Pending)
		}
		switch {
		case from == Pending:
			t.Delete(oldDue)
		case w.State == Pending:
			t.putDue(w.ID, w.NextCheck, sv, nil)
		}
		t.indexSettled(w)
		if w.Subject != "" && (from == Pending || w.State == Pending) {
			return t.editSubject(w.Subject, w.ID, w.State == Pending)
		}
	case w.State == Pending:
		// The pending index carries the schedule, and the due index
		// carries it under the due time; keep both current.
		sv := scheduleValue(w)
		t.Put(kState(Pending, w.ID), sv)
		t.putDue(w.ID, w.NextCheck, sv, &oldDue)
	}
	return nil
}

// deleteRow deletes a settled row and its index entries.
func (t tx) deleteRow(w Watch) {
	t.Delete(kRow(w.ID))
	t.Delete(kState(w.State, w.ID))
	t.Delete(kRecipient(w.Recipient.ID, w.ID))
	if w.Token != "" {
		t.Delete(kToken(w.Token))
	}
	if w.SettledAt != nil {
		t.Delete(kSettledAt(*w.SettledAt, w.ID))
	}
}

// subjectIDs reads a subject's pending ids: one key per subject (its
// ids, 16 bytes each), not one per watch: a Work's thread may be waited
// on thousands of times in turn, and a scan would step over every
// settled wait's deleted key where one key is one read.
func (t tx) subjectIDs(subject string) ([]ID, error) {
	v, ok, err := t.Get(kSubject(subject))
	if err != nil || !ok {
		return nil, err
	}
	if len(v)%len(ID{}) != 0 {
		return nil, fmt.Errorf("%w: subject index of %q", ErrCorrupt, subject)
	}
	var out []ID
	for ; len(v) > 0; v = v[len(ID{}):] {
		out = append(out, ID(v[:len(ID{})]))
	}
	return out, nil
}

// editSubject adds id to, or removes it from, subject's pending ids.
func (t tx) editSubject(subject string, id ID, add bool) error {
	ids, err := t.subjectIDs(subject)
	if err != nil {
		return err
	}
	ids = slices.DeleteFunc(ids, func(x ID) bool { return x == id })
	if add {
		ids = append(ids, id)
	}
	if len(ids) == 0 {
		t.Delete(kSubject(subject))
		return nil
	}
	v := make([]byte, 0, len(ids)*len(ID{}))
	for _, x := range ids {
		v = append(v, x[:]...)
	}
	t.Put(kSubject(subject), v)
	return nil
}

// pendingCount is rid's count of pending rows as t sees it: the count
// key every commit that moves one of its rows in or out of pending
// writes (addPending). A recipient with no count (one whose rows an
// older build wrote, or an import brought) is counted from its index,
// and the count's absence is what t read, so a commit that writes the
// count from that counting is refused if another wrote one since. On an
// exclusive plan the count this process's last commit of the recipient
// wrote is also kept in memory, under the recipient's serialisation t
// holds, and read from there: the key is read once per recipient a
// process moves, so a restart counts nobody's rows again.
func (t tx) pendingCount(rid string) (int, error) {
	if t.r != nil {
		for i := len(t.r.counts) - 1; i >= 0; i-- {
			if t.r.counts[i].rid == rid {
				return t.r.counts[i].n, nil // this run's own
			}
		}
	}
	if t.s.plan.Exclusive {
		if n, ok := t.s.counts.get(rid); ok {
			return n, nil // what this process's last commit of it wrote
		}
	}
	v, ok, err := t.Get(kPendingCount(rid))
	if err != nil {
		return 0, err
	}
	if ok {
		if n, err := strconv.Atoi(string(v)); err == nil && n >= 0 {
			return n, nil
		}
		// Unreadable: count again; the commit rewrites it.
	}
	n := 0
	if t.s.plan.RecipientPending {
		err := t.Scan(Range{Prefix: kRecipientPending(rid, ID{}), Fixed: 1, KeysOnly: true}, func(Key, []byte) (bool, error) {
			n++
			return true, nil
		})
		return n, err
	}
	// The recipient's index, each row's state asked by key: the cost is
	// the recipient's rows, never the store's, and no row is decoded.
	err = t.Scan(Range{Prefix: kRecipient(rid, ID{}), Fixed: 1, KeysOnly: true}, func(k Key, _ []byte) (bool, error) {
		_, pending, err := t.Get(kState(Pending, k.ID))
		if pending {
			n++
		}
		return true, err
	})
	return n, err
}

// addPending moves rid's count of pending rows by d, in the transaction
// that moves the row, before it moves any index entry of it (a count
// read from a scan sees none of this transaction's writes). It
// serialises the transaction on the recipient: every such commit of one
// recipient writes this one count (its key, and on an exclusive plan
// the process's memory too once the commit succeeds).
func (t tx) addPending(rid string, d int) error {
	t.Serialise(recipientHint(rid))
	n, err := t.pendingCount(rid)
	if err != nil {
		return err
	}
	n = max(n+d, 0)
	if t.r != nil { // an exclusive plan's: kept in memory as well
		t.r.counts = append(t.r.counts, countSet{rid, n})
	}
	t.Put(kPendingCount(rid), strconv.AppendInt(nil, int64(n), 10))
	return nil
}

// Create writes a new row. ErrExists if the id is taken. A creating
// request's idempotency key (IdemOf) is checked and kept in the same
// transaction.
func (s *Store) Create(ctx context.Context, w Watch) error {
	return s.create(ctx, w, false, 0)
}

// CreateIfRunning writes a new row only if its recipient is running, read
// in the same transaction (and fenced: a pause that commits first leaves
// no row, and one that commits after finds the row and cancels it), and,
// when maxPending is above zero, only if the recipient holds fewer than
// maxPending pending rows, read in the same transaction from the count
// its commits keep: registrations racing for the last place cannot pass
// the bound. A *NotRunningError (errors.Is ErrNotRunning) if the
// recipient is not running or does not exist; a *TooManyPendingError
// (errors.Is ErrTooManyPending) at the bound; ErrExists if the id is
// taken.
func (s *Store) CreateIfRunning(ctx context.Context, w Watch, maxPending int) error {
	return s.create(ctx, w, true, maxPending)
}

// ErrTooManyPending: a registration refused because its recipient
// already holds the bound of pending rows it was given. The error is a
// *TooManyPendingError.
var ErrTooManyPending = errors.New("store: the recipient holds its bound of pending watches")

// TooManyPendingError is a registration refused at its recipient's bound.
type TooManyPendingError struct {
	Recipient string
	Max       int
}

func (e *TooManyPendingError) Error() string {
	return fmt.Sprintf("store: recipient %q holds %d pending watches, the most it may", e.Recipient, e.Max)
}

// Is makes errors.Is(err, ErrTooManyPending) true.
func (e *TooManyPendingError) Is(target error) bool { return target == ErrTooManyPending }

func (s *Store) create(ctx context.Context, w Watch, ifRunning bool, maxPending int) error {
	if !w.State.Valid() || !w.Receipt.Valid() {
		return fmt.Errorf("store: create: state %q receipt %q", w.State, w.Receipt)
	}
	idem := IdemOf(ctx)
	o := TxOptions{Name: "create"}
	if ifRunning {
		o.Name = "create-if-running"
	}
	if w.State == Pending {
		o.Serial = recipientHint(w.Recipient.ID)
	}
	err := s.update(ctx, o, func(t tx) error {
		if s.plan.Remote {
			keys := []Key{kRow(w.ID)}
			if idem != nil {
				keys = append(keys, kIdem(idem.Principal, idem.Key))
			}
			if ifRunning {
				keys = append(keys, kRecipientRec(w.Recipient.ID))
			}
			if w.State == Pending {
				keys = append(keys, kPendingCount(w.Recipient.ID))
			}
			if err := t.Prefetch(keys...); err != nil {
				return err
			}
		}
		if err := t.checkIdem(idem); err != nil {
			return err
		}
		if ifRunning {
			if _, err := t.runningRecipient(w.Recipient.ID); err != nil {
				return err
			}
		}
		if maxPending > 0 && w.State == Pending {
			// The count createRow moves, read first: the commit writes it,
			// so a registration that read it before another's commit runs
			// again on the new count.
			n, err := t.pendingCount(w.Recipient.ID)
			if err != nil {
				return err
			}
			if n >= maxPending {
				return &TooManyPendingError{Recipient: w.Recipient.ID, Max: maxPending}
			}
		}
		if err := t.createRow(w); err != nil {
			return err
		}
		return t.keepIdem(idem, w)
	})
	if err != nil {
		return err
	}
	s.noteIdem(idem)
	if w.State != Pending && w.SettledAt != nil {
		s.noteRetained(RetainedSettled, *w.SettledAt)
	}
	return nil
}

// CreateMany writes new rows as Create does, many to a commit (as many
// as the adapter's transaction takes), without idempotency keys: a
// loader's write, for filling a store nothing else writes meanwhile (the
// restart benchmark's millions of pending rows): a commit serialises on
// its first recipient only, so the counts of the others it moves are
// not guarded against a concurrent commit. A commit that finds one of its
// ids taken writes none of its rows and ends the call with ErrExists;
// the commits before it stay.
func (s *Store) CreateMany(ctx context.Context, ws []Watch) error {
	// A pending row writes at most 8 keys (row, state, recipient, count,
	// by kind, by recipient, due, subject).
	per := max(s.plan.MaxWrites/8, 1)
	for len(ws) > 0 {
		n := min(per, len(ws))
		batch := ws[:n]
		ws = ws[n:]
		for _, w := range batch {
			if !w.State.Valid() || !w.Receipt.Valid() {
				return fmt.Errorf("store: create: state %q receipt %q", w.State, w.Receipt)
			}
		}
		err := s.update(ctx, TxOptions{Name: "create-many"}, func(t tx) error {
			for _, w := range batch {
				if err := t.createRow(w); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		for _, w := range batch {
			if w.State != Pending && w.SettledAt != nil {
				s.noteRetained(RetainedSettled, *w.SettledAt)
			}
		}
	}
	return nil
}

// Get reads a row. ErrNotFound if absent or held aside.
func (s *Store) Get(ctx context.Context, id ID) (Watch, error) {
	var w Watch
	err := s.view(ctx, func(t tx) error {
		var err error
		w, err = t.getRow(id)
		return err
	})
	return w, err
}

// transition rewrites a row and moves its indexes in one transaction;
// an owner's (owner set) is fenced on the row's partition where the
// adapter fences partitions.
func (s *Store) transition(ctx context.Context, name string, id ID, owner bool, f func(w *Watch) error) (Watch, error) {
	var out Watch
	var from State
	o := TxOptions{Name: name}
	if owner {
		o.Owner = id
	}
	err := s.update(ctx, o, func(t tx) error {
		w, err := t.getRow(id)
		if err != nil {
			return err
		}
		from = w.State
		if err := f(&w); err != nil {
			return err
		}
		if err := t.rewriteRow(from, w); err != nil {
			return err
		}
		out = w
		return nil
	})
	if err == nil && from == Pending && out.State != Pending && out.SettledAt != nil {
		s.noteRetained(RetainedSettled, *out.SettledAt)
	}
	return out, err
}

// Settle makes a pending row final and returns it. ErrNotPending if it
// is no longer pending.
func (s *Store) Settle(ctx context.Context, id ID, st Settlement) (Watch, error) {
	if st.State == Pending || !st.State.Valid() || !st.Receipt.Valid() {
		return Watch{}, fmt.Errorf("store: settle to %q/%q", st.State, st.Receipt)
	}
	return s.transition(ctx, "settle", id, false, func(w *Watch) error {
		if w.State != Pending {
			return ErrNotPending
		}
		st.ApplyTo(w)
		return nil
	})
}

// SetReceipt records a settled row's delivery receipt; a rejected fired,
// expired or unwatchable row becomes undeliverable. ErrNotFound if
// absent.
func (s *Store) SetReceipt(ctx context.Context, id ID, r Receipt) (Watch, error) {
	if !r.Valid() {
		return Watch{}, fmt.Errorf("store: receipt %q", r)
	}
	return s.transition(ctx, "receipt", id, false, func(w *Watch) error {
		if w.State == Pending {
			return fmt.Errorf("store: receipt for a pending watch %s", id)
		}
		w.Receipt = r
		if r == ReceiptRejected && (w.State == Fired || w.State == Expired || w.State == Unwatchable) {
			// The recipient was not live: neither success nor failure of
			// the watch.
			w.State = Undeliverable
		}
		return nil
	})
}

// CarryBaseline records a standing row's new baseline, an owner's
// transition. ErrNotPending if it is no longer pending.
func (s *Store) CarryBaseline(ctx context.Context, id ID, baseline json.RawMessage, attempts int, note string) error {
	_, err := s.transition(ctx, "carry", id, true, func(w *Watch) error {
		if w.State != Pending {
			return ErrNotPending
		}
		carry(w, baseline, attempts, note)
		return nil
	})
	return err
}

// SetNextCheck records a pending row's durable next check (zero: none),
// rewriting its pending index entry alone, not the row: an owner's
// transition. ErrNotPending if it is no longer pending.
func (s *Store) SetNextCheck(ctx context.Context, id ID, next time.Time) error {
	return s.update(ctx, TxOptions{Name: "next-check", Owner: id}, func(t tx) error {
		sc, ok, err := t.readSchedule(id)
		if err != nil {
			return err
		}
		var w Watch
		if !ok {
			// An older layout's empty entry: the row has the schedule.
			if w, err = t.getRow(id); err != nil {
				return err
			}
			if w.State != Pending {
				return ErrNotPending
			}
		} else {
			w = Watch{State: Pending, Every: Duration(sc.Every), Attempts: sc.Attempts}
			if !sc.Expires.IsZero() {
				w.ExpiresAt = &sc.Expires
			}
		}
		old := t.s.dueKey(id, sc.Next)
		w.NextCheck = next
		sv := scheduleValue(w)
		t.Put(kState(Pending, id), sv)
		t.putDue(id, next, sv, &old)
		return nil
	})
}

// RecordProbe records what a pending row's probes have seen (the
// attempts, the last note and fault, the durable next check) in one
// write: an owner's transition. ErrNotPending if it is no longer
// pending.
func (s *Store) RecordProbe(ctx context.Context, id ID, p Probe) error {
	_, err := s.transition(ctx, "probe", id, true, func(w *Watch) error {
		if w.State != Pending {
			return ErrNotPending
		}
		w.Attempts, w.LastNote, w.LastFault, w.NextCheck = p.Attempts, p.Note, p.Fault, p.NextCheck
		return nil
	})
	return err
}

// PendingBySubject returns the pending watches whose Subject is subject.
func (s *Store) PendingBySubject(ctx context.Context, subject string) ([]ID, error) {
	var out []ID
	err := s.view(ctx, func(t tx) error {
		var err error
		out, err = t.subjectIDs(subject)
		return err
	})
	return out, err
}

// CountPending counts a recipient's pending watches, from the count its
// commits keep (one read; the recipient's index when it has none yet),
// and stops at upTo (upTo <= 0: all).
func (s *Store) CountPending(ctx context.Context, recipient string, upTo int) (int, error) {
	var n int
	err := s.view(ctx, func(t tx) error {
		var err error
		n, err = t.pendingCount(recipient)
		return err
	})
	if upTo > 0 {
		n = min(n, upTo)
	}
	return n, err
}

// ApplyTo writes the settlement onto w, a pending row, in one place for
// every backend's Settle and SettleAndMail, its outcome Bounded.
func (st Settlement) ApplyTo(w *Watch) {
	at := st.SettledAt.UTC()
	w.State, w.Receipt, w.Outcome, w.SettledAt = st.State, st.Receipt, bounded(st.Outcome), &at
	w.Attempts, w.LastNote, w.LastFault = st.Attempts, st.LastNote, st.LastFault
	w.NextCheck = time.Time{} // a next check is a pending row's only
}

// carry writes a standing row's new baseline and what its probes saw onto
// w, in one place for CarryBaseline and CarryAndMail.
func carry(w *Watch, baseline json.RawMessage, attempts int, note string) {
	w.Baseline, w.Attempts, w.LastNote, w.LastFault = baseline, attempts, note, nil
}

// scheduleValue is the value of a pending row's state-index key: what the
// scheduler needs to arm the row (every, deadline, attempts, and the
// durable next check when it has one), so a restart reads the index alone
// instead of decoding every row. 20 bytes, 28 with a next check; rows in
// other states index with no value.
func scheduleValue(w Watch) []byte {
	if w.State != Pending {
		return nil
	}
	b := make([]byte, 0, scheduleLenNext)
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

// The pending index's layouts: every, deadline and attempts; then, when
// the row has a durable next check, its unix nanoseconds.
const (
	scheduleLen     = 20
	scheduleLenNext = 28
)

// decodeSchedule reads an index value into sc; false when v carries no
// schedule (an older layout, with no value).
func decodeSchedule(v []byte, sc *Schedule) bool {
	if len(v) != scheduleLen && len(v) != scheduleLenNext {
		return false
	}
	sc.Every = time.Duration(binary.BigEndian.Uint64(v[0:8]))
	if exp := int64(binary.BigEndian.Uint64(v[8:16])); exp != 0 {
		sc.Expires = time.Unix(0, exp).UTC()
	}
	sc.Attempts = int(binary.BigEndian.Uint32(v[16:20]))
	if len(v) == scheduleLenNext {
		sc.Next = time.Unix(0, int64(binary.BigEndian.Uint64(v[20:28]))).UTC()
	}
	return true
}

// Schedule is what arming a pending watch needs.
type Schedule struct {
	ID       ID
	Every    time.Duration
	Expires  time.Time // zero: no deadline (standing)
	Attempts int
	// Next is the durable next check (zero: none): the scheduler arms the
	// watch there instead of at a random point of its interval.
	Next time.Time
}
