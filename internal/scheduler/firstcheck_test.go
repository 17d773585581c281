package scheduler

import (
	"context"
	"encoding/json"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/wasmbuild"
	"github.com/vigilhq/vigil/plugins"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// A kind that gives no first check is probed at once, as before.
func TestAKindWithoutAFirstCheckIsProbedAtOnce(t *testing.T) {
	h := newHarness(t)
	w := h.register("ci")
	if due := dueOf(t, h.s, w.ID); !due.Equal(t0) {
		t.Fatalf("due %s, want at registration %s", due, t0)
	}
	if n := h.tick(t0); n != 1 {
		t.Fatalf("the tick at registration probed %d, want 1", n)
	}
	if !h.row(w.ID).NextCheck.IsZero() {
		t.Fatal("a watch probed at once keeps a next check")
	}
}

// Register arms a new watch at the kind's first check, clamped to [now,
// the deadline]: later than now, it is durable (the row's next check),
// so a restart arms the watch there too, not at its registration.
func TestRegisterArmsTheFirstCheck(t *testing.T) {
	for _, tt := range []struct {
		name     string
		kind     string
		hint     time.Time
		deadline time.Time // admit's natural deadline; zero for none
		want     time.Time
		durable  bool
	}{
		{"an hour ahead", "ci", t0.Add(time.Hour), t0.Add(time.Hour + time.Minute), t0.Add(time.Hour), true},
		{"at the deadline", "ci", t0.Add(time.Hour + time.Minute), t0.Add(time.Hour + time.Minute), t0.Add(time.Hour + time.Minute), true},
		{"already past", "ci", t0.Add(-time.Hour), t0.Add(-time.Minute), t0, false},
		{"now", "ci", t0, time.Time{}, t0, false},
		{"past the default deadline", "ci", t0.Add(time.Hour), time.Time{}, t0.Add(DefaultDeadline), true},
		{"a standing kind's", "ticket", t0.Add(48 * time.Hour), time.Time{}, t0.Add(48 * time.Hour), true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.plugins.OnAdmit(func(string, kind.AdmitRequest) (kind.Admission, error) {
				return kind.Admission{NextCheck: tt.hint, Deadline: tt.deadline}, nil
			})
			w := h.register(tt.kind)
			if due := dueOf(t, h.s, w.ID); !due.Equal(tt.want) {
				t.Fatalf("due %s, want %s", due, tt.want)
			}
			if next := h.row(w.ID).NextCheck; tt.durable != !next.IsZero() || (tt.durable && !next.Equal(tt.want)) {
				t.Fatalf("durable next check %v, want %v (durable %v)", next, tt.want, tt.durable)
			}
			if n := h.tick(t0); (n == 1) != tt.want.Equal(t0) {
				t.Fatalf("the tick at registration probed %d", n)
			}
			if !tt.durable {
				return
			}
			h.clock.Set(t0.Add(time.Second))
			h.open() // a restart
			if _, err := h.s.Prime(context.Background()); err != nil {
				t.Fatal(err)
			}
			if due := dueOf(t, h.s, w.ID); !due.Equal(tt.want) {
				t.Fatalf("after a restart due %s, want %s", due, tt.want)
			}
		})
	}
}

// countingKinds counts the observe calls that reach the kinds.
type countingKinds struct {
	*kind.Registry
	observes atomic.Int64
}

func (c *countingKinds) Observe(ctx context.Context, req abi.ObserveRequest) (kind.Observation, error) {
	c.observes.Add(1)
	return c.Registry.Observe(ctx, req)
}

// A timer registered an hour ahead is not probed until its instant,
// through the real timer plugin built from its source (its admit answers
// the instant as next_check), on a fake clock; a kind that gives no first
// check (the bundled ci) is probed at once.
func TestATimerIsFirstProbedAtItsInstant(t *testing.T) {
	ctx := context.Background()
	timer := filepath.Join(t.TempDir(), "timer.wasm")
	if err := wasmbuild.BuildFile(filepath.Join("..", "..", "plugins", "timer"), timer); err != nil {
		t.Fatal(err)
	}
	reg := kind.NewRegistry()
	rt, err := plugin.New(ctx, plugin.Config{Bundled: plugins.Bundled(), Extra: timer, CacheDir: wasmbuild.CacheDir(), Kinds: reg,
		Limits: plugin.Limits{CallTimeout: 10 * time.Second, ObserveTimeout: 20 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rt.Close(ctx) })
	st, err := badger.OpenStore(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	kinds := &countingKinds{Registry: reg}
	clock := fakeclock.At(t0)
	deliver := &recordingDeliverer{st: st}
	s, err := New(Config{Store: st, Plugins: kinds, Deliver: deliver, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	at := t0.Add(time.Hour)
	w, err := s.Register(ctx, Registration{Kind: "timer", Params: json.RawMessage(`{"at":"` + at.Format(time.RFC3339) + `"}`), Recipient: store.Recipient{ID: "agent-1"}})
	if err != nil {
		t.Fatal(err)
	}
	tick := func(now time.Time) int {
		clock.Set(now)
		return s.Tick(ctx, now)
	}
	for _, now := range []time.Time{t0, t0.Add(30 * time.Minute), at.Add(-time.Millisecond)} {
		if n := tick(now); n != 0 || kinds.observes.Load() != 0 {
			t.Fatalf("at %s: %d probes, %d observe calls; want none before the instant", now, n, kinds.observes.Load())
		}
	}
	if next, ok := s.NextWake(); !ok || !next.Equal(at) {
		t.Fatalf("next wake %v (%v), want the instant %s", next, ok, at)
	}
	if n := tick(at); n != 1 || kinds.observes.Load() != 1 {
		t.Fatalf("at the instant: %d probes, %d observe calls; want 1", n, kinds.observes.Load())
	}
	msgs := deliver.messages()
	if len(msgs) != 1 || msgs[0].WatchID != w.ID || msgs[0].Outcome.Result != "fired" {
		t.Fatalf("messages %+v, want the timer fired once", msgs)
	}

	// The bundled ci names no first check: probed at once (it cannot
	// fetch here, so its answer is pending, "could not tell").
	if _, err := s.Register(ctx, Registration{Kind: "ci", Params: json.RawMessage(`{"forge":"github","repo":"vigilhq/vigil","sha":"0123456789abcdef0123456789abcdef01234567"}`), Recipient: store.Recipient{ID: "agent-1"}}); err != nil {
		t.Fatal(err)
	}
	if n := tick(at); n != 1 || kinds.observes.Load() != 2 {
		t.Fatalf("a ci watch at its registration: %d probes, %d observe calls in all; want 1 and 2", n, kinds.observes.Load())
	}
}
