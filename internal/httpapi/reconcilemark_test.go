package httpapi

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/store"
)

// TestReconcileAfterPutIsTheHostsWrite: the writes that follow a PUT of
// a recipient (its standing watches registered, or cancelled) are the
// host's, not the client's: with every write a client marks refused as a
// disk short of the client's margin refuses it, once the record itself
// is written the PUT still registers the watch its ref names, and
// stopping the recipient still cancels it. Only the record's own write
// carries the client's mark.
func TestReconcileAfterPutIsTheHostsWrite(t *testing.T) {
	var (
		mu     sync.Mutex
		marked = map[string]int{} // transitions that reached the store as a client's, by name
		host   = map[string]int{} // and as the host's own
	)
	c := faultCore(t, &faultKV{before: func(o store.TxOptions) error {
		mu.Lock()
		defer mu.Unlock()
		if !o.Client {
			host[o.Name]++
			return nil
		}
		marked[o.Name]++
		if o.Name == "put-recipient" {
			return nil // the record lands: the disk was just above the client's margin
		}
		return &store.StorageFullError{Dir: "/var/lib/vigil/store", Free: 900 << 10, Need: 3 << 20}
	}}, 11)
	app := New(Deps{Scheduler: c.Scheduler, Watches: c.Store, Mailboxes: c.Delivery, Recipients: c.Recipients, Plugins: fakePlugins()},
		Options{BodyLimit: 4096, StreamWait: 50 * time.Millisecond})

	resp, b := call(t, app, "", "PUT", "/api/v1/recipients/agent-7", `{"status":"running","refs":[{"kind":"ticket","params":{"issue":"o/r#1"}}]}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT of a running recipient with a ref, the client's margin refused after its record: %d %s, want 200", resp.StatusCode, b)
	}
	pending, _, err := c.Store.List(context.Background(), store.Filter{Recipient: "agent-7", State: store.Pending})
	if err != nil {
		t.Fatal(err)
	}
	if len(pending) != 1 || pending[0].Kind != "ticket" {
		t.Fatalf("pending watches of agent-7 after the PUT: %+v, want its one ticket watch", pending)
	}

	resp, b = call(t, app, "", "PUT", "/api/v1/recipients/agent-7", `{"status":"stopped"}`)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("PUT stopping the recipient: %d %s, want 200", resp.StatusCode, b)
	}
	w, err := c.Store.Get(context.Background(), pending[0].ID)
	if err != nil {
		t.Fatal(err)
	}
	if w.State != store.Cancelled {
		t.Fatalf("the ticket watch after its recipient stopped: %s, want cancelled", w.State)
	}

	mu.Lock()
	defer mu.Unlock()
	for name, n := range marked {
		if name != "put-recipient" {
			t.Errorf("%d %q transitions carried the client's mark: a reconciliation's write is the host's", n, name)
		}
	}
	if marked["put-recipient"] != 2 {
		t.Errorf("%d marked writes of the record, want 2 (the PUTs')", marked["put-recipient"])
	}
	if len(host) == 0 {
		t.Error("no write of the host's reached the store")
	}
}
