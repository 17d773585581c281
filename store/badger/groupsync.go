package badger

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	badgerdb "github.com/dgraph-io/badger/v4"
)

var (
	// ErrSync: a sync of the store failed. The commit it would have
	// covered may or may not survive a power loss, and so may every later
	// one: the store acknowledges no commit after it, until reopened.
	ErrSync = errors.New("badger: sync failed")
	// ErrClosed: the store was closed before the commit could be synced.
	ErrClosed = errors.New("badger: closed")
)

// syncer makes durable every commit that returned before Sync was called.
// The group sync never calls it twice at once. badgerSyncer is the real
// one; tests inject one that records the order of commits, syncs and
// acknowledgements.
type syncer interface {
	Sync() error
}

// groupSync is the leader/follower group sync. A writer that has
// committed calls wait, which joins the next round. If no sync is running
// the writer leads the round: it takes it (from then on nobody joins it)
// and runs its sync on its own goroutine, so a lone writer waits for its
// sync and nothing else. Writers that commit while a sync runs join the
// next round and wait; when the running sync ends, one of them leads the
// next round, which covers them all. A round is taken, and its sync
// started, only after each of its writers had committed, so the sync
// covers every one of them.
type groupSync struct {
	syncer syncer

	// mu guards every field below; cond, on mu, is broadcast when a
	// round ends.
	mu   sync.Mutex
	cond *sync.Cond
	// begun and ended count the commits begun and ended (committed or
	// not); cleanAt is the highest ended as of the start of a successful
	// sync. begun == cleanAt means no commit was in flight when that sync
	// started (begun only grows, and was at least ended then) and none has
	// begun since: everything committed is durable, and a reader need not
	// wait.
	begun, ended, cleanAt uint64
	// next is the round writers join; nil until someone waits.
	next *syncRound
	// syncing is set while a round's sync runs.
	syncing bool
	// closed is set by close: no round is led after it.
	closed bool
	// failed is the first sync error: after a failed fsync the kernel may
	// have dropped the dirty pages and a later fsync can succeed without
	// them, so no later commit is acknowledged either.
	failed error
}

// syncRound is one sync and the writers waiting for it.
type syncRound struct {
	finished bool
	err      error
	// at is how many commits had ended when the round was taken.
	at uint64
}

func newGroupSync(s syncer) *groupSync {
	g := &groupSync{syncer: s}
	g.cond = sync.NewCond(&g.mu)
	return g
}

// begin and end bracket a commit (every attempt of it); a writer that
// committed then calls wait.
func (g *groupSync) begin() {
	g.mu.Lock()
	g.begun++
	g.mu.Unlock()
}

func (g *groupSync) end() {
	g.mu.Lock()
	g.ended++
	g.mu.Unlock()
}

// wait returns once a sync that started after the call has finished, with
// its error (ErrClosed once the store is closing).
func (g *groupSync) wait() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.join()
}

// barrier is wait for a reader, called after its read: it returns at
// once when everything committed is already durable, else it waits for a
// sync that started after the read, which covers whatever the read saw.
func (g *groupSync) barrier() error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.failed == nil && !g.closed && g.begun == g.cleanAt {
		return nil
	}
	return g.join()
}

// join joins the next round and returns when it has finished, leading it
// if no sync is running. g.mu is held.
func (g *groupSync) join() error {
	switch {
	case g.failed != nil:
		return g.failed
	case g.closed:
		return ErrClosed
	}
	r := g.next
	if r == nil {
		r = &syncRound{}
		g.next = r
	}
	for !r.finished {
		if !g.syncing && g.next == r && !g.closed {
			g.lead(r)
			continue
		}
		g.cond.Wait()
	}
	return r.err
}

// lead takes r and runs its sync, with g.mu held on entry and exit but
// not during the sync.
func (g *groupSync) lead(r *syncRound) {
	g.next = nil
	g.syncing = true
	r.at = g.ended
	g.mu.Unlock()
	err := g.syncer.Sync()
	g.mu.Lock()
	if err != nil && g.failed == nil {
		g.failed = fmt.Errorf("%w: %w", ErrSync, err)
	}
	if g.failed == nil && r.at > g.cleanAt {
		g.cleanAt = r.at
	}
	r.err, r.finished = g.failed, true
	g.syncing = false
	g.cond.Broadcast()
}

// close waits for the running sync, runs the round still waiting, if
// any, and refuses every round after: the store may then close badger.
func (g *groupSync) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
	for g.syncing {
		g.cond.Wait()
	}
	if r := g.next; r != nil {
		g.lead(r)
	}
}

// badgerSyncer syncs a badger opened with SyncWrites off: db.Sync fsyncs
// the active memtable's write-ahead log and the value log. A commit made
// just before badger switched to a new memtable sits in the previous
// log, which db.Sync does not touch and badger does not fsync until its
// memtable is flushed to a table, so after db.Sync the syncer also
// fsyncs every older log file it has not yet synced since it stopped
// being written (once each), and the directory when a log file appeared.
type badgerSyncer struct {
	db  *badgerdb.DB
	dir string
	// synced are the log files (by id) already fsynced after a newer one
	// existed; newest is the highest id seen. Only Sync uses them, and
	// the group sync never runs two at once.
	synced map[int]bool
	newest int
	// fsync is fsyncFile; this package's tests record it instead.
	fsync func(path string) error
}

func newBadgerSyncer(db *badgerdb.DB, dir string) *badgerSyncer {
	return &badgerSyncer{db: db, dir: dir, synced: map[int]bool{}, newest: -1, fsync: fsyncFile}
}

const memFileExt = ".mem"

func (b *badgerSyncer) Sync() error {
	if err := b.db.Sync(); err != nil {
		return err
	}
	return b.syncLogs()
}

// syncLogs fsyncs the write-ahead logs older than the newest that it has
// not fsynced yet, and the directory when the newest changed.
func (b *badgerSyncer) syncLogs() error {
	entries, err := os.ReadDir(b.dir)
	if err != nil {
		return err
	}
	logs := map[int]string{}
	newest := -1
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), memFileExt)
		if !ok {
			continue
		}
		if id, err := strconv.Atoi(name); err == nil {
			logs[id] = e.Name()
			newest = max(newest, id)
		}
	}
	for id, name := range logs {
		// A log older than the newest is no longer written: one fsync
		// makes all of it durable.
		if id == newest || b.synced[id] {
			continue
		}
		if err := b.fsync(filepath.Join(b.dir, name)); err != nil {
			return err
		}
		b.synced[id] = true
	}
	for id := range b.synced {
		if _, ok := logs[id]; !ok {
			delete(b.synced, id) // flushed to a table and deleted
		}
	}
	if newest != b.newest {
		// A new log file: its directory entry must be durable too.
		if err := b.fsync(b.dir); err != nil {
			return err
		}
		b.newest = newest
	}
	return nil
}

// fsyncFile fsyncs a file or directory; one badger has deleted meanwhile
// (a log flushed to a table, which badger syncs itself) is not an error.
func fsyncFile(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

var _ syncer = (*badgerSyncer)(nil)
