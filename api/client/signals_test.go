package client_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/httpapi"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/signal"
)

// A signal registered through the client answers its URL; SendSignal
// answers it without the client's bearer token, and a second answer is
// already_settled with the first's outcome beside it.
func TestSendSignal(t *testing.T) {
	reg := kind.NewRegistry()
	if err := (signal.Kind{}).Register(reg); err != nil {
		t.Fatal(err)
	}
	st := apitest.NewStack(t, apitest.Config{Plugins: reg, Clock: fakeclock.At(t0)})
	app := httpapi.New(httpapi.Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients,
		Signals: signal.NewService(st.Store, st.Scheduler)},
		httpapi.Options{Auth: authztest.Guard(t, map[string]string{"agent-1-token-for-the-client": "agent-1"})})
	url := apitest.Serve(t, app)
	c := client.New(url, client.WithToken("agent-1-token-for-the-client"))
	ctx := context.Background()
	w, err := c.CreateWatch(ctx, api.WatchRequest{Kind: "signal", Params: json.RawMessage(`{"title":"Go?","outcomes":["go","stop"]}`), Recipient: api.RecipientRef{ID: "agent-1"}})
	if err != nil || !strings.HasPrefix(w.SignalURL, url+client.SignalsPath) {
		t.Fatalf("registered %+v %v", w, err)
	}
	if _, err := c.SendSignal(ctx, w.SignalURL, api.SignalRequest{Outcome: "approve"}); err == nil {
		t.Fatal("an outcome not offered was taken")
	} else {
		wantAPIError(t, err, api.CodeInvalidField, "outcome", "")
	}
	s, err := c.SendSignal(ctx, w.SignalURL, api.SignalRequest{Outcome: "go", Data: json.RawMessage(`{"n":1}`)})
	if err != nil || s.State != "fired" || s.Outcome != "go" || string(s.Data) != `{"n":1}` {
		t.Fatalf("answered %+v %v", s, err)
	}
	s, err = client.New("http://elsewhere.invalid").SendSignal(ctx, w.SignalURL, api.SignalRequest{Outcome: "stop"})
	var ae *api.Error
	if !errors.As(err, &ae) || ae.Code != api.CodeAlreadySettled || s.Outcome != "go" {
		t.Fatalf("a second answer: %+v %v", s, err)
	}
}

// SendSignal sends no bearer token, whichever the client holds, and takes
// only a signal's URL.
func TestSendSignalSendsNoToken(t *testing.T) {
	var auth []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = append(auth, r.Header.Get("Authorization"))
		_, _ = w.Write([]byte(`{"title":"t","outcomes":["approve"],"state":"fired","outcome":"approve"}`))
	}))
	t.Cleanup(srv.Close)
	c := client.New(srv.URL, client.WithToken("a-secret-of-the-client-0"))
	if _, err := c.SendSignal(context.Background(), srv.URL+client.SignalsPath+"AAAAAAAAAAAAAAAAAAAAAA", api.SignalRequest{Outcome: "approve"}); err != nil {
		t.Fatal(err)
	}
	if len(auth) != 1 || auth[0] != "" {
		t.Fatalf("Authorization sent: %q", auth)
	}
	for _, bad := range []string{"", "ftp://h/api/v1/signals/x", srv.URL + "/api/v1/watches/x", srv.URL + client.SignalsPath, srv.URL + client.SignalsPath + "a/b", "/api/v1/signals/x"} {
		if _, err := c.SendSignal(context.Background(), bad, api.SignalRequest{Outcome: "approve"}); err == nil {
			t.Errorf("%q was taken as a signal's URL", bad)
		}
	}
	if len(auth) != 1 {
		t.Fatalf("a refused URL was called: %d calls", len(auth))
	}
}
