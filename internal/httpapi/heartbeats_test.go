package httpapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/heartbeat"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/store"
)

// lazyRecipients is a heartbeat.Store filled in once the stack exists.
type lazyRecipients struct{ st *store.Store }

func (l *lazyRecipients) GetRecipient(ctx context.Context, id string) (store.RecipientRecord, error) {
	return l.st.GetRecipient(ctx, id)
}

// A declared heartbeat's ping URL is on the recipient's view; a ping to
// it, with no bearer token, is recorded and checked at once; a ping to
// …/fail mails failed with its body as the note; a body over the bound is
// refused, nothing written.
func TestPingURL(t *testing.T) {
	lazy := &lazyRecipients{}
	reg := kind.NewRegistry()
	if err := heartbeat.New(lazy).Register(reg); err != nil {
		t.Fatal(err)
	}
	clk := fakeclock.At(t0)
	st := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: clk})
	lazy.st = st.Store
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients,
		Heartbeats: heartbeat.NewService(st.Store, st.Scheduler, clk)},
		Options{Auth: authztest.Guard(t, map[string]string{agentToken: "agent-1"})})
	resp, b := call(t, app, agentToken, "PUT", "/api/v1/recipients/agent-1", `{"status":"running","heartbeats":[{"name":"backup","period":"1h","grace":"1m"}]}`)
	var r api.Recipient
	if resp.StatusCode != 200 || json.Unmarshal(b, &r) != nil || len(r.Heartbeats) != 1 || !strings.Contains(r.Heartbeats[0].PingURL, HeartbeatsPath) {
		t.Fatalf("declare: %d %s", resp.StatusCode, b)
	}
	path := r.Heartbeats[0].PingURL[strings.Index(r.Heartbeats[0].PingURL, HeartbeatsPath):]
	ping := func(suffix, body string) (int, []byte) {
		req := httptest.NewRequest("POST", path+suffix, strings.NewReader(body))
		resp, err := app.Test(req, 10_000)
		if err != nil {
			t.Fatal(err)
		}
		var b [4096]byte
		n, _ := resp.Body.Read(b[:])
		return resp.StatusCode, b[:n]
	}
	st.Scheduler.Tick(context.Background(), t0)
	if code, b := ping("", ""); code != 200 || !strings.Contains(string(b), `"failed":false`) {
		t.Fatalf("ping: %d %s", code, b)
	}
	if code, b := ping("/fail", strings.Repeat("x", heartbeat.MaxNote+1)); code != 413 {
		t.Fatalf("a body over the bound: %d %s", code, b)
	}
	clk.Set(t0.Add(time.Second))
	if code, b := ping("/fail", "disk full"); code != 200 || !strings.Contains(string(b), `"failed":true`) {
		t.Fatalf("fail: %d %s", code, b)
	}
	st.Scheduler.Tick(context.Background(), t0.Add(time.Second))
	msgs, err := st.Store.ReadMailbox(context.Background(), "agent-1", 0, 10)
	if err != nil || len(msgs) != 1 || msgs[0].Outcome.Result != heartbeat.Failed || !strings.Contains(msgs[0].Outcome.Summary, "disk full") {
		t.Fatalf("mailbox %+v %v", msgs, err)
	}
	_, b = call(t, app, agentToken, "GET", "/api/v1/recipients/agent-1", "")
	if json.Unmarshal(b, &r) != nil || !r.Heartbeats[0].Failed || r.Heartbeats[0].Note != "disk full" || r.Heartbeats[0].LastPing == nil {
		t.Fatalf("the view after the failure: %s", b)
	}
	// A bad declaration names its entry.
	resp, b = call(t, app, agentToken, "PUT", "/api/v1/recipients/agent-1", `{"status":"running","heartbeats":[{"name":"backup","period":"soon","grace":"1m"}]}`)
	if e := signalErr(t, b); resp.StatusCode != 422 || e.Field != "heartbeats[0].period" {
		t.Fatalf("a bad period: %d %s", resp.StatusCode, b)
	}
}
