package badger

import (
	"context"
	crand "crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"expvar"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/vigilhq/vigil/store"
)

// fakeDisk is a filesystem whose free space the test sets; a file's
// allocated bytes are the real ones. For tests only.
type fakeDisk struct {
	free  atomic.Int64
	calls atomic.Int64 // Free calls: measurements
}

func (f *fakeDisk) Free(string) (int64, error) {
	f.calls.Add(1)
	return f.free.Load(), nil
}

func (f *fakeDisk) Allocated(path string) (int64, error) { return realProbe().Allocated(path) }

// testClock is a clock the test moves.
type testClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *testClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *testClock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// onFakeDisk is the store over a badger adapter on a fakeDisk.
type onFakeDisk struct {
	*store.Store
	disk *diskGuard
}

func openOnFakeDisk(t *testing.T, free int64) (onFakeDisk, *fakeDisk, *testClock) {
	t.Helper()
	disk := &fakeDisk{}
	disk.free.Store(free)
	clock := &testClock{t: time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)}
	s, kv := openStore(t, t.TempDir(), Options{fs: disk, now: clock.now})
	return onFakeDisk{s, kv.disk}, disk, clock
}

func pendingRow(t *testing.T, ids io.Reader, i int) store.Watch {
	t.Helper()
	w := pendingWatch(t, ids, "agent-"+string(rune('a'+i%26)), t0)
	w.Params = json.RawMessage(`{"at":"2026-11-30T13:00:00Z","n":` + strconv.Itoa(i) + `}`)
	return w
}

// The guard counts what the store writes between its measurements by
// badger's own counters of written bytes; a badger that renamed them
// would leave the guard measuring at every commit.
func TestBadgerCountsWrittenBytes(t *testing.T) {
	s, _, _ := openOnFakeDisk(t, 1<<40)
	before := s.disk.bytesWritten()
	if before < 0 {
		t.Fatalf("badger has no counters %s and %s", badgerBytesUser, badgerBytesVlog)
	}
	if err := s.Create(context.Background(), pendingRow(t, newIDs(), 0)); err != nil {
		t.Fatal(err)
	}
	if after := s.disk.bytesWritten(); after-before < 100 {
		t.Fatalf("a row's commit moved badger's counters by %d bytes", after-before)
	}
	for _, name := range []string{badgerBytesUser, badgerBytesVlog} {
		if _, ok := expvar.Get(name).(*expvar.Int); !ok {
			t.Errorf("expvar %s is gone", name)
		}
	}
}

// A data directory short of space refuses a client's write once the free
// space is under the reserve and store.ClientMargin, and the host's own only
// under the reserve and store.CommitMargin, with an error naming the directory
// and the space; reads go on; and once space is back, writes resume on
// the same open store.
func TestAFullDiskRefusesWritesAndResumesWithoutReopen(t *testing.T) {
	ctx := context.Background()
	client := store.ClientWrite(ctx)
	s, disk, clock := openOnFakeDisk(t, 1<<40)
	ids := newIDs()
	first := pendingRow(t, ids, 0)
	if err := s.Create(client, first); err != nil {
		t.Fatal(err)
	}
	sp, ok := s.DiskSpace()
	if !ok || sp.Full || sp.Reserve <= 0 || sp.Need != sp.Reserve+store.ClientMargin || sp.Dir == "" {
		t.Fatalf("a roomy disk: %+v %v", sp, ok)
	}

	disk.free.Store(sp.Reserve + store.ClientMargin/2)
	clock.add(farAge)
	err := s.Create(client, pendingRow(t, ids, 1))
	var full *store.StorageFullError
	if !errors.Is(err, store.ErrStorageFull) || !errors.As(err, &full) || full.Dir != sp.Dir || full.Need < sp.Reserve+store.ClientMargin || !strings.Contains(err.Error(), sp.Dir) {
		t.Fatalf("a client's write with half its margin free: %v, want a *StorageFullError naming %s", err, sp.Dir)
	}
	if err := s.Create(ctx, pendingRow(t, ids, 2)); err != nil {
		t.Fatalf("the host's own write with half the client's margin free: %v, want it taken", err)
	}
	if sp, _ := s.DiskSpace(); !sp.Full {
		t.Fatalf("DiskSpace while clients' writes are refused: %+v, want Full", sp)
	}
	if _, err := s.Get(ctx, first.ID); err != nil {
		t.Fatalf("a read with the disk full: %v", err)
	}

	disk.free.Store(sp.Reserve + store.CommitMargin/2)
	clock.add(nearAge)
	if err := s.Create(ctx, pendingRow(t, ids, 3)); !errors.Is(err, store.ErrStorageFull) {
		t.Fatalf("the host's own write with half its margin free: %v, want store.ErrStorageFull", err)
	}

	disk.free.Store(1 << 40)
	if err := s.Create(client, pendingRow(t, ids, 4)); !errors.Is(err, store.ErrStorageFull) {
		t.Fatalf("within a tenth of a second of a refusal: %v, want the refusal (measured at most that often)", err)
	}
	clock.add(nearAge)
	if sp, ok := s.DiskSpace(); !ok || sp.Full {
		t.Fatalf("DiskSpace once space is back: %+v, want not Full", sp)
	}
	if err := s.Create(client, pendingRow(t, ids, 5)); err != nil {
		t.Fatalf("a client's write once space is back: %v", err)
	}
}

// Writes on a roomy disk do not measure it each time: a commit reads the
// last measurement, and the disk is measured again when it is a second
// old, or when what the store wrote since may have spent half the room
// the measurement left.
func TestTheGuardMeasuresWhenItsMeasurementIsStale(t *testing.T) {
	ctx := context.Background()
	s, disk, clock := openOnFakeDisk(t, 1<<40)
	ids := newIDs()
	base := disk.calls.Load()
	for i := range 200 {
		if err := s.Create(ctx, pendingRow(t, ids, i)); err != nil {
			t.Fatal(err)
		}
	}
	if n := disk.calls.Load() - base; n != 0 {
		t.Fatalf("200 writes on a roomy disk within a second measured it %d times, want 0", n)
	}
	clock.add(farAge)
	if err := s.Create(ctx, pendingRow(t, ids, 200)); err != nil {
		t.Fatal(err)
	}
	if n := disk.calls.Load() - base; n != 1 {
		t.Fatalf("a write a second after the measurement measured %d times, want 1", n)
	}

	// Room for about 40 KiB of entries at writeCost before half is
	// spent: 200 rows (some 300 bytes each) must measure again.
	sp, _ := s.DiskSpace()
	disk.free.Store(sp.Reserve + store.CommitMargin + 2*writeCost*40<<10)
	clock.add(farAge)
	base = disk.calls.Load()
	for i := range 200 {
		if err := s.Create(ctx, pendingRow(t, ids, 300+i)); err != nil && !errors.Is(err, store.ErrStorageFull) {
			t.Fatal(err)
		}
	}
	if n := disk.calls.Load() - base; n < 2 {
		t.Fatalf("200 writes into 80 KiB of headroom with the clock stopped measured %d times, want at least 2", n)
	}
}

// Open refuses a filesystem that cannot take what opening the store
// writes, naming the directory and its free space, before badger maps a
// file there.
func TestOpenRefusesADiskWithoutRoomToOpen(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	disk := &fakeDisk{}
	disk.free.Store(100 << 10)
	_, err := Open(dir, Options{fs: disk})
	var full *store.StorageFullError
	if !errors.Is(err, store.ErrStorageFull) || !errors.As(err, &full) || full.Dir != dir || full.Free != 100<<10 || !strings.Contains(err.Error(), dir) || !strings.Contains(err.Error(), "100.0 KiB free, opening the store needs") {
		t.Fatalf("Open with 100 KiB free: %v, want a *StorageFullError naming %s and its free space", err, dir)
	}
	if _, err := os.Stat(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused Open made %s: %v", dir, err)
	}
	disk.free.Store(openNeed(t, dir, disk))
	kv, err := Open(dir, Options{fs: disk})
	if err != nil {
		t.Fatalf("Open with the room it needs: %v", err)
	}
	_ = kv.Close()
}

func openNeed(t *testing.T, dir string, fs fsProbe) int64 {
	t.Helper()
	need, err := openReserve(dir, fs)
	if err != nil {
		t.Fatal(err)
	}
	return need + store.CommitMargin
}

// The reserve's flush part covers the tables badger writes from the
// write-ahead logs: what Close writes of a log of rows whose params
// compress poorly is no more than the reserve counted for it.
func TestTheReserveCoversTheFlushOfTheLogs(t *testing.T) {
	dir := t.TempDir()
	s, _ := openStore(t, dir, Options{})
	ctx := context.Background()
	ids := newIDs()
	for i := range 4000 {
		b := make([]byte, 300)
		_, _ = crand.Read(b)
		w := pendingRow(t, ids, i)
		w.Params = json.RawMessage(`{"x":"` + hex.EncodeToString(b) + `"}`)
		if err := s.Create(ctx, w); err != nil {
			t.Fatal(err)
		}
	}
	l, err := logsOf(dir, realProbe())
	if err != nil {
		t.Fatal(err)
	}
	if l.bytes < 2<<20 {
		t.Fatalf("the logs hold %d bytes, want a few MiB to flush", l.bytes)
	}
	tablesBefore := tableBytes(t, dir)
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	written := tableBytes(t, dir) - tablesBefore
	if written <= 0 || written > l.flush() {
		t.Fatalf("Close wrote %d bytes of tables from %d bytes of logs; the reserve counted %d", written, l.bytes, l.flush())
	}
	t.Logf("logs %d bytes, tables written %d, reserve's flush part %d", l.bytes, written, l.flush())
}

func tableBytes(t *testing.T, dir string) int64 {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, e := range ents {
		if strings.HasSuffix(e.Name(), ".sst") {
			a, err := realProbe().Allocated(filepath.Join(dir, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			n += a
		}
	}
	return n
}

// The compaction bound takes, per level, the largest compaction its
// tables allow, and the two largest levels' together.
func TestCompactionBound(t *testing.T) {
	key := func(s string) []byte { return append([]byte(s), 0, 0, 0, 0, 0, 0, 0, 1) }
	tbl := func(level int, left, right string, size uint32) badgerdb.TableInfo {
		return badgerdb.TableInfo{Level: level, Left: key(left), Right: key(right), OnDiskSize: size}
	}
	for _, tt := range []struct {
		name   string
		tables []badgerdb.TableInfo
		flush  int64
		logs   int
		want   int64
	}{
		{"nothing", nil, 0, 0, 0},
		{"L0 short of its trigger", []badgerdb.TableInfo{tbl(0, "a", "z", 10), tbl(0, "a", "z", 10), tbl(6, "a", "z", 100)}, 5, 1, 300},
		{"L0 at its trigger, with the flush to come",
			[]badgerdb.TableInfo{tbl(0, "a", "z", 10), tbl(0, "a", "z", 10), tbl(0, "a", "z", 10), tbl(0, "a", "z", 10), tbl(6, "a", "m", 100), tbl(6, "n", "z", 50)},
			7, 1, (40 + 7 + 150) + 300},
		{"Li into Li+1 by overlap",
			[]badgerdb.TableInfo{tbl(5, "a", "c", 10), tbl(5, "d", "f", 20), tbl(6, "a", "b", 100), tbl(6, "c", "d", 200), tbl(6, "e", "z", 400)},
			0, 0, (20 + 200 + 400) + 3*400},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := compactionBound(tt.tables, tt.flush, tt.logs); got != tt.want {
				t.Fatalf("compactionBound = %d, want %d", got, tt.want)
			}
		})
	}
}

// BenchmarkDiskGuardAdmit is a commit's admission on a roomy disk: the
// last measurement and badger's counters read, no statfs (measured again
// once a second of the benchmark's wall clock).
func BenchmarkDiskGuardAdmit(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		if err := s.disk.admit(true); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDiskGuardMeasure is one measurement: a statfs, the store's
// directory listed and its logs stat'ed, its tables read.
func BenchmarkDiskGuardMeasure(b *testing.B) {
	s, err := Open(b.TempDir(), Options{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	b.ReportAllocs()
	for b.Loop() {
		s.disk.measure(s.disk.snap.Load())
	}
}
