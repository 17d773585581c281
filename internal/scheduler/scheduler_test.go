package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/clock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/lifecycle"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// The idle cost is asserted on the schedule: nothing pending means no
// wake-up at all; otherwise the next wake-up is the earliest due time.
func TestIdleSchedule(t *testing.T) {
	h := newHarness(t)
	if n, err := h.s.Prime(context.Background()); err != nil || n != 0 {
		t.Fatalf("prime: %d %v", n, err)
	}
	if at, ok := h.s.NextWake(); ok {
		t.Fatalf("an empty scheduler wakes at %v", at)
	}
	a := h.register("ci")
	if at, ok := h.s.NextWake(); !ok || !at.Equal(t0) {
		t.Fatalf("a new watch is probed at once: next wake %v %v", at, ok)
	}
	h.tick(t0)
	if at, _ := h.s.NextWake(); !at.Equal(t0.Add(30 * time.Second)) {
		t.Fatalf("after a pending answer: %v, want now + every", at)
	}
	h.clock.Set(t0.Add(10 * time.Second))
	b := h.register("ci")
	if at, _ := h.s.NextWake(); !at.Equal(t0.Add(10 * time.Second)) {
		t.Fatalf("the earliest of two: %v", at)
	}
	for _, w := range []store.Watch{a, b} {
		if _, err := h.s.Cancel(context.Background(), w.ID, "test"); err != nil {
			t.Fatal(err)
		}
	}
	if at, ok := h.s.NextWake(); ok {
		t.Fatalf("nothing pending, yet a wake-up at %v", at)
	}
}

// A timer an hour away whose admit names no first check is probed twice:
// once at registration, once at its instant, because the scheduler
// honours observe's next_check.
func TestNextCheckHintIsHonoured(t *testing.T) {
	h := newHarness(t)
	at := t0.Add(time.Hour)
	h.plugins.OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
		if req.Now.Before(at) {
			return kind.Observation{Status: abi.StatusPending, NextCheck: at}, nil
		}
		return hosttest.Settled("fired")
	})
	h.plugins.OnAdmit(func(string, kind.AdmitRequest) (kind.Admission, error) {
		return kind.Admission{Deadline: at.Add(time.Minute)}, nil
	})
	w := h.register("ci")
	if w.ExpiresAt == nil || !w.ExpiresAt.Equal(at.Add(time.Minute)) {
		t.Fatalf("the plugin's natural deadline was not used: %v", w.ExpiresAt)
	}
	h.tick(t0)
	next, _ := h.s.NextWake()
	if !next.Equal(at) {
		t.Fatalf("next wake %v, want the hint %v", next, at)
	}
	h.tick(next)
	if n := h.plugins.Probes(); n != 2 {
		t.Fatalf("probed %d times", n)
	}
	if m := h.deliver.messages(); len(m) != 1 || m[0].Type != store.MessageFired {
		t.Fatalf("messages %+v", m)
	}
}

func TestNextCheckIsClamped(t *testing.T) {
	h := newHarness(t)
	var hint time.Time
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		return kind.Observation{Status: abi.StatusPending, NextCheck: hint}, nil
	})
	w := h.register("ci") // deadline: now + 15 min

	hint = t0 // in the past: no busy loop, at least the minimum interval
	h.tick(t0)
	if next, _ := h.s.NextWake(); !next.Equal(t0.Add(time.Second)) {
		t.Fatalf("early hint: next %v", next)
	}
	hint = t0.Add(24 * time.Hour) // beyond the deadline: wake for the expiry
	h.tick(t0.Add(time.Second))
	if next, _ := h.s.NextWake(); !next.Equal(*w.ExpiresAt) {
		t.Fatalf("late hint: next %v, deadline %v", next, *w.ExpiresAt)
	}
}

// A pending answer that repeats the last one writes nothing: the first
// probe records that the watch was probed (and its note), the next 24
// repeat it.
func TestPendingRewritesNothing(t *testing.T) {
	h := newHarness(t)
	w := h.register("ci")
	h.tick(t0)
	writes := h.counted.count()
	if got := h.row(w.ID); got.Attempts != 1 || got.LastNote != "not yet" {
		t.Fatalf("the first probe was not recorded: %+v", got)
	}
	now, _ := h.s.NextWake()
	for range 24 { // 30 s apart: all before the 15 min deadline
		h.tick(now)
		now, _ = h.s.NextWake()
	}
	if n := h.plugins.Probes(); n != 25 {
		t.Fatalf("only %d probes", n)
	}
	if got := h.counted.count(); got != writes {
		t.Fatalf("24 pending answers that repeat the first wrote to the store %d times", got-writes)
	}
}

// The outcome is settled and mailed in one transaction, through the real
// delivery over the real store: once the probe has settled the watch, the
// row is final with receipt delivered, the recipient's mailbox holds the
// one message naming the watch, and its webhook's push record is beside
// it; a restart finds all three. The store's guard: SettleAndMail appends
// the message (and writes the push) in the transaction that settles the
// row (store/settle.go).
func TestOutcomeIsSettledAndMailedTogether(t *testing.T) {
	h := newStoreHarness(t)
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Settled("success") })
	w := h.register("ci")
	rec, err := h.store.GetRecipient(context.Background(), "agent-1")
	if err != nil {
		t.Fatal(err)
	}
	rec.Webhook = &store.Webhook{URL: "https://hooks.example.org/vigil", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}
	if _, _, err := h.store.PutRecipient(context.Background(), rec); err != nil {
		t.Fatal(err)
	}
	if m := h.mailbox("agent-1"); len(m) != 0 {
		t.Fatalf("mail before the probe: %+v", m)
	}
	h.tick(t0)
	check := func(when string) {
		t.Helper()
		if got := h.row(w.ID); got.State != store.Fired || got.Receipt != store.ReceiptDelivered || got.SettledAt == nil || got.Attempts != 1 {
			t.Fatalf("%s: row %+v", when, got)
		}
		m := h.mailbox("agent-1")
		if len(m) != 1 || m[0].Seq != 1 || m[0].WatchID != w.ID || m[0].Type != store.MessageFired || m[0].Outcome.Result != "success" {
			t.Fatalf("%s: mailbox %+v", when, m)
		}
		var pushes []store.Push
		if err := h.store.LivePushes(context.Background(), func(p store.Push) error { pushes = append(pushes, p); return nil }); err != nil {
			t.Fatal(err)
		}
		if len(pushes) != 1 || pushes[0].Seq != 1 || pushes[0].MessageID != m[0].ID || pushes[0].State != store.PushPending {
			t.Fatalf("%s: pushes %+v", when, pushes)
		}
	}
	check("after the probe")
	h.open() // a restart
	check("after a restart")
}

func TestRestartDoesNotResendASettledWatch(t *testing.T) {
	h := newHarness(t)
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Settled("success") })
	h.register("ci")
	h.tick(t0)
	_ = h.store.Close()
	h.open()
	if n, _ := h.s.Prime(context.Background()); n != 0 {
		t.Fatalf("primed %d settled watches", n)
	}
	h.tick(t0.Add(time.Hour))
	if len(h.deliver.messages()) != 1 {
		t.Fatalf("messages after restart: %+v", h.deliver.messages())
	}
}

// A cancel that wins over a probe in flight keeps the row cancelled and
// nothing is mailed.
func TestCancelWinsOverAProbeInFlight(t *testing.T) {
	for _, answer := range []string{abi.StatusSettled, abi.StatusPending} {
		t.Run(answer, func(t *testing.T) { testCancelWins(t, answer) })
	}
}

func testCancelWins(t *testing.T, answer string) {
	h := newHarness(t)
	entered, release := make(chan struct{}), make(chan struct{})
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		close(entered)
		<-release
		if answer == abi.StatusPending {
			return hosttest.Pending("still running")
		}
		return hosttest.Settled("success")
	})
	w := h.register("ci")
	done := make(chan struct{})
	go func() { h.tick(t0); close(done) }()
	<-entered
	got, err := h.s.Cancel(context.Background(), w.ID, "test")
	if err != nil || got.State != store.Cancelled {
		t.Fatalf("cancel: %+v %v", got, err)
	}
	close(release)
	<-done
	if got := h.row(w.ID); got.State != store.Cancelled || got.Receipt != store.ReceiptNone {
		t.Fatalf("row: %+v", got)
	}
	if m := h.deliver.messages(); len(m) != 0 {
		t.Fatalf("a stale message went out: %+v", m)
	}
	if _, ok := h.s.NextWake(); ok {
		t.Fatal("a cancelled watch was re-armed")
	}
}

// A probe that settles first makes a later cancel a conflict.
func TestCancelAfterSettlementIsAConflict(t *testing.T) {
	h := newHarness(t)
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Settled("success") })
	w := h.register("ci")
	h.tick(t0)
	_, err := h.s.Cancel(context.Background(), w.ID, "test")
	var se *api.Error
	if !errors.As(err, &se) || se.Code != api.CodeAlreadySettled {
		t.Fatalf("cancel: %v", err)
	}
	if got := h.row(w.ID); got.State != store.Fired {
		t.Fatalf("row: %+v", got)
	}
}

func TestExpiryIsDelivered(t *testing.T) {
	h := newHarness(t)
	w := h.register("ci")
	now := t0
	for range 200 {
		h.tick(now)
		next, ok := h.s.NextWake()
		if !ok {
			break
		}
		now = next
	}
	if !now.Equal(*w.ExpiresAt) {
		t.Fatalf("last probe at %v, deadline %v", now, *w.ExpiresAt)
	}
	got := h.row(w.ID)
	if got.State != store.Expired || got.Receipt != store.ReceiptDelivered || got.Outcome.Result != "expired" {
		t.Fatalf("row: %+v", got)
	}
	if m := h.deliver.messages(); len(m) != 1 || m[0].Type != store.MessageExpired {
		t.Fatalf("messages: %+v", m)
	}
}

func TestRemovedKindSettlesUnwatchable(t *testing.T) {
	h := newHarness(t)
	w := h.register("ci")
	h.plugins.Remove("ci")
	h.tick(t0)
	if got := h.row(w.ID); got.State != store.Unwatchable || got.Outcome.Result != "unwatchable" {
		t.Fatalf("row: %+v", got)
	}
	if m := h.deliver.messages(); len(m) != 1 || m[0].Type != store.MessageUnwatchable {
		t.Fatalf("messages: %+v", m)
	}
}

// A watch whose recipient is not running when it settles is
// undeliverable, receipt rejected, and nothing reaches the mailbox,
// through the real delivery over the real store. The store's guard:
// SettleAndMail reads the recipient in the settling transaction and, for
// one not running, settles undeliverable without mailing
// (store/settle.go).
func TestRejectedDeliverySettlesUndeliverable(t *testing.T) {
	h := newStoreHarness(t)
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Settled("success") })
	w := h.register("ci")
	h.setStatus("agent-1", store.StatusPaused)
	h.tick(t0)
	if got := h.row(w.ID); got.State != store.Undeliverable || got.Receipt != store.ReceiptRejected || got.SettledAt == nil {
		t.Fatalf("row: %+v", got)
	}
	if m := h.mailbox("agent-1"); len(m) != 0 {
		t.Fatalf("a recipient not running was mailed: %+v", m)
	}
	if _, ok := h.s.NextWake(); ok {
		t.Fatal("an undeliverable watch was re-armed")
	}
}

// A plugin's own error (a call for the wrong kind) leaves the watch
// pending and loud, never settled on a guess.
func TestPluginErrorKeepsTheWatchPending(t *testing.T) {
	h := newHarness(t)
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		return kind.Observation{}, &kind.CallError{Kind: "ci", Export: "observe", Reason: kind.FaultRaised, Err: errors.New("wrong kind")}
	})
	w := h.register("ci")
	h.tick(t0)
	if got := h.row(w.ID); got.State != store.Pending {
		t.Fatalf("row: %+v", got)
	}
	// Re-armed, backed off: twice its 30 s cadence.
	if next, ok := h.s.NextWake(); !ok || !next.Equal(t0.Add(time.Minute)) {
		t.Fatalf("not re-armed: %v %v", next, ok)
	}
}

// A standing watch records its first baseline silently, mails each
// change with its new baseline in one transaction, and never mails one
// change twice: through the real delivery over the real store, a change
// met while the recipient is paused moves the baseline and mails nothing,
// so it is not mailed once the recipient runs again, and the watch stays
// pending. The store's guard: CarryAndMail writes the baseline in the
// transaction that mails the change, and writes it for a recipient not
// running too (store/settle.go).
func TestStandingWatch(t *testing.T) {
	h := newStoreHarness(t)
	type snap struct{ Title string }
	title := "a"
	h.plugins.OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
		var prev snap
		_ = json.Unmarshal(req.Baseline, &prev)
		cur, _ := json.Marshal(snap{title})
		switch {
		case len(req.Baseline) == 0:
			return kind.Observation{Status: abi.StatusPending, Baseline: cur}, nil
		case prev.Title == title:
			return hosttest.Pending("unchanged")
		default:
			return kind.Observation{Status: abi.StatusChanged, Outcome: &abi.Outcome{Result: "changed", Summary: title}, Baseline: cur}, nil
		}
	})
	w := h.register("ticket")
	if w.ExpiresAt != nil || !w.Standing {
		t.Fatalf("standing row: %+v", w)
	}
	now := t0
	step := func() {
		h.tick(now)
		now, _ = h.s.NextWake()
	}
	step() // first check: the baseline, silently
	if m := h.mailbox("agent-1"); len(m) != 0 || string(h.row(w.ID).Baseline) != `{"Title":"a"}` {
		t.Fatalf("first check: %+v %s", m, h.row(w.ID).Baseline)
	}
	step() // unchanged
	if m := h.mailbox("agent-1"); len(m) != 0 {
		t.Fatalf("an unchanged snapshot was mailed: %+v", m)
	}
	title = "b"
	step() // changed: the new baseline and the change's mail, together
	if m := h.mailbox("agent-1"); len(m) != 1 || m[0].Type != store.MessageChanged || m[0].WatchID != w.ID || m[0].Outcome.Summary != "b" {
		t.Fatalf("change: %+v", m)
	}
	if got := h.row(w.ID); string(got.Baseline) != `{"Title":"b"}` || got.State != store.Pending {
		t.Fatalf("row with the change mailed: %+v", got)
	}
	h.setStatus("agent-1", store.StatusPaused)
	title = "c"
	step() // changed while paused: the baseline moves, nothing is mailed, the watch stays
	if got := h.row(w.ID); string(got.Baseline) != `{"Title":"c"}` || got.State != store.Pending {
		t.Fatalf("a change met while paused: %+v", got)
	}
	h.setStatus("agent-1", store.StatusRunning)
	step() // and it is not mailed once the recipient runs again
	step()
	if m := h.mailbox("agent-1"); len(m) != 1 {
		t.Fatalf("mailbox after the pause: %+v", m)
	}
}

// Any kind may carry a baseline on a pending answer (the http kind keeps
// its first fingerprint so); it is written once, when it moves, and never
// mailed.
func TestPendingBaselineIsRecordedOnceSilently(t *testing.T) {
	h := newHarness(t)
	h.plugins.OnObserve(func(req abi.ObserveRequest) (kind.Observation, error) {
		if len(req.Baseline) == 0 {
			return kind.Observation{Status: abi.StatusPending, Baseline: json.RawMessage(`{"fp":"a"}`)}, nil
		}
		return kind.Observation{Status: abi.StatusPending, Baseline: req.Baseline}, nil
	})
	w := h.register("ci")
	writes := h.counted.count()
	now := t0
	for range 5 {
		h.tick(now)
		now, _ = h.s.NextWake()
	}
	if got := h.counted.count() - writes; got != 1 {
		t.Fatalf("%d writes for one baseline, want 1", got)
	}
	if row := h.row(w.ID); string(row.Baseline) != `{"fp":"a"}` || row.State != store.Pending || len(h.deliver.messages()) != 0 {
		t.Fatalf("row %+v, mail %+v", row, h.deliver.messages())
	}
}

func TestRegistrationRules(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	dur := func(d time.Duration) *time.Duration { return &d }
	at := func(d time.Duration) *time.Time { x := t0.Add(d); return &x }
	tests := []struct {
		name  string
		reg   Registration
		code  string
		field string
	}{
		{"every below the minimum", Registration{Kind: "ci", Every: dur(500 * time.Millisecond)}, api.CodeInvalidField, "every"},
		{"deadline too far", Registration{Kind: "ci", ExpiresAt: at(8 * 24 * time.Hour)}, api.CodeDeadlineTooFar, "expires_at"},
		{"deadline passed", Registration{Kind: "ci", ExpiresAt: at(-time.Second)}, api.CodeInvalidField, "expires_at"},
		{"standing with a deadline", Registration{Kind: "ticket", ExpiresAt: at(time.Hour)}, api.CodeInvalidField, "expires_at"},
		{"bad recipient", Registration{Kind: "ci", Recipient: store.Recipient{ID: "a b"}}, api.CodeInvalidRecipient, "recipient.id"},
		{"empty recipient", Registration{Kind: "ci", Recipient: store.Recipient{}}, api.CodeInvalidRecipient, "recipient.id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.reg.Recipient.ID == "" && tt.code != api.CodeInvalidRecipient {
				tt.reg.Recipient.ID = "agent-1"
			}
			_, err := h.s.Register(ctx, tt.reg)
			var se *api.Error
			if !errors.As(err, &se) || se.Code != tt.code || se.Field != tt.field {
				t.Fatalf("err = %v", err)
			}
		})
	}
	// The plugin runtime's refusal passes through.
	var ref *api.Error
	if _, err := h.s.Register(ctx, Registration{Kind: "nope", Recipient: store.Recipient{ID: "a"}}); !errors.As(err, &ref) {
		t.Fatalf("unknown kind: %v", err)
	}
	// A plugin's natural deadline beyond the maximum is refused too.
	h.plugins.OnAdmit(func(string, kind.AdmitRequest) (kind.Admission, error) {
		return kind.Admission{Deadline: t0.Add(30 * 24 * time.Hour)}, nil
	})
	var se *api.Error
	if _, err := h.s.Register(ctx, Registration{Kind: "ci", Recipient: store.Recipient{ID: "a"}}); !errors.As(err, &se) || se.Code != api.CodeDeadlineTooFar {
		t.Fatalf("far natural deadline: %v", err)
	}
	h.plugins.OnAdmit(nil)

	// Defaults: the open-ended deadline, the plugin's every, else the host's.
	w := h.register("ci")
	if !w.ExpiresAt.Equal(t0.Add(15*time.Minute)) || time.Duration(w.Every) != 30*time.Second {
		t.Fatalf("defaults: %+v", w)
	}
	if w := h.register("no-every"); time.Duration(w.Every) != 30*time.Second {
		t.Fatalf("host default every: %v", w.Every)
	}
	w, err := h.s.Register(ctx, Registration{Kind: "ci", Recipient: store.Recipient{ID: "a"}, Every: dur(5 * time.Second), ExpiresAt: at(time.Hour)})
	if err != nil || time.Duration(w.Every) != 5*time.Second || !w.ExpiresAt.Equal(t0.Add(time.Hour)) {
		t.Fatalf("explicit: %+v %v", w, err)
	}
	// Registration is durable when it returns.
	if got := h.row(w.ID); got.State != store.Pending {
		t.Fatalf("stored: %+v", got)
	}
}

// Prime spreads recovered watches that have no next check across their
// own interval.
func TestPrimeJitter(t *testing.T) {
	h := newHarness(t)
	const n = 1000
	for range n {
		h.register("ci")
	}
	h.tick(t0) // each probed once: pending, no next check
	h.open()   // restart: the same rows, a new scheduler
	if got, err := h.s.Prime(context.Background()); err != nil || got != n {
		t.Fatalf("primed %d %v", got, err)
	}
	var buckets [10]int
	h.s.mu.Lock()
	for _, e := range h.s.h {
		off := time.Duration(e.due - t0.UnixNano())
		if off < 0 || off >= 30*time.Second {
			t.Fatalf("due %v outside the interval", off)
		}
		buckets[off/(3*time.Second)]++
	}
	h.s.mu.Unlock()
	for i, c := range buckets {
		if c < n/20 { // each tenth of the interval holds some: not all due at once
			t.Fatalf("bucket %d holds %d of %d: %v", i, c, n, buckets)
		}
	}
}

func TestPrimeExpiresOverdueWatches(t *testing.T) {
	h := newHarness(t)
	w := h.register("ci")
	h.open()
	h.clock.Set(t0.Add(time.Hour)) // down past the deadline
	if _, err := h.s.Prime(context.Background()); err != nil {
		t.Fatal(err)
	}
	if next, _ := h.s.NextWake(); next.After(t0.Add(time.Hour)) {
		t.Fatalf("an overdue watch waits until %v", next)
	}
	h.tick(t0.Add(time.Hour))
	if got := h.row(w.ID); got.State != store.Expired {
		t.Fatalf("row: %+v", got)
	}
}

func TestPrimePrunesOldSettledRows(t *testing.T) {
	h := newHarness(t)
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Settled("x") })
	w := h.register("ci")
	h.tick(t0)
	h.open()
	h.clock.Set(t0.Add(8 * 24 * time.Hour))
	if _, err := h.s.Prime(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.Get(context.Background(), w.ID); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("kept past retention: %v", err)
	}
}

// Probes run on the fixed pool: never more at once than Workers. (Each
// watch is of its own kind and recipient, so the fairness caps do not
// bind before the pool does.)
func TestWorkersBoundConcurrentProbes(t *testing.T) {
	h := newHarness(t)
	h.s.cfg.Workers = 3
	var mu sync.Mutex
	inFlight, peak := 0, 0
	gate := make(chan struct{})
	entered := make(chan struct{}, 6)
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		mu.Lock()
		inFlight++
		peak = max(peak, inFlight)
		mu.Unlock()
		entered <- struct{}{}
		<-gate
		mu.Lock()
		inFlight--
		mu.Unlock()
		return hosttest.Pending("")
	})
	for i := range 6 {
		kindName := fmt.Sprintf("k%d", i)
		h.plugins.Add(kind.Info{Kind: kindName})
		h.registerFor(kindName, fmt.Sprintf("agent-%d", i))
	}
	done := make(chan int)
	go func() { done <- h.tick(t0) }()
	<-entered
	<-entered
	<-entered // three probes run at once
	// A fourth would need a fourth worker. It cannot come with the pool
	// bounded, so this wait only ever times out when the code is right;
	// unbounded, the fourth arrives within microseconds.
	select {
	case <-entered:
		t.Fatal("a fourth probe ran alongside three blocked ones")
	case <-time.After(100 * time.Millisecond):
	}
	close(gate)
	if n := <-done; n != 6 {
		t.Fatalf("probed %d", n)
	}
	if peak != 3 {
		t.Fatalf("peak concurrency %d, workers 3", peak)
	}
}

// The background loop: register, be woken, stop.
func TestStartRunsTheLoop(t *testing.T) {
	h := newHarness(t)
	h.s.cfg.Clock = clock.Wall{}
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Settled("done") })
	delivered := make(chan store.Message, 1)
	h.deliver.before = func(m store.Message) { delivered <- m }
	if _, err := h.s.Prime(context.Background()); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	stopped := lifecycle.Go(ctx, h.s.Run)
	w, err := h.s.Register(context.Background(), Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	if m := <-delivered; m.WatchID != w.ID {
		t.Fatalf("delivered %+v", m)
	}
	cancel()
	_ = stopped()
}

func TestRegistrationEnsuresARunningRecipient(t *testing.T) {
	h := newHarness(t)
	h.s.cfg.Recipients = h.store
	ctx := context.Background()
	h.register("ci") // agent-1 did not exist: created running, mailbox only
	rec, err := h.store.GetRecipient(ctx, "agent-1")
	if err != nil || rec.Status != store.StatusRunning || rec.Webhook != nil {
		t.Fatalf("recipient: %+v %v", rec, err)
	}
	rec.Status = store.StatusPaused
	if _, _, err := h.store.PutRecipient(ctx, rec); err != nil {
		t.Fatal(err)
	}
	_, err = h.s.Register(ctx, Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "agent-1"}})
	var se *api.Error
	if !errors.As(err, &se) || se.Code != api.CodeRecipientNotRunning {
		t.Fatalf("paused recipient: %v", err)
	}
}

func TestCancelKeepsDiagnostics(t *testing.T) {
	h := newHarness(t)
	w := h.register("ci")
	h.tick(t0)
	h.tick(t0.Add(30 * time.Second))
	got, err := h.s.Cancel(context.Background(), w.ID, "recipient paused")
	if err != nil || got.Attempts != 2 || got.LastNote != "recipient paused" || got.State != store.Cancelled {
		t.Fatalf("%+v %v", got, err)
	}
}

// A tick whose context ends stops probing and puts the rest back.
func TestTickStopsProbingWhenCancelled(t *testing.T) {
	h := newHarness(t)
	h.s.cfg.Workers = 1
	for range 5 {
		h.register("ci")
	}
	ctx, cancel := context.WithCancel(context.Background())
	probes := 0
	h.plugins.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		probes++
		cancel() // the host is shutting down after the first probe
		return hosttest.Pending("")
	})
	h.clock.Set(t0)
	h.s.Tick(ctx, t0)
	if probes != 1 {
		t.Fatalf("%d probes after the cancel", probes)
	}
	if n := h.s.Pending(); n != 5 {
		t.Fatalf("%d watches still scheduled", n)
	}
	if next, _ := h.s.NextWake(); !next.Equal(t0) {
		t.Fatalf("the unprobed watches wait until %v", next)
	}
}

// Start's channel closes only once every worker has exited: a probe in
// flight when ctx ends has returned, and what was due and not taken is
// back in the heap, unprobed.
func TestStartWaitsForItsWorkers(t *testing.T) {
	h := newHarness(t)
	h.s.cfg.Workers = 2 // one probe at a time for kind ci: the cap is 1
	entered := make(chan struct{}, 10)
	var returned atomic.Bool
	h.plugins.OnObserveCtx(func(ctx context.Context) {
		entered <- struct{}{}
		<-ctx.Done()
		time.Sleep(10 * time.Millisecond) // a probe slow to notice
		returned.Store(true)
	})
	for range 3 {
		h.register("ci")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := lifecycle.Go(ctx, h.s.Run)
	<-entered
	cancel()
	_ = done()
	if !returned.Load() {
		t.Fatal("Run returned while a probe was in flight")
	}
	if n := h.plugins.Probes(); n != 1 {
		t.Fatalf("%d probes", n)
	}
	if next, ok := h.s.NextWake(); !ok || !next.Equal(t0) || h.s.Pending() != 3 {
		t.Fatalf("after the stop: next wake %v %v, %d pending", next, ok, h.s.Pending())
	}
}

// An entry stays 48 bytes, a size class of its own, so a million pending
// watches cost what docs/BENCHMARKS.md says (and the backoff's count and
// the ready queue's bookkeeping added nothing to it).
func TestEntryIs48Bytes(t *testing.T) {
	if n := unsafe.Sizeof(entry{}); n != 48 {
		t.Fatalf("entry is %d bytes", n)
	}
}
