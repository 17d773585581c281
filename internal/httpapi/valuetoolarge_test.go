package httpapi

import (
	"net/http"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/store"
)

// A write the store refuses for a value over its bound (a record the
// request's own input made too large) is 422 invalid_field, never 500.
func TestAValueOverTheStoresBoundIs422(t *testing.T) {
	c := faultCore(t, &faultKV{before: func(o store.TxOptions) error {
		if o.Name == "create-if-running" {
			return &store.ValueTooLargeError{Fam: store.FamRow, Size: 2 << 20, Limit: store.MaxValue}
		}
		return nil
	}}, 13)
	app := New(Deps{Scheduler: c.Scheduler, Watches: c.Store, Mailboxes: c.Delivery, Recipients: c.Recipients, Plugins: fakePlugins()},
		Options{BodyLimit: 4096, StreamWait: 50 * time.Millisecond})
	resp, b := call(t, app, "", "POST", "/api/v1/watches", `{"kind":"ci","params":{"sha":"abc"},"recipient":{"id":"agent-1"}}`)
	var env api.ErrorEnvelope
	decodeJSON(t, b, &env)
	if resp.StatusCode != http.StatusUnprocessableEntity || env.Error.Code != api.CodeInvalidField {
		t.Fatalf("a registration whose row is over the store's bound: %d %s, want 422 invalid_field", resp.StatusCode, b)
	}
	doc, _ := openAPI(t)
	if why := conforms(doc, openAPICompiler(t), "POST", "/api/v1/watches", resp, b); why != "" {
		t.Fatal(why)
	}
}
