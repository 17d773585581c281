package httpapi

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// refusingScheduler refuses every registration as a cluster node refused
// for its plugin set does.
type refusingScheduler struct {
	Scheduler
	err error
}

func (s refusingScheduler) Register(context.Context, scheduler.Registration) (store.Watch, error) {
	return store.Watch{}, s.err
}

// A node refused for its plugin set answers a registration 503
// plugin_set_mismatch with Retry-After, as the document says.
func TestAPluginSetMismatchIs503WithRetryAfter(t *testing.T) {
	f := newFixture(t)
	refusal := &api.Error{Code: api.CodePluginSetMismatch, Message: "node b serves plugin set 1a and the cluster 2b", RetryAfter: 1500 * time.Millisecond}
	app := New(Deps{Scheduler: refusingScheduler{Scheduler: f.sched, err: refusal}, Watches: f.st, Mailboxes: f.del, Recipients: f.recips, Plugins: fakePlugins()}, Options{})
	resp, b := call(t, app, "", "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`)
	var env api.ErrorEnvelope
	if err := json.Unmarshal(b, &env); err != nil || resp.StatusCode != 503 || env.Error.Code != api.CodePluginSetMismatch ||
		env.Error.Message != refusal.Message || resp.Header.Get("Retry-After") != "2" {
		t.Fatalf("%d %s (Retry-After %q); want 503 plugin_set_mismatch, Retry-After 2", resp.StatusCode, b, resp.Header.Get("Retry-After"))
	}
	doc, _ := openAPI(t)
	if msg := conforms(doc, openAPICompiler(t), "POST", "/api/v1/watches", resp, b); msg != "" {
		t.Fatal(msg)
	}
}
