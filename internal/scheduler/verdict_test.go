package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

func faulted(kindName string) (kind.Observation, error) {
	return kind.Observation{Status: abi.StatusPending, Note: "plugin fault: timeout: context deadline exceeded",
		Fault: &kind.CallError{Kind: kindName, Export: "observe", Reason: kind.FaultTimeout, Err: context.DeadlineExceeded}}, nil
}

// A faulting watch backs off: each gap between its probes is twice the
// last, never below its cadence, capped at MaxBackoff, and never past its
// deadline, where the final probe happens on time and expires it.
func TestFaultsBackOff(t *testing.T) {
	tests := []struct {
		name       string
		maxBackoff time.Duration
		raise      bool
		gaps       []time.Duration // between successive probes, from t0
	}{
		{"fault", 0, false, []time.Duration{20, 40, 80, 160, 320, 280}},
		{"plugin error", 0, true, []time.Duration{20, 40, 80, 160, 320, 280}},
		{"capped", 100 * time.Second, false, []time.Duration{20, 40, 80, 100, 100, 100, 100, 100, 100, 100, 60}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			if tt.maxBackoff > 0 {
				h.s.cfg.MaxBackoff = tt.maxBackoff
			}
			var probes []time.Time
			h.plugins.OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
				probes = append(probes, req.Now)
				if tt.raise {
					return kind.Observation{}, &kind.CallError{Kind: "ci", Export: "observe", Reason: kind.FaultRaised, Err: errors.New("wrong kind")}
				}
				return faulted("ci")
			})
			every, deadline := 10*time.Second, t0.Add(15*time.Minute)
			w, err := h.s.Register(context.Background(), Registration{Kind: "ci", Params: json.RawMessage(`{}`),
				Recipient: store.Recipient{ID: "agent-1"}, Every: &every, ExpiresAt: &deadline})
			if err != nil {
				t.Fatal(err)
			}
			for now, ok := t0, true; ok; now, ok = h.s.NextWake() {
				h.tick(now)
			}
			want := t0
			for i, gap := range tt.gaps {
				want = want.Add(gap * time.Second)
				if i+1 >= len(probes) || !probes[i+1].Equal(want) {
					t.Fatalf("probe %d at %v, want %v (all: %v)", i+1, probes[min(i+1, len(probes)-1)].Sub(t0), want.Sub(t0), offsets(probes))
				}
			}
			if len(probes) != len(tt.gaps)+1 || !want.Equal(deadline) {
				t.Fatalf("probes at %v: the last is not the deadline %v", offsets(probes), deadline.Sub(t0))
			}
			if got := h.row(w.ID); got.State != store.Expired || got.Attempts != len(probes) {
				t.Fatalf("row %+v", got)
			}
		})
	}
}

func offsets(ts []time.Time) []time.Duration {
	out := make([]time.Duration, len(ts))
	for i, t := range ts {
		out[i] = t.Sub(t0)
	}
	return out
}

// An answer after faults ends the backoff: the next gap is the cadence.
func TestAnAnswerEndsTheBackoff(t *testing.T) {
	h := newHarness(t)
	fault := true
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		if fault {
			return faulted("ci")
		}
		return hosttest.Pending("answered")
	})
	h.register("ci") // every 30 s
	h.tick(t0)
	next, _ := h.s.NextWake()
	h.tick(next)
	if next, _ = h.s.NextWake(); !next.Equal(t0.Add(3 * time.Minute)) { // 60 s, then 120 s
		t.Fatalf("after two faults: %v", next.Sub(t0))
	}
	fault = false
	h.tick(next)
	if after, _ := h.s.NextWake(); after.Sub(next) != 30*time.Second {
		t.Fatalf("after an answer the gap is %v, want the cadence", after.Sub(next))
	}
}

// A probe that runs late, past the deadline, still observes: a condition
// that was met fires; it never expires unobserved.
func TestALateProbeThatSettlesFires(t *testing.T) {
	h := newHarness(t)
	met := false
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		if met {
			return hosttest.Settled("success")
		}
		return hosttest.Pending("CI run 7 in progress")
	})
	w := h.register("ci") // deadline t0 + 15 min
	h.tick(t0)
	met = true
	h.tick(t0.Add(20 * time.Minute)) // the host was stalled past the deadline
	if got := h.row(w.ID); got.State != store.Fired || got.Outcome.Result != "success" {
		t.Fatalf("row %+v", got)
	}
	if m := h.deliver.messages(); len(m) != 1 || m[0].Type != store.MessageFired {
		t.Fatalf("messages %+v", m)
	}
}

// A watch still pending at its deadline's observation expires, and the
// expiry carries what that observation said.
func TestExpiryCarriesTheLastNote(t *testing.T) {
	h := newHarness(t)
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Pending("CI run 7 in progress") })
	w := h.register("ci")
	for now, ok := t0, true; ok; now, ok = h.s.NextWake() {
		h.tick(now)
	}
	got := h.row(w.ID)
	if got.State != store.Expired || got.LastNote != "CI run 7 in progress" || got.SettledAt == nil || !got.SettledAt.Equal(*w.ExpiresAt) {
		t.Fatalf("row %+v", got)
	}
	m := h.deliver.messages()
	if len(m) != 1 || m[0].Type != store.MessageExpired || m[0].Outcome.Result != "expired" ||
		!strings.HasSuffix(m[0].Outcome.Summary, "; last observed: CI run 7 in progress") {
		t.Fatalf("messages %+v", m)
	}
}

// A timer registered after its instant (its natural deadline, instant + 1
// min, has passed too) is stored with its deadline at the registration,
// observed at once, and fires: never mailed expired unobserved.
func TestANaturalDeadlineInThePastIsObservedAtOnce(t *testing.T) {
	h := newHarness(t)
	instant := t0.Add(-3 * time.Minute)
	h.plugins.Add(kind.Info{Kind: "timer", DefaultEvery: time.Minute})
	h.plugins.OnAdmit(func(string, kind.AdmitRequest) (kind.Admission, error) {
		return kind.Admission{Deadline: instant.Add(time.Minute)}, nil
	})
	h.plugins.OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
		if req.Now.Before(instant) {
			return kind.Observation{Status: abi.StatusPending, NextCheck: instant}, nil
		}
		return hosttest.Settled("fired")
	})
	w := h.register("timer")
	if w.State != store.Pending || w.ExpiresAt == nil || !w.ExpiresAt.Equal(t0) {
		t.Fatalf("registered %+v", w)
	}
	if next, ok := h.s.NextWake(); !ok || !next.Equal(t0) {
		t.Fatalf("next wake %v %v: not at once", next, ok)
	}
	h.tick(t0)
	if got := h.row(w.ID); got.State != store.Fired {
		t.Fatalf("row %+v", got)
	}
	if m := h.deliver.messages(); len(m) != 1 || m[0].Type != store.MessageFired {
		t.Fatalf("messages %+v", m)
	}
}

// hookDeliverer runs beforeCarry just before a baseline and its change
// mail are committed.
type hookDeliverer struct {
	*recordingDeliverer
	beforeCarry func(id store.ID)
}

func (d *hookDeliverer) Carry(ctx context.Context, id store.ID, b json.RawMessage, a int, n string, change *store.Message) (bool, error) {
	if d.beforeCarry != nil {
		d.beforeCarry(id)
	}
	return d.recordingDeliverer.Carry(ctx, id, b, a, n, change)
}

// A cancel that lands between a standing watch's probe and the commit of
// its new baseline with the change mail wins: the row stays cancelled, its
// baseline is not moved and nothing is mailed, whether the scheduler has
// let go of the watch yet or only the store has committed the cancel. The
// baseline and the mail are one conditional transaction (Deliver.Carry).
func TestCancelBeforeAChangeMailWins(t *testing.T) {
	for _, via := range []string{"scheduler", "store"} {
		t.Run(via, func(t *testing.T) {
			h := newHarness(t)
			hd := &hookDeliverer{recordingDeliverer: h.deliver}
			s, err := New(Config{Store: h.store, Plugins: h.plugins, Deliver: hd, Clock: h.clock})
			if err != nil {
				t.Fatal(err)
			}
			h.s = s
			h.plugins.OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
				return kind.Observation{Status: abi.StatusChanged, Outcome: &abi.Outcome{Result: "changed"}, Baseline: json.RawMessage(`{"n":2}`)}, nil
			})
			w := h.register("ticket")
			hd.beforeCarry = func(id store.ID) {
				var err error
				if via == "scheduler" {
					_, err = h.s.Cancel(context.Background(), id, "recipient paused")
				} else { // committed; the scheduler has not heard yet
					_, err = h.store.Settle(context.Background(), id, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0})
				}
				if err != nil {
					t.Error(err)
				}
			}
			h.tick(t0)
			if got := h.row(w.ID); got.State != store.Cancelled || string(got.Baseline) == `{"n":2}` {
				t.Fatalf("row %+v", got)
			}
			if m := h.deliver.messages(); len(m) != 0 {
				t.Fatalf("a cancelled watch's change was mailed: %+v", m)
			}
		})
	}
}
