package main

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/heartbeat"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/store"
)

type lazyRecipients struct{ st *store.Store }

func (l *lazyRecipients) GetRecipient(ctx context.Context, id string) (store.RecipientRecord, error) {
	return l.st.GetRecipient(ctx, id)
}

// vigil recipient set restates the recipient's heartbeats, as it does its
// refs: pausing and resuming keeps them and their ping URLs; show prints
// them.
func TestRecipientSetKeepsHeartbeats(t *testing.T) {
	lazy := &lazyRecipients{}
	reg := kind.NewRegistry()
	if err := heartbeat.New(lazy).Register(reg); err != nil {
		t.Fatal(err)
	}
	st := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: fakeclock.At(time.Now().UTC())})
	lazy.st = st.Store
	app := httpapi.New(httpapi.Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients}, httpapi.Options{})
	url := apitest.Serve(t, app)
	ctx := context.Background()
	c := client.New(url)
	r, err := c.PutRecipient(ctx, "w", api.RecipientRequest{Status: "running", Heartbeats: []api.HeartbeatRequest{{Name: "backup", Period: "1h", Grace: "5m"}}})
	if err != nil || len(r.Heartbeats) != 1 || r.Heartbeats[0].PingURL == "" {
		t.Fatalf("declared %+v %v", r, err)
	}
	for _, status := range []string{"paused", "running"} {
		if _, errOut, err := run(t, ctx, "recipient", "set", "w", "--status", status, "--yes", "--server", url); err != nil {
			t.Fatalf("%s: %v %s", status, err, errOut)
		}
	}
	after, err := c.GetRecipient(ctx, "w")
	if err != nil || len(after.Heartbeats) != 1 || after.Heartbeats[0].PingURL != r.Heartbeats[0].PingURL || after.Heartbeats[0].Period != "1h0m0s" {
		t.Fatalf("after pause and resume: %+v %v", after.Heartbeats, err)
	}
	out, _, err := run(t, ctx, "recipient", "show", "w", "--server", url)
	if err != nil || !strings.Contains(out, "heartbeat backup") || !strings.Contains(out, r.Heartbeats[0].PingURL) {
		t.Fatalf("show: %v\n%s", err, out)
	}
}
