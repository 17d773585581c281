package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// WorkState is where a Work item is in its life.
type WorkState string

// Work states. A Work is open until someone completes it; completed is
// final.
const (
	WorkOpen      WorkState = "open"
	WorkCompleted WorkState = "completed"
)

// Valid reports whether s is a known Work state.
func (s WorkState) Valid() bool { return s == WorkOpen || s == WorkCompleted }

// ErrWorkConflict is a Work transition its current state forbids: claiming
// a completed Work or one another recipient holds, completing it twice.
var ErrWorkConflict = errors.New("store: the work item's state forbids this")

// Work is a durable work item: one per observed thread. It owns its thread
// key, so later items of the thread become its inputs.
type Work struct {
	ID        ID        `json:"id"`
	Scope     string    `json:"scope"`
	Kind      string    `json:"kind"`
	Title     string    `json:"title"`
	ThreadKey string    `json:"thread_key"`
	State     WorkState `json:"state"`
	// Inputs counts the inputs, numbered from 1.
	Inputs int `json:"inputs"`
	// Consumed is the last input the Work's claimer has been given: every
	// input so far by its claim, then each wake to the claimer that
	// carried more. A wake to any other recipient leaves it alone.
	Consumed int `json:"consumed"`
	// Cursors are, for each other recipient a wake carried inputs to, the
	// last input that recipient has been given (at most MaxWorkCursors of
	// them). Each recipient waits from its own cursor, so no wait another
	// recipient reads moves what a recipient's next wait carries.
	Cursors     map[string]int `json:"cursors,omitempty"`
	ClaimedBy   string         `json:"claimed_by,omitempty"`
	CreatedAt   time.Time      `json:"created_at"`
	ClaimedAt   *time.Time     `json:"claimed_at,omitempty"`
	CompletedAt *time.Time     `json:"completed_at,omitempty"`
}

// MaxWorkCursors bounds a Work's Cursors. A wake to one more recipient
// drops the cursor furthest behind: that recipient's next wait starts
// from the first input again, a repeat, never a loss.
const MaxWorkCursors = 64

// ConsumedBy is the last input recipient has been given: the claimer's
// Consumed, another recipient's cursor, or 0 for a recipient never given
// any. A wait that names no after starts there.
func (w Work) ConsumedBy(recipient string) int {
	if recipient != "" && recipient == w.ClaimedBy {
		return w.Consumed
	}
	return w.Cursors[recipient]
}

// Consume records that recipient has been given the inputs up to n (no
// further than Inputs): the claimer's Consumed, or recipient's own
// cursor. Neither moves back.
func (w *Work) Consume(recipient string, n int) {
	n = min(n, w.Inputs)
	if recipient == "" || n <= w.ConsumedBy(recipient) {
		return
	}
	if recipient == w.ClaimedBy {
		w.Consumed = n
		return
	}
	if _, ok := w.Cursors[recipient]; !ok && len(w.Cursors) >= MaxWorkCursors {
		behind := ""
		for r, c := range w.Cursors {
			if behind == "" || c < w.Cursors[behind] || c == w.Cursors[behind] && r < behind {
				behind = r
			}
		}
		delete(w.Cursors, behind)
	}
	if w.Cursors == nil {
		w.Cursors = map[string]int{}
	}
	w.Cursors[recipient] = n
}

// Claim gives the Work to recipient at now, who is given every input so
// far: Consumed moves to Inputs, and recipient's cursor, now Consumed,
// goes. The caller has checked that the Work is open and not another's.
func (w *Work) Claim(recipient string, now time.Time) {
	if w.ClaimedBy == "" {
		t := now.UTC()
		w.ClaimedAt = &t
	}
	w.ClaimedBy, w.Consumed = recipient, w.Inputs
	delete(w.Cursors, recipient)
	if len(w.Cursors) == 0 {
		w.Cursors = nil
	}
}

// WorkInput is one item routed to a Work, in order from 1.
type WorkInput struct {
	N          int       `json:"n"`
	EventSeq   uint64    `json:"event_seq"`
	EventKey   string    `json:"event_key"`
	Source     string    `json:"source"`
	Item       string    `json:"item"`
	Revision   string    `json:"revision,omitempty"`
	Thread     string    `json:"thread"`
	Text       string    `json:"text"`
	Reporter   string    `json:"reporter,omitempty"`
	RecordedAt time.Time `json:"recorded_at"`
}

// RouteAction is what routing an item did.
type RouteAction string

// Route actions.
const (
	RouteCreated  RouteAction = "created"  // a new Work owns the thread
	RouteAppended RouteAction = "appended" // the item is the owner's next input
	RouteSkipped  RouteAction = "skipped"  // the owner takes no input (another kind, or completed)
	RouteDropped  RouteAction = "dropped"  // the step asked to drop it (its source is gone)
	RouteDone     RouteAction = "done"     // the cursor was already past it
)

// RouteStep routes one event to the Work owning its thread, and advances
// the router's cursor. With nobody owning the thread key it creates New
// with Input as its first input; with an open Work of OwnerKind owning it,
// it appends Input; otherwise it skips the item. A step at or before the
// cursor does nothing (RouteDone), so replaying the stream after a crash
// routes nothing twice.
type RouteStep struct {
	Cursor string // the router's name
	Seq    uint64 // the event's sequence in its stream
	// Drop advances the cursor and changes no Work.
	Drop      bool
	ThreadKey string
	// OwnerKind is the only kind of Work that takes the item as input.
	OwnerKind string
	// New is the Work to create when nobody owns the thread; its ID,
	// Scope, Kind, Title and CreatedAt are used.
	New   Work
	Input WorkInput
}

var (
	workPfx       = []byte("wk/")  // wk/<id>                 -> Work
	workInputPfx  = []byte("wi/")  // wi/<id><n>              -> WorkInput
	workOwnerPfx  = []byte("wo/")  // wo/<thread key>         -> work id
	workScopePfx  = []byte("wsc/") // wsc/<scope>\x00<state>\x00<id>
	routerCurPfx  = []byte("rt/")  // rt/<router>             -> seq
	maxThreadKey  = 1024
	errWorkRecord = errors.New("store: work record")
)

func workKey(id ID) []byte { return append(append([]byte{}, workPfx...), id[:]...) }

func workInputKey(id ID, n int) []byte {
	return binary.BigEndian.AppendUint32(append(append([]byte{}, workInputPfx...), id[:]...), uint32(n))
}

func workOwnerKey(thread string) []byte { return append(append([]byte{}, workOwnerPfx...), thread...) }

func workScopeKey(scope string, st WorkState, id ID) []byte {
	k := append(append([]byte{}, workScopePfx...), scope...)
	k = append(append(append(k, 0), st...), 0)
	return append(k, id[:]...)
}

func routerKey(name string) []byte { return append(append([]byte{}, routerCurPfx...), name...) }

type storedWork struct {
	V int `json:"v"`
	Work
}

type storedInput struct {
	V int `json:"v"`
	WorkInput
}

func getWork(txn *badger.Txn, id ID) (Work, error) {
	item, err := txn.Get(workKey(id))
	if errors.Is(err, badger.ErrKeyNotFound) {
		return Work{}, fmt.Errorf("%w: work %s", ErrNotFound, id)
	}
	if err != nil {
		return Work{}, err
	}
	var sw storedWork
	if err := item.Value(func(v []byte) error { return json.Unmarshal(v, &sw) }); err != nil || sw.V != rowVersion || !sw.State.Valid() {
		return Work{}, fmt.Errorf("%w: work %s is held aside (unreadable by this build)", ErrNotFound, id)
	}
	return sw.Work, nil
}

// putWork writes w and moves its scope index entry from prev's state.
func putWork(txn *badger.Txn, w Work, prev *Work) error {
	b, err := json.Marshal(storedWork{V: rowVersion, Work: w})
	if err != nil {
		return err
	}
	if err := txn.Set(workKey(w.ID), b); err != nil {
		return err
	}
	if prev != nil && prev.State != w.State {
		if err := txn.Delete(workScopeKey(prev.Scope, prev.State, prev.ID)); err != nil {
			return err
		}
	}
	return txn.Set(workScopeKey(w.Scope, w.State, w.ID), nil)
}

func putInput(txn *badger.Txn, id ID, in WorkInput) error {
	b, err := json.Marshal(storedInput{V: rowVersion, WorkInput: in})
	if err != nil {
		return err
	}
	return txn.Set(workInputKey(id, in.N), b)
}

// RouterCursor is the last event seq the named router has routed (0 for
// none).
func (s *Badger) RouterCursor(ctx context.Context, name string) (uint64, error) {
	var seq uint64
	err := s.db.View(func(txn *badger.Txn) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		seq, _, err = getSeq(txn, routerKey(name))
		return err
	})
	return seq, err
}

// Routed is what one step of a batch did.
type Routed struct {
	Action RouteAction
	Work   Work
}

// maxRouteBatch bounds the steps of one transaction. A step writes an input
// of at most about 17 KiB (16 KiB of text and its fields) and a Work row,
// so a batch stays near 600 KiB, well inside the 2.4 MiB badger allows a
// transaction with Open's 16 MiB memtables.
const maxRouteBatch = 32

// CheckRouteSteps is what every backend's RouteBatch asks of its steps
// before it writes any: each names a cursor, and each that is not a drop
// a thread key of 1 to 1024 bytes.
func CheckRouteSteps(steps []RouteStep) error {
	for _, st := range steps {
		if st.Cursor == "" {
			return errors.New("store: route step without a cursor")
		}
		if !st.Drop && (st.ThreadKey == "" || len(st.ThreadKey) > maxThreadKey) {
			return fmt.Errorf("store: thread key: want 1-%d bytes", maxThreadKey)
		}
	}
	return nil
}

// RouteBatch applies steps in order (see RouteStep), committing up to
// maxRouteBatch of them and the cursor per transaction: the router's
// throughput is then bounded by commits per batch, not per item. It
// returns what each step did and the Work it reached (zero for skipped,
// dropped and done).
// A step sees the Work earlier steps of its batch created or fed. On an
// error the results of the batches already committed are returned with it.
func (s *Badger) RouteBatch(ctx context.Context, steps []RouteStep) ([]Routed, error) {
	if err := CheckRouteSteps(steps); err != nil {
		return nil, err
	}
	out := make([]Routed, 0, len(steps))
	for len(steps) > 0 {
		n := min(len(steps), maxRouteBatch)
		var batch []Routed
		err := s.update(ctx, func(txn *badger.Txn) error {
			batch = batch[:0]
			for _, st := range steps[:n] {
				r, err := routeStep(txn, st)
				if err != nil {
					return err
				}
				batch = append(batch, r)
			}
			return nil
		})
		if err != nil {
			return out, err
		}
		out = append(out, batch...)
		steps = steps[n:]
	}
	return out, nil
}

// routeStep is one step inside a transaction.
func routeStep(txn *badger.Txn, st RouteStep) (Routed, error) {
	cur, _, err := getSeq(txn, routerKey(st.Cursor))
	if err != nil {
		return Routed{}, err
	}
	if st.Seq <= cur {
		return Routed{Action: RouteDone}, nil
	}
	if err := txn.Set(routerKey(st.Cursor), binary.BigEndian.AppendUint64(nil, st.Seq)); err != nil {
		return Routed{}, err
	}
	if st.Drop {
		return Routed{Action: RouteDropped}, nil
	}
	item, err := txn.Get(workOwnerKey(st.ThreadKey))
	switch {
	case errors.Is(err, badger.ErrKeyNotFound):
		w := st.New
		w.ThreadKey, w.State, w.Inputs = st.ThreadKey, WorkOpen, 1
		in := st.Input
		in.N = 1
		if err := putWork(txn, w, nil); err != nil {
			return Routed{}, err
		}
		if err := putInput(txn, w.ID, in); err != nil {
			return Routed{}, err
		}
		return Routed{Action: RouteCreated, Work: w}, txn.Set(workOwnerKey(st.ThreadKey), w.ID[:])
	case err != nil:
		return Routed{}, err
	}
	var owner ID
	if err := item.Value(func(v []byte) error {
		if len(v) != len(owner) {
			return fmt.Errorf("%w: owner of %q", errWorkRecord, st.ThreadKey)
		}
		copy(owner[:], v)
		return nil
	}); err != nil {
		return Routed{}, err
	}
	w, err := getWork(txn, owner)
	if err != nil || w.Kind != st.OwnerKind || w.State != WorkOpen {
		return Routed{Action: RouteSkipped}, nil
	}
	prev := w
	w.Inputs++
	in := st.Input
	in.N = w.Inputs
	if err := putInput(txn, w.ID, in); err != nil {
		return Routed{}, err
	}
	return Routed{Action: RouteAppended, Work: w}, putWork(txn, w, &prev)
}

// GetWork reads a Work item.
func (s *Badger) GetWork(ctx context.Context, id ID) (Work, error) {
	var w Work
	err := s.db.View(func(txn *badger.Txn) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		var err error
		w, err = getWork(txn, id)
		return err
	})
	return w, err
}

// WorkInputs returns the Work's inputs numbered after after, in order.
func (s *Badger) WorkInputs(ctx context.Context, id ID, after int) ([]WorkInput, error) {
	var out []WorkInput
	err := s.db.View(func(txn *badger.Txn) error {
		prefix := append(append([]byte{}, workInputPfx...), id[:]...)
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix, PrefetchValues: true})
		defer it.Close()
		for it.Seek(workInputKey(id, after+1)); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			var si storedInput
			if err := it.Item().Value(func(v []byte) error { return json.Unmarshal(v, &si) }); err != nil || si.V != rowVersion {
				continue
			}
			out = append(out, si.WorkInput)
		}
		return nil
	})
	return out, err
}

// ListWork returns the scope's Work in state st (every state when st is
// ""), oldest first.
func (s *Badger) ListWork(ctx context.Context, scope string, st WorkState) ([]Work, error) {
	var out []Work
	err := s.db.View(func(txn *badger.Txn) error {
		prefix := append(append(append([]byte{}, workScopePfx...), scope...), 0)
		if st != "" {
			prefix = append(append(prefix, st...), 0)
		}
		it := txn.NewIterator(badger.IteratorOptions{Prefix: prefix})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			k := it.Item().Key()
			var id ID
			copy(id[:], k[len(k)-len(id):])
			w, err := getWork(txn, id)
			if err != nil {
				continue // held aside
			}
			out = append(out, w)
		}
		return nil
	})
	if err == nil && st == "" {
		// The index orders by state first; order by age across states.
		slices.SortFunc(out, func(a, b Work) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	}
	return out, err
}

// transitionWork applies f to the Work under one transaction.
func (s *Badger) transitionWork(ctx context.Context, id ID, f func(w *Work) error) (Work, error) {
	return s.transitionWorkKeyed(ctx, nil, id, f)
}

// transitionWorkKeyed is transitionWork honouring idem, the idempotency
// key of the request it answers (nil: none).
func (s *Badger) transitionWorkKeyed(ctx context.Context, idem *Idem, id ID, f func(w *Work) error) (Work, error) {
	var out Work
	err := s.update(ctx, func(txn *badger.Txn) error {
		if err := checkIdem(txn, idem); err != nil {
			return err
		}
		w, err := getWork(txn, id)
		if err != nil {
			return err
		}
		prev := w
		if err := f(&w); err != nil {
			return err
		}
		out = w
		if err := putWork(txn, w, &prev); err != nil {
			return err
		}
		return keepIdem(txn, idem, w)
	})
	if err == nil {
		s.noteIdem(idem)
	}
	return out, err
}

// ClaimWork gives an open Work to recipient, who is then given every input
// so far (Work.Claim: Consumed moves to Inputs). Claiming again by the same recipient
// is allowed; by another, or of a completed Work, is ErrWorkConflict.
func (s *Badger) ClaimWork(ctx context.Context, id ID, recipient string, now time.Time) (Work, error) {
	return s.transitionWorkKeyed(ctx, IdemOf(ctx), id, func(w *Work) error {
		switch {
		case w.State != WorkOpen:
			return fmt.Errorf("%w: work %s is %s", ErrWorkConflict, id, w.State)
		case w.ClaimedBy != "" && w.ClaimedBy != recipient:
			return fmt.Errorf("%w: work %s is claimed by %s", ErrWorkConflict, id, w.ClaimedBy)
		}
		w.Claim(recipient, now)
		return nil
	})
}

// CompleteWork makes an open Work completed: later items of its thread
// start nothing. Completing a completed Work is ErrWorkConflict.
func (s *Badger) CompleteWork(ctx context.Context, id ID, now time.Time) (Work, error) {
	return s.completeWork(ctx, id, now, nil)
}

// CompleteWorkAs is CompleteWork on the condition, checked in the same
// transaction, that the Work is still claimed by claimedBy ("": still
// unclaimed), as it was when the caller was authorized to complete it;
// otherwise ErrWorkConflict.
func (s *Badger) CompleteWorkAs(ctx context.Context, id ID, now time.Time, claimedBy string) (Work, error) {
	return s.completeWork(ctx, id, now, &claimedBy)
}

// completeWork honours the request's idempotency key when it is
// CompleteWorkAs (claimedBy set), the route's write.
func (s *Badger) completeWork(ctx context.Context, id ID, now time.Time, claimedBy *string) (Work, error) {
	var idem *Idem
	if claimedBy != nil {
		idem = IdemOf(ctx)
	}
	return s.transitionWorkKeyed(ctx, idem, id, func(w *Work) error {
		if w.State != WorkOpen {
			return fmt.Errorf("%w: work %s is already %s", ErrWorkConflict, id, w.State)
		}
		if claimedBy != nil && w.ClaimedBy != *claimedBy {
			return fmt.Errorf("%w: work %s was claimed by %q meanwhile", ErrWorkConflict, id, w.ClaimedBy)
		}
		t := now.UTC()
		w.State, w.CompletedAt = WorkCompleted, &t
		return nil
	})
}

// ConsumeWork records that recipient has been given the Work's inputs up
// to n (Work.Consume): the claimer's Consumed, or recipient's own cursor.
// Neither moves back.
func (s *Badger) ConsumeWork(ctx context.Context, id ID, recipient string, n int) (Work, error) {
	return s.transitionWork(ctx, id, func(w *Work) error {
		w.Consume(recipient, n)
		return nil
	})
}
