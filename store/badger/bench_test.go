package badger

// Benchmarks of the badger store. docs/BENCHMARKS.md has the results and
// how to read them. Run with
//
//	go test -run XXX -bench . -benchmem ./store/badger/
//
// BenchmarkCreate is registration's write: new pending rows, from 1
// goroutine and from several, with Options.SyncWrites off (sync=false), on
// (sync=true: group commit) and on with SyncEachCommit (sync=each: badger's
// own sync per commit). BenchmarkGet is a probe's read. BenchmarkList is a restart's read of
// VIGIL_BENCH_LIST_ROWS pending rows (default 100000): the product's List,
// and sketches of cheaper ways to read the same rows, to show where the
// time goes (they are not product code). BenchmarkCount is the
// overview's counts over 100,000 pending rows of four kinds:
// CountByState and CountPendingByKind.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
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

// benchRows makes timer rows: registered now, each for an instant an hour
// later, 64 recipients, ids from a seeded source per writer.
type benchRows struct {
	at         time.Time
	params     json.RawMessage
	recipients [64]store.Recipient
	// kinds, when set, are the rows' kinds in turn (else timer).
	kinds []string
}

func newBenchRows() *benchRows {
	r := &benchRows{at: time.Now().UTC().Truncate(time.Second).Add(time.Hour)}
	r.params = json.RawMessage(`{"at":"` + r.at.Format(time.RFC3339) + `"}`)
	for i := range r.recipients {
		r.recipients[i] = store.Recipient{ID: fmt.Sprintf("agent-%02d", i)}
	}
	return r
}

func (r *benchRows) row(ids io.Reader, i int) (store.Watch, error) {
	now := time.Now()
	id, err := store.NewID(now, ids)
	exp := r.at.Add(time.Minute)
	kind := "timer"
	if len(r.kinds) > 0 {
		kind = r.kinds[i%len(r.kinds)]
	}
	return store.Watch{
		ID: id, Kind: kind, Params: r.params, Recipient: r.recipients[i%len(r.recipients)],
		State: store.Pending, Receipt: store.ReceiptNone, Every: store.Duration(time.Minute),
		CreatedAt: now.UTC(), ExpiresAt: &exp,
	}, err
}

// createRows writes rows 0 … n-1 with Create from g goroutines and returns
// their ids.
func createRows(s *store.Store, rows *benchRows, g, n int) ([]store.ID, error) {
	ctx := context.Background()
	ids := make([]store.ID, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, g)
	for w := range g {
		wg.Go(func() {
			src := rand.NewChaCha8([32]byte{byte(w), byte(w >> 8), 'c'})
			for {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				row, err := rows.row(src, i)
				if err == nil {
					err = s.Create(ctx, row)
				}
				if err != nil {
					errs <- err
					return
				}
				ids[i] = row.ID
			}
		})
	}
	wg.Wait()
	close(errs)
	return ids, <-errs
}

// BenchmarkCreate is Create of new pending rows; one op is one row, and
// rows/s the throughput.
func BenchmarkCreate(b *testing.B) {
	for _, d := range []struct {
		name string
		opt  Options
	}{
		{"false", Options{}},
		{"true", Options{SyncWrites: true}},
		{"each", Options{SyncWrites: true, SyncEachCommit: true}},
	} {
		for _, g := range []int{1, 8, 64} {
			b.Run(fmt.Sprintf("sync=%s/goroutines=%d", d.name, g), func(b *testing.B) {
				s, _ := openStore(b, b.TempDir(), d.opt)
				rows := newBenchRows()
				b.ReportAllocs()
				b.ResetTimer()
				if _, err := createRows(s, rows, g, b.N); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "rows/s")
			})
		}
	}
}

// BenchmarkGet is a probe's read of its row (Get, decoded strictly), at
// random among 100,000 pending rows, the store closed and reopened first.
func BenchmarkGet(b *testing.B) {
	dir := b.TempDir()
	ids := buildStore(b, dir, 100_000)
	s, _ := openStore(b, dir, Options{})
	ctx := context.Background()
	r := rand.New(rand.NewPCG(1, 2))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := s.Get(ctx, ids[r.IntN(len(ids))]); err != nil {
			b.Fatal(err)
		}
	}
}

// buildStore writes n pending rows into dir with Create from 8 goroutines,
// then closes the store (flushing its memtables), as before a restart.
func buildStore(b *testing.B, dir string, n int) []store.ID {
	b.Helper()
	s, _ := openStore(b, dir, Options{})
	ids, err := createRows(s, newBenchRows(), 8, n)
	if err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	return ids
}

// BenchmarkList reads every pending row of a store of
// VIGIL_BENCH_LIST_ROWS rows, as Prime does on a restart. One op is the
// whole read; ns/row and rows/s are per row.
//
//	foreach      the product, as Prime reads: ForEach(Filter{State:
//	             Pending}), which walks the s/pending/ index and reads each
//	             row with a point lookup, decoding it strictly (DecodeRow),
//	             and keeps none of them
//	list         the product's List: the same, holding every row
//	scan-decode  a sketch: one iterator over the w/ rows, values prefetched,
//	             DecodeRow on each, no point lookups
//	scan-fields  a sketch: the same iterator, decoding only what the
//	             scheduler keeps of a row (id, state, every, attempts,
//	             expires_at), not strictly
//	scan-only    the same iterator, reading each value without decoding it:
//	             badger's floor for reading the rows
//	index-only   the s/pending/ index alone, keys only: the floor of a
//	             restart that would find what it needs in the index
func BenchmarkList(b *testing.B) {
	n := 100_000
	if v := os.Getenv("VIGIL_BENCH_LIST_ROWS"); v != "" {
		var err error
		if n, err = strconv.Atoi(strings.ReplaceAll(v, "_", "")); err != nil || n <= 0 {
			b.Fatalf("VIGIL_BENCH_LIST_ROWS=%q: want a positive integer", v)
		}
	}
	dir := b.TempDir()
	buildStore(b, dir, n)
	ctx := context.Background()

	run := func(b *testing.B, read func(s *store.Store, kv *KV) (int, error)) {
		s, kv := openStore(b, dir, Options{})
		defer s.Close()
		b.ReportAllocs()
		for b.Loop() {
			got, err := read(s, kv)
			if err != nil || got != n {
				b.Fatalf("read %d rows, %v; want %d", got, err, n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
		b.ReportMetric(float64(b.N)*float64(n)/b.Elapsed().Seconds(), "rows/s")
	}
	b.Run("foreach", func(b *testing.B) {
		run(b, func(s *store.Store, kv *KV) (int, error) {
			n := 0
			_, err := s.ForEach(ctx, store.Filter{State: store.Pending}, func(store.Watch) error {
				n++
				return nil
			})
			return n, err
		})
	})
	b.Run("list", func(b *testing.B) {
		run(b, func(s *store.Store, kv *KV) (int, error) {
			rows, _, err := s.List(ctx, store.Filter{State: store.Pending})
			return len(rows), err
		})
	})
	b.Run("scan-decode", func(b *testing.B) {
		run(b, func(s *store.Store, kv *KV) (int, error) {
			var rows []store.Watch
			err := scanRows(kv, func(key, v []byte) error {
				w, err := store.DecodeRow(key, v)
				if err == nil && w.State == store.Pending {
					rows = append(rows, w)
				}
				return err
			})
			return len(rows), err
		})
	})
	b.Run("scan-fields", func(b *testing.B) {
		type fields struct {
			ID        store.ID       `json:"id"`
			State     store.State    `json:"state"`
			Every     store.Duration `json:"every"`
			Attempts  int            `json:"attempts"`
			ExpiresAt *time.Time     `json:"expires_at"`
		}
		run(b, func(s *store.Store, kv *KV) (int, error) {
			var rows []fields
			err := scanRows(kv, func(_, v []byte) error {
				var f fields
				err := json.Unmarshal(v, &f)
				if err == nil && f.State == store.Pending {
					rows = append(rows, f)
				}
				return err
			})
			return len(rows), err
		})
	})
	b.Run("scan-only", func(b *testing.B) {
		run(b, func(s *store.Store, kv *KV) (int, error) {
			n, bytes := 0, 0
			err := scanRows(kv, func(_, v []byte) error {
				n++
				bytes += len(v)
				return nil
			})
			return n, err
		})
	})
	b.Run("index-only", func(b *testing.B) {
		run(b, func(s *store.Store, kv *KV) (int, error) {
			n := 0
			prefix := []byte("s/pending/")
			err := kv.db.View(func(txn *badgerdb.Txn) error {
				it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: prefix})
				defer it.Close()
				for it.Rewind(); it.Valid(); it.Next() {
					var id store.ID
					key := it.Item().Key()
					copy(id[:], key[len(key)-16:])
					n++
				}
				return nil
			})
			return n, err
		})
	})
}

// scanRows calls f with the key and value of every w/ row, in one
// iterator with values prefetched.
func scanRows(kv *KV, f func(key, v []byte) error) error {
	return kv.db.View(func(txn *badgerdb.Txn) error {
		it := txn.NewIterator(badgerdb.IteratorOptions{Prefix: []byte("w/"), PrefetchValues: true, PrefetchSize: 100})
		defer it.Close()
		for it.Rewind(); it.Valid(); it.Next() {
			item := it.Item()
			if err := item.Value(func(v []byte) error { return f(item.Key(), v) }); err != nil {
				return err
			}
		}
		return nil
	})
}

// BenchmarkCount is one of the overview's counts over a store of 100,000
// pending rows of four kinds; one op is the whole count, ns/row per row.
// With -v it logs what a pending row costs on disk, rows and indexes
// flattened into tables.
//
//	by-state         CountByState: every state's index, keys only
//	pending-by-kind  CountPendingByKind: the pk/ index, keys only
func BenchmarkCount(b *testing.B) {
	const n = 100_000
	dir := b.TempDir()
	s, kv := openStore(b, dir, Options{})
	rows := newBenchRows()
	rows.kinds = []string{"timer", "github_pr", "url_up", "file_changed"}
	if _, err := createRows(s, rows, 8, n); err != nil {
		b.Fatal(err)
	}
	// The rows and their indexes compacted into tables: what a pending
	// row costs on disk.
	if err := kv.db.Flatten(2); err != nil {
		b.Fatal(err)
	}
	if err := s.Close(); err != nil {
		b.Fatal(err)
	}
	tables, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil {
		b.Fatal(err)
	}
	var size int64
	for _, f := range tables {
		fi, err := os.Stat(f)
		if err != nil {
			b.Fatal(err)
		}
		size += fi.Size()
	}
	b.Logf("on disk: %.1f B per pending row in tables", float64(size)/n)
	s, _ = openStore(b, dir, Options{})
	ctx := context.Background()
	run := func(b *testing.B, count func() (int, error)) {
		b.ReportAllocs()
		for b.Loop() {
			got, err := count()
			if err != nil || got != n {
				b.Fatalf("counted %d, %v; want %d", got, err, n)
			}
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n), "ns/row")
	}
	b.Run("by-state", func(b *testing.B) {
		run(b, func() (int, error) {
			c, err := s.CountByState(ctx)
			return c[store.Pending], err
		})
	})
	b.Run("pending-by-kind", func(b *testing.B) {
		run(b, func() (int, error) {
			c, err := s.CountPendingByKind(ctx)
			if len(c) != len(rows.kinds) {
				return 0, fmt.Errorf("%d kinds: %v", len(c), c)
			}
			sum := 0
			for _, v := range c {
				sum += v
			}
			return sum, err
		})
	})
}
