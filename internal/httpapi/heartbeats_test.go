package httpapi

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

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

// FuzzPing: POST /api/v1/heartbeats/{segment}[/fail] over the real core,
// with any body and path segment, records a ping of the declared
// heartbeat (its body, bounded and valid UTF-8, as the note) or refuses
// as the client's mistake: never a 5xx, never another recipient's.
func FuzzPing(f *testing.F) {
	f.Add("", []byte("ran"), false)
	f.Add("", []byte(""), true)
	f.Add("", []byte("\xff\xfe bad utf-8"), true)
	f.Add("", []byte(strings.Repeat("n", heartbeat.MaxNote+1)), false)
	f.Add("AAAAAAAAAAAAAAAAAAAAAA", []byte("x"), false)
	f.Add("%2e%2e", []byte("x"), true)
	lazy := &lazyRecipients{}
	reg := kind.NewRegistry()
	if err := heartbeat.New(lazy).Register(reg); err != nil {
		f.Fatal(err)
	}
	clk := fakeclock.At(t0)
	st := apitest.NewStack(f, apitest.Config{Plugins: reg, Clock: clk})
	lazy.st = st.Store
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients,
		Heartbeats: heartbeat.NewService(st.Store, st.Scheduler, clk)}, Options{BodyLimit: 1 << 20})
	a := &fuzzAPI{app: app, h: app.Handler()}
	status, b := a.do("PUT", "/api/v1/recipients/agent-1", nil, []byte(`{"status":"running","heartbeats":[{"name":"job","period":"1h","grace":"1m"}]}`))
	var r api.Recipient
	if status != 200 || json.Unmarshal(b, &r) != nil || len(r.Heartbeats) != 1 {
		f.Fatalf("declare: %d %s", status, b)
	}
	tok := r.Heartbeats[0].PingURL[strings.Index(r.Heartbeats[0].PingURL, HeartbeatsPath)+len(HeartbeatsPath):]
	f.Fuzz(func(t *testing.T, segment string, body []byte, failed bool) {
		path := HeartbeatsPath + tok
		if segment != "" {
			path = HeartbeatsPath + segment
		}
		if failed {
			path += "/fail"
		}
		status, b := a.do("POST", path, nil, body)
		if status != 200 {
			checkRefusal(t, "ping", status, b)
			return
		}
		var p api.Ping
		if err := strictUnmarshal(b, &p); err != nil || p.Heartbeat != "job" || p.Failed != failed {
			t.Fatalf("%q %q answered %s (%v)", segment, body, b, err)
		}
		if len(body) > heartbeat.MaxNote || segment != "" && segment != tok {
			t.Fatalf("%q with %d bytes pinged", segment, len(body))
		}
		rec, err := st.Store.GetRecipient(context.Background(), "agent-1")
		if err != nil || len(rec.Heartbeats) != 1 || rec.Heartbeats[0].Failed != failed || !utf8.ValidString(rec.Heartbeats[0].Note) || len(rec.Heartbeats[0].Note) > 3*heartbeat.MaxNote {
			t.Fatalf("recorded %+v %v", rec.Heartbeats, err)
		}
	})
}
