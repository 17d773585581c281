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
