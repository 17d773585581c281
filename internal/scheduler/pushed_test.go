package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// settledRecorder is the fake kinds, recording each settlement it hears of.
type settledRecorder struct {
	*hosttest.FakeKinds
	mu      sync.Mutex
	settled []store.Watch
}

func (r *settledRecorder) Settled(_ context.Context, w store.Watch) {
	r.mu.Lock()
	r.settled = append(r.settled, w)
	r.mu.Unlock()
}

// A pushed kind is probed once at registration, then only when its
// subject is poked (and at its deadline): never on a cadence.
func TestPushedWatchIsWokenByPokeOnly(t *testing.T) {
	h := newHarness(t)
	ready := false
	h.plugins.Add(kind.Info{Kind: "observe.thread", Pushed: true})
	h.plugins.OnAdmit(func(kindName string, req kind.AdmitRequest) (kind.Admission, error) {
		return kind.Admission{Subject: "work/1", Params: json.RawMessage(`{"work_id":"1","after":0}`)}, nil
	})
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		if ready {
			return kind.Observation{Status: abi.StatusSettled, Outcome: &abi.Outcome{Result: "new_items"}}, nil
		}
		return hosttest.Pending("nothing new")
	})
	rec := &settledRecorder{FakeKinds: h.plugins}
	h.s.cfg.Plugins = rec
	w := h.register("observe.thread")
	if w.Subject != "work/1" || string(w.Params) != `{"work_id":"1","after":0}` {
		t.Fatalf("row %+v: the admission's subject and params are stored", w)
	}
	h.tick(t0) // the probe at registration
	if n := h.plugins.Probes(); n != 1 {
		t.Fatalf("%d probes at registration", n)
	}
	// Nothing is due before the deadline: no cadence.
	if next, _ := h.s.NextWake(); !next.Equal(*w.ExpiresAt) {
		t.Fatalf("next wake %v, want the deadline %v", next, *w.ExpiresAt)
	}
	for _, at := range []time.Duration{30 * time.Second, time.Minute, 5 * time.Minute} {
		h.tick(t0.Add(at))
	}
	if n := h.plugins.Probes(); n != 1 {
		t.Fatalf("probed %d times without a poke", n)
	}
	// Another subject's poke wakes nothing.
	if n, err := h.s.Poke(context.Background(), "work/2"); err != nil || n != 0 {
		t.Fatalf("poke work/2: %d %v", n, err)
	}
	ready = true
	h.clock.Set(t0.Add(6 * time.Minute))
	if n, err := h.s.Poke(context.Background(), "work/1"); err != nil || n != 1 {
		t.Fatalf("poke work/1: %d %v", n, err)
	}
	if next, _ := h.s.NextWake(); !next.Equal(t0.Add(6 * time.Minute)) {
		t.Fatalf("after the poke next wake is %v", next)
	}
	h.tick(t0.Add(6 * time.Minute))
	if got := h.row(w.ID); got.State != store.Fired {
		t.Fatalf("row %+v", got)
	}
	if len(rec.settled) != 1 || rec.settled[0].ID != w.ID || rec.settled[0].State != store.Fired || len(h.deliver.messages()) != 1 {
		t.Fatalf("settled hook %+v, mail %+v", rec.settled, h.deliver.messages())
	}
	// A settled watch is no longer the subject's.
	if n, _ := h.s.Poke(context.Background(), "work/1"); n != 0 {
		t.Fatalf("poked a settled watch: %d", n)
	}
}

// A pushed kind takes no cadence from the registration.
func TestPushedWatchRefusesEvery(t *testing.T) {
	h := newHarness(t)
	h.plugins.Add(kind.Info{Kind: "observe.thread", Pushed: true})
	every := time.Minute
	_, err := h.s.Register(context.Background(), Registration{Kind: "observe.thread", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "agent-1"}, Every: &every})
	var se *api.Error
	if !errors.As(err, &se) || se.Field != "every" {
		t.Fatalf("err = %v", err)
	}
}

// A poke that lands while the watch is being probed is not lost: the
// watch is due again as soon as that probe ends.
func TestPokeDuringAProbeIsKept(t *testing.T) {
	h := newHarness(t)
	h.plugins.Add(kind.Info{Kind: "observe.thread", Pushed: true})
	h.plugins.OnAdmit(func(string, kind.AdmitRequest) (kind.Admission, error) {
		return kind.Admission{Subject: "work/1"}, nil
	})
	first := true
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		if first {
			first = false
			if n, err := h.s.Poke(context.Background(), "work/1"); err != nil || n != 1 {
				t.Errorf("poke during the probe: %d %v", n, err)
			}
		}
		return hosttest.Pending("nothing new")
	})
	h.register("observe.thread")
	h.tick(t0)
	if next, _ := h.s.NextWake(); !next.Equal(t0) {
		t.Fatalf("next wake %v: the poke during the probe was lost", next)
	}
}

// A probe tells the plugin call whose watch it observes.
func TestProbeCarriesTheRecipient(t *testing.T) {
	h := newHarness(t)
	var got string
	h.plugins.OnObserveCtx(func(ctx context.Context) { got = kind.RecipientFrom(ctx) })
	h.register("ci")
	h.tick(t0)
	if got != "agent-1" {
		t.Fatalf("recipient in the probe's context: %q", got)
	}
}

// A probe tells the plugin call the cadence of the watch it observes, so
// a fetch can be answered from a result younger than it.
func TestProbeCarriesTheCadence(t *testing.T) {
	h := newHarness(t)
	var got time.Duration
	h.plugins.OnObserveCtx(func(ctx context.Context) { got = kind.CadenceFrom(ctx) })
	w := h.register("ci")
	h.tick(t0)
	if got == 0 || got != time.Duration(w.Every) {
		t.Fatalf("cadence in the probe's context: %s, the watch's every %s", got, time.Duration(w.Every))
	}
}
