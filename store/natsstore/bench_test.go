package natsstore

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// benchStore opens a Store on one embedded node (R1) or on three (R3).
func benchStore(b *testing.B, replicas int) testStore {
	b.Helper()
	if replicas == 1 {
		return openStore(b, Config{}, runServer(b))
	}
	servers := runCluster(b, replicas)
	var urls []string
	for _, srv := range servers {
		urls = append(urls, srv.ClientURL())
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := openDomain(context.Background(), Config{URLs: urls, Replicas: replicas})
		if err == nil {
			b.Cleanup(func() { _ = s.Close() })
			return s
		}
		if time.Now().After(deadline) {
			b.Fatal(err)
		}
		time.Sleep(100 * time.Millisecond) // the cluster's first election
	}
}

// callers is how many goroutines per core the benchmarks run: the
// commits are round trips, so throughput comes from many in flight.
const callers = 8

// BenchmarkCreate measures registrations (CreateIfRunning, as the API
// makes them: a row, its four index entries and a fence on the
// recipient in one batch) per second, spread over 16 recipients.
func BenchmarkCreate(b *testing.B) {
	for _, r := range []int{1, 3} {
		b.Run(fmt.Sprintf("R%d", r), func(b *testing.B) {
			ctx := context.Background()
			s := benchStore(b, r)
			ids := newIDs()
			for i := range 16 {
				runningFor(b, s, fmt.Sprint(i), "")
			}
			ws := make([]store.Watch, b.N)
			next := make(chan store.Watch, b.N)
			for i := range ws {
				next <- pendingWatch(b, ids, fmt.Sprint(i%16), t0)
			}
			close(next)
			b.SetParallelism(callers)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if err := s.CreateIfRunning(ctx, <-next, 0); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
		})
	}
}

// BenchmarkSettle measures settlements with their mail (SettleAndMail:
// the row, its indexes, the message, the sequence key, fenced on the
// recipient) per second, spread over 16 recipients.
func BenchmarkSettle(b *testing.B) {
	for _, r := range []int{1, 3} {
		b.Run(fmt.Sprintf("R%d", r), func(b *testing.B) {
			ctx := context.Background()
			s := benchStore(b, r)
			ids := newIDs()
			for i := range 16 {
				runningFor(b, s, fmt.Sprint(i), "")
			}
			next := make(chan store.ID, b.N)
			for i := range b.N {
				w := pendingWatch(b, ids, fmt.Sprint(i%16), t0)
				if err := s.Create(ctx, w); err != nil {
					b.Fatal(err)
				}
				next <- w.ID
			}
			close(next)
			b.SetParallelism(callers)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					m := store.Message{Kind: "timer", Type: store.MessageFired, At: t0.Add(time.Minute)}
					if _, _, err := s.SettleAndMail(ctx, <-next, fired(t0.Add(time.Minute)), m); err != nil {
						b.Error(err)
						return
					}
				}
			})
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "settles/s")
		})
	}
}

// BenchmarkRegisterBesideManyPending measures one registration as the
// API makes it, the bound's count (CountPending, as
// recipients.CheckPending asks it) and then CreateIfRunning, for a
// recipient that already holds 1,000 pending watches, one at a time:
// the count's cost is what a recipient's pending index costs it.
func BenchmarkRegisterBesideManyPending(b *testing.B) {
	ctx := context.Background()
	s := benchStore(b, 1)
	ids := newIDs()
	runningFor(b, s, "busy", "")
	for range 1000 {
		if err := s.Create(ctx, pendingWatch(b, ids, "busy", t0)); err != nil {
			b.Fatal(err)
		}
	}
	ws := make([]store.Watch, b.N)
	for i := range ws {
		ws[i] = pendingWatch(b, ids, "busy", t0)
	}
	b.ResetTimer()
	for i := range b.N {
		n, err := s.CountPending(ctx, "busy", 10_000)
		if err != nil || n != 1000+i {
			b.Fatalf("CountPending: %d %v, want %d", n, err, 1000+i)
		}
		if err := s.CreateIfRunning(ctx, ws[i], 0); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkFence measures what the partition fence costs an owner's
// transitions: settlements with their mail (whose batch carries the
// epoch's check on a write it makes anyway) and probe records (whose
// batch gains a carrier message), spread over 16 recipients and the 64
// partitions, with no fence ("off") and with every partition fenced as
// a node that owns them all ("on").
func BenchmarkFence(b *testing.B) {
	for _, r := range []int{1, 3} {
		for _, op := range []string{"settle", "probe"} {
			for _, on := range []bool{false, true} {
				name := fmt.Sprintf("%s/R%d/off", op, r)
				if on {
					name = fmt.Sprintf("%s/R%d/on", op, r)
				}
				b.Run(name, func(b *testing.B) { benchFence(b, r, op, on) })
			}
		}
	}
}

func benchFence(b *testing.B, replicas int, op string, on bool) {
	ctx := context.Background()
	s := benchStore(b, replicas)
	ids := newIDs()
	for i := range 16 {
		runningFor(b, s, fmt.Sprint(i), "")
	}
	if on {
		for p := range s.Partitions() {
			if _, err := s.FencePartition(ctx, p, "bench", t0); err != nil {
				b.Fatal(err)
			}
		}
	}
	next := make(chan store.ID, b.N)
	for i := range b.N {
		w := pendingWatch(b, ids, fmt.Sprint(i%16), t0)
		if err := s.Create(ctx, w); err != nil {
			b.Fatal(err)
		}
		next <- w.ID
	}
	close(next)
	b.SetParallelism(callers)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			id := <-next
			var err error
			switch op {
			case "settle":
				m := store.Message{Kind: "timer", Type: store.MessageFired, At: t0.Add(time.Minute)}
				_, _, err = s.SettleAndMail(ctx, id, fired(t0.Add(time.Minute)), m)
			default:
				err = s.RecordProbe(ctx, id, store.Probe{Attempts: 1, Note: "seen", NextCheck: t0.Add(time.Minute)})
			}
			if err != nil {
				b.Error(err)
				return
			}
		}
	})
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), op+"s/s")
}
