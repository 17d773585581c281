package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authztest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/observe"
)

// recordApp serves the API with an observer of observeConfig whose
// principal budget is burst records, logging the server's and the
// observer's lines to logs.
func recordApp(t *testing.T, burst int, logs io.Writer) func(token, scope, body string) (*http.Response, []byte) {
	t.Helper()
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins(), Clock: fakeclock.At(t0)})
	ob, err := observe.New(observe.Options{Store: st.Store, Clock: fakeclock.At(t0), Logger: log, Rate: 0.001, Burst: burst}, observeConfig())
	if err != nil {
		t.Fatal(err)
	}
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins(), Observe: ob, Logger: log},
		Options{Auth: authztest.Guard(t, map[string]string{"token-of-the-tester-0123": "tester", "token-of-mallory-0123456": "mallory"})})
	return func(token, scope, body string) (*http.Response, []byte) {
		return call(t, app, token, "POST", "/api/v1/scopes/"+scope+"/observe", body)
	}
}

const testerToken = "token-of-the-tester-0123"

// The run a record names is answered on its event, the first run's for a
// repeat from another; a bad run is 422 naming the field; a repeat over
// budget is a duplicate, not 429; and neither the text nor anything of it
// reaches the server's or the observer's log.
func TestObserveRunAndBudgetOverHTTP(t *testing.T) {
	var logs bytes.Buffer
	do := recordApp(t, 1, &logs)
	const secret = "customer card 4111-1111"
	result := func(resp *http.Response, b []byte, status int) api.ObserveResult {
		t.Helper()
		var got api.ObserveResult
		if err := json.Unmarshal(b, &got); resp.StatusCode != status || err != nil {
			t.Fatalf("%d %s, want %d", resp.StatusCode, b, status)
		}
		return got
	}
	resp, b := do(testerToken, "support", `{"item":"m1","thread":"T","text":"`+secret+`","run":"nightly@1"}`)
	if got := result(resp, b, 201); got.Event.Run != "nightly@1" || got.Event.Reporter != "tester" || got.Duplicate {
		t.Fatalf("record: %+v", got)
	}
	// The budget (one record) is spent: repeats from other runs, or none,
	// are still duplicates, keeping the first run.
	for _, run := range []string{`,"run":"nightly@2"`, ``} {
		resp, b := do(testerToken, "support", `{"item":"m1","thread":"T","text":"`+secret+`"`+run+`}`)
		if got := result(resp, b, 200); !got.Duplicate || got.Event.Run != "nightly@1" || got.Event.Seq != 1 || resp.Header.Get("Retry-After") != "" {
			t.Fatalf("repeat over budget: %+v", got)
		}
	}
	resp, b = do(testerToken, "support", `{"item":"m2","thread":"T","text":"`+secret+`","run":"nightly@2"}`)
	if resp.StatusCode != 429 || resp.Header.Get("Retry-After") == "" || !strings.Contains(string(b), "rate_limited") {
		t.Fatalf("new item over budget: %d %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), b)
	}
	for _, body := range []string{`{"item":"m3","thread":"T","run":"a b"}`, `{"item":"m3","thread":"T","run":""}`, `{"item":"m3","thread":"T","run":"` + strings.Repeat("r", 129) + `"}`} {
		resp, b := do(testerToken, "support", body)
		var env api.ErrorEnvelope
		if err := json.Unmarshal(b, &env); resp.StatusCode != 422 || err != nil || env.Error.Code != api.CodeInvalidField || env.Error.Field != "run" {
			t.Fatalf("%.60s: %d %s", body, resp.StatusCode, b)
		}
	}
	if strings.Contains(logs.String(), "4111") {
		t.Fatalf("an item's text reached the log: %s", logs.String())
	}
}

// A scope whose last observe entry is gone answers observe_unavailable to
// every record, before its body is read: not not_a_reporter, not a body
// error. An unknown scope stays not_found.
func TestObserveUnavailableWithoutAnEntry(t *testing.T) {
	do := recordApp(t, 10, io.Discard)
	for _, tt := range []struct {
		token, scope, body, code string
		status                   int
	}{
		{testerToken, "gone", `{"item":"m1","thread":"T"}`, api.CodeObserveUnavailable, 404},
		{testerToken, "gone", `{"item":`, api.CodeObserveUnavailable, 404},
		{testerToken, "gone", `{"item":"","thread":"T","run":"a b"}`, api.CodeObserveUnavailable, 404},
		{"token-of-mallory-0123456", "gone", `{"item":"m1","thread":"T"}`, api.CodeObserveUnavailable, 404},
		{"token-of-mallory-0123456", "closed", `{"item":"m1","thread":"T"}`, api.CodeNotAReporter, 403},
		{testerToken, "nowhere", `{"item":"m1","thread":"T"}`, api.CodeNotFound, 404},
	} {
		resp, b := do(tt.token, tt.scope, tt.body)
		var env api.ErrorEnvelope
		if err := json.Unmarshal(b, &env); err != nil || env.Error.Code != tt.code || resp.StatusCode != tt.status {
			t.Errorf("%s %s: %d %s, want %s", tt.scope, tt.body, resp.StatusCode, b, tt.code)
		}
	}
}
