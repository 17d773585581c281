package kvtest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// Options are an adapter's hooks for what the seam cannot reach.
type Options struct {
	// Reopen closes kv and opens the same data again, as a restart would;
	// nil skips the subtests that need it.
	Reopen func(t *testing.T, kv store.KV) store.KV
}

// Run runs the suite, each subtest on an adapter of its own from open,
// which registers its Close with t.Cleanup (and accepts one closed
// already).
func Run(t *testing.T, open func(t *testing.T) store.KV, o Options) {
	t.Helper()
	for _, c := range []struct {
		name string
		run  func(e *env)
	}{
		{"OwnWritesAndAllOrNothing", testOwnWrites},
		{"ValuesAreTheCallers", testValuesKept},
		{"EveryFamilyRoundTrips", testFamilies},
		{"ScanInOrderByRange", testScan},
		{"ScanStops", testScanStops},
		{"ReadThenWrittenIsChecked", testReadWritten},
		{"ScannedThenWrittenIsChecked", testScannedWritten},
		{"FenceIsChecked", testFence},
		{"NoUpdateIsLost", testIncrements},
		{"LosingEveryRunIsBusy", testBusy},
		{"SerialisedOneAtATime", testSerialised},
		{"ThenInCommitOrder", testThenOrder},
		{"NoThenForAFailure", testThenOnlyOnSuccess},
		{"OneWayNamesFoundAgain", testOneWay},
		{"PrefetchIsGet", testPrefetch},
		{"AcknowledgedSurvivesAReopen", testReopen},
		{"FollowTellsOfChanges", testFollow},
		{"CopyKeysRoundTrips", testCopy},
	} {
		t.Run(c.name, func(t *testing.T) {
			c.run(&env{T: t, kv: open(t), o: o, open: open, ctx: context.Background()})
		})
	}
}

type env struct {
	*testing.T
	kv   store.KV
	o    Options
	open func(t *testing.T) store.KV
	ctx  context.Context
}

func (e *env) put(k store.Key, v string) {
	e.Helper()
	if store.KeysAlone(k.Fam) {
		v = ""
	}
	if err := e.kv.Update(e.ctx, store.TxOptions{Name: "put"}, func(tx store.Tx) error {
		tx.Put(k, []byte(v))
		return nil
	}); err != nil {
		e.Fatal(err)
	}
}

// get reads k in a view: its value and whether it is there.
func (e *env) get(k store.Key) (string, bool) {
	e.Helper()
	var v []byte
	var ok bool
	if err := e.kv.View(e.ctx, func(tx store.Tx) error {
		var err error
		v, ok, err = tx.Get(k)
		return err
	}); err != nil {
		e.Fatal(err)
	}
	return string(v), ok
}

// scan reads r in a view.
func (e *env) scan(r store.Range) ([]store.Key, []string) {
	e.Helper()
	var keys []store.Key
	var vals []string
	if err := e.kv.View(e.ctx, func(tx store.Tx) error {
		keys, vals = nil, nil
		return tx.Scan(r, func(k store.Key, v []byte) (bool, error) {
			keys = append(keys, k)
			vals = append(vals, string(v))
			return true, nil
		})
	}); err != nil {
		e.Fatal(err)
	}
	return keys, vals
}

func id(n byte) store.ID {
	var i store.ID
	i[0], i[15] = 1, n
	return i
}

func counter(name string) store.Key { return store.Key{Fam: store.FamMailSeq, Name: name} }

func readInt(tx store.Tx, k store.Key) (int, error) {
	v, ok, err := tx.Get(k)
	if err != nil || !ok {
		return 0, err
	}
	return strconv.Atoi(string(v))
}

// A transaction's reads see its own writes, puts and deletes; an error
// from fn commits none of them.
func testOwnWrites(e *env) {
	a, b := counter("a"), counter("b")
	e.put(b, "old")
	err := e.kv.Update(e.ctx, store.TxOptions{Name: "own"}, func(tx store.Tx) error {
		tx.Put(a, []byte("1"))
		tx.Delete(b)
		if v, ok, err := tx.Get(a); err != nil || !ok || string(v) != "1" {
			return fmt.Errorf("own put read as %q %v %v", v, ok, err)
		}
		if _, ok, err := tx.Get(b); err != nil || ok {
			return fmt.Errorf("own delete read as there (%v)", err)
		}
		return nil
	})
	if err != nil {
		e.Fatal(err)
	}
	if v, ok := e.get(a); !ok || v != "1" {
		e.Fatalf("after the commit: %q %v", v, ok)
	}
	if _, ok := e.get(b); ok {
		e.Fatal("a committed delete is still there")
	}
	refused := errors.New("refused")
	err = e.kv.Update(e.ctx, store.TxOptions{Name: "none"}, func(tx store.Tx) error {
		tx.Put(a, []byte("2"))
		tx.Put(b, []byte("2"))
		return refused
	})
	if !errors.Is(err, refused) {
		e.Fatalf("a refused transaction: %v", err)
	}
	if v, _ := e.get(a); v != "1" {
		e.Fatalf("a refused transaction wrote %q", v)
	}
	if _, ok := e.get(b); ok {
		e.Fatal("a refused transaction wrote a key")
	}
}

// A value Get returned is the caller's: a later write does not change it.
func testValuesKept(e *env) {
	k := counter("kept")
	e.put(k, "first")
	var got []byte
	if err := e.kv.View(e.ctx, func(tx store.Tx) error {
		var err error
		got, _, err = tx.Get(k)
		return err
	}); err != nil {
		e.Fatal(err)
	}
	for i := range 50 {
		e.put(k, "second "+strconv.Itoa(i)+strings.Repeat("x", 100))
	}
	if string(got) != "first" {
		e.Fatalf("a kept value changed to %q", got)
	}
}

// samples is a key of every family, with names an adapter must keep
// whatever they hold (but the separators a layout splits on, which no
// name of the domain holds where it would).
func samples() []store.Key {
	at := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC).UnixNano()
	return []store.Key{
		{Fam: store.FamRow, ID: id(1)},
		{Fam: store.FamState, Sub: "pending", ID: id(2)},
		{Fam: store.FamRecipientIndex, Name: "agent.one@x", ID: id(3)},
		{Fam: store.FamRecipientPending, Name: "agent.one@x", ID: id(3)},
		{Fam: store.FamPendingCount, Name: "agent.one@x"},
		{Fam: store.FamPendingKind, Name: "observe.thread", ID: id(4)},
		{Fam: store.FamSubject, Name: "work/01abc"},
		{Fam: store.FamMessage, Name: "a b*>", Seq: 7},
		{Fam: store.FamMailSeq, Name: "a b*>"},
		{Fam: store.FamPush, Name: "ünï", Seq: 1 << 40},
		{Fam: store.FamLivePush, Name: "ünï", Seq: 3},
		{Fam: store.FamSettledAt, At: at, ID: id(5)},
		{Fam: store.FamMessageAt, At: -at, Name: "r", Seq: 2},
		{Fam: store.FamPushAt, At: at, Name: "r", Seq: 9},
		{Fam: store.FamEvent, Name: "fetch.dead_letters", Seq: 12},
		{Fam: store.FamEventKey, Name: "observe", Sub: "key\x00with a nul"},
		{Fam: store.FamEventSeq, Name: "observe"},
		{Fam: store.FamWork, ID: id(6)},
		{Fam: store.FamWorkInput, ID: id(6), Seq: 65535},
		{Fam: store.FamWorkOwner, Name: "github.com/o/r#1"},
		{Fam: store.FamWorkScope, Name: "scope/with/slashes", Sub: "open", ID: id(6)},
		{Fam: store.FamRouter, Name: "observe"},
		{Fam: store.FamRecipient, Name: "agent.one@x"},
		{Fam: store.FamIdem, Name: "principal", Sub: "key-1"},
		{Fam: store.FamIdemAt, At: at, Name: "principal", Sub: "key-1"},
		{Fam: store.FamDue, Seq: 29_000_000, At: at, ID: id(7)},
		{Fam: store.FamMarker, Name: "pkv"},
		{Fam: store.FamToken, Name: "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"},
	}
}

// Every family's key is written, found by Get and by a scan of its
// family, with its parts as written.
func testFamilies(e *env) {
	for i, k := range samples() {
		e.put(k, "v"+strconv.Itoa(i))
	}
	for i, k := range samples() {
		want := "v" + strconv.Itoa(i)
		if store.KeysAlone(k.Fam) {
			want = ""
		}
		if v, ok := e.get(k); !ok || v != want {
			e.Fatalf("%+v: %q %v", k, v, ok)
		}
		keys, _ := e.scan(store.Prefix(store.Key{Fam: k.Fam}, 0))
		if len(keys) != 1 || store.Compare(keys[0], k) != 0 || keys[0].OneWay != 0 {
			e.Fatalf("the scan of %s: %+v, want %+v", k.Fam, keys, k)
		}
	}
}

// A scan gives its range's keys in key order: a prefix of fixed parts
// (a name's keys, not a longer name's), from a key on, keys alone.
func testScan(e *env) {
	var want []store.Key
	for _, name := range []string{"a", "ab", "b", ""} {
		for _, n := range []byte{9, 2, 5} {
			k := store.Key{Fam: store.FamRecipientIndex, Name: name, ID: id(n)}
			e.put(k, name+strconv.Itoa(int(n)))
			want = append(want, k)
		}
	}
	slices.SortFunc(want, store.Compare)
	keys, vals := e.scan(store.Prefix(store.Key{Fam: store.FamRecipientIndex}, 0))
	if !keysEqual(keys, want) {
		e.Fatalf("the family: %+v\nwant %+v", keys, want)
	}
	for i, k := range keys {
		if vals[i] != k.Name+strconv.Itoa(int(k.ID[15])) {
			e.Fatalf("%+v's value is %q", k, vals[i])
		}
	}
	keys, _ = e.scan(store.Prefix(store.Key{Fam: store.FamRecipientIndex, Name: "a"}, 1))
	if len(keys) != 3 || keys[0].ID != id(2) || keys[1].ID != id(5) || keys[2].ID != id(9) || keys[0].Name != "a" {
		e.Fatalf("a's keys: %+v", keys)
	}
	keys, _ = e.scan(store.Prefix(store.Key{Fam: store.FamRecipientIndex, Name: "a"}, 1).FromKey(store.Key{Fam: store.FamRecipientIndex, Name: "a", ID: id(3)}))
	if len(keys) != 2 || keys[0].ID != id(5) {
		e.Fatalf("a's keys from id 3: %+v", keys)
	}
	r := store.Prefix(store.Key{Fam: store.FamRecipientIndex, Name: "b"}, 1)
	r.KeysOnly = true
	if keys, _ = e.scan(r); len(keys) != 3 {
		e.Fatalf("b's keys alone: %+v", keys)
	}
	// Times sort as they do, before the epoch too; sequences as numbers.
	at := []int64{-5e18, -1, 0, 1, 7e18}
	for i, n := range []int{4, 2, 0, 3, 1} {
		e.put(store.Key{Fam: store.FamMessageAt, At: at[n], Name: "r", Seq: uint64(i)}, "")
	}
	keys, _ = e.scan(store.Prefix(store.Key{Fam: store.FamMessageAt}, 0))
	for i := range keys {
		if keys[i].At != at[i] || keys[i].Name != "r" {
			e.Fatalf("by time: %+v", keys)
		}
	}
	keys, _ = e.scan(store.Prefix(store.Key{Fam: store.FamMessageAt}, 0).FromKey(store.Key{Fam: store.FamMessageAt, At: 0}))
	if len(keys) != 3 || keys[0].At != 0 {
		e.Fatalf("from time 0: %+v", keys)
	}
	for _, seq := range []uint64{300, 2, 1 << 33, 40} {
		e.put(store.Key{Fam: store.FamEvent, Name: "s", Seq: seq}, "")
		e.put(store.Key{Fam: store.FamEvent, Name: "s2", Seq: seq}, "")
	}
	keys, _ = e.scan(store.Prefix(store.Key{Fam: store.FamEvent, Name: "s"}, 1).FromKey(store.Key{Fam: store.FamEvent, Name: "s", Seq: 3}))
	if len(keys) != 3 || keys[0].Seq != 40 || keys[1].Seq != 300 || keys[2].Seq != 1<<33 {
		e.Fatalf("a stream from seq 3: %+v", keys)
	}
	// Two names of a key: by the first, then the second.
	for _, k := range []store.Key{
		{Fam: store.FamWorkScope, Name: "s", Sub: "open", ID: id(2)},
		{Fam: store.FamWorkScope, Name: "s", Sub: "completed", ID: id(3)},
		{Fam: store.FamWorkScope, Name: "s", Sub: "open", ID: id(1)},
		{Fam: store.FamWorkScope, Name: "t", Sub: "open", ID: id(1)},
	} {
		e.put(k, "")
	}
	keys, _ = e.scan(store.Prefix(store.Key{Fam: store.FamWorkScope, Name: "s", Sub: "open"}, 2))
	if len(keys) != 2 || keys[0].ID != id(1) || keys[1].ID != id(2) || keys[0].Sub != "open" {
		e.Fatalf("scope s, open: %+v", keys)
	}
	keys, _ = e.scan(store.Prefix(store.Key{Fam: store.FamWorkScope, Name: "s"}, 1))
	if len(keys) != 3 || keys[0].Sub != "completed" {
		e.Fatalf("scope s: %+v", keys)
	}
	// The due index: by bucket, then time, then id; a bucket's keys from
	// a time within it, the earlier ones and the other buckets' left out.
	due := []store.Key{
		{Fam: store.FamDue, Seq: 7, At: 300, ID: id(1)},
		{Fam: store.FamDue, Seq: 7, At: 100, ID: id(9)},
		{Fam: store.FamDue, Seq: 7, At: 100, ID: id(2)},
		{Fam: store.FamDue, Seq: 6, At: 900, ID: id(3)},
		{Fam: store.FamDue, Seq: 8, At: 1, ID: id(4)},
	}
	for _, k := range due {
		e.put(k, "s")
	}
	keys, vals = e.scan(store.Prefix(store.Key{Fam: store.FamDue, Seq: 7}, 1).FromKey(store.Key{Fam: store.FamDue, Seq: 7, At: 100, ID: id(3)}))
	if len(keys) != 2 || keys[0].ID != id(9) || keys[1].At != 300 || keys[1].Seq != 7 || vals[0] != "s" {
		e.Fatalf("bucket 7 from time 100, id 3: %+v", keys)
	}
	keys, _ = e.scan(store.Prefix(store.Key{Fam: store.FamDue}, 0))
	slices.SortFunc(due, store.Compare)
	if !keysEqual(keys, due) || keys[0].Seq != 6 || keys[1].ID != id(2) {
		e.Fatalf("the due index: %+v", keys)
	}
}

func keysEqual(a, b []store.Key) bool {
	return slices.EqualFunc(a, b, func(x, y store.Key) bool { return store.Compare(x, y) == 0 })
}

// A scan stops when fn says no more, and returns fn's error.
func testScanStops(e *env) {
	for n := range byte(10) {
		e.put(store.Key{Fam: store.FamRow, ID: id(n)}, "")
	}
	seen := 0
	if err := e.kv.View(e.ctx, func(tx store.Tx) error {
		return tx.Scan(store.Prefix(store.Key{Fam: store.FamRow}, 0), func(store.Key, []byte) (bool, error) {
			seen++
			return seen < 3, nil
		})
	}); err != nil || seen != 3 {
		e.Fatalf("stopped after %d, %v; want 3", seen, err)
	}
	stop := errors.New("stop")
	err := e.kv.View(e.ctx, func(tx store.Tx) error {
		return tx.Scan(store.Prefix(store.Key{Fam: store.FamRow}, 0), func(store.Key, []byte) (bool, error) { return true, stop })
	})
	if !errors.Is(err, stop) {
		e.Fatalf("fn's error: %v", err)
	}
}

// raced runs an Update of its own between a transaction's read and its
// commit, in the transaction's first run only.
type raced struct {
	once sync.Once
	e    *env
}

func (r *raced) race(f func(tx store.Tx)) {
	r.once.Do(func() {
		if err := r.e.kv.Update(r.e.ctx, store.TxOptions{Name: "racer"}, func(tx store.Tx) error {
			f(tx)
			return nil
		}); err != nil {
			r.e.Error(err)
		}
	})
}

// A key read and written is checked at the commit: another writer's
// change between the read and the commit sends the transaction round
// again, on the change.
func testReadWritten(e *env) {
	k := counter("n")
	e.put(k, "1")
	r := &raced{e: e}
	runs := 0
	err := e.kv.Update(e.ctx, store.TxOptions{Name: "increment"}, func(tx store.Tx) error {
		runs++
		n, err := readInt(tx, k)
		if err != nil {
			return err
		}
		r.race(func(tx store.Tx) { tx.Put(k, []byte("10")) })
		tx.Put(k, []byte(strconv.Itoa(n+1)))
		return nil
	})
	if err != nil {
		e.Fatal(err)
	}
	if v, _ := e.get(k); v != "11" || runs != 2 {
		e.Fatalf("%q after %d runs, want 11 after 2", v, runs)
	}
}

// A key a scan read and the transaction writes is checked too.
func testScannedWritten(e *env) {
	k := store.Key{Fam: store.FamRecipientIndex, Name: "r", ID: id(1)}
	e.put(k, "1")
	r := &raced{e: e}
	runs := 0
	err := e.kv.Update(e.ctx, store.TxOptions{Name: "scan-and-write"}, func(tx store.Tx) error {
		runs++
		var n int
		if err := tx.Scan(store.Prefix(store.Key{Fam: store.FamRecipientIndex, Name: "r"}, 1), func(_ store.Key, v []byte) (bool, error) {
			var err error
			n, err = strconv.Atoi(string(v))
			return false, err
		}); err != nil {
			return err
		}
		r.race(func(tx store.Tx) { tx.Put(k, []byte("10")) })
		tx.Put(k, []byte(strconv.Itoa(n+1)))
		return nil
	})
	if err != nil {
		e.Fatal(err)
	}
	if v, _ := e.get(k); v != "11" || runs != 2 {
		e.Fatalf("%q after %d runs, want 11 after 2", v, runs)
	}
}

// A fenced key, read and not written, is checked at the commit: a
// decision taken on it (here: copying it) holds when the writes land,
// whether the key was there or not when read.
func testFence(e *env) {
	for _, there := range []bool{true, false} {
		src, dst := counter("src"+strconv.FormatBool(there)), counter("dst"+strconv.FormatBool(there))
		if there {
			e.put(src, "1")
		}
		r := &raced{e: e}
		runs := 0
		err := e.kv.Update(e.ctx, store.TxOptions{Name: "copy"}, func(tx store.Tx) error {
			runs++
			v, _, err := tx.Get(src)
			if err != nil {
				return err
			}
			tx.Fence(src)
			r.race(func(tx store.Tx) { tx.Put(src, []byte("2")) })
			tx.Put(dst, append([]byte("copy "), v...))
			return nil
		})
		if err != nil {
			e.Fatal(err)
		}
		if v, _ := e.get(dst); v != "copy 2" || runs != 2 {
			e.Fatalf("source there %v: %q after %d runs, want \"copy 2\" after 2", there, v, runs)
		}
	}
}

// Concurrent read-modify-writes of one key lose none: each commit lands
// on what the one before it wrote.
func testIncrements(e *env) {
	k := counter("n")
	const writers, each = 6, 15
	var wg sync.WaitGroup
	for range writers {
		wg.Go(func() {
			for done := 0; done < each; {
				err := e.kv.Update(e.ctx, store.TxOptions{Name: "increment"}, func(tx store.Tx) error {
					n, err := readInt(tx, k)
					tx.Put(k, []byte(strconv.Itoa(n+1)))
					return err
				})
				switch {
				case err == nil:
					done++
				case !errors.Is(err, store.ErrBusy):
					e.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	if v, _ := e.get(k); v != strconv.Itoa(writers*each) {
		e.Fatalf("%d increments left %s", writers*each, v)
	}
}

// A transaction whose read another writer changes before every commit
// gives up, nothing of it written, with store.ErrBusy.
func testBusy(e *env) {
	k, mine := counter("contended"), counter("mine")
	runs := 0
	err := e.kv.Update(e.ctx, store.TxOptions{Name: "loser"}, func(tx store.Tx) error {
		runs++
		if _, _, err := tx.Get(k); err != nil {
			return err
		}
		if err := e.kv.Update(e.ctx, store.TxOptions{Name: "winner"}, func(tx store.Tx) error {
			tx.Put(k, []byte(strconv.Itoa(runs)))
			return nil
		}); err != nil {
			return err
		}
		tx.Put(k, []byte("mine"))
		tx.Put(mine, []byte("mine"))
		return nil
	})
	if !errors.Is(err, store.ErrBusy) || runs < 2 {
		e.Fatalf("after %d runs: %v, want ErrBusy", runs, err)
	}
	if _, ok := e.get(mine); ok {
		e.Fatal("a busy transaction wrote")
	}
}

// Transactions of one hint run one at a time from where they take it
// (TxOptions.Serial: from their first run; Tx.Serialise: from the call),
// so none of them loses its read to another.
func testSerialised(e *env) {
	for _, lazy := range []bool{false, true} {
		k := counter("serial" + strconv.FormatBool(lazy))
		var in, most atomic.Int32
		var runs atomic.Int32
		const writers, each = 4, 10
		var wg sync.WaitGroup
		for range writers {
			wg.Go(func() {
				for range each {
					o := store.TxOptions{Name: "serial"}
					if !lazy {
						o.Serial = "h"
					}
					err := e.kv.Update(e.ctx, o, func(tx store.Tx) error {
						if lazy {
							tx.Serialise("h")
						}
						runs.Add(1)
						n := in.Add(1)
						defer in.Add(-1)
						for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
						}
						v, err := readInt(tx, k)
						time.Sleep(100 * time.Microsecond)
						tx.Put(k, []byte(strconv.Itoa(v+1)))
						return err
					})
					if err != nil {
						e.Error(err)
						return
					}
				}
			})
		}
		wg.Wait()
		if most.Load() != 1 {
			e.Fatalf("lazy %v: %d transactions of one hint ran at once", lazy, most.Load())
		}
		if v, _ := e.get(k); v != strconv.Itoa(writers*each) {
			e.Fatalf("lazy %v: %s", lazy, v)
		}
		if !lazy && runs.Load() != writers*each {
			e.Fatalf("%d runs for %d serialised commits: one lost its read", runs.Load(), writers*each)
		}
	}
}

// The committeds and the thens of one hint's commits are each called in
// commit order, a commit's committed before its then, each before its
// Update returns.
func testThenOrder(e *env) {
	k := counter("seq")
	var mu sync.Mutex
	var order, committed []int
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 15 {
				var wrote int
				called := false
				err := e.kv.Update(e.ctx, store.TxOptions{Name: "append", Committed: func() {
					mu.Lock()
					committed = append(committed, wrote)
					mu.Unlock()
				}, Then: func() {
					mu.Lock()
					order = append(order, wrote)
					if committed[len(committed)-1] < wrote {
						e.Errorf("then of %d before its committed", wrote)
					}
					mu.Unlock()
					called = true
				}}, func(tx store.Tx) error {
					tx.Serialise("mailbox")
					n, err := readInt(tx, k)
					wrote = n + 1
					tx.Put(k, []byte(strconv.Itoa(wrote)))
					return err
				})
				if err != nil || !called {
					e.Errorf("then called %v, %v", called, err)
					return
				}
			}
		})
	}
	wg.Wait()
	if !slices.IsSorted(order) || len(order) != 60 {
		e.Fatalf("thens out of commit order: %v", order)
	}
	if !slices.IsSorted(committed) || len(committed) != 60 {
		e.Fatalf("committeds out of commit order: %v", committed)
	}
}

// No committed and no then for a transaction that failed or was
// refused.
func testThenOnlyOnSuccess(e *env) {
	called := false
	refused := errors.New("refused")
	err := e.kv.Update(e.ctx, store.TxOptions{Name: "refused", Committed: func() { called = true }, Then: func() { called = true }}, func(tx store.Tx) error {
		tx.Put(counter("x"), []byte("1"))
		return refused
	})
	if !errors.Is(err, refused) || called {
		e.Fatalf("%v, then called %v", err, called)
	}
}

// A name an adapter keeps one way is found again by the key a scan gave
// for it, and deleted by it.
func testOneWay(e *env) {
	long := strings.Repeat("p", 300)
	key := strings.Repeat("k", 250)
	k := store.Key{Fam: store.FamIdem, Name: long, Sub: key}
	e.put(k, "record")
	keys, _ := e.scan(store.Prefix(store.Key{Fam: store.FamIdem}, 0))
	if len(keys) != 1 {
		e.Fatalf("%+v", keys)
	}
	got := keys[0]
	if v, ok := e.get(got); !ok || v != "record" {
		e.Fatalf("by the scanned key %+v: %q %v", got, v, ok)
	}
	if c, ok := e.kv.(store.Copier); ok {
		for _, part := range []struct {
			bit        uint8
			name, real string
		}{{store.OneWayName, got.Name, long}, {store.OneWaySub, got.Sub, key}} {
			ow, oneWay := c.OneWay(part.real)
			if oneWay != (got.OneWay&part.bit != 0) || (oneWay && ow != part.name) || (!oneWay && part.name != part.real) {
				e.Fatalf("the scan gave %q (one way %v), OneWay says %q %v", part.name, got.OneWay&part.bit != 0, ow, oneWay)
			}
		}
	}
	if err := e.kv.Update(e.ctx, store.TxOptions{Name: "delete"}, func(tx store.Tx) error {
		tx.Delete(got)
		return nil
	}); err != nil {
		e.Fatal(err)
	}
	if _, ok := e.get(k); ok {
		e.Fatal("deleted by its scanned key, it is still there")
	}
	// A range fixed on a long name gives its keys with the name as the
	// range has it.
	for n := range byte(3) {
		e.put(store.Key{Fam: store.FamRecipientIndex, Name: long, ID: id(n)}, "")
	}
	e.put(store.Key{Fam: store.FamRecipientIndex, Name: long + "x", ID: id(9)}, "")
	keys, _ = e.scan(store.Prefix(store.Key{Fam: store.FamRecipientIndex, Name: long}, 1))
	if len(keys) != 3 || keys[0].Name != long || keys[0].OneWay != 0 || keys[2].ID != id(2) {
		e.Fatalf("the keys of a long name: %+v", keys)
	}
}

// Prefetched keys read as Get reads them.
func testPrefetch(e *env) {
	a, b := counter("a"), counter("b")
	e.put(a, "1")
	if err := e.kv.Update(e.ctx, store.TxOptions{Name: "prefetch"}, func(tx store.Tx) error {
		if err := tx.Prefetch(a, b, a); err != nil {
			return err
		}
		va, oka, err := tx.Get(a)
		if err != nil || !oka || string(va) != "1" {
			return fmt.Errorf("a: %q %v %v", va, oka, err)
		}
		if _, okb, err := tx.Get(b); err != nil || okb {
			return fmt.Errorf("b: %v %v", okb, err)
		}
		tx.Put(b, []byte("2"))
		return nil
	}); err != nil {
		e.Fatal(err)
	}
	if v, _ := e.get(b); v != "2" {
		e.Fatalf("b: %q", v)
	}
}

// What an Update acknowledged is there after a reopen; what it refused
// is not.
func testReopen(e *env) {
	if e.o.Reopen == nil {
		e.Skip("the adapter gives no Reopen hook")
	}
	e.put(counter("kept"), "yes")
	_ = e.kv.Update(e.ctx, store.TxOptions{Name: "refused"}, func(tx store.Tx) error {
		tx.Put(counter("refused"), []byte("no"))
		return errors.New("refused")
	})
	e.kv = e.o.Reopen(e.T, e.kv)
	if v, ok := e.get(counter("kept")); !ok || v != "yes" {
		e.Fatalf("after a reopen: %q %v", v, ok)
	}
	if _, ok := e.get(counter("refused")); ok {
		e.Fatal("a refused write is there after a reopen")
	}
}

// A feed tells of each key written in its ranges, and of each deleted;
// current first tells each key as it is.
func testFollow(e *env) {
	f, ok := e.kv.(store.Follower)
	if !ok {
		e.Skip("the adapter has no feed")
	}
	before := store.Key{Fam: store.FamLivePush, Name: "r", Seq: 1}
	e.put(before, "")
	ctx, cancel := context.WithCancel(e.ctx)
	defer cancel()
	follow := func(current bool) chan store.Change {
		run, err := f.Follow(ctx, []store.Range{
			store.Prefix(store.Key{Fam: store.FamLivePush}, 0),
			store.Prefix(store.Key{Fam: store.FamState, Sub: "pending"}, 1),
		}, current)
		if err != nil {
			e.Fatal(err)
		}
		got := make(chan store.Change, 16)
		go func() { _ = run(ctx, func(c store.Change) { got <- c }) }()
		return got
	}
	updates, current := follow(false), follow(true)
	next := func(ch chan store.Change) store.Change {
		e.Helper()
		select {
		case c := <-ch:
			return c
		case <-time.After(10 * time.Second):
			e.Fatal("the feed told nothing")
			return store.Change{}
		}
	}
	if c := next(current); store.Compare(c.Key, before) != 0 || c.Deleted {
		e.Fatalf("current first: %+v", c)
	}
	e.put(store.Key{Fam: store.FamState, Sub: "fired", ID: id(1)}, "") // out of range
	in := store.Key{Fam: store.FamState, Sub: "pending", ID: id(2)}
	e.put(in, "schedule")
	for _, ch := range []chan store.Change{updates, current} {
		if c := next(ch); store.Compare(c.Key, in) != 0 || string(c.Value) != "schedule" || c.Deleted {
			e.Fatalf("a put: %+v", c)
		}
	}
	if err := e.kv.Update(e.ctx, store.TxOptions{Name: "delete"}, func(tx store.Tx) error {
		tx.Delete(before)
		return nil
	}); err != nil {
		e.Fatal(err)
	}
	for _, ch := range []chan store.Change{updates, current} {
		if c := next(ch); store.Compare(c.Key, before) != 0 || !c.Deleted {
			e.Fatalf("a delete: %+v", c)
		}
	}
}

// Every key an adapter holds is read out raw and written into another
// as it was.
func testCopy(e *env) {
	src, ok := e.kv.(store.Copier)
	if !ok {
		e.Skip("the adapter does not copy keys")
	}
	for i, k := range samples() {
		e.put(k, "v"+strconv.Itoa(i))
	}
	long := store.Key{Fam: store.FamWorkOwner, Name: strings.Repeat("t", 500)}
	e.put(long, "owner")
	read := func(c store.Copier) []store.KeyValue {
		var out []store.KeyValue
		if err := c.ExportKeys(e.ctx, func(k store.Key, v []byte) error {
			out = append(out, store.KeyValue{Key: k, Value: bytes.Clone(v)})
			return nil
		}); err != nil {
			e.Fatal(err)
		}
		slices.SortFunc(out, func(a, b store.KeyValue) int { return store.Compare(a.Key, b.Key) })
		return out
	}
	got := read(src)
	if len(got) != len(samples())+1 {
		e.Fatalf("exported %d keys, want %d: %+v", len(got), len(samples())+1, got)
	}
	dst, ok := e.open(e.T).(store.Copier)
	if !ok {
		e.Fatal("a second adapter is no Copier")
	}
	if err := dst.ImportKeys(e.ctx, got); err != nil {
		e.Fatal(err)
	}
	again := read(dst)
	if !slices.EqualFunc(got, again, func(a, b store.KeyValue) bool {
		return store.Compare(a.Key, b.Key) == 0 && a.Key.OneWay == b.Key.OneWay && bytes.Equal(a.Value, b.Value)
	}) {
		e.Fatalf("copied:\n%+v\nread back:\n%+v", got, again)
	}
}
