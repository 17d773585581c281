package heartbeat_test

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/core"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/heartbeat"
	"github.com/vigilhq/vigil/internal/recipients"
	"github.com/vigilhq/vigil/store"
)

var t0 = time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)

// host is the core as serve builds it (the heartbeat kind registered by
// it), over a directory that outlives it, and a fake clock.
type host struct {
	t     *testing.T
	dir   string
	clock *fakeclock.Clock
	c     *core.Core
	pings *heartbeat.Service
}

func newHost(t *testing.T) *host {
	h := &host{t: t, dir: t.TempDir(), clock: fakeclock.At(t0)}
	h.open()
	t.Cleanup(h.close)
	return h
}

func (h *host) open() {
	h.t.Helper()
	c, err := core.New(context.Background(), core.Config{StoreDir: h.dir, Clock: h.clock})
	if err != nil {
		h.t.Fatal(err)
	}
	if _, err := c.Prime(context.Background()); err != nil {
		h.t.Fatal(err)
	}
	h.c, h.pings = c, heartbeat.NewService(c.Store, c.Scheduler, h.clock)
}

func (h *host) close() {
	if h.c != nil {
		_ = h.c.Close()
		h.c = nil
	}
}

func (h *host) restart() { h.t.Helper(); h.close(); h.open() }

// at moves the clock to t0+d and runs every check due by then.
func (h *host) at(d time.Duration) {
	h.clock.Set(t0.Add(d))
	h.c.Scheduler.Tick(context.Background(), t0.Add(d))
}

func (h *host) ping(token string) {
	h.t.Helper()
	if _, err := h.pings.Ping(context.Background(), token, false, ""); err != nil {
		h.t.Fatal(err)
	}
}

// mail is the results mailed to w, in order, and when each was.
func (h *host) mail() ([]string, []time.Time) {
	h.t.Helper()
	ms, err := h.c.Store.ReadMailbox(context.Background(), "w", 0, 100)
	if err != nil {
		h.t.Fatal(err)
	}
	var out []string
	var at []time.Time
	for _, m := range ms {
		out, at = append(out, m.Outcome.Result), append(at, m.At)
	}
	return out, at
}

func (h *host) wantMail(t *testing.T, want ...string) []time.Time {
	t.Helper()
	got, at := h.mail()
	if len(got) != len(want) {
		t.Fatalf("mailed %v, want %v", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Fatalf("mailed %v, want %v", got, want)
		}
	}
	return at
}

// The figure: a 2 s period and 1 s grace. missed is mailed within
// 3.2 s of the last ping, on a fake clock; recovered at the next ping; a
// restart in between neither repeats nor forgets either, and nothing
// periodic runs meanwhile.
func TestMissedAndRecoveredAcrossRestarts(t *testing.T) {
	h := newHost(t)
	ctx := context.Background()
	rec, err := h.c.Recipients.Put(ctx, recipients.Update{ID: "w", Status: store.StatusRunning,
		Heartbeats: []recipients.HeartbeatDecl{{Name: "job", Period: 2 * time.Second, Grace: time.Second}}})
	if err != nil {
		t.Fatal(err)
	}
	tok := rec.Heartbeats[0].Token
	h.at(0) // the watch's first check: no ping yet, nothing
	h.ping(tok)
	h.at(0)
	h.at(2900 * time.Millisecond)
	h.wantMail(t)
	h.at(3 * time.Second)
	at := h.wantMail(t, heartbeat.Missed)
	if late := at[0].Sub(t0); late > 3200*time.Millisecond {
		t.Fatalf("missed %s after the last ping, want within 3.2 s", late)
	}
	// A restart: the silence was mailed, and is not mailed again.
	h.restart()
	for _, d := range []time.Duration{4 * time.Second, time.Minute, time.Hour} {
		h.at(d)
	}
	h.wantMail(t, heartbeat.Missed)
	// The next ping recovers it, once, a restart after it included.
	h.ping(tok)
	h.at(time.Hour)
	h.wantMail(t, heartbeat.Missed, heartbeat.Recovered)
	h.restart()
	h.at(time.Hour + time.Second)
	h.wantMail(t, heartbeat.Missed, heartbeat.Recovered)
	// A ping whose check a restart lost: the next silence is still
	// noticed, at its due time, from the ping the record kept.
	h.clock.Set(t0.Add(2 * time.Hour))
	h.ping(tok)
	h.restart()
	h.at(2*time.Hour + 2*time.Second)
	h.wantMail(t, heartbeat.Missed, heartbeat.Recovered)
	h.at(2*time.Hour + 3*time.Second)
	h.at(2*time.Hour + 4*time.Second) // a restart's first look may be spread over the interval
	h.wantMail(t, heartbeat.Missed, heartbeat.Recovered, heartbeat.Missed)
}

// A ping to /fail is mailed failed at once, with its note; the next good
// ping recovers.
func TestAFailedPingIsMailedAtOnce(t *testing.T) {
	h := newHost(t)
	ctx := context.Background()
	rec, err := h.c.Recipients.Put(ctx, recipients.Update{ID: "w", Status: store.StatusRunning,
		Heartbeats: []recipients.HeartbeatDecl{{Name: "backup", Period: time.Hour, Grace: time.Minute}}})
	if err != nil {
		t.Fatal(err)
	}
	tok := rec.Heartbeats[0].Token
	h.at(0)
	if _, err := h.pings.Ping(ctx, tok, true, "disk full"); err != nil {
		t.Fatal(err)
	}
	h.at(0)
	h.wantMail(t, heartbeat.Failed)
	ms, _ := h.c.Store.ReadMailbox(ctx, "w", 0, 10)
	var d heartbeat.Detail
	if err := json.Unmarshal(ms[0].Outcome.Detail, &d); err != nil || d.Note != "disk full" || d.Heartbeat != "backup" {
		t.Fatalf("the message's detail %s: %v", ms[0].Outcome.Detail, err)
	}
	h.at(time.Second)
	h.ping(tok)
	h.at(time.Second)
	h.wantMail(t, heartbeat.Failed, heartbeat.Recovered)
}

// A heartbeat's declaration keeps its ping URL while its name stays, and
// dropping it cancels its watch and its URL.
func TestDeclarationKeepsTheTokenAndDropsTheURL(t *testing.T) {
	h := newHost(t)
	ctx := context.Background()
	put := func(hbs ...recipients.HeartbeatDecl) store.RecipientRecord {
		t.Helper()
		rec, err := h.c.Recipients.Put(ctx, recipients.Update{ID: "w", Status: store.StatusRunning, Heartbeats: hbs})
		if err != nil {
			t.Fatal(err)
		}
		return rec
	}
	a := put(recipients.HeartbeatDecl{Name: "job", Period: time.Minute, Grace: time.Second})
	b := put(recipients.HeartbeatDecl{Name: "job", Period: 2 * time.Minute, Grace: time.Second})
	if a.Heartbeats[0].Token == "" || b.Heartbeats[0].Token != a.Heartbeats[0].Token {
		t.Fatalf("the token changed with the period: %q %q", a.Heartbeats[0].Token, b.Heartbeats[0].Token)
	}
	pending := func() []store.Watch {
		ws, _, err := h.c.Store.List(ctx, store.Filter{Recipient: "w", State: store.Pending, Kind: heartbeat.Name})
		if err != nil {
			t.Fatal(err)
		}
		return ws
	}
	if ws := pending(); len(ws) != 1 {
		t.Fatalf("%d heartbeat watches, want 1", len(ws))
	}
	put()
	if ws := pending(); len(ws) != 0 {
		t.Fatalf("%d heartbeat watches after the heartbeat was dropped", len(ws))
	}
	if _, err := h.pings.Ping(ctx, a.Heartbeats[0].Token, false, ""); err == nil {
		t.Fatal("a dropped heartbeat's URL took a ping")
	}
	if _, err := h.c.Recipients.Put(ctx, recipients.Update{ID: "w", Status: store.StatusRunning,
		Heartbeats: []recipients.HeartbeatDecl{{Name: "Bad Name", Period: time.Minute}}}); err == nil {
		t.Fatal("a bad name was declared")
	}
}
