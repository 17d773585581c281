package badger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	badgerdb "github.com/dgraph-io/badger/v4"

	"github.com/vigilhq/vigil/store"
)

// Version is the store version this build writes and reads, in the "v"
// key.
const Version = 1

// Options configure Open.
type Options struct {
	// SyncWrites acknowledges a commit only once it is on stable storage
	// (fsync): power-loss durability. Concurrent commits share one fsync
	// (group commit); a lone commit waits for its own. See the package doc.
	SyncWrites bool
	// SyncEachCommit, with SyncWrites, syncs through badger's own
	// SyncWrites instead: one fsync per commit, none shared. It is there
	// to be compared with (the benchmarks), not to be chosen.
	SyncEachCommit bool
	// Logger receives badger's warnings and errors. Nil discards them.
	Logger *slog.Logger

	// syncer, set only by this package's tests, replaces (or wraps) the
	// group sync's real syncer, which it is given.
	syncer func(real syncer) syncer
	// fs and now, set only by this package's tests, replace the disk
	// guard's measurements of the filesystem and its clock.
	fs  fsProbe
	now func() time.Time
}

// KV is the seam's adapter on badger v4 (store.KV): one badger database
// in a directory, its transactions badger's optimistic ones.
type KV struct {
	db *badgerdb.DB
	// dir is the store's directory as the kernel names it (absolute,
	// links resolved), which TrimMapped finds the table mappings by.
	dir string
	// group is the group sync every commit waits on, nil when commits
	// are not synced here (SyncWrites off, or SyncEachCommit).
	group *groupSync
	// disk admits each commit by the data directory's free space
	// (diskspace.go).
	disk *diskGuard
	// stripes serialise the transactions that share a hint
	// (store.Tx.Serialise), by the hint's slot.
	stripes [64]stripe
	// gate counts the transactions in flight (open); Close sets closed
	// and waits until none is: badger's Close while a commit is being
	// sent closes the channel the commit sends on (a panic), so later
	// transactions are refused and those in flight finish first. Not a
	// RWMutex: a reader blocked behind a waiting Close would deadlock a
	// transaction that opens another inside its own.
	gate     sync.Mutex
	idle     sync.Cond
	inflight int
	closed   bool
}

var (
	_ store.KV           = (*KV)(nil)
	_ store.Barrier      = (*KV)(nil)
	_ store.DiskReporter = (*KV)(nil)
	_ store.Copier       = (*KV)(nil)
)

// Open opens (or creates) the store in dir. It refuses, with a
// *store.StorageFullError naming dir and its free space, a filesystem
// without the room opening the store writes (see "A full disk" in the
// package doc); a store that opens on a disk too full for clients'
// writes refuses them until space is freed, and says so in the log.
func Open(dir string, opt Options) (*KV, error) {
	fs, now, log := opt.fs, opt.now, opt.Logger
	if fs == nil {
		fs = realProbe()
	}
	if now == nil {
		now = time.Now
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if err := checkOpenRoom(dir, fs); err != nil {
		return nil, err
	}
	bo := badgerdb.DefaultOptions(dir).
		WithSyncWrites(opt.SyncWrites && opt.SyncEachCommit).
		WithLogger(badgerLogger{opt.Logger}).
		// Rows are small; keep memory modest for a host that mostly waits.
		WithMemTableSize(16 << 20).
		WithNumMemtables(3).
		WithBlockCacheSize(32 << 20).
		WithIndexCacheSize(16 << 20).
		WithNumCompactors(numCompactors)
	db, err := badgerdb.Open(bo)
	if err != nil {
		return nil, classifyOpenError(dir, err)
	}
	s := &KV{db: db, dir: realDir(dir), disk: newDiskGuard(dir, fs, now, log.With("component", "store"))}
	s.idle.L = &s.gate
	s.disk.tables = db.Tables
	s.disk.measure(nil) // says now, once, if clients' writes are refused
	if opt.SyncWrites && !opt.SyncEachCommit {
		var sy syncer = newBadgerSyncer(db, dir)
		if opt.syncer != nil {
			sy = opt.syncer(sy)
		}
		s.group = newGroupSync(sy)
	}
	if err := s.checkVersion(); err != nil {
		_ = s.Close()
		return nil, err
	}
	return s, nil
}

// OpenStore is the store (store.New) over the badger store in dir.
func OpenStore(dir string, opt Options) (*store.Store, error) {
	kv, err := Open(dir, opt)
	if err != nil {
		return nil, err
	}
	st, err := store.New(context.Background(), kv)
	if err != nil {
		_ = kv.Close()
		return nil, err
	}
	return st, nil
}

func classifyOpenError(dir string, err error) error {
	msg := err.Error()
	switch {
	case strings.Contains(msg, "Another process is using this Badger database"):
		return fmt.Errorf("%w: %s (is another vigil serve running?)", store.ErrInUse, dir)
	case errors.Is(err, badgerdb.ErrTruncateNeeded),
		strings.Contains(msg, "MANIFEST"), strings.Contains(msg, "checksum"),
		strings.Contains(msg, "corrupt"), strings.Contains(msg, "magic"):
		return fmt.Errorf("%w: %s: %v", store.ErrCorrupt, dir, err)
	}
	return fmt.Errorf("badger: opening %s: %w", dir, err)
}

// checkVersion reads the store version, writing it into a new store.
func (s *KV) checkVersion() error {
	return s.update(context.Background(), false, nil, func(txn *badgerdb.Txn) error {
		item, err := txn.Get(versionKey)
		if errors.Is(err, badgerdb.ErrKeyNotFound) {
			if nonEmpty(txn) {
				return fmt.Errorf("%w: rows without a store version", store.ErrCorrupt)
			}
			return txn.Set(versionKey, []byte(strconv.Itoa(Version)))
		}
		if err != nil {
			return err
		}
		v, err := item.ValueCopy(nil)
		if err != nil {
			return err
		}
		n, err := strconv.Atoi(string(v))
		switch {
		case err != nil:
			return fmt.Errorf("%w: store version %q", store.ErrCorrupt, v)
		case n > Version:
			return fmt.Errorf("%w: store version %d, this build reads up to %d", store.ErrStoreTooNew, n, Version)
		}
		return nil
	}, nil, nil)
}

func nonEmpty(txn *badgerdb.Txn) bool {
	it := txn.NewIterator(badgerdb.IteratorOptions{PrefetchValues: false})
	defer it.Close()
	it.Rewind()
	return it.Valid()
}

// Plan implements store.KV: one process holds the directory, badger
// scans by seeking in its ordered tables, its deleted keys cost a scan
// until compacted, and stores an older build wrote hold pending rows
// without their pending-by-kind entry.
func (s *KV) Plan() store.Plan {
	return store.Plan{Exclusive: true, Floors: true, Backfill: true, MaxWrites: 4000}
}

// DiskSpace is the data directory's free space and what the store needs
// there, as last measured (measured again when a second old, or a tenth
// of one while clients' writes are refused); false on a platform where
// the store cannot measure it.
func (s *KV) DiskSpace() (store.DiskSpace, bool) { return s.disk.space() }

// Barrier returns once what a read that has just ended saw is durable as
// Options ask (see "What a reader sees" in the package doc): at once
// when nothing was committed since the last sync.
func (s *KV) Barrier() error {
	if s.group == nil {
		return nil
	}
	return s.group.barrier()
}

// Close releases the store. Writers waiting for a sync get it first; a
// commit that waits after Close has begun gets ErrClosed.
func (s *KV) Close() error {
	s.gate.Lock()
	if s.closed {
		s.gate.Unlock()
		return nil // closed already
	}
	s.closed = true
	for s.inflight > 0 {
		s.idle.Wait()
	}
	s.gate.Unlock()
	if s.group != nil {
		s.group.close()
	}
	return s.db.Close()
}

// badgerLogger sends badger's warnings and errors to slog; its chatty info
// and debug lines are dropped.
type badgerLogger struct{ l *slog.Logger }

func (b badgerLogger) Errorf(f string, a ...any) {
	if b.l != nil {
		b.l.Error(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
	}
}

func (b badgerLogger) Warningf(f string, a ...any) {
	if b.l != nil {
		b.l.Warn(strings.TrimSpace(fmt.Sprintf(f, a...)), "component", "badger")
	}
}

func (badgerLogger) Infof(string, ...any)  {}
func (badgerLogger) Debugf(string, ...any) {}

// realDir is dir absolute with its links resolved, or dir itself when it
// cannot be resolved.
func realDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		dir = abs
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	return dir
}
