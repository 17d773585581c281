package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/signal"
)

// vigil watch add signal prints the URL; vigil signal send answers it
// with no token, and a second answer exits 64 with the first printed.
func TestSignalSend(t *testing.T) {
	reg := kind.NewRegistry()
	if err := (signal.Kind{}).Register(reg); err != nil {
		t.Fatal(err)
	}
	st := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: fakeclock.At(time.Now().UTC())})
	app := httpapi.New(httpapi.Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients,
		Signals: signal.NewService(st.Store, st.Scheduler)},
		httpapi.Options{Auth: authztest.Guard(t, map[string]string{"agent-1-token-for-the-cli": "agent-1"})})
	url := apitest.Serve(t, app)
	ctx := context.Background()
	out, errOut, err := run(t, ctx, "watch", "add", "signal", "--for", "agent-1", "--param", "title=Deploy?", "--json", "--server", url, "--token", "agent-1-token-for-the-cli")
	if err != nil {
		t.Fatalf("%v %s", err, errOut)
	}
	w := decodeJSON[api.Watch](t, out)
	if !strings.HasPrefix(w.SignalURL, url+"/api/v1/signals/") {
		t.Fatalf("no signal url: %s", out)
	}
	if _, _, err := run(t, ctx, "signal", "send", w.SignalURL); exitCodeOf(err) != ExitUsage {
		t.Fatalf("without --outcome: %v", err)
	}
	if _, _, err := run(t, ctx, "signal", "send", url+"/api/v1/watches/x", "--outcome", "approve"); exitCodeOf(err) != ExitUsage {
		t.Fatalf("a URL not a signal's: %v", err)
	}
	out, errOut, err = run(t, ctx, "signal", "send", w.SignalURL, "--outcome", "approve", "--data", `{"by":"ana"}`, "--json")
	if err != nil {
		t.Fatalf("%v %s", err, errOut)
	}
	if s := decodeJSON[api.Signal](t, out); s.State != "fired" || s.Outcome != "approve" || compact(s.Data) != `{"by":"ana"}` {
		t.Fatalf("answered %s", out)
	}
	out, _, err = run(t, ctx, "signal", "send", w.SignalURL, "--outcome", "deny")
	if exitCodeOf(err) != ExitUsage || !strings.Contains(err.Error(), "already_settled") || !strings.Contains(out, "approve") {
		t.Fatalf("a second answer: %v\n%s", err, out)
	}
}
