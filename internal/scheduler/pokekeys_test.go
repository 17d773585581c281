package scheduler

import (
	"context"
	"encoding/json"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// keyedHarness is a harness with a kind "keyed" (every hour) whose admit
// answers params' "k" as the partition key, and counts each watch's
// probes.
type keyedHarness struct {
	*harness
	mu     sync.Mutex
	probes map[string]int // by watch id
}

func newKeyedHarness(t *testing.T) *keyedHarness {
	h := &keyedHarness{harness: newHarness(t), probes: map[string]int{}}
	h.plugins.Add(kind.Info{Kind: "keyed", DefaultEvery: time.Hour})
	h.plugins.OnAdmit(func(_ string, req kind.AdmitRequest) (kind.Admission, error) {
		var p struct{ K string }
		_ = json.Unmarshal(req.Params, &p)
		return kind.Admission{PartitionKey: p.K}, nil
	})
	h.plugins.OnObserve(func(r abi.ObserveRequest) (kind.Observation, error) {
		h.mu.Lock()
		h.probes[r.WatchID]++
		h.mu.Unlock()
		return hosttest.Pending("not yet")
	})
	return h
}

func (h *keyedHarness) registerKey(key string) store.Watch {
	h.t.Helper()
	params, _ := json.Marshal(map[string]string{"k": key})
	w, err := h.s.Register(context.Background(), Registration{Kind: "keyed", Params: params, Recipient: store.Recipient{ID: "agent-1"}})
	if err != nil {
		h.t.Fatal(err)
	}
	if w.PartitionKey != key {
		h.t.Fatalf("the row keeps key %q, want %q", w.PartitionKey, key)
	}
	return w
}

func (h *keyedHarness) probesOf(id store.ID) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.probes[id.String()]
}

// An event's keys make exactly their pending watches due now, of their
// kind only; the next tick probes each of them once.
func TestPokeKeysMakesDueNow(t *testing.T) {
	h := newKeyedHarness(t)
	a, b, c := h.registerKey("commit/1"), h.registerKey("commit/1"), h.registerKey("commit/2")
	h.tick(t0) // the probes at registration
	at := t0.Add(time.Minute)
	h.clock.Set(at)
	if n, err := h.s.PokeKeys(context.Background(), "keyed", []string{"commit/1", "commit/9"}); err != nil || n != 2 {
		t.Fatalf("PokeKeys = %d %v, want 2", n, err)
	}
	if n, err := h.s.PokeKeys(context.Background(), "ci", []string{"commit/2"}); err != nil || n != 0 {
		t.Fatalf("another kind's key: %d %v", n, err)
	}
	if next, _ := h.s.NextWake(); !next.Equal(at) {
		t.Fatalf("next wake %v, want now %v", next, at)
	}
	h.tick(at)
	if h.probesOf(a.ID) != 2 || h.probesOf(b.ID) != 2 || h.probesOf(c.ID) != 1 {
		t.Fatalf("probes a %d b %d c %d, want 2 2 1", h.probesOf(a.ID), h.probesOf(b.ID), h.probesOf(c.ID))
	}
}

// A coalesced poke never queues a watch twice: however many events name
// a watch's key between two ticks, the tick probes it once; a watch no
// event named is not probed before its cadence.
func TestPokeKeysCoalesce(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		h := newKeyedHarness(t)
		keys := []string{"k0", "k1", "k2"}
		var ws []store.Watch
		for i := range rapid.IntRange(1, 6).Draw(rt, "watches") {
			ws = append(ws, h.registerKey(keys[i%len(keys)]))
		}
		h.tick(t0)
		at := t0
		for round := range rapid.IntRange(1, 4).Draw(rt, "rounds") {
			at = at.Add(time.Second)
			h.clock.Set(at)
			named := map[string]bool{}
			for range rapid.IntRange(0, 8).Draw(rt, "events") {
				k := rapid.SampledFrom(keys).Draw(rt, "key")
				named[k] = true
				if _, err := h.s.PokeKeys(context.Background(), "keyed", []string{k}); err != nil {
					rt.Fatal(err)
				}
			}
			before := map[store.ID]int{}
			for _, w := range ws {
				before[w.ID] = h.probesOf(w.ID)
			}
			h.tick(at)
			for _, w := range ws {
				want := 0
				if named[w.PartitionKey] {
					want = 1
				}
				if got := h.probesOf(w.ID) - before[w.ID]; got != want {
					rt.Fatalf("round %d: %s (key %s) probed %d times, want %d", round, w.ID, w.PartitionKey, got, want)
				}
			}
		}
	})
}

// A probe an event asked for carries, as its cadence, the time since the
// event: its fetch reads anew rather than from the hour-old read its
// cadence would allow. The next probe, unpoked, carries the cadence again.
func TestPokedProbeReadsAnew(t *testing.T) {
	h := newKeyedHarness(t)
	var cadences []time.Duration
	h.plugins.OnObserveCtx(func(ctx context.Context) { cadences = append(cadences, kind.CadenceFrom(ctx)) })
	h.registerKey("commit/1")
	h.tick(t0)
	h.clock.Set(t0.Add(time.Minute))
	if _, err := h.s.PokeKeys(context.Background(), "keyed", []string{"commit/1"}); err != nil {
		t.Fatal(err)
	}
	h.tick(t0.Add(time.Minute + 5*time.Millisecond))
	h.tick(t0.Add(2 * time.Hour))
	want := []time.Duration{time.Hour, 5 * time.Millisecond, time.Hour}
	if len(cadences) != 3 || cadences[0] != want[0] || cadences[1] != want[1] || cadences[2] != want[2] {
		t.Fatalf("cadences %v, want %v", cadences, want)
	}
}

// A hooked kind's watch registered with every left to the default gets
// the hook's fallback cadence; one that names its every keeps it, and
// another kind keeps its default.
func TestFallbackCadence(t *testing.T) {
	h := newKeyedHarness(t)
	h.s.SetFallbacks(map[string]time.Duration{"keyed": 5 * time.Minute})
	if w := h.registerKey("commit/1"); time.Duration(w.Every) != 5*time.Minute {
		t.Fatalf("defaulted every %v, want the fallback 5m", time.Duration(w.Every))
	}
	every := 10 * time.Second
	params, _ := json.Marshal(map[string]string{"k": "commit/2"})
	w, err := h.s.Register(context.Background(), Registration{Kind: "keyed", Params: params, Recipient: store.Recipient{ID: "agent-1"}, Every: &every})
	if err != nil || time.Duration(w.Every) != every {
		t.Fatalf("named every: %v %v", time.Duration(w.Every), err)
	}
	if w := h.register("ci"); time.Duration(w.Every) != 30*time.Second {
		t.Fatalf("an unhooked kind's every %v, want its default 30s", time.Duration(w.Every))
	}
	h.s.SetFallbacks(nil)
	if w := h.registerKey("commit/3"); time.Duration(w.Every) != time.Hour {
		t.Fatalf("after the hook is gone: %v, want the kind's default 1h", time.Duration(w.Every))
	}
}
