package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"
)

var (
	// ErrSync: a sync of the store failed. The commit it would have
	// covered may or may not survive a power loss, and so may every later
	// one: the store acknowledges no commit after it, until reopened.
	ErrSync = errors.New("store: sync failed")
	// ErrClosed: the store was closed before the commit could be synced.
	ErrClosed = errors.New("store: closed")
)

// syncer makes durable every commit that returned before Sync was called.
// The store's group sync calls it from one goroutine, never two at once.
// badgerSyncer is the real one; tests inject one that records the order
// of commits, syncs and acknowledgements.
type syncer interface {
	Sync() error
}

// groupSync is the leader/follower group sync. A writer that has
// committed calls wait, which joins the next round and blocks until that
// round's sync has finished. One goroutine (run) takes rounds back to back
// while anyone waits: a round is taken, and its sync starts, only after
// every writer in it had committed, so the sync covers them all, and N
// writers that commit during one sync share the next one. A lone writer
// waits for its own sync and a goroutine hand-off, nothing more.
type groupSync struct {
	syncer syncer
	// kick wakes run (capacity 1: one pending wake-up is enough).
	kick chan struct{}
	stop chan struct{}
	done chan struct{}
	// stopOnce makes close idempotent.
	stopOnce sync.Once

	// mu guards next, closed and failed.
	mu sync.Mutex
	// next is the round writers join; nil until someone waits.
	next *syncRound
	// closed is set once run has served its last round.
	closed bool
	// failed is the first sync error: after a failed fsync the kernel may
	// have dropped the dirty pages and a later fsync can succeed without
	// them, so no later commit is acknowledged either.
	failed error
}

// syncRound is one sync and the writers waiting for it.
type syncRound struct {
	done chan struct{} // closed when err is set
	err  error
}

func newGroupSync(s syncer) *groupSync {
	g := &groupSync{syncer: s, kick: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	go g.run()
	return g
}

// wait blocks until a sync that started after the call has finished, and
// returns its error (ErrClosed once the store is closing and the last
// round has been served).
func (g *groupSync) wait() error {
	g.mu.Lock()
	switch {
	case g.failed != nil:
		err := g.failed
		g.mu.Unlock()
		return err
	case g.closed:
		g.mu.Unlock()
		return ErrClosed
	}
	r := g.next
	if r == nil {
		r = &syncRound{done: make(chan struct{})}
		g.next = r
	}
	g.mu.Unlock()
	select {
	case g.kick <- struct{}{}:
	default:
	}
	<-r.done
	return r.err
}

// run serves rounds until close; the last one is served before it
// returns, so no waiter is left behind.
func (g *groupSync) run() {
	defer close(g.done)
	for {
		last := false
		select {
		case <-g.kick:
		case <-g.stop:
			last = true
		}
		g.mu.Lock()
		r := g.next
		g.next = nil
		g.closed = last
		g.mu.Unlock()
		if r != nil {
			g.serve(r)
		}
		if last {
			return
		}
	}
}

func (g *groupSync) serve(r *syncRound) {
	err := g.syncer.Sync()
	g.mu.Lock()
	if err != nil {
		err = fmt.Errorf("%w: %w", ErrSync, err)
		if g.failed == nil {
			g.failed = err
		}
	}
	err = g.failed
	g.mu.Unlock()
	r.err = err
	close(r.done)
}

// close serves the waiting round, if any, and stops run. Writers that
// wait afterwards get ErrClosed at once.
func (g *groupSync) close() {
	g.stopOnce.Do(func() { close(g.stop) })
	<-g.done
}

// badgerSyncer syncs a badger opened with SyncWrites off: db.Sync fsyncs
// the active memtable's write-ahead log and the value log. A commit made
// just before badger switched to a new memtable sits in the previous
// log, which db.Sync does not touch and badger does not fsync until its
// memtable is flushed to a table, so after db.Sync the syncer also
// fsyncs every older log file it has not yet synced since it stopped
// being written (once each), and the directory when a log file appeared.
type badgerSyncer struct {
	db  *badger.DB
	dir string
	// synced are the log files (by id) already fsynced after a newer one
	// existed; newest is the highest id seen. Only Sync uses them, and
	// the group sync never runs two at once.
	synced map[int]bool
	newest int
}

func newBadgerSyncer(db *badger.DB, dir string) *badgerSyncer {
	return &badgerSyncer{db: db, dir: dir, synced: map[int]bool{}, newest: -1}
}

const memFileExt = ".mem"

func (b *badgerSyncer) Sync() error {
	if err := b.db.Sync(); err != nil {
		return err
	}
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
		if err := fsyncFile(filepath.Join(b.dir, name)); err != nil {
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
		if err := fsyncFile(b.dir); err != nil {
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
