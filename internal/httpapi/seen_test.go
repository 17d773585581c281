package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// GET /api/v1/watches/{id} answers "why is this still pending?": the
// probes so far and the last one's time from the scheduler's memory
// (newer than the row, which is written only when what they saw changed),
// the last answer's note and the last probe's fault, in the documented
// schema.
func TestAPIShowsWhatAPendingWatchHasSeen(t *testing.T) {
	pl := fakePlugins()
	pl.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		return kind.Observation{Status: abi.StatusPending, Note: "run 7 in progress"}, nil
	})
	st := apitest.NewStack(t, apitest.Config{Plugins: pl, Clock: fakeclock.At(t0)})
	f := &fixture{app: New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: pl}, Options{})}
	code, b := f.do(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`)
	if code != 201 {
		t.Fatalf("register: %d %s", code, b)
	}
	var w api.Watch
	_ = json.Unmarshal(b, &w)
	ctx := context.Background()
	st.Scheduler.Tick(ctx, t0) // pending, with a note: written
	pl.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		ce := &kind.CallError{Kind: "ci", Export: "observe", Reason: kind.FaultTimeout, Err: errors.New("observe ran past 5s")}
		return kind.Observation{Status: abi.StatusPending, Note: "plugin fault: timeout: observe ran past 5s", Fault: ce}, nil
	})
	st.Scheduler.Tick(ctx, t0.Add(30*time.Second)) // a fault: written
	last := t0.Add(90 * time.Second)               // backed off to twice the cadence
	if n := st.Scheduler.Tick(ctx, last); n != 1 { // the same fault: not written
		t.Fatalf("the third probe: %d probed", n)
	}
	if row, _ := st.Store.Get(ctx, mustID(t, w.ID)); row.Attempts != 2 {
		t.Fatalf("the row holds %d attempts, want 2: the repeated fault was written", row.Attempts)
	}

	code, b = f.do(t, "GET", "/api/v1/watches/"+w.ID, "")
	if code != 200 {
		t.Fatalf("get: %d %s", code, b)
	}
	var got api.Watch
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if got.State != "pending" || got.Attempts != 3 || got.LastProbeAt == nil || !got.LastProbeAt.Equal(last) ||
		got.LastNote != "run 7 in progress" || got.LastFault == nil || *got.LastFault != (api.Fault{Reason: "timeout", Message: "observe ran past 5s"}) {
		t.Fatalf("pending watch: %s", b)
	}
	if bytes.Contains(b, []byte("probes_from")) {
		t.Fatalf("one host's view names whose count it is: %s", b)
	}
	validateAgainst(t, "Watch", b)

	// An answer ends the fault.
	pl.OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		return kind.Observation{Status: abi.StatusPending, Note: "run 7 in progress"}, nil
	})
	next, _ := st.Scheduler.NextWake()
	st.Scheduler.Tick(ctx, next)
	_, b = f.do(t, "GET", "/api/v1/watches/"+w.ID, "")
	got = api.Watch{}
	_ = json.Unmarshal(b, &got)
	if got.Attempts != 4 || got.LastFault != nil || got.LastProbeAt == nil || !got.LastProbeAt.Equal(next) {
		t.Fatalf("after an answer: %s", b)
	}
	validateAgainst(t, "Watch", b)
}

// fakeClusterSeen is a SeenReader as a cluster node's: the owner's
// count when owner is set, else the store's; with unheard, the owner's
// count comes back with ok false, which the view must not show.
type fakeClusterSeen struct {
	mu      sync.Mutex
	owner   *scheduler.Seen
	unheard bool
}

func (f *fakeClusterSeen) Seen(context.Context, store.ID) (scheduler.Seen, string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.owner == nil {
		return scheduler.Seen{}, api.ProbesFromStore, false
	}
	if f.unheard {
		return *f.owner, api.ProbesFromStore, false
	}
	return *f.owner, api.ProbesFromOwner, true
}

// On a cluster the view of a pending watch says whose count it shows: the
// owner's, with its probes and last probe time, or the store's, with the
// row's count and no last probe time; a settled watch's says nothing.
func TestAPIShowsWhoseCountOnACluster(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: fakePlugins(), Clock: fakeclock.At(t0)})
	seen := &fakeClusterSeen{}
	f := &fixture{app: New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins(), Seen: seen}, Options{})}
	code, b := f.do(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"agent-1"}}`)
	if code != 201 {
		t.Fatalf("register: %d %s", code, b)
	}
	var w api.Watch
	_ = json.Unmarshal(b, &w)
	last := t0.Add(time.Minute)
	seen.mu.Lock()
	seen.owner = &scheduler.Seen{Attempts: 9, LastProbe: last}
	seen.mu.Unlock()
	_, b = f.do(t, "GET", "/api/v1/watches/"+w.ID, "")
	var got api.Watch
	_ = json.Unmarshal(b, &got)
	if got.Attempts != 9 || got.LastProbeAt == nil || !got.LastProbeAt.Equal(last) || got.ProbesFrom != "owner" {
		t.Fatalf("with the owner's answer: %s", b)
	}
	validateAgainst(t, "Watch", b)
	ownerVersion := got.Version

	seen.mu.Lock()
	seen.owner = nil
	seen.mu.Unlock()
	_, b = f.do(t, "GET", "/api/v1/watches/"+w.ID, "")
	got = api.Watch{}
	_ = json.Unmarshal(b, &got)
	if got.Attempts != 0 || got.LastProbeAt != nil || got.ProbesFrom != "store" || got.Version == ownerVersion {
		t.Fatalf("without the owner's answer: %s", b)
	}
	validateAgainst(t, "Watch", b)

	// A count that came back with ok false is not the owner's answer.
	seen.mu.Lock()
	seen.owner, seen.unheard = &scheduler.Seen{Attempts: 9, LastProbe: last}, true
	seen.mu.Unlock()
	_, b = f.do(t, "GET", "/api/v1/watches/"+w.ID, "")
	got = api.Watch{}
	_ = json.Unmarshal(b, &got)
	if got.Attempts != 0 || got.LastProbeAt != nil || got.ProbesFrom != "store" {
		t.Fatalf("with a count not answered: %s", b)
	}

	code, b = f.do(t, "DELETE", "/api/v1/watches/"+w.ID, "")
	if code != 200 {
		t.Fatalf("cancel: %d %s", code, b)
	}
	_, b = f.do(t, "GET", "/api/v1/watches/"+w.ID, "")
	if bytes.Contains(b, []byte("probes_from")) {
		t.Fatalf("a settled watch's view names whose count it is: %s", b)
	}
}

// validateAgainst checks body against a schema of api/openapi.yaml.
func validateAgainst(t *testing.T, schema string, body []byte) {
	t.Helper()
	sch, err := openAPICompiler(t).Compile("file:///openapi.json#/components/schemas/" + schema)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if err := sch.Validate(v); err != nil {
		t.Fatalf("%s does not match the %s schema: %v", body, schema, err)
	}
}

func mustID(t *testing.T, s string) store.ID {
	t.Helper()
	id, err := store.ParseID(s)
	if err != nil {
		t.Fatal(err)
	}
	return id
}
