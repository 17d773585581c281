package badger

import (
	"bytes"
	"errors"
	"expvar"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/vigilhq/vigil/store"
)

// The guard's numbers (docs/RELIABILITY.md, "Where badger's reserve
// comes from", says where each comes from in badger's source).
const (
	// tableSlack is, with a tenth of the log, what a table written from
	// a write-ahead log may take beyond the log's own bytes (its index,
	// bloom filter and block checksums).
	tableSlack int64 = 64 << 10
	// fixedReserve is the first pages of the files badger creates on its
	// own (the next write-ahead log, a value log, DISCARD) and what the
	// key registry and a manifest append take; a manifest rewrite is
	// counted apart, as twice the manifest's size.
	fixedReserve int64 = 128 << 10
	// logPage is a write-ahead log's first page, its header: what a new
	// one takes before a commit writes to it.
	logPage int64 = 4 << 10
	// writeCost is how many bytes of headroom one byte of badger's count
	// of written entries may take before the next measurement: the
	// write-ahead log's bytes (an entry's header, its key's version and
	// checksum, the transaction's end mark: at most twice the count for
	// vigil's smallest entries) and the table they will be flushed to
	// (1.1 times the log's), rounded up.
	writeCost = 5
	// Measurements: a healthy disk (headroom over farHeadroom) is
	// measured again after farAge, a nearer one after nearAge, and one
	// refusing writes at most every nearAge however many writes are
	// tried; and whenever the store's own writes since the last
	// measurement may have spent half the headroom.
	farHeadroom int64 = 64 << 20
	farAge            = time.Second
	nearAge           = 100 * time.Millisecond
	// numLevelZeroTables and numCompactors are badger's defaults, which
	// Open keeps: L0 is compacted once it holds this many tables, by up
	// to this many compactions at once.
	numLevelZeroTables = 5
	numCompactors      = 2
	// maxLevels is badger's default number of levels; the last one is
	// compacted into itself.
	maxLevels = 7
)

// fsProbe measures a filesystem: what it has free for vigil under dir,
// and the bytes a file actually occupies (a sparse file's allocated
// blocks, not its length). diskspace_linux.go has the real one; tests
// inject others.
type fsProbe interface {
	Free(dir string) (int64, error)
	Allocated(path string) (int64, error)
}

// diskGuard admits or refuses each commit by the data directory's free
// space. It keeps the last measurement and takes another only when it
// may be stale (by time, or by what the store itself has written since),
// so a commit on a healthy disk costs a few atomic loads and a clock
// read; nothing runs
// between writes, and nothing periodic at all: while writes are refused
// each write tried (and each read of DiskSpace) measures again, at most
// every nearAge.
type diskGuard struct {
	dir    string
	fs     fsProbe
	now    func() time.Time
	log    *slog.Logger
	tables func() []badgerdb.TableInfo // nil before the store is open
	// written is badger's own count of the bytes of the entries written
	// to the store (and to its value log), which badger keeps for every
	// store of the process together: more than this store's, never less.
	written []*expvar.Int

	// mu serialises measurements and guards full (what the last one
	// decided, for logging the changes).
	mu   sync.Mutex
	full bool
	snap atomic.Pointer[diskSnap]
}

// diskSnap is one measurement and badger's count of written bytes at it.
type diskSnap struct {
	store.DiskSpace
	written int64
	err     error // the measurement failed: admit, and say so once
}

// The expvars badger adds every entry's estimated size to
// (y.NumBytesWrittenUserAdd) and every value-log byte
// (y.NumBytesWrittenVlogAdd). A badger that renamed them would fail
// TestBadgerCountsWrittenBytes; without them the guard measures at every
// commit.
const (
	badgerBytesUser = "badger_write_bytes_user"
	badgerBytesVlog = "badger_write_bytes_vlog"
)

func newDiskGuard(dir string, fs fsProbe, now func() time.Time, log *slog.Logger) *diskGuard {
	g := &diskGuard{dir: dir, fs: fs, now: now, log: log}
	for _, name := range []string{badgerBytesUser, badgerBytesVlog} {
		if v, ok := expvar.Get(name).(*expvar.Int); ok {
			g.written = append(g.written, v)
		}
	}
	return g
}

// bytesWritten is badger's count, or -1 when it has none (measure at
// every commit).
func (g *diskGuard) bytesWritten() int64 {
	if len(g.written) != 2 {
		return -1
	}
	var n int64
	for _, v := range g.written {
		n += v.Value()
	}
	return n
}

// admit refuses a commit the disk has no room for. A client's write needs
// store.ClientMargin above the reserve, any other store.CommitMargin. It trusts the
// last measurement, less what the store wrote since, while it is not
// stale; a refusal is always a measurement's: when that estimate says no
// the disk is measured again, unless the last measurement, under nearAge
// old, itself said no.
func (g *diskGuard) admit(client bool) error {
	if g == nil {
		return nil
	}
	margin := store.CommitMargin
	if client {
		margin = store.ClientMargin
	}
	s := g.snap.Load()
	if s != nil && !g.stale(s) {
		switch {
		case s.err != nil || g.headroom(s) >= margin:
			return nil
		case s.Free-s.Reserve < margin && g.now().Sub(s.At) < nearAge:
			return g.refusal(s, margin)
		}
	}
	s = g.measure(s)
	if s.err != nil || g.headroom(s) >= margin {
		return nil // a disk vigil cannot measure (said once) is not a full one
	}
	return g.refusal(s, margin)
}

func (g *diskGuard) refusal(s *diskSnap, margin int64) error {
	return &store.StorageFullError{Dir: g.dir, Free: s.Free - writeCost*max(g.bytesWritten()-s.written, 0), Need: s.Reserve + margin}
}

// headroom is what s left above the reserve, less what the store has
// written since s, at writeCost.
func (g *diskGuard) headroom(s *diskSnap) int64 {
	h := s.Free - s.Reserve
	if w := g.bytesWritten(); w >= 0 && s.written >= 0 {
		h -= writeCost * max(w-s.written, 0)
	}
	return h
}

// stale says whether s must be measured again before a commit trusts
// it: it is farAge old, or nearAge old with the headroom under
// farHeadroom (a disk refusing writes is measured again at most that
// often, however many are tried), or the store's own writes since may
// have spent half the headroom it had.
func (g *diskGuard) stale(s *diskSnap) bool {
	age := g.now().Sub(s.At)
	switch {
	case age < 0 || age >= farAge:
		return true
	case s.err != nil:
		return false
	}
	w := g.bytesWritten()
	if w < 0 || s.written < 0 {
		return true
	}
	spent := writeCost * max(w-s.written, 0)
	room := s.Free - s.Reserve
	if room > store.CommitMargin && spent > (room-store.CommitMargin)/2 {
		return true
	}
	return room-spent < farHeadroom && age >= nearAge
}

// measure takes a measurement, unless another caller took one since seen
// (the one the caller found stale, nil for none): then it is that one.
func (g *diskGuard) measure(seen *diskSnap) *diskSnap {
	g.mu.Lock()
	defer g.mu.Unlock()
	if s := g.snap.Load(); s != nil && s != seen {
		return s
	}
	now := g.now()
	s := &diskSnap{written: g.bytesWritten()}
	s.Dir, s.At = g.dir, now
	var tables []badgerdb.TableInfo
	if g.tables != nil {
		tables = g.tables()
	}
	s.Free, s.err = g.fs.Free(g.dir)
	if s.err == nil {
		s.Reserve, s.err = reserveOf(g.dir, g.fs, tables)
	}
	if s.err != nil {
		if prev := g.snap.Load(); prev == nil || prev.err == nil {
			g.log.Warn("cannot measure the data directory's free space; writes are not held to it", "dir", g.dir, "err", s.err)
		}
		g.snap.Store(s)
		return s
	}
	s.Need = s.Reserve + store.ClientMargin
	s.Full = s.Free < s.Need
	free, need := store.FormatBytesPair(s.Free, s.Need)
	switch {
	case s.Full && !g.full:
		g.log.Warn("the data directory is nearly full: writes from clients are refused (507 insufficient_storage) until it has the space needed free; reads go on",
			"dir", g.dir, "free", free, "needed", need, "reserve", store.FormatBytes(s.Reserve))
	case !s.Full && g.full:
		g.log.Info("the data directory has room again: writes resume", "dir", g.dir, "free", free, "needed", need)
	}
	g.full = s.Full
	g.snap.Store(s)
	return s
}

// space is the last measurement, taken again when it is farAge old, or
// nearAge old while writes are refused; false when the disk cannot be
// measured.
func (g *diskGuard) space() (store.DiskSpace, bool) {
	s := g.snap.Load()
	if s == nil || g.stale(s) || (s.Full && g.now().Sub(s.At) >= nearAge) {
		s = g.measure(s)
	}
	if s.err != nil {
		return store.DiskSpace{}, false
	}
	return s.DiskSpace, true
}

// reserveOf is what badger may still write in dir with no further
// commit: the flush of every write-ahead log there, the compactions its
// tables allow, and the first pages of new files (docs/RELIABILITY.md,
// "Where badger's reserve comes from").
func reserveOf(dir string, fs fsProbe, tables []badgerdb.TableInfo) (int64, error) {
	l, err := logsOf(dir, fs)
	if err != nil {
		return 0, err
	}
	return l.flush() + compactionBound(tables, l.flush(), l.n) + fixedReserve + 2*l.manifest, nil
}

// logs are the write-ahead logs in a store's directory, and its
// manifest's size.
type logs struct {
	n        int   // how many
	bytes    int64 // their allocated bytes
	manifest int64
}

// flush is what writing each log to a table may take: its bytes, a
// tenth more, and tableSlack.
func (l logs) flush() int64 { return l.bytes + l.bytes/10 + int64(l.n)*tableSlack }

func logsOf(dir string, fs fsProbe) (logs, error) {
	var l logs
	ents, err := os.ReadDir(dir)
	if err != nil {
		return l, err
	}
	for _, e := range ents {
		switch {
		case strings.HasSuffix(e.Name(), memFileExt):
			n, err := fs.Allocated(filepath.Join(dir, e.Name()))
			if errors.Is(err, os.ErrNotExist) {
				continue // flushed and deleted since the listing
			}
			if err != nil {
				return l, err
			}
			l.bytes += n
			l.n++
		case e.Name() == "MANIFEST":
			if fi, err := e.Info(); err == nil {
				l.manifest = fi.Size()
			}
		}
	}
	return l, nil
}

// compactionBound is the most the compactions badger may run at once
// can write before they delete their inputs: for each level, the largest
// compaction its tables allow (a compaction writes its output before it
// deletes its input, and its output is no larger than its input), and
// the two largest of those together (badger runs numCompactors).
//   - L0 into the base level, once L0 holds numLevelZeroTables tables
//     (counting the flushes to come, flush bytes in nlogs tables): every
//     L0 table and the flushes, and every table of the first level below
//     that holds any (the base level, or a deeper one, which only adds).
//   - Li into Li+1: a table of Li and the tables of Li+1 its key range
//     overlaps, the largest such.
//   - The last level into itself: a table and the tables after it up to
//     the level's table size, at most three of its largest tables.
func compactionBound(tables []badgerdb.TableInfo, flush int64, nlogs int) int64 {
	var levels [maxLevels][]badgerdb.TableInfo
	for _, t := range tables {
		if t.Level >= 0 && t.Level < maxLevels {
			levels[t.Level] = append(levels[t.Level], t)
		}
	}
	size := func(ts []badgerdb.TableInfo) (n int64) {
		for _, t := range ts {
			n += int64(t.OnDiskSize)
		}
		return n
	}
	var bounds []int64
	if len(levels[0])+nlogs >= numLevelZeroTables {
		b := size(levels[0]) + flush
		for _, l := range levels[1:] {
			if len(l) > 0 {
				b += size(l)
				break
			}
		}
		bounds = append(bounds, b)
	}
	for i := 1; i < maxLevels; i++ {
		var b int64
		for _, t := range levels[i] {
			if i == maxLevels-1 {
				b = max(b, 3*int64(t.OnDiskSize))
				continue
			}
			n := int64(t.OnDiskSize)
			for _, u := range levels[i+1] {
				if overlaps(t, u) {
					n += int64(u.OnDiskSize)
				}
			}
			b = max(b, n)
		}
		bounds = append(bounds, b)
	}
	slices.Sort(bounds)
	slices.Reverse(bounds)
	var out int64
	for i := 0; i < len(bounds) && i < numCompactors; i++ {
		out += bounds[i]
	}
	return out
}

// overlaps says whether two tables' key ranges meet, their keys compared
// without badger's 8-byte version suffix.
func overlaps(a, b badgerdb.TableInfo) bool {
	return bytes.Compare(userKey(a.Left), userKey(b.Right)) <= 0 && bytes.Compare(userKey(b.Left), userKey(a.Right)) <= 0
}

func userKey(k []byte) []byte {
	if len(k) < 8 {
		return k
	}
	return k[:len(k)-8]
}

// openReserve is what opening the store in dir may write before its
// guard can refuse anything: the write-ahead logs found there flushed
// to tables (badger replays them and flushes them in the background),
// the new log Open starts, and the new files' first pages. The
// compactions the tables allow were the same before this start, and the
// last run kept their room; they join the reserve once the store is
// open.
func openReserve(dir string, fs fsProbe) (int64, error) {
	need := fixedReserve + tableSlack + 2*logPage
	if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
		return need, nil
	}
	l, err := logsOf(dir, fs)
	if err != nil {
		return 0, err
	}
	return need + l.flush() + 2*l.manifest, nil
}

// checkOpenRoom refuses to open the store in dir when its filesystem
// cannot take what opening it writes plus store.CommitMargin: badger would
// write into its memory-mapped files with no room behind them, which
// kills the process (SIGBUS) instead of failing a call.
func checkOpenRoom(dir string, fs fsProbe) error {
	probe := dir
	for {
		if _, err := os.Stat(probe); err == nil || probe == filepath.Dir(probe) {
			break
		}
		probe = filepath.Dir(probe) // a store not yet made: its parent's filesystem
	}
	free, err := fs.Free(probe)
	if err != nil {
		return nil // unmeasurable: the guard says so once open
	}
	need, err := openReserve(dir, fs)
	if err != nil {
		return nil
	}
	if free < need+store.CommitMargin {
		return &store.StorageFullError{Dir: dir, Free: free, Need: need + store.CommitMargin, Opening: true}
	}
	return nil
}
