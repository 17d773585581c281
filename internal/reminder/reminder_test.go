package reminder_test

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/core"
	"github.com/vigilhq/vigil/internal/delivery"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/internal/reminder"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

var t0 = time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC)

const every = 10 * time.Minute

// host is the core as serve builds it (the reminder kind registered in
// its registry), over a directory that outlives it, and a fake clock.
type host struct {
	t     *testing.T
	dir   string
	clock *fakeclock.Clock
	c     *core.Core
	// deliver, when set, wraps the delivery (for the send-time tests).
	deliver func(*delivery.Delivery, *store.Store) scheduler.Deliverer
}

func newHost(t *testing.T) *host {
	h := &host{t: t, dir: t.TempDir(), clock: fakeclock.At(t0)}
	h.open()
	t.Cleanup(func() { h.close() })
	return h
}

func (h *host) open() {
	h.t.Helper()
	c, err := core.New(context.Background(), core.Config{StoreDir: h.dir, Clock: h.clock, Deliver: h.deliver})
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := c.Prime(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.c = c
}

func (h *host) close() {
	if h.c != nil {
		_ = h.c.Close()
		h.c = nil
	}
}

// restart closes the host and opens it again on the same store.
func (h *host) restart() {
	h.t.Helper()
	h.close()
	h.open()
}

// at moves the clock to t0+d and runs every check due by then.
func (h *host) at(d time.Duration) {
	h.clock.Set(t0.Add(d))
	h.c.Scheduler.Tick(context.Background(), t0.Add(d))
}

// worker is a running recipient w, opted in every 10 minutes, that
// reported build itself at the clock's time.
func (h *host) worker() {
	h.t.Helper()
	ctx := context.Background()
	if _, err := h.c.Recipients.Put(ctx, recipients.Update{ID: "w", Status: store.StatusRunning}); err != nil {
		h.t.Fatal(err)
	}
	if _, err := h.c.Recipients.SetReminder(ctx, "w", every); err != nil {
		h.t.Fatal(err)
	}
	h.phase("build", true)
}

func (h *host) phase(name string, self bool) {
	h.t.Helper()
	if _, err := h.c.Recipients.ReportPhase(context.Background(), "w", recipients.PhaseReport{Name: name, By: "w", Self: self}); err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) work() {
	h.t.Helper()
	if _, err := h.c.Recipients.ReportActivity(context.Background(), "w", 1, 2); err != nil {
		h.t.Fatal(err)
	}
}

func (h *host) mail() []store.Message {
	h.t.Helper()
	ms, err := h.c.Store.ReadMailbox(context.Background(), "w", 0, 100)
	if err != nil {
		h.t.Fatal(err)
	}
	return ms
}

func (h *host) reminderWatches() []store.Watch {
	h.t.Helper()
	ws, _, err := h.c.Store.List(context.Background(), store.Filter{Recipient: "w", State: store.Pending})
	if err != nil {
		h.t.Fatal(err)
	}
	var out []store.Watch
	for _, w := range ws {
		if w.Kind == reminder.Name {
			out = append(out, w)
		}
	}
	return out
}

// A working recipient is reminded once of a report, however many
// intervals it works on: one reminder per report, never one per interval.
// The message is the host's notice: its own type, short, not a watch's
// outcome.
func TestOneReminderPerReport(t *testing.T) {
	h := newHost(t)
	h.worker()
	h.at(0) // the first check records the counts
	for i := 1; i <= 18; i++ {
		h.work()
		h.at(time.Duration(i) * every)
	}
	ms := h.mail()
	if len(ms) != 1 {
		t.Fatalf("%d messages in three hours of one report, want 1: %+v", len(ms), ms)
	}
	m := ms[0]
	if m.Type != store.MessageReminder || m.Kind != reminder.Name || m.Outcome.Result != "reminder" || len(m.Outcome.Summary) > 160 {
		t.Fatalf("the reminder: %+v", m)
	}
	var d reminder.Detail
	if err := json.Unmarshal(m.Outcome.Detail, &d); err != nil || d.Phase != "build" || !d.ReportedAt.Equal(t0) {
		t.Fatalf("detail %s: %v", m.Outcome.Detail, err)
	}
	// The first reminder came at the first check that found the report an
	// interval old with activity since the check before.
	if !m.At.Equal(t0.Add(every)) {
		t.Fatalf("reminded at %s", m.At)
	}
	// The watch is still pending (standing), and says why it is quiet.
	ws := h.reminderWatches()
	if len(ws) != 1 || ws[0].LastNote != reminder.WhyReminded {
		t.Fatalf("the reminder watch: %+v", ws)
	}

	// A new report, then work: one more reminder once it is old.
	h.clock.Set(t0.Add(185 * time.Minute))
	h.phase("review", true)
	for i := 19; i <= 25; i++ {
		h.work()
		h.at(time.Duration(i) * every)
	}
	if ms := h.mail(); len(ms) != 2 {
		t.Fatalf("%d messages after a second report, want 2", len(ms))
	}
}

// A seeded phase, handoff, blocked and a stall send nothing through the
// whole stack either.
func TestNoReminderWithoutTheRecipientsOwnWork(t *testing.T) {
	for name, edit := range map[string]func(h *host){
		"seeded":  func(h *host) { h.phase("build", false) },
		"handoff": func(h *host) { h.phase(reminder.PhaseHandoff, true) },
		"blocked": func(h *host) { h.phase(reminder.PhaseBlocked, true) },
		"stalled": func(h *host) {},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHost(t)
			h.worker()
			edit(h)
			h.at(0)
			for i := 1; i <= 6; i++ {
				if name != "stalled" {
					h.work()
				}
				h.at(time.Duration(i) * every)
			}
			if ms := h.mail(); len(ms) != 0 {
				t.Fatalf("%d messages: %+v", len(ms), ms)
			}
		})
	}
}

// The baseline is on the watch row: a restart after a reminder does not
// remind again, and a restart before one does not forget the counts the
// last check saw (a forgetting host would spend its first check after
// the restart recording them, and remind an interval late).
func TestBaselineSurvivesARestart(t *testing.T) {
	t.Run("no re-remind", func(t *testing.T) {
		h := newHost(t)
		h.worker()
		h.at(0)
		h.work()
		h.at(every)
		if n := len(h.mail()); n != 1 {
			t.Fatalf("%d messages before the restart", n)
		}
		for i := 2; i <= 5; i++ {
			h.restart()
			h.work()
			h.at(time.Duration(i) * every)
		}
		if n := len(h.mail()); n != 1 {
			t.Fatalf("%d messages after restarts, want 1", n)
		}
	})
	t.Run("no forgetting", func(t *testing.T) {
		h := newHost(t)
		h.worker()
		h.at(0) // counts 0, 0 recorded
		h.clock.Set(t0.Add(time.Minute))
		h.work()
		h.restart()
		// Prime arms the watch within one interval of the restart.
		h.at(time.Minute + every)
		ms := h.mail()
		if len(ms) != 1 || ms[0].Type != store.MessageReminder {
			t.Fatalf("the first check after the restart: %+v", ms)
		}
	})
}

// stopping stops w (or deletes it) just before the reminder is mailed,
// after the check decided on a running recipient.
type stopping struct {
	scheduler.Deliverer
	st     *store.Store
	delete bool
}

func (d stopping) Carry(ctx context.Context, id store.ID, baseline json.RawMessage, attempts int, note string, change *store.Message) (bool, error) {
	if change != nil {
		if d.delete {
			_ = d.st.DeleteRecipient(ctx, "w")
		} else {
			rec, _ := d.st.GetRecipient(ctx, "w")
			rec.Status = store.StatusStopped
			_, _, _ = d.st.PutRecipient(ctx, rec)
		}
	}
	return d.Deliverer.Carry(ctx, id, baseline, attempts, note, change)
}

// The notice path never revives: a recipient that stopped gets nothing,
// whether the check saw it stopped (the evidence is read fresh, behind the
// reconciler's back) or it stopped after the check decided (the send
// re-checks in its transaction), and a recipient deleted meanwhile is not
// created again. A mailed reminder's webhook push is a notice, which the
// outbox sends only to a recipient still running.
func TestNotifyNeverRevives(t *testing.T) {
	t.Run("stopped before the check", func(t *testing.T) {
		h := newHost(t)
		h.worker()
		h.at(0)
		h.work()
		rec, _ := h.c.Store.GetRecipient(context.Background(), "w")
		rec.Status = store.StatusStopped
		if _, _, err := h.c.Store.PutRecipient(context.Background(), rec); err != nil { // no reconcile
			t.Fatal(err)
		}
		h.at(every)
		if ms := h.mail(); len(ms) != 0 {
			t.Fatalf("a stopped recipient was reminded: %+v", ms)
		}
		if ws := h.reminderWatches(); len(ws) != 1 || ws[0].LastNote != reminder.WhyNotRunning {
			t.Fatalf("the watch: %+v", ws)
		}
	})
	for name, del := range map[string]bool{"stopped after the check": false, "deleted after the check": true} {
		t.Run(name, func(t *testing.T) {
			h := &host{t: t, dir: t.TempDir(), clock: fakeclock.At(t0)}
			h.deliver = func(d *delivery.Delivery, st *store.Store) scheduler.Deliverer {
				return stopping{Deliverer: d, st: st, delete: del}
			}
			h.open()
			t.Cleanup(h.close)
			h.worker()
			h.at(0)
			h.work()
			h.at(every)
			if ms := h.mail(); len(ms) != 0 {
				t.Fatalf("reminded: %+v", ms)
			}
			rec, err := h.c.Store.GetRecipient(context.Background(), "w")
			switch {
			case del && !errors.Is(err, store.ErrNotFound):
				t.Fatalf("a deleted recipient came back: %+v %v", rec, err)
			case !del && rec.Status != store.StatusStopped:
				t.Fatalf("revived: %+v %v", rec, err)
			}
		})
	}
	t.Run("the push is a notice", func(t *testing.T) {
		h := newHost(t)
		h.worker()
		if _, err := h.c.Recipients.Put(context.Background(), recipients.Update{ID: "w", Status: store.StatusRunning,
			Webhook: &store.Webhook{URL: "http://127.0.0.1:1/hook", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}); err != nil {
			t.Fatal(err)
		}
		h.at(0)
		h.work()
		h.at(every)
		ms := h.mail()
		if len(ms) != 1 || ms[0].Push == nil || !ms[0].Push.Notice {
			t.Fatalf("the reminder's push: %+v", ms)
		}
	})
}

// standingKind is a stand-in for a plugin's standing kind (a ticket's
// changes) beside the reminder.
type standingKind struct{}

func (standingKind) Info() kind.Info {
	return kind.Info{Kind: "ticket", Standing: true, Observable: true, DefaultEvery: time.Minute}
}
func (standingKind) Admit(context.Context, kind.AdmitRequest) (kind.Admission, error) {
	return kind.Admission{}, nil
}
func (standingKind) Observe(context.Context, abi.ObserveRequest) (kind.Observation, error) {
	return kind.Observation{Status: abi.StatusPending}, nil
}

// The reconciler keeps one reminder watch, at the opted-in interval, while
// the recipient runs and is opted in, beside its refs' standing watches,
// from the one list it derives every standing watch from.
func TestReconcilerKeepsTheReminderWatch(t *testing.T) {
	h := newHost(t)
	ctx := context.Background()
	if err := h.c.Registry.Register("plugins", standingKind{}); err != nil {
		t.Fatal(err)
	}
	ref := store.Ref{Kind: "ticket", Params: json.RawMessage(`{"n":1}`)}
	put := func(st store.RecipientStatus) {
		t.Helper()
		if _, err := h.c.Recipients.Put(ctx, recipients.Update{ID: "w", Status: st, Refs: []store.Ref{ref}}); err != nil {
			t.Fatal(err)
		}
	}
	one := func(want time.Duration) store.Watch {
		t.Helper()
		ws := h.reminderWatches()
		if len(ws) != 1 || time.Duration(ws[0].Every) != want || !ws[0].Standing || ws[0].ExpiresAt != nil {
			t.Fatalf("reminder watches %+v, want one every %s", ws, want)
		}
		return ws[0]
	}
	none := func(when string) {
		t.Helper()
		if ws := h.reminderWatches(); len(ws) != 0 {
			t.Fatalf("%s: reminder watches %+v", when, ws)
		}
	}
	put(store.StatusRunning)
	none("not opted in")
	if _, err := h.c.Recipients.SetReminder(ctx, "w", every); err != nil {
		t.Fatal(err)
	}
	first := one(every)
	// Idempotent: again, a PUT of the record, and the pass at start.
	_, _ = h.c.Recipients.SetReminder(ctx, "w", every)
	put(store.StatusRunning)
	if err := h.c.Recipients.ReconcileAll(ctx); err != nil {
		t.Fatal(err)
	}
	if w := one(every); w.ID != first.ID {
		t.Fatalf("replaced without a change: %s, was %s", w.ID, first.ID)
	}
	// Another interval is another watch.
	_, _ = h.c.Recipients.SetReminder(ctx, "w", 15*time.Minute)
	if w := one(15 * time.Minute); w.ID == first.ID {
		t.Fatal("the interval changed, the watch did not")
	}
	// The lifecycle ends it and brings it back; the ref's watch goes
	// alongside.
	put(store.StatusPaused)
	none("paused")
	put(store.StatusRunning)
	one(15 * time.Minute)
	// Opting out ends it and leaves the ref's watch.
	_, _ = h.c.Recipients.SetReminder(ctx, "w", 0)
	none("opted out")
	ws, _, _ := h.c.Store.List(ctx, store.Filter{Recipient: "w", State: store.Pending})
	if len(ws) != 1 || ws[0].Kind != "ticket" {
		t.Fatalf("the ref's watch: %+v", ws)
	}
	// An opt-out the reconciler missed (written behind its back) is
	// repaired by the pass at start.
	_, _ = h.c.Recipients.SetReminder(ctx, "w", every)
	one(every)
	if _, err := h.c.Store.SetReminder(ctx, "w", 0); err != nil {
		t.Fatal(err)
	}
	h.restart()
	none("after a restart's pass")
	// Deleting the recipient ends everything.
	_, _ = h.c.Recipients.SetReminder(ctx, "w", every)
	if err := h.c.Recipients.Delete(ctx, "w"); err != nil {
		t.Fatal(err)
	}
	none("deleted")
}

// Nobody registers a reminder watch by hand, through the watches API or
// as a ref: a second one for a recipient would remind twice of a report.
func TestReminderWatchesAreTheReconcilers(t *testing.T) {
	h := newHost(t)
	h.worker()
	ctx := context.Background()
	_, err := h.c.Scheduler.Register(ctx, scheduler.Registration{Kind: reminder.Name, Params: reminder.ParamsFor(every), Recipient: store.Recipient{ID: "w"}})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeInvalidParams || ae.Field != "kind" {
		t.Fatalf("a reminder watch registered by hand: %v", err)
	}
	_, err = h.c.Recipients.Put(ctx, recipients.Update{ID: "w", Status: store.StatusRunning, Refs: []store.Ref{{Kind: reminder.Name, Params: reminder.ParamsFor(every)}}})
	if !errors.As(err, &ae) || ae.Code != api.CodeInvalidParams || ae.Field != "refs[0].kind" {
		t.Fatalf("a reminder as a ref: %v", err)
	}
	if n := len(h.reminderWatches()); n != 1 {
		t.Fatalf("%d reminder watches, want the reconciler's one", n)
	}
	// Its describe says it is standing, as every kind's does.
	info, ok := h.c.Registry.Lookup(reminder.Name)
	if !ok || !info.Standing || info.Pushed || !info.Observable {
		t.Fatalf("the reminder's info: %+v %v", info, ok)
	}
}
