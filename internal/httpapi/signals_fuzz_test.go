package httpapi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/signal"
)

// FuzzSendSignal: POST /api/v1/signals/{token} over the real core, with
// any body and any path segment, either answers the signal fired with an
// outcome it offers and data its schema admits (once), or 409 with the
// signal as it settled, or refuses as the client's mistake: never a 5xx.
// Each input is tried on a fresh signal, and its own path segment on the
// same one.
func FuzzSendSignal(f *testing.F) {
	for _, b := range []string{
		`{"outcome":"approve","data":{"reason":"ok"}}`,
		`{"outcome":"deny","data":{"reason":"` + strings.Repeat("x", 40) + `"}}`,
		`{"outcome":"approve"}`, `{"outcome":"maybe","data":{}}`, `{"outcome":""}`, `{}`, ``, `null`, `[]`,
		`{"outcome":"approve","data":null}`, `{"outcome":"approve","data":{"reason":1}}`,
		`{"outcome":"approve","data":{"reason":"ok"},"extra":1}`, `{"outcome":"approve"}{"outcome":"deny"}`,
		`{"outcome":"approve","data":` + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + `}`,
		`{"outcome":"approve","data":"` + strings.Repeat("d", signal.MaxData) + `"}`,
	} {
		f.Add([]byte(b), "")
	}
	f.Add([]byte(`{"outcome":"approve","data":{"reason":"ok"}}`), "AAAAAAAAAAAAAAAAAAAAAA")
	f.Add([]byte(`{"outcome":"approve","data":{"reason":"ok"}}`), "%2e%2e%2fwatches")
	reg := kind.NewRegistry()
	if err := (signal.Kind{}).Register(reg); err != nil {
		f.Fatal(err)
	}
	st := apitest.NewStack(f, apitest.Config{Plugins: reg, Clock: fakeclock.At(t0)})
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients,
		Signals: signal.NewService(st.Store, st.Scheduler)}, Options{BodyLimit: 1 << 20})
	a := &fuzzAPI{app: app, h: app.Handler()}
	const params = `{"title":"Why?","schema":{"type":"object","required":["reason"],"properties":{"reason":{"type":"string","maxLength":40}}}}`
	f.Fuzz(func(t *testing.T, body []byte, segment string) {
		status, b := a.do("POST", "/api/v1/watches", nil, []byte(`{"kind":"signal","recipient":{"id":"agent-1"},"params":`+params+`}`))
		var w api.Watch
		if status != 201 || json.Unmarshal(b, &w) != nil {
			t.Fatalf("register: %d %s", status, b)
		}
		tok := w.SignalURL[strings.Index(w.SignalURL, SignalsPath)+len(SignalsPath):]
		path := SignalsPath + tok
		if segment != "" {
			path = SignalsPath + segment
		}
		for range 2 {
			status, b := a.do("POST", path, nil, body)
			switch {
			case status == 200:
				var s api.Signal
				if err := strictUnmarshal(b, &s); err != nil || s.State != "fired" || !slices.Contains(s.Outcomes, s.Outcome) {
					t.Fatalf("%q answered %s (%v)", body, b, err)
				}
				var d struct {
					Reason string `json:"reason"`
				}
				if err := json.Unmarshal(s.Data, &d); err != nil || d.Reason == "" || len(d.Reason) > 40 {
					t.Fatalf("%q: data its schema refuses was taken: %s", body, s.Data)
				}
				if segment != "" && segment != tok {
					t.Fatalf("path %q answered another's signal", segment)
				}
			case status == 409:
				var c api.SignalConflict
				if err := strictUnmarshal(b, &c); err != nil || c.Error.Code != api.CodeAlreadySettled || c.Signal.State != "fired" {
					t.Fatalf("%q: 409 %s (%v)", body, b, err)
				}
			default:
				checkRefusal(t, "send", status, b)
			}
		}
		// Within the recipient's bound of pending watches, however many
		// inputs run.
		if status, b := a.do("DELETE", "/api/v1/watches/"+w.ID, nil, nil); status != 200 && status != 409 {
			t.Fatalf("cancel: %d %s", status, b)
		}
	})
}
