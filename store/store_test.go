package store

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"pgregory.net/rapid"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func openTest(t *testing.T, dir string) *Badger {
	t.Helper()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

type seqReader struct{ r *rand.ChaCha8 }

func (s seqReader) Read(p []byte) (int, error) { return s.r.Read(p) }

func newIDs() seqReader { return seqReader{rand.NewChaCha8([32]byte{1})} }

func pendingWatch(t *testing.T, ids seqReader, recipient string, at time.Time) Watch {
	t.Helper()
	id, err := NewID(at, ids)
	if err != nil {
		t.Fatal(err)
	}
	exp := at.Add(15 * time.Minute)
	return Watch{
		ID: id, Kind: "timer", Params: json.RawMessage(`{"at":"2026-11-30T13:00:00Z"}`),
		Recipient: Recipient{ID: recipient}, State: Pending, Receipt: ReceiptNone,
		Every: Duration(time.Minute), CreatedAt: at, ExpiresAt: &exp,
	}
}

// createdWatch creates a pending row for recipient at at and returns it.
func createdWatch(t *testing.T, s *Badger, ids seqReader, recipient string, at time.Time) Watch {
	t.Helper()
	w := pendingWatch(t, ids, recipient, at)
	if err := s.Create(context.Background(), w); err != nil {
		t.Fatal(err)
	}
	return w
}

func TestPruneManyInBatches(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	const n = 2*pruneBatch + 7
	for range n {
		w := pendingWatch(t, ids, "a", t0)
		_ = s.Create(ctx, w)
		_, _ = s.Settle(ctx, w.ID, Settlement{State: Cancelled, Receipt: ReceiptNone, SettledAt: t0})
	}
	got, err := s.Prune(ctx, t0.Add(time.Second))
	if err != nil || got != n {
		t.Fatalf("pruned %d of %d: %v", got, n, err)
	}
}

// A row of an unknown future shape is kept byte for byte through reads,
// writes and prunes, and costs the other rows nothing.
func TestRowFromANewerReleaseIsHeldAside(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	s := openTest(t, dir)
	ids := newIDs()
	future := pendingWatch(t, ids, "a", t0)
	futureState := stateKey("snoozed", future.ID)
	futureBytes := []byte(`{"v":2,"id":"` + future.ID.String() + `","kind":"phase_nudge","state":"snoozed","nudged_at":"2026-11-30T12:00:00Z"}`)
	other := pendingWatch(t, ids, "a", t0)
	err := s.db.Update(func(txn *badger.Txn) error {
		_ = txn.Set(rowKey(future.ID), futureBytes)
		_ = txn.Set(futureState, nil)
		return txn.Set(recipientKey("a", future.ID), nil)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Same version, unknown field: also held aside (a lenient decode would
	// drop the field on the next write).
	extra := pendingWatch(t, ids, "a", t0)
	extraBytes := []byte(`{"v":1,"id":"` + extra.ID.String() + `","kind":"timer","state":"fired","receipt":"none","every":"1m0s","created_at":"2026-11-30T12:00:00Z","settled_at":"2020-01-01T00:00:00Z","attempts":0,"params":{},"recipient":{"id":"a"},"snooze":true}`)
	_ = s.db.Update(func(txn *badger.Txn) error {
		_ = txn.Set(rowKey(extra.ID), extraBytes)
		_ = txn.Set(stateKey(Fired, extra.ID), nil)
		return txn.Set(recipientKey("a", extra.ID), nil)
	})

	if err := s.Create(ctx, other); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Settle(ctx, other.ID, Settlement{State: Fired, Receipt: ReceiptUnknown, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, future.ID); !errors.Is(err, ErrNotFound) {
		t.Fatalf("get of the future row: %v", err)
	}
	rows, held, err := s.List(ctx, Filter{Recipient: "a"})
	if err != nil || len(rows) != 1 || held != 2 {
		t.Fatalf("list: %d rows, %d held, %v", len(rows), held, err)
	}
	if _, err := s.Prune(ctx, t0.Add(365*24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	_ = s.Close()

	s = openTest(t, dir)
	for key, want := range map[string][]byte{string(rowKey(future.ID)): futureBytes, string(rowKey(extra.ID)): extraBytes} {
		var got []byte
		err := s.db.View(func(txn *badger.Txn) error {
			item, err := txn.Get([]byte(key))
			if err != nil {
				return err
			}
			got, err = item.ValueCopy(nil)
			return err
		})
		if err != nil || !bytes.Equal(got, want) {
			t.Fatalf("row changed: %v\n got %s\nwant %s", err, got, want)
		}
	}
}

func TestStoreVersion(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.db.Update(func(txn *badger.Txn) error { return txn.Set(versionKey, []byte("2")) })
	_ = s.Close()
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrStoreTooNew) || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("newer store: %v", err)
	}
}

func TestSecondOpenIsInUse(t *testing.T) {
	dir := t.TempDir()
	_ = openTest(t, dir)
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrInUse) {
		t.Fatalf("second open: %v", err)
	}
}

func TestCorruptFilesAreRefused(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, Options{})
	if err != nil {
		t.Fatal(err)
	}
	_ = s.Create(context.Background(), pendingWatch(t, newIDs(), "a", t0))
	_ = s.Close()
	if err := os.WriteFile(filepath.Join(dir, "MANIFEST"), []byte("this is not a manifest"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Open(dir, Options{}); !errors.Is(err, ErrCorrupt) {
		t.Fatalf("corrupt store: %v", err)
	}
}

func TestIDRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var id ID
		copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "id"))
		s := id.String()
		if len(s) != 26 {
			t.Fatalf("%q", s)
		}
		back, err := ParseID(s)
		if err != nil || back != id {
			t.Fatalf("%x -> %s -> %x %v", id, s, back, err)
		}
		if upper, err := ParseID(strings.ToUpper(s)); err != nil || upper != id {
			t.Fatalf("upper case: %v", err)
		}
	})
}

func TestIDsSortByTime(t *testing.T) {
	ids := newIDs()
	a, _ := NewID(t0, ids)
	b, _ := NewID(t0.Add(time.Millisecond), ids)
	if !(a.String() < b.String()) || bytes.Compare(a[:], b[:]) >= 0 || !a.Time().Equal(t0) {
		t.Fatalf("%s %s %v", a, b, a.Time())
	}
}

func FuzzParseID(f *testing.F) {
	f.Add("01jdx3m5z8a8w0q6v4f1r2n3p4")
	f.Add("zzzzzzzzzzzzzzzzzzzzzzzzzz")
	f.Fuzz(func(t *testing.T, s string) {
		id, err := ParseID(s)
		if err != nil {
			return
		}
		if !strings.EqualFold(id.String(), s) {
			t.Fatalf("%q parsed to %s", s, id)
		}
	})
}

// The pending index carries each pending row's schedule, kept current
// through baselines and gone on settlement; a row indexed without one (an
// older layout) is read whole.
func TestForEachPendingReadsTheIndex(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	a, b, c := pendingWatch(t, ids, "r", t0), pendingWatch(t, ids, "r", t0), pendingWatch(t, ids, "r", t0)
	b.Every, b.ExpiresAt, b.Standing = Duration(5*time.Second), nil, true
	for _, w := range []Watch{a, b, c} {
		if err := s.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	_ = s.CarryBaseline(ctx, b.ID, []byte(`{}`), 7, "")
	_, _ = s.Settle(ctx, c.ID, Settlement{State: Fired, Receipt: ReceiptUnknown, SettledAt: t0})
	// a's index entry as an older layout wrote it: no value.
	_ = s.db.Update(func(txn *badger.Txn) error { return txn.Set(stateKey(Pending, a.ID), nil) })

	got := map[ID]Schedule{}
	held, err := s.ForEachPending(ctx, func(sc Schedule) error { got[sc.ID] = sc; return nil })
	if err != nil || held != 0 || len(got) != 2 {
		t.Fatalf("%d schedules, %d held, %v", len(got), held, err)
	}
	if sa := got[a.ID]; sa.Every != time.Minute || !sa.Expires.Equal(*a.ExpiresAt) {
		t.Fatalf("a (read whole): %+v", sa)
	}
	if sb := got[b.ID]; sb.Every != 5*time.Second || !sb.Expires.IsZero() || sb.Attempts != 7 {
		t.Fatalf("b (from the index): %+v", sb)
	}
}

// A row of a newer schema version is held aside even when every field it
// has is one this build knows: the same field may mean something else.
func TestNewerRowVersionIsHeldAside(t *testing.T) {
	w := pendingWatch(t, newIDs(), "a", t0)
	b, err := EncodeRow(w)
	if err != nil {
		t.Fatal(err)
	}
	b = bytes.Replace(b, []byte(`{"v":1,`), []byte(`{"v":2,`), 1)
	if _, err := DecodeRow(rowKey(w.ID), b); err == nil {
		t.Fatalf("decoded a v2 row: %s", b)
	}
	var ue *UnreadableError
	if _, err := DecodeRow(rowKey(w.ID), b); !errors.As(err, &ue) || !strings.Contains(err.Error(), "version 2") {
		t.Fatalf("err = %v", err)
	}
}

// A durable next check rides in the pending index beside the schedule: Get
// and ForEachPending see it, a baseline keeps it, an older 20-byte entry
// still reads (with none) and takes one, and a settled row refuses it.
func TestNextCheckLivesInThePendingIndex(t *testing.T) {
	ctx := context.Background()
	s := openTest(t, t.TempDir())
	ids := newIDs()
	a, b := pendingWatch(t, ids, "r", t0), pendingWatch(t, ids, "r", t0)
	for _, w := range []Watch{a, b} {
		if err := s.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	next := t0.Add(time.Hour)
	if err := s.SetNextCheck(ctx, a.ID, next); err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Get(ctx, a.ID); !got.NextCheck.Equal(next) {
		t.Fatalf("Get: next check %v, want %v", got.NextCheck, next)
	}
	if err := s.CarryBaseline(ctx, a.ID, []byte(`{}`), 3, "moved"); err != nil {
		t.Fatal(err)
	}
	// b's entry as the layout before next checks wrote it: 20 bytes.
	old := scheduleValue(b)
	if len(old) != scheduleLen {
		t.Fatalf("a schedule without a next check is %d bytes, want %d", len(old), scheduleLen)
	}
	schedules := func() map[ID]Schedule {
		t.Helper()
		got := map[ID]Schedule{}
		if _, err := s.ForEachPending(ctx, func(sc Schedule) error { got[sc.ID] = sc; return nil }); err != nil {
			t.Fatal(err)
		}
		return got
	}
	got := schedules()
	if sa := got[a.ID]; !sa.Next.Equal(next) || sa.Attempts != 3 || sa.Every != time.Minute {
		t.Fatalf("a after a baseline: %+v", sa)
	}
	if sb := got[b.ID]; !sb.Next.IsZero() || sb.Every != time.Minute || !sb.Expires.Equal(*b.ExpiresAt) {
		t.Fatalf("b (older layout): %+v", sb)
	}
	// An entry of the oldest layout, no value: the row gives the schedule.
	_ = s.db.Update(func(txn *badger.Txn) error { return txn.Set(stateKey(Pending, b.ID), nil) })
	if err := s.SetNextCheck(ctx, b.ID, next); err != nil {
		t.Fatal(err)
	}
	if sb := schedules()[b.ID]; !sb.Next.Equal(next) || sb.Every != time.Minute || !sb.Expires.Equal(*b.ExpiresAt) {
		t.Fatalf("b after a next check over an empty entry: %+v", sb)
	}
	if err := s.SetNextCheck(ctx, b.ID, time.Time{}); err != nil {
		t.Fatal(err)
	}
	if sb := schedules()[b.ID]; !sb.Next.IsZero() {
		t.Fatalf("b's next check was not cleared: %+v", sb)
	}
	if _, err := s.Settle(ctx, a.ID, Settlement{State: Fired, Receipt: ReceiptUnknown, SettledAt: t0}); err != nil {
		t.Fatal(err)
	}
	if err := s.SetNextCheck(ctx, a.ID, next); !errors.Is(err, ErrNotPending) {
		t.Fatalf("a next check on a settled row: %v", err)
	}
	if err := s.RecordProbe(ctx, a.ID, Probe{Attempts: 9}); !errors.Is(err, ErrNotPending) {
		t.Fatalf("a probe record on a settled row: %v", err)
	}
}
