package delivery

// Benchmarks of the mailbox: Settle (a pending row settled and its
// message appended in one transaction, then the long-poll wake; the row's
// Create is inside the timing too) to running recipients that have no
// webhook, and Read after a cursor, on a real badger store in a temporary directory with the
// default options. Run with
//
//	go test -run XXX -bench Mailbox -benchmem ./internal/delivery/
//
// One op is one message; msgs/s is the throughput. Each case runs on g
// goroutines (1, 8, 64), goroutine i working on its own recipient r<i>:
//
//	append         Create and Settle only
//	read/limit=N   Read(after, N, no wait) from a cursor until the
//	               recipient's mailbox, filled before the timer starts, is
//	               drained: N=100 reads a backlog in pages, N=1 is a read
//	               per message
//	append+read    Settle one message, then Read(after the cursor) it back,
//	               no waiting: an agent that polls after each message
//	longpoll       a reader per recipient parked in Read(wait 60 s) and a
//	               writer per recipient sending; the clock stops when every
//	               reader has read every message: the product's path
//	               (Settle wakes the hub, the reader re-reads)
//
// BenchmarkSettle is settlement throughput alone: Settle of rows created
// before the timer starts (the outcome and the mailbox append in one
// commit), from g goroutines (1, 8, 64) over g recipients, with the
// store's fsync off, group (group commit: serve's default) or each
// (badger's sync per commit). settles/s is the throughput, p50-us and
// p99-us the latency of one Settle.

import (
	"context"
	"crypto/rand"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/benchtest"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

var benchGoroutines = []int{1, 8, 64}

// benchMailboxes opens a store in a temporary directory (default options)
// with n running recipients r0 … r<n-1>, none with a webhook, and a
// Delivery on the wall clock and crypto/rand, as the product builds it.
func benchMailboxes(b *testing.B, n int) (*Delivery, *store.Store, []store.Recipient) {
	b.Helper()
	return benchMailboxesWith(b, n, badger.Options{})
}

// benchMailboxesWith is benchMailboxes with the store opened with opt.
func benchMailboxesWith(b *testing.B, n int, opt badger.Options) (*Delivery, *store.Store, []store.Recipient) {
	b.Helper()
	st, err := badger.OpenStore(b.TempDir(), opt)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = st.Close() })
	d, err := New(Config{Store: st})
	if err != nil {
		b.Fatal(err)
	}
	now := time.Now().UTC()
	rs := make([]store.Recipient, n)
	for i := range rs {
		rs[i] = store.Recipient{ID: fmt.Sprintf("r%d", i)}
		rec := store.RecipientRecord{ID: rs[i].ID, Status: store.StatusRunning, CreatedAt: now, UpdatedAt: now}
		if _, _, err := st.PutRecipient(context.Background(), rec); err != nil {
			b.Fatal(err)
		}
	}
	return d, st, rs
}

// benchMessage is a timer's "fired" message, as the scheduler sends it.
func benchMessage(watch store.ID) store.Message {
	at := time.Now().UTC()
	return store.Message{
		WatchID: watch, Kind: "timer", Type: store.MessageFired, At: at,
		Outcome: store.Outcome{Result: "fired", Summary: "reached " + at.Format(time.RFC3339),
			Detail: []byte(`{"at":"` + at.Format(time.RFC3339) + `"}`)},
	}
}

// share is how many of n messages goroutine i of g handles.
func share(n, g, i int) int {
	s := n / g
	if i < n%g {
		s++
	}
	return s
}

// onEach runs f(i, share) on g goroutines, timed, and reports msgs/s.
func onEach(b *testing.B, g int, f func(i, n int) error) {
	b.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, g)
	b.ResetTimer()
	for i := range g {
		wg.Go(func() {
			if err := f(i, share(b.N, g, i)); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	b.StopTimer()
	close(errs)
	if err := <-errs; err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
}

// send creates a pending timer watch for to and settles it through d: one
// message in to's mailbox.
func send(ctx context.Context, d *Delivery, st *store.Store, to store.Recipient) error {
	id, err := createPending(ctx, st, to)
	if err != nil {
		return err
	}
	return settle(ctx, d, id, to)
}

// createPending creates a pending timer watch for to.
func createPending(ctx context.Context, st *store.Store, to store.Recipient) (store.ID, error) {
	now := time.Now().UTC()
	id, err := store.NewID(now, rand.Reader)
	if err != nil {
		return id, err
	}
	exp := now.Add(time.Hour)
	w := store.Watch{ID: id, Kind: "timer", Params: []byte(`{}`), Recipient: to, State: store.Pending,
		Receipt: store.ReceiptNone, Every: store.Duration(time.Minute), CreatedAt: now, ExpiresAt: &exp}
	return id, st.Create(ctx, w)
}

// settle fires watch id through d: one message in to's mailbox.
func settle(ctx context.Context, d *Delivery, id store.ID, to store.Recipient) error {
	now := time.Now().UTC()
	m := benchMessage(id)
	got, err := d.Settle(ctx, id, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: now}, m)
	if err != nil {
		return err
	}
	if got.Receipt != store.ReceiptDelivered {
		return fmt.Errorf("send to %s: receipt %s", to.ID, got.Receipt)
	}
	return nil
}

// BenchmarkMailbox is mailbox throughput; see the top of this file.
func BenchmarkMailbox(b *testing.B) {
	ctx := context.Background()
	for _, g := range benchGoroutines {
		b.Run(fmt.Sprintf("append/g=%d", g), func(b *testing.B) {
			d, st, rs := benchMailboxes(b, g)
			b.ReportAllocs()
			onEach(b, g, func(i, n int) error {
				for range n {
					if err := send(ctx, d, st, rs[i]); err != nil {
						return err
					}
				}
				return nil
			})
		})
	}
	for _, limit := range []int{100, 1} {
		for _, g := range benchGoroutines {
			b.Run(fmt.Sprintf("read/limit=%d/g=%d", limit, g), func(b *testing.B) {
				d, st, rs := benchMailboxes(b, g)
				for i := range g {
					for range share(b.N, g, i) {
						if err := send(ctx, d, st, rs[i]); err != nil {
							b.Fatal(err)
						}
					}
				}
				b.ReportAllocs()
				onEach(b, g, func(i, n int) error {
					var cur uint64
					for got := 0; got < n; {
						msgs, err := d.Read(ctx, rs[i].ID, cur, limit, 0)
						if err != nil {
							return err
						}
						if len(msgs) == 0 || msgs[0].Seq != cur+1 {
							return fmt.Errorf("%s after %d: %d messages", rs[i].ID, cur, len(msgs))
						}
						got += len(msgs)
						cur = msgs[len(msgs)-1].Seq
					}
					return nil
				})
			})
		}
	}
	for _, g := range benchGoroutines {
		b.Run(fmt.Sprintf("append+read/g=%d", g), func(b *testing.B) {
			d, st, rs := benchMailboxes(b, g)
			b.ReportAllocs()
			onEach(b, g, func(i, n int) error {
				var cur uint64
				for range n {
					if err := send(ctx, d, st, rs[i]); err != nil {
						return err
					}
					msgs, err := d.Read(ctx, rs[i].ID, cur, 100, 0)
					if err != nil {
						return err
					}
					if len(msgs) != 1 || msgs[0].Seq != cur+1 {
						return fmt.Errorf("%s after %d: %d messages", rs[i].ID, cur, len(msgs))
					}
					cur = msgs[0].Seq
				}
				return nil
			})
		})
	}
	for _, g := range benchGoroutines {
		b.Run(fmt.Sprintf("longpoll/g=%d", g), func(b *testing.B) {
			d, st, rs := benchMailboxes(b, g)
			var reads, wakes atomic.Int64
			readers := make(chan error, g)
			var parked sync.WaitGroup
			parked.Add(g)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range g {
				go func() {
					parked.Done()
					want := share(b.N, g, i)
					var cur uint64
					for int(cur) < want {
						msgs, err := d.Read(ctx, rs[i].ID, cur, 100, MaxWait)
						if err != nil {
							readers <- err
							return
						}
						if len(msgs) == 0 {
							readers <- fmt.Errorf("%s: the long poll timed out at %d of %d", rs[i].ID, cur, want)
							return
						}
						reads.Add(1)
						wakes.Add(int64(len(msgs)))
						cur = msgs[len(msgs)-1].Seq
					}
					readers <- nil
				}()
			}
			parked.Wait()
			// The readers are running; the writers start now.
			onEach(b, g, func(i, n int) error {
				for range n {
					if err := send(ctx, d, st, rs[i]); err != nil {
						return err
					}
				}
				return nil
			})
			// onEach stopped the clock when the last send returned; it
			// runs on until the last reader has read the last message.
			b.StartTimer()
			for range g {
				if err := <-readers; err != nil {
					b.Fatal(err)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "msgs/s")
			b.ReportMetric(float64(wakes.Load())/float64(reads.Load()), "msgs/read")
		})
	}
}

// BenchmarkSettle is settlement throughput by durability; see the top of
// this file.
func BenchmarkSettle(b *testing.B) {
	ctx := context.Background()
	for _, d := range []struct {
		name string
		opt  badger.Options
	}{
		{"off", badger.Options{}},
		{"group", badger.Options{SyncWrites: true}},
		{"each", badger.Options{SyncWrites: true, SyncEachCommit: true}},
	} {
		for _, g := range benchGoroutines {
			b.Run(fmt.Sprintf("fsync=%s/g=%d", d.name, g), func(b *testing.B) {
				dl, st, rs := benchMailboxesWith(b, g, d.opt)
				// The rows, untimed, from 64 goroutines (their syncs
				// shared, so the set-up stays short).
				const fill = 64
				ids := make([]store.ID, b.N)
				var wg sync.WaitGroup
				errs := make(chan error, fill)
				for w := range fill {
					wg.Go(func() {
						for i := w; i < b.N; i += fill {
							var err error
							if ids[i], err = createPending(ctx, st, rs[i%g]); err != nil {
								errs <- err
								return
							}
						}
					})
				}
				wg.Wait()
				close(errs)
				if err := <-errs; err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				ds := benchtest.Drive(b, g, func(i int) error { return settle(ctx, dl, ids[i], rs[i%g]) })
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "settles/s")
				benchtest.Percentiles(b, ds, time.Microsecond, "us")
			})
		}
	}
}
