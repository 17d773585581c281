package storetest

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/vigilhq/vigil/store"
)

func tokenCases() []testCase {
	return []testCase{
		{"WrittenWithTheRowAndNeverInItsJSON", testTokenWithRow},
		{"ATakenHashWritesNothing", testTokenTaken},
		{"PrunedWithTheRow", testTokenPruned},
		{"HeartbeatTokensFollowTheRecord", testHeartbeatTokens},
	}
}

// tokenHash is a capability token's hash as captoken makes it (64 hex).
func tokenHash(b byte) string { return strings.Repeat(string("0123456789abcdef"[b%16]), 64) }

// A row created with a token's hash names itself under the hash, in the
// same transaction; the row reads back with it, and the row's JSON (what
// a listing or an export's reader shows) has no part of it.
func testTokenWithRow(e *env) {
	e.running("a", "")
	w := e.watch("a", t0)
	w.Token = tokenHash(1)
	if _, err := e.b.GetToken(e.ctx, w.Token); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("a token before its row: %v", err)
	}
	if err := e.b.CreateIfRunning(e.ctx, w, 0); err != nil {
		e.Fatal(err)
	}
	rec, err := e.b.GetToken(e.ctx, w.Token)
	if err != nil || rec.Watch != w.ID {
		e.Fatalf("GetToken: %+v %v, want the row %s", rec, err, w.ID)
	}
	got, err := e.b.Get(e.ctx, w.ID)
	if err != nil || got.Token != w.Token {
		e.Fatalf("the row's token: %q %v", got.Token, err)
	}
	rows, _, err := e.b.List(e.ctx, store.Filter{Recipient: "a"})
	if err != nil || len(rows) != 1 || rows[0].Token != w.Token {
		e.Fatalf("listed: %+v %v", rows, err)
	}
	b, _ := json.Marshal(rows[0])
	if bytes.Contains(b, []byte(w.Token)) {
		e.Fatalf("the row's JSON holds its token's hash: %s", b)
	}
	// Settling keeps it: a second completion finds the settled row.
	if _, _, err := e.b.SettleAndMail(e.ctx, w.ID, store.Settlement{State: store.Fired, SettledAt: t0.Add(time.Minute)}, e.fired()); err != nil {
		e.Fatal(err)
	}
	if rec, err := e.b.GetToken(e.ctx, w.Token); err != nil || rec.Watch != w.ID {
		e.Fatalf("GetToken once settled: %+v %v", rec, err)
	}
}

// Two rows with one hash: the second is refused (ErrExists) and neither
// its row nor any index of it is written.
func testTokenTaken(e *env) {
	e.running("a", "")
	first := e.watch("a", t0)
	first.Token = tokenHash(2)
	if err := e.b.Create(e.ctx, first); err != nil {
		e.Fatal(err)
	}
	second := e.watch("a", t0)
	second.Token = first.Token
	if err := e.b.Create(e.ctx, second); !errors.Is(err, store.ErrExists) {
		e.Fatalf("a second row with a taken hash: %v, want ErrExists", err)
	}
	if _, err := e.b.Get(e.ctx, second.ID); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("the refused row was written: %v", err)
	}
	if n, err := e.b.CountPending(e.ctx, "a", 10); err != nil || n != 1 {
		e.Fatalf("pending count %d %v, want 1", n, err)
	}
	if rec, err := e.b.GetToken(e.ctx, first.Token); err != nil || rec.Watch != first.ID {
		e.Fatalf("the first row's token: %+v %v", rec, err)
	}
}

// Retention prunes a settled row's token with it: a pruned record's URL
// answers as one that never was, and no token outlives its row.
func testTokenPruned(e *env) {
	e.running("a", "")
	w := e.watch("a", t0)
	w.Token = tokenHash(3)
	if err := e.b.Create(e.ctx, w); err != nil {
		e.Fatal(err)
	}
	if _, _, err := e.b.SettleAndMail(e.ctx, w.ID, store.Settlement{State: store.Fired, SettledAt: t0.Add(time.Minute)}, e.fired()); err != nil {
		e.Fatal(err)
	}
	if n, err := e.b.PruneOldest(e.ctx, store.RetainedSettled, t0.Add(time.Hour), 10); err != nil || n != 1 {
		e.Fatalf("pruned %d %v, want 1", n, err)
	}
	if _, err := e.b.GetToken(e.ctx, w.Token); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("the pruned row's token: %v, want ErrNotFound", err)
	}
}

// A recipient's heartbeats' ping tokens name them while the record
// declares them, written and deleted with the record; a ping writes the
// last ping, which a put keeps while the name and token stay; a token
// another recipient holds is refused, nothing written.
func testHeartbeatTokens(e *env) {
	hb := func(name, tok string, period time.Duration) store.Heartbeat {
		return store.Heartbeat{Name: name, Period: store.Duration(period), Grace: store.Duration(time.Second), Token: tok}
	}
	put := func(id string, hbs ...store.Heartbeat) error {
		_, _, err := e.b.PutRecipient(e.ctx, store.RecipientRecord{ID: id, Status: store.StatusRunning, CreatedAt: t0, UpdatedAt: t0, Heartbeats: hbs})
		return err
	}
	names := func(tok string) (store.TokenRecord, error) { return e.b.GetToken(e.ctx, store.HashToken(tok)) }
	if err := put("a", hb("backup", "tok-backup", time.Hour), hb("sync", "tok-sync", time.Minute)); err != nil {
		e.Fatal(err)
	}
	if rec, err := names("tok-backup"); err != nil || rec.Recipient != "a" || rec.Heartbeat != "backup" {
		e.Fatalf("the backup token: %+v %v", rec, err)
	}
	at := t0.Add(time.Minute)
	rec, err := e.b.Ping(e.ctx, "a", "backup", at, false, "")
	if err != nil || !rec.Heartbeats[0].LastPing.Equal(at) {
		e.Fatalf("ping: %+v %v", rec.Heartbeats, err)
	}
	if _, err := e.b.Ping(e.ctx, "a", "nope", at, false, ""); !errors.Is(err, store.ErrUnknownHeartbeat) {
		e.Fatalf("a ping of an undeclared heartbeat: %v", err)
	}
	// Another period, same token: the last ping stays; sync dropped: its
	// token names nothing.
	if err := put("a", hb("backup", "tok-backup", 2*time.Hour)); err != nil {
		e.Fatal(err)
	}
	got, err := e.b.GetRecipient(e.ctx, "a")
	if err != nil || len(got.Heartbeats) != 1 || !got.Heartbeats[0].LastPing.Equal(at) || time.Duration(got.Heartbeats[0].Period) != 2*time.Hour {
		e.Fatalf("after the put: %+v %v", got.Heartbeats, err)
	}
	if _, err := names("tok-sync"); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("a dropped heartbeat's token: %v", err)
	}
	// Another recipient may not take a's token.
	if err := put("b", hb("x", "tok-backup", time.Hour)); !errors.Is(err, store.ErrExists) {
		e.Fatalf("a token another recipient holds: %v", err)
	}
	if _, err := e.b.GetRecipient(e.ctx, "b"); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("the refused put wrote: %v", err)
	}
	if err := e.b.DeleteRecipient(e.ctx, "a"); err != nil {
		e.Fatal(err)
	}
	if _, err := names("tok-backup"); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("a deleted recipient's token: %v", err)
	}
}
