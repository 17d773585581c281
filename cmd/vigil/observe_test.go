package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/fetch"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/observe"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
)

type observeFixture struct {
	url string
	ob  *observe.Observer
	is  *fetch.Issuer
}

// newObserveFixture serves the API with an observer (scope support, source
// slack-help reported by the local principal) and a fetch issuer whose
// dead letters the API reads.
func newObserveFixture(t *testing.T) *observeFixture {
	t.Helper()
	now := time.Now().UTC().Truncate(time.Second)
	reg := kind.NewRegistry()
	st := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: fakeclock.At(now), IDs: hosttest.IDs(5)})
	cfg := observe.Config{Scopes: map[string]observe.Scope{"support": {
		Observe: []observe.Entry{{Sources: []observe.Source{{Name: "slack-help", Reporters: []string{kind.LocalPrincipal}}}}},
		Routes:  []observe.Route{{Source: "slack-help"}},
	}}}
	ob, err := observe.New(observe.Options{Store: st.Store, Clock: fakeclock.At(now)}, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := registerAll(reg, runtimeKinds{cliPlugins()}); err != nil {
		t.Fatal(err)
	}
	if err := ob.Register(reg); err != nil {
		t.Fatal(err)
	}
	ob.SetWaker(st.Scheduler)
	is, err := fetch.New(fetch.Config{Log: st.Store})
	if err != nil {
		t.Fatal(err)
	}
	app := httpapi.New(httpapi.Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients,
		Plugins: cliPlugins(), Observe: ob, DeadLetters: is}, httpapi.Options{})
	return &observeFixture{url: apitest.Serve(t, app), ob: ob, is: is}
}

// registerAll registers every kind fake lists in reg, as the plugin
// runtime registers the plugins'.
func registerAll(reg *kind.Registry, fake interface {
	kind.Multi
	Plugins() []kind.Info
}) error {
	var ks []kind.Kind
	for _, in := range fake.Plugins() {
		if k, ok := kind.Of(fake, in.Kind); ok {
			ks = append(ks, k)
		}
	}
	return reg.Replace(plugin.Source, ks)
}

func (f *observeFixture) vigil(t *testing.T, args ...string) string {
	t.Helper()
	out, errOut, err := run(t, context.Background(), append(args, "--server", f.url)...)
	if err != nil {
		t.Fatalf("vigil %s: %v\nstderr: %s", strings.Join(args, " "), err, errOut)
	}
	return out
}

func TestObserveRecordAndWorkCommands(t *testing.T) {
	f := newObserveFixture(t)
	out := f.vigil(t, "observe", "record", "support", "--item", "m1", "--thread", "T1", "--text", "printer on fire\ndetails")
	if !strings.HasPrefix(out, "recorded\tobserve/support/slack-help/T1") {
		t.Fatalf("record: %q", out)
	}
	if out := f.vigil(t, "observe", "record", "support", "--item", "m1", "--thread", "T1", "--text", "printer on fire\ndetails"); !strings.HasPrefix(out, "duplicate") {
		t.Fatalf("repeat: %q", out)
	}
	textFile := filepath.Join(t.TempDir(), "text")
	if err := os.WriteFile(textFile, []byte("still burning"), 0o600); err != nil {
		t.Fatal(err)
	}
	f.vigil(t, "observe", "record", "support", "--item", "m2", "--thread", "T1", "--text-file", textFile)
	_, errOut, err := run(t, context.Background(), "observe", "record", "support", "--item", "m1", "--thread", "T1", "--text", "edited", "--server", f.url)
	if err == nil || !strings.Contains(err.Error()+errOut, "once_conflict") {
		t.Fatalf("conflict: %v %s", err, errOut)
	}
	if _, err := f.ob.RouteAll(context.Background()); err != nil {
		t.Fatal(err)
	}
	wl := decodeJSON[api.WorkList](t, f.vigil(t, "work", "ls", "support", "--state", "open", "--json"))
	if len(wl.Work) != 1 || wl.Work[0].Title != "printer on fire" || wl.Work[0].InputCount != 2 {
		t.Fatalf("ls: %+v", wl)
	}
	id := wl.Work[0].ID
	if out := f.vigil(t, "work", "ls", "support"); !strings.Contains(out, id) || !strings.Contains(out, "printer on fire") {
		t.Fatalf("ls table:\n%s", out)
	}
	if out := f.vigil(t, "work", "show", id); !strings.Contains(out, "#2 slack-help/m2") || !strings.Contains(out, "    still burning") {
		t.Fatalf("show:\n%s", out)
	}
	w := decodeJSON[api.Work](t, f.vigil(t, "work", "claim", id, "--for", "responder", "--json"))
	if w.ClaimedBy != "responder" || w.Consumed != 2 || len(w.Inputs) != 2 {
		t.Fatalf("claim: %+v", w)
	}
	if out := f.vigil(t, "work", "complete", id); !strings.Contains(out, "completed") {
		t.Fatalf("complete:\n%s", out)
	}
}

// --run (or VIGIL_RUN) names the run that saw the item: answered on the
// event, the first run's for a repeat; an empty --run is refused before
// anything is sent, and a bad one is the server's invalid_field run.
func TestObserveRecordNamesItsRun(t *testing.T) {
	f := newObserveFixture(t)
	res := decodeJSON[api.ObserveResult](t, f.vigil(t, "observe", "record", "support", "--item", "m1", "--thread", "T1", "--run", "nightly@1", "--json"))
	if res.Event.Run != "nightly@1" || res.Duplicate {
		t.Fatalf("record: %+v", res)
	}
	t.Setenv("VIGIL_RUN", "nightly@2")
	res = decodeJSON[api.ObserveResult](t, f.vigil(t, "observe", "record", "support", "--item", "m2", "--thread", "T1", "--json"))
	if res.Event.Run != "nightly@2" {
		t.Fatalf("run from VIGIL_RUN: %+v", res)
	}
	res = decodeJSON[api.ObserveResult](t, f.vigil(t, "observe", "record", "support", "--item", "m1", "--thread", "T1", "--json"))
	if !res.Duplicate || res.Event.Run != "nightly@1" {
		t.Fatalf("repeat in another run: %+v", res)
	}
	_, errOut, err := run(t, context.Background(), "observe", "record", "support", "--item", "m3", "--thread", "T1", "--run", "", "--server", f.url)
	if err == nil || !strings.Contains(err.Error()+errOut, "--run is empty") {
		t.Fatalf("empty --run: %v %s", err, errOut)
	}
	_, errOut, err = run(t, context.Background(), "observe", "record", "support", "--item", "m3", "--thread", "T1", "--run", "a b", "--server", f.url)
	if err == nil || !strings.Contains(err.Error()+errOut, "invalid_field") || !strings.Contains(err.Error()+errOut, "run") {
		t.Fatalf("bad --run: %v %s", err, errOut)
	}
}

func TestFetchDeadLettersCommand(t *testing.T) {
	f := newObserveFixture(t)
	resp := f.is.Fetch(context.Background(), plugin.FetchCall{Kind: "http", Entry: plugin.Entry{Capabilities: []string{"fetch"}, FetchHosts: []string{"*"}},
		Request: abi.FetchRequest{Method: "GET", URL: "https://example.org/", Headers: map[string]string{"Connection": "close-this-secret-value"}}})
	if resp.Failure == nil || resp.Failure.Reason != abi.FetchInvalidRequestOptions {
		t.Fatalf("fetch: %+v", resp)
	}
	out := f.vigil(t, "fetch", "dead-letters")
	if !strings.Contains(out, "invalid_request_options") || !strings.Contains(out, "connection") || strings.Contains(out, "close-this-secret-value") {
		t.Fatalf("dead letters:\n%s", out)
	}
	dl := decodeJSON[api.DeadLetters](t, f.vigil(t, "fetch", "dead-letters", "--json"))
	if len(dl.DeadLetters) != 1 || dl.Next != dl.DeadLetters[0].Seq || dl.DeadLetters[0].Kind != "http" {
		t.Fatalf("json: %+v", dl)
	}
	if dl := decodeJSON[api.DeadLetters](t, f.vigil(t, "fetch", "dead-letters", "--after", "1", "--json")); len(dl.DeadLetters) != 0 {
		t.Fatalf("after 1: %+v", dl)
	}
}
