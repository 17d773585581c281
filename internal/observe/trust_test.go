package observe

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"pgregory.net/rapid"
)

// A record names the run that saw it: kept on the event for audit, part of
// no identity, so another run's repeat is a duplicate that keeps the first
// run, and the run is not in the payload the identity compares.
func TestTheRunIsKeptForAuditAndIsNoIdentity(t *testing.T) {
	r := newRig(t, helpConfig("watcher", "script"))
	first := r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: "hi", Run: "nightly@2026-12-01T20:00:00+00:00"})
	if first.Event.Run != "nightly@2026-12-01T20:00:00+00:00" || first.Event.Actor != "watcher" {
		t.Fatalf("event: %+v", first.Event)
	}
	stored, err := r.stack.Store.EventByKey(context.Background(), Stream, first.Event.Key)
	if err != nil || stored.Run != first.Event.Run {
		t.Fatalf("stored: %+v %v", stored, err)
	}
	if bytes.Contains(stored.Payload, []byte("nightly")) {
		t.Fatalf("the run is in the payload: %s", stored.Payload)
	}
	for _, rec := range []struct {
		principal, run string
	}{{"script", "actions/runs/77/attempts/2"}, {"watcher", ""}, {"watcher", "nightly@2"}} {
		got := r.mustRecord(rec.principal, Record{Item: "m1", Thread: "T", Text: "hi", Run: rec.run})
		if !got.Duplicate || got.Event.Seq != first.Event.Seq || got.Event.Run != first.Event.Run || got.Event.Actor != "watcher" {
			t.Fatalf("repeat by %s in run %q: %+v", rec.principal, rec.run, got)
		}
	}
	// A record with no run keeps none.
	if got := r.mustRecord("watcher", Record{Item: "m2", Thread: "T"}); got.Event.Run != "" {
		t.Fatalf("run %q", got.Event.Run)
	}
}

func TestDecodeRecordRun(t *testing.T) {
	for body, ok := range map[string]bool{
		`{"item":"m","thread":"T","run":"nightly@2026-12-01T20:00:00+00:00"}`: true,
		`{"item":"m","thread":"T","run":"actions/runs/123/attempts/2"}`:       true,
		`{"item":"m","thread":"T","run":"A.b_c-d:e/f@g+h"}`:                   true,
		`{"item":"m","thread":"T","run":"` + strings.Repeat("r", 128) + `"}`:  true,
		`{"item":"m","thread":"T","run":"` + strings.Repeat("r", 129) + `"}`:  false,
		`{"item":"m","thread":"T","run":""}`:                                  false,
		`{"item":"m","thread":"T","run":"a b"}`:                               false,
		`{"item":"m","thread":"T","run":"a\nb"}`:                              false,
		`{"item":"m","thread":"T","run":"caf\u00e9"}`:                         false,
		`{"item":"m","thread":"T","run":"a\"b"}`:                              false,
		`{"item":"m","thread":"T","run":"a%b"}`:                               false,
		`{"item":"m","thread":"T","run":7}`:                                   false,
		`{"item":"m","thread":"T","run":null}`:                                false,
	} {
		r, err := DecodeRecord([]byte(body))
		var e *api.Error
		switch {
		case ok && err != nil:
			t.Errorf("%.70s: %v", body, err)
		case ok && r.Run == "":
			t.Errorf("%.70s: the run was lost", body)
		case !ok && (!errors.As(err, &e) || e.Code != api.CodeInvalidField || e.Field != "run"):
			t.Errorf("%.70s: %v, want invalid_field run", body, err)
		}
	}
	// Validate holds the bound for a Record built in Go too.
	if err := (Record{Item: "m", Thread: "T", Run: "a b"}).Validate(); err == nil {
		t.Error("Validate accepted run \"a b\"")
	}
}

var runPattern = regexp.MustCompile(`^[A-Za-z0-9._:/@+-]{1,128}$`)

// The run grammar is exactly its documented pattern (api/openapi.yaml's).
func TestRunGrammarIsItsPattern(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.OneOf(
			rapid.String(),
			rapid.StringMatching(`[A-Za-z0-9._:/@+ -]{0,130}`),
			rapid.StringOfN(rapid.RuneFrom([]rune("a/:@+%\x00é")), 0, 140, -1),
		).Draw(t, "run")
		if validRun(s) != runPattern.MatchString(s) {
			t.Fatalf("validRun(%q) = %v, the pattern says %v", s, validRun(s), !validRun(s))
		}
	})
}

// The record operation goes with a scope's last observe entry: once it is
// removed, every record there is observe_unavailable (whoever sends it,
// whatever it holds), which is not not_a_reporter; it comes back with an
// entry. An unknown scope stays unknown.
func TestRecordGoesWithTheLastEntry(t *testing.T) {
	r := newRig(t, helpConfig("watcher"))
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T"})
	_, err := r.record("mallory", Record{Item: "m2", Thread: "T"})
	wantCode(t, err, api.CodeNotAReporter)

	routesOnly := Config{Scopes: map[string]Scope{"support": {Routes: []Route{{Source: "slack-help"}}}}}
	if err := r.ob.SetConfig(routesOnly); err != nil {
		t.Fatal(err)
	}
	for _, rec := range []struct {
		principal string
		r         Record
	}{
		{"watcher", Record{Item: "m2", Thread: "T"}},
		{"watcher", Record{Item: "m1", Thread: "T"}}, // a repeat of an accepted item
		{"mallory", Record{Item: "m2", Thread: "T", Source: "slack-help"}},
	} {
		_, err := r.record(rec.principal, rec.r)
		if e := wantCode(t, err, api.CodeObserveUnavailable); !strings.Contains(e.Message, "no observe entry") {
			t.Fatalf("message: %v", e)
		}
	}
	wantCode(t, r.ob.Recordable("support"), api.CodeObserveUnavailable)
	if err := r.ob.Recordable("nowhere"); !errors.Is(err, ErrUnknownScope) {
		t.Fatalf("unknown scope: %v", err)
	}
	if _, err := r.ob.Record(context.Background(), "watcher", "nowhere", Record{Item: "m", Thread: "T"}); !errors.Is(err, ErrUnknownScope) {
		t.Fatalf("unknown scope: %v", err)
	}

	if err := r.ob.SetConfig(helpConfig("watcher")); err != nil {
		t.Fatal(err)
	}
	if err := r.ob.Recordable("support"); err != nil {
		t.Fatal(err)
	}
	r.mustRecord("watcher", Record{Item: "m2", Thread: "T"})
}

// An item's text reaches no log line, whatever becomes of its record:
// recorded, repeated, refused as a conflict or over budget, routed,
// skipped, or refused for its scope.
func TestTheTextStaysOutOfTheLog(t *testing.T) {
	var logs bytes.Buffer
	log := slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	r := newRig(t, helpConfig("watcher"), func(o *Options) { o.Logger, o.Rate, o.Burst = log, 0.001, 3 })
	const secret = "customer card 4111-1111"
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: secret, Run: "r1"})
	r.mustRecord("watcher", Record{Item: "m1", Thread: "T", Text: secret, Run: "r2"})
	_, _ = r.record("watcher", Record{Item: "m1", Thread: "T", Text: secret + " edited"})
	r.route()
	w := r.open()[0]
	r.complete(w.ID)
	r.mustRecord("watcher", Record{Item: "m2", Thread: "T", Text: secret})
	r.mustRecord("watcher", Record{Item: "m3", Thread: "T", Text: secret})
	for _, err := range []error{
		func() error { _, err := r.record("watcher", Record{Item: "m4", Thread: "T", Text: secret}); return err }(),
		func() error {
			_, err := r.record("watcher", Record{Item: "m1", Thread: "T", Text: secret + "!"})
			return err
		}(),
	} {
		if err == nil || strings.Contains(err.Error(), secret) {
			t.Fatalf("refusal %v", err)
		}
	}
	r.route() // skipped: the Work is completed
	r.clock.Add(time.Hour)
	if err := r.ob.SetConfig(Config{Scopes: map[string]Scope{"support": {}}}); err != nil {
		t.Fatal(err)
	}
	_, _ = r.record("watcher", Record{Item: "m5", Thread: "T", Text: secret})
	if strings.Contains(logs.String(), "4111") {
		t.Fatalf("an item's text reached the log:\n%s", logs.String())
	}
}
