package overview

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/store"
)

type countingStates struct {
	n, kindN     int
	err, kindErr error
}

func (c *countingStates) CountByState(context.Context) (map[store.State]int, error) {
	c.n++
	if c.err != nil {
		return nil, c.err
	}
	return map[store.State]int{store.Pending: 3 * c.n, store.Fired: 1}, nil
}

func (c *countingStates) CountPendingByKind(context.Context) (map[string]int, error) {
	c.kindN++
	if c.kindErr != nil {
		return nil, c.kindErr
	}
	return map[string]int{"timer": 2 * c.kindN, "github_pr": c.kindN, "url_up": 0}, nil
}

type fakeCounters struct{}

func (fakeCounters) Kinds() []api.KindView {
	return []api.KindView{{Kind: "timer", Probes: map[string]uint64{"settled": 2}, Faults: map[string]uint64{}}}
}
func (fakeCounters) LagQuantiles() (float64, float64) { return 0.001, 0.1 }
func (fakeCounters) ReadyDepth() int                  { return 4 }
func (fakeCounters) PushesEntered() map[string]uint64 { return map[string]uint64{"failed": 1} }

type fakeArmed struct{ at time.Time }

func (f fakeArmed) Pending() int                { return 7 }
func (f fakeArmed) NextWake() (time.Time, bool) { return f.at, true }

type fakeOutbox struct{}

func (fakeOutbox) Counts() (int, int) { return 5, 2 }

type fakeSeqs map[string]uint64

func (f fakeSeqs) LastEventSeq(_ context.Context, s string) (uint64, error) { return f[s], nil }

var t0 = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

// cachedOverview is an Overview over counting states with a MaxAge of
// five seconds, and ask, which answers its overview or fails the test.
func cachedOverview(t *testing.T) (*fakeclock.Clock, *countingStates, func() api.Overview) {
	t.Helper()
	clock := fakeclock.At(t0)
	st := &countingStates{}
	o, err := New(Config{States: st, Clock: clock, MaxAge: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	return clock, st, func() api.Overview {
		t.Helper()
		v, err := o.Overview(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
}

// The counts by state are counted at most once per MaxAge, and again from
// a clock that went back; the answer says when they were counted.
func TestCountsByStateAreCountedOncePerMaxAge(t *testing.T) {
	clock, st, ask := cachedOverview(t)
	v := ask()
	if st.n != 1 || v.Watches["pending"] != 3 || !v.WatchesCountedAt.Equal(t0) {
		t.Fatalf("first: %d counts, %+v", st.n, v)
	}
	clock.Add(4 * time.Second)
	v = ask()
	if st.n != 1 || !v.WatchesCountedAt.Equal(t0) || !v.At.Equal(t0.Add(4*time.Second)) {
		t.Fatalf("within MaxAge: %d counts, %+v", st.n, v)
	}
	clock.Add(time.Second)
	if v = ask(); st.n != 2 || v.Watches["pending"] != 6 {
		t.Fatalf("at MaxAge: %d counts, %+v", st.n, v)
	}
	clock.Set(t0)
	if ask(); st.n != 3 {
		t.Fatalf("a clock that went back: %d counts", st.n)
	}
	for _, s := range store.States() {
		if _, ok := v.Watches[string(s)]; !ok {
			t.Errorf("state %s missing from %v", s, v.Watches)
		}
	}
}

// The pending watches by kind are counted with the counts by state: at
// most once per MaxAge, and again from a clock that went back; a kind
// with none pending is absent.
func TestPendingByKindIsCountedOncePerMaxAge(t *testing.T) {
	clock, st, ask := cachedOverview(t)
	v := ask()
	if st.kindN != 1 || v.PendingByKind["timer"] != 2 || v.PendingByKind["github_pr"] != 1 || len(v.PendingByKind) != 2 {
		t.Fatalf("first: %d counts, %v", st.kindN, v.PendingByKind)
	}
	clock.Add(4 * time.Second)
	if v = ask(); st.kindN != 1 || v.PendingByKind["timer"] != 2 || !v.WatchesCountedAt.Equal(t0) {
		t.Fatalf("within MaxAge: %d counts, %v", st.kindN, v.PendingByKind)
	}
	clock.Add(time.Second)
	if v = ask(); st.kindN != 2 || v.PendingByKind["timer"] != 4 {
		t.Fatalf("at MaxAge: %d counts, %v", st.kindN, v.PendingByKind)
	}
	clock.Set(t0)
	if ask(); st.kindN != 3 {
		t.Fatalf("a clock that went back: %d counts", st.kindN)
	}
	if _, ok := v.PendingByKind["url_up"]; ok {
		t.Fatalf("a kind with none pending is listed: %v", v.PendingByKind)
	}
}

func TestOverviewReadsEverySource(t *testing.T) {
	wake := t0.Add(time.Minute)
	o, err := New(Config{States: &countingStates{}, Clock: fakeclock.At(t0), Counters: fakeCounters{}, Armed: fakeArmed{wake},
		Outbox: fakeOutbox{}, Seqs: fakeSeqs{"dl": 9}, DeadLetters: "dl"})
	if err != nil {
		t.Fatal(err)
	}
	v, err := o.Overview(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if v.Scheduler.Armed != 7 || v.Scheduler.Ready != 4 || v.Scheduler.NextWake == nil || !v.Scheduler.NextWake.Equal(wake) ||
		v.Scheduler.LagP99Seconds != 0.1 || v.Pushes.Queued != 5 || v.Pushes.Retrying != 2 || v.Pushes.Entered["failed"] != 1 ||
		v.DeadLetters != 9 || len(v.Kinds) != 1 {
		t.Fatalf("%+v", v)
	}
}

func TestOverviewWrapsTheStoresError(t *testing.T) {
	boom := errors.New("boom")
	o, _ := New(Config{States: &countingStates{err: boom}, Clock: fakeclock.At(t0)})
	if _, err := o.Overview(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("err %v", err)
	}
	o, _ = New(Config{States: &countingStates{kindErr: boom}, Clock: fakeclock.At(t0)})
	if _, err := o.Overview(context.Background()); !errors.Is(err, boom) {
		t.Fatalf("the count by kind's error: %v", err)
	}
	if _, err := New(Config{Clock: fakeclock.At(t0)}); err == nil {
		t.Fatal("no States, no error")
	}
}

type fakeDisk struct {
	sp store.DiskSpace
	ok bool
}

func (f fakeDisk) DiskSpace() (store.DiskSpace, bool) { return f.sp, f.ok }

// The store's disk is in the overview while the store measures one, with
// whether clients' writes are refused; absent where it does not.
func TestOverviewShowsTheStoresDisk(t *testing.T) {
	sp := store.DiskSpace{Dir: "/var/lib/vigil/store", Free: 900 << 10, Reserve: 300 << 10, Need: 1324 << 10, Full: true, At: t0}
	for _, tt := range []struct {
		name string
		disk Disk
		want *api.StorageView
	}{
		{"measured", fakeDisk{sp, true}, &api.StorageView{Dir: sp.Dir, FreeBytes: sp.Free, ReserveBytes: sp.Reserve, NeededBytes: sp.Need, ReadOnly: true, MeasuredAt: t0}},
		{"not measured here", fakeDisk{sp, false}, nil},
		{"no disk (a JetStream store)", nil, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			o, err := New(Config{States: &countingStates{}, Clock: fakeclock.At(t0), Disk: tt.disk})
			if err != nil {
				t.Fatal(err)
			}
			v, err := o.Overview(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			if (v.Storage == nil) != (tt.want == nil) || (v.Storage != nil && *v.Storage != *tt.want) {
				t.Fatalf("storage %+v, want %+v", v.Storage, tt.want)
			}
		})
	}
}
