package crashtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api/webhooks"
)

// budget is what one run may spend, from the environment.
type budget struct {
	kills int
	// wall bounds the whole run: once it has passed, no further kill is
	// made and the final check runs.
	wall      time.Duration
	seed      uint64
	every     string        // the timers' every; "" is the plugin's default
	fireBound time.Duration // a timer due in a downtime fires within this of readiness
}

// readBudget reads VIGIL_CRASH_*; ok is false when the harness is not
// asked for (VIGIL_CRASH_KILLS unset).
func readBudget(t *testing.T) (budget, bool) {
	t.Helper()
	b := budget{wall: 30 * time.Minute, every: "", fireBound: time.Second}
	v, set := os.LookupEnv("VIGIL_CRASH_KILLS")
	if !set {
		return b, false
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("VIGIL_CRASH_KILLS=%q: want a count of kills, at least 1", v)
	}
	b.kills = n
	if v := os.Getenv("VIGIL_CRASH_WALL"); v != "" {
		if b.wall, err = time.ParseDuration(v); err != nil || b.wall <= 0 {
			t.Fatalf("VIGIL_CRASH_WALL=%q: want a positive duration", v)
		}
	}
	b.seed = uint64(time.Now().UnixNano())
	if v := os.Getenv("VIGIL_CRASH_SEED"); v != "" {
		if b.seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			t.Fatalf("VIGIL_CRASH_SEED=%q: want an unsigned integer", v)
		}
	}
	if v, ok := os.LookupEnv("VIGIL_CRASH_EVERY"); ok {
		b.every = v
	}
	if v := os.Getenv("VIGIL_CRASH_FIRE_BOUND"); v != "" {
		if b.fireBound, err = time.ParseDuration(v); err != nil || b.fireBound <= 0 {
			t.Fatalf("VIGIL_CRASH_FIRE_BOUND=%q: want a positive duration", v)
		}
	}
	return b, true
}

// The observe configuration: one scope, one source the local principal
// reports, routed into Work; no budget, so the load is never refused.
const observeConfig = `scopes:
  crash:
    observe:
      - sources:
          - name: chat
            reporters: [local]
    routes:
      - source: chat
observe:
  rate: -1
  run_per_minute: -1
`

// TestCrash runs the real vigil serve under a mixed load, kills it with
// SIGKILL at random moments, restarts it on the same data directory, and
// checks the ledger of what it acknowledged after every restart and at the
// end. See doc.go.
func TestCrash(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and kills the real host for minutes")
	}
	b, ok := readBudget(t)
	if !ok {
		t.Skip("set VIGIL_CRASH_KILLS to run the crash harness (.ci/crash, just crash)")
	}
	t.Logf("seed %d (VIGIL_CRASH_SEED=%d replays the choices), kills %d, wall %v, every %q",
		b.seed, b.seed, b.kills, b.wall, b.every)
	began := time.Now()

	dir := t.TempDir()
	logDir := filepath.Join(dir, "logs")
	if err := os.MkdirAll(logDir, 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "vigil.yaml")
	if err := os.WriteFile(cfg, []byte(observeConfig), 0o600); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(b.seed, 1))
	secret, err := webhooks.NewSecret(rand.NewChaCha8([32]byte{byte(b.seed), byte(b.seed >> 8), byte(b.seed >> 16), byte(b.seed >> 24)}))
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, b, hostSpec{
		bin:    buildVigil(t, dir),
		addr:   freeAddr(t),
		data:   filepath.Join(dir, "data"),
		config: cfg,
		logDir: logDir,
	}, startReceiver(t, secret, b.seed), secret)
	built := time.Now()

	readers, stopReaders := context.WithCancel(context.Background())
	var rwg sync.WaitGroup
	t.Cleanup(func() { stopReaders(); rwg.Wait() })

	var p *proc
	var readyAt time.Time
	killAt := time.Time{}
	for n := 0; ; n++ {
		startAt := time.Now()
		p, readyAt = h.spec.start(t, n)
		h.readiness = append(h.readiness, readyAt.Sub(startAt))
		h.kills = n
		if n == 0 {
			h.setUp(t)
			for _, r := range h.recips {
				rwg.Add(1)
				go func() { defer rwg.Done(); h.read(readers, r.id) }()
			}
		} else {
			h.timeDowntimeFirings(t, n, killAt, readyAt)
			h.check(t, n, readyAt, n%10 == 0)
			h.retryUnanswered(t, n)
			if t.Failed() || h.failed() {
				break
			}
		}
		if n == b.kills || time.Since(began) > b.wall {
			break
		}
		// Load for a random moment, then kill.
		ctx, stop := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		for w := range 3 {
			wr := rand.New(rand.NewPCG(b.seed, uint64(n)<<8|uint64(w)+2))
			wg.Add(1)
			go func() { defer wg.Done(); h.load(ctx, wr, n) }()
		}
		time.Sleep(time.Duration(300+rng.IntN(2200)) * time.Millisecond)
		killAt = time.Now()
		p.kill()
		stop()
		wg.Wait()
		time.Sleep(time.Duration(100+rng.IntN(1400)) * time.Millisecond)
	}
	if !t.Failed() && !h.failed() {
		h.finish(t)
	}
	if h.kills < b.kills && !h.failed() {
		// The wall bound stopped the run first: a slow or crowded machine.
		// Half the budget still says something; less fails the run.
		t.Logf("the wall bound %v stopped the run after %d of %d kills", b.wall, h.kills, b.kills)
		if h.kills < b.kills/2 {
			t.Errorf("only %d of %d kills within the wall bound %v", h.kills, b.kills, b.wall)
		}
	}
	h.report(t, time.Since(built), time.Since(began))
	for _, pr := range h.problemList() {
		t.Error(pr)
	}
	if h.failed() {
		t.Errorf("the last host's log: %s", tail(p.log))
	}
}

// percentiles formats p50, p90, p99 and max of ds.
func percentiles(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none"
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	at := func(q float64) time.Duration { return s[min(len(s)-1, int(q*float64(len(s))))] }
	r := func(d time.Duration) string { return d.Round(time.Millisecond).String() }
	return fmt.Sprintf("n=%d p50=%s p90=%s p99=%s max=%s", len(s), r(at(0.5)), r(at(0.9)), r(at(0.99)), r(s[len(s)-1]))
}

// report logs the run's figures, the ones docs/RELIABILITY.md quotes.
func (h *harness) report(t *testing.T, run, wall time.Duration) {
	h.mu.Lock()
	defer h.mu.Unlock()
	_, _, served := h.recv.receipts()
	var b strings.Builder
	fmt.Fprintf(&b, "crash harness figures (seed %d):\n", h.b.seed)
	fmt.Fprintf(&b, "  kills (restarts checked):  %d\n", h.kills)
	fmt.Fprintf(&b, "  wall:                      %s (of it, the build: %s)\n", wall.Round(time.Second), (wall - run).Round(time.Second))
	fmt.Fprintf(&b, "  acknowledged:              %d registrations, %d cancels, %d recipient PUTs, %d observe records, %d repeats answered duplicate\n",
		h.acks.regs, h.acks.cancels, h.acks.puts, h.acks.records, h.acks.repeats)
	fmt.Fprintf(&b, "  unanswered (killed):       %d requests\n", h.acks.unanswered)
	fmt.Fprintf(&b, "  sent again under their key: %d registrations, %d observe records; %d answered their first answer (it had been written)\n",
		h.retried.regs, h.retried.records, h.retried.replayed)
	fmt.Fprintf(&b, "  watch states at the end:   %v\n", h.stateCounts)
	per := make([]string, 0, len(h.recips))
	for _, r := range h.recips {
		per = append(per, fmt.Sprintf("%s %d", r.id, len(h.mail[r.id].ids)))
	}
	fmt.Fprintf(&b, "  messages per mailbox:      %s\n", strings.Join(per, ", "))
	fmt.Fprintf(&b, "  mailbox messages:          %d, webhook requests received: %d, push states: %v\n", h.messages, served, h.pushCounts)
	fmt.Fprintf(&b, "  lost: %d, duplicated: %d, other problems: %d\n", h.lost, h.duplicated, len(h.problems)-h.lost-h.duplicated)
	fmt.Fprintf(&b, "  start to readiness:        %s\n", percentiles(h.readiness))
	over := 0
	for _, d := range h.firing {
		if d > time.Second {
			over++
		}
	}
	fmt.Fprintf(&b, "  readiness to firing (timers due in a downtime): %s; over 1s: %d\n", percentiles(h.firing), over)
	t.Log(b.String())
}
