package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/internal/watchwait"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// slowKinds serves "slow", which answers pending with a note naming the
// attempt, and "done", which settles on its first probe.
func slowKinds() *hosttest.FakeKinds {
	info := func(name string) kind.Info {
		return kind.Info{Kind: name, DefaultEvery: 30 * time.Second, Observable: true}
	}
	return hosttest.NewFakeKinds(info("slow"), info("done")).OnObserve(func(r abi.ObserveRequest) (kind.Observation, error) {
		if r.Kind == "done" {
			return hosttest.Settled("success")
		}
		return hosttest.Pending(fmt.Sprintf("seen %d", r.Attempt))
	})
}

// readSignal tells the test each time the wait has read the watch, so it
// changes the watch only once the request is about to wait on it.
type readSignal struct {
	Watches
	read chan store.Watch
}

func (r readSignal) Get(ctx context.Context, id store.ID) (store.Watch, error) {
	w, err := r.Watches.Get(ctx, id)
	select {
	case r.read <- w:
	default:
	}
	return w, err
}

type waitFixture struct {
	app   *fiber.App
	stack *apitest.Stack
	clock *fakeclock.Clock
	read  chan store.Watch
}

func newWaitFixture(t *testing.T, sched Scheduler) *waitFixture {
	t.Helper()
	clock := fakeclock.At(t0)
	st := apitest.NewStack(t, apitest.Config{Plugins: slowKinds(), Clock: clock})
	if sched == nil {
		sched = st.Scheduler
	}
	read := make(chan store.Watch, 16)
	app := New(Deps{Scheduler: sched, Watches: readSignal{st.Store, read}, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins()}, Options{})
	return &waitFixture{app: app, stack: st, clock: clock, read: read}
}

func (f *waitFixture) register(t *testing.T, kind string) api.Watch {
	t.Helper()
	status, b := f.get(t, "POST", "/api/v1/watches", `{"kind":"`+kind+`","params":{},"recipient":{"id":"agent-1"}}`)
	if status != 201 {
		t.Fatalf("register: %d %s", status, b)
	}
	var w api.Watch
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	f.drain()
	return w
}

func (f *waitFixture) drain() {
	for {
		select {
		case <-f.read:
		default:
			return
		}
	}
}

func (f *waitFixture) get(t *testing.T, method, path, body string) (int, []byte) {
	t.Helper()
	resp, b := call(t, f.app, "", method, path, body)
	return resp.StatusCode, b
}

func (f *waitFixture) watch(t *testing.T, id string) api.Watch {
	t.Helper()
	status, b := f.get(t, "GET", "/api/v1/watches/"+id, "")
	if status != 200 {
		t.Fatalf("get: %d %s", status, b)
	}
	var w api.Watch
	if err := json.Unmarshal(b, &w); err != nil {
		t.Fatal(err)
	}
	return w
}

type answer struct {
	status int
	w      api.Watch
	body   []byte
}

// waitAsync starts GET ?wait= in the background and returns once the
// request has read the watch (and found it unchanged, for a since equal
// to its version), so what the test does next happens while it waits.
func (f *waitFixture) waitAsync(t *testing.T, id, since, wait string) <-chan answer {
	t.Helper()
	out := make(chan answer, 1)
	go func() {
		req, _ := http.NewRequest("GET", "/api/v1/watches/"+id+"?wait="+wait+"&since="+since, nil)
		resp, err := f.app.Test(req, 10_000)
		if err != nil {
			t.Error(err)
			out <- answer{}
			return
		}
		var a answer
		a.status = resp.StatusCode
		_ = json.NewDecoder(resp.Body).Decode(&a.w)
		_ = resp.Body.Close()
		out <- a
	}()
	<-f.read
	return out
}

func TestWaitAnswersAtOnceOnADifferentVersion(t *testing.T) {
	f := newWaitFixture(t, nil)
	w := f.register(t, "slow")
	if w.Version == "" {
		t.Fatal("a watch without a version")
	}
	for _, since := range []string{"", "not-its-version"} {
		// A 60 s wait that answers at once: app.Test's bound (10 s) fails
		// a wait that does not.
		status, b := f.get(t, "GET", "/api/v1/watches/"+w.ID+"?wait=60s&since="+since, "")
		var got api.Watch
		_ = json.Unmarshal(b, &got)
		if status != 200 || got.Version != w.Version {
			t.Fatalf("since %q: %d %s", since, status, b)
		}
	}
}

func TestWaitWakesOnAProbe(t *testing.T) {
	f := newWaitFixture(t, nil)
	w := f.register(t, "slow")
	ch := f.waitAsync(t, w.ID, w.Version, "60s")
	if n := f.stack.Scheduler.Tick(context.Background(), f.clock.Now()); n != 1 {
		t.Fatalf("ticked %d", n)
	}
	a := <-ch
	if a.status != 200 || a.w.Version == w.Version || a.w.Attempts != 1 || a.w.LastNote != "seen 1" {
		t.Fatalf("after the first probe: %d %+v", a.status, a.w)
	}
	// A probe that repeats the note writes no row, and still counts: the
	// attempts are the change.
	ch = f.waitAsync(t, w.ID, a.w.Version, "60s")
	f.clock.Add(30 * time.Second)
	if n := f.stack.Scheduler.Tick(context.Background(), f.clock.Now()); n != 1 {
		t.Fatalf("ticked %d", n)
	}
	b := <-ch
	if b.status != 200 || b.w.Version == a.w.Version || b.w.Attempts != 2 {
		t.Fatalf("after the second probe: %d %+v", b.status, b.w)
	}
	if n := f.stack.Scheduler.Waiters(); n != 0 {
		t.Fatalf("%d waiters left after the waits answered", n)
	}
}

func TestWaitWakesOnSettle(t *testing.T) {
	f := newWaitFixture(t, nil)
	w := f.register(t, "done")
	ch := f.waitAsync(t, w.ID, w.Version, "60s")
	f.stack.Scheduler.Tick(context.Background(), f.clock.Now())
	a := <-ch
	if a.status != 200 || a.w.State != "fired" || a.w.Receipt != "delivered" || a.w.Version == w.Version {
		t.Fatalf("after the settling probe: %d %+v", a.status, a.w)
	}
}

func TestWaitWakesOnCancel(t *testing.T) {
	f := newWaitFixture(t, nil)
	w := f.register(t, "slow")
	ch := f.waitAsync(t, w.ID, w.Version, "60s")
	if status, b := f.get(t, "DELETE", "/api/v1/watches/"+w.ID, ""); status != 200 {
		t.Fatalf("cancel: %d %s", status, b)
	}
	a := <-ch
	if a.status != 200 || a.w.State != "cancelled" || a.w.Version == w.Version {
		t.Fatalf("after the cancel: %d %+v", a.status, a.w)
	}
}

// A pause cancels the recipient's pending watches, and a waiter learns of
// it at once, though nothing is mailed.
func TestWaitWakesOnPause(t *testing.T) {
	f := newWaitFixture(t, nil)
	w := f.register(t, "slow")
	ch := f.waitAsync(t, w.ID, w.Version, "60s")
	if status, b := f.get(t, "PUT", "/api/v1/recipients/agent-1", `{"status":"paused"}`); status != 200 {
		t.Fatalf("pause: %d %s", status, b)
	}
	if a := <-ch; a.status != 200 || a.w.State != "cancelled" {
		t.Fatalf("after the pause: %d %+v", a.status, a.w)
	}
}

func TestWaitEndsAtTheBoundUnchanged(t *testing.T) {
	f := newWaitFixture(t, nil)
	w := f.register(t, "slow")
	status, b := f.get(t, "GET", "/api/v1/watches/"+w.ID+"?wait=20ms&since="+w.Version, "")
	var got api.Watch
	_ = json.Unmarshal(b, &got)
	if status != 200 || got.Version != w.Version || got.State != "pending" {
		t.Fatalf("at the bound: %d %s", status, b)
	}
	// wait=0s answers at once, unchanged.
	status, b = f.get(t, "GET", "/api/v1/watches/"+w.ID+"?wait=0s&since="+w.Version, "")
	if status != 200 || !strings.Contains(string(b), w.Version) {
		t.Fatalf("wait=0s: %d %s", status, b)
	}
}

func TestWaitRefusesABadWait(t *testing.T) {
	f := newWaitFixture(t, nil)
	w := f.register(t, "slow")
	for _, wait := range []string{"2m", "61s", "-1s", "soon", ""} {
		status, b := f.get(t, "GET", "/api/v1/watches/"+w.ID+"?wait="+wait, "")
		var env api.ErrorEnvelope
		_ = json.Unmarshal(b, &env)
		if status != 422 || env.Error.Code != api.CodeInvalidField || env.Error.Field != "wait" {
			t.Errorf("wait=%q: %d %s", wait, status, b)
		}
	}
	// The bound itself is a wait.
	if status, b := f.get(t, "GET", "/api/v1/watches/"+w.ID+"?wait=60s", ""); status != 200 {
		t.Errorf("wait=60s: %d %s", status, b)
	}
}

func TestWaitUnknownWatchIsNotFound(t *testing.T) {
	f := newWaitFixture(t, nil)
	for _, id := range []string{"0000000000000000000000000z", "not-an-id"} {
		if status, b := f.get(t, "GET", "/api/v1/watches/"+id+"?wait=1s", ""); status != 404 {
			t.Errorf("%s: %d %s", id, status, b)
		}
	}
}

// boundedWaiter is the scheduler with its bound of waiters reached.
type boundedWaiter struct{ *scheduler.Scheduler }

func (boundedWaiter) WaitChange(store.ID) (<-chan struct{}, func(), error) {
	return nil, nil, watchwait.ErrTooManyWaiters
}

func TestWaitPastTheBoundIsRefused(t *testing.T) {
	clock := fakeclock.At(t0)
	st := apitest.NewStack(t, apitest.Config{Plugins: slowKinds(), Clock: clock})
	app := New(Deps{Scheduler: boundedWaiter{st.Scheduler}, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins()}, Options{})
	w, err := st.Scheduler.Register(context.Background(), scheduler.Registration{Kind: "slow", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "agent-1"}})
	if err != nil {
		t.Fatal(err)
	}
	resp, b := call(t, app, "", "GET", "/api/v1/watches/"+w.ID.String()+"?wait=10s", "")
	var env api.ErrorEnvelope
	_ = json.Unmarshal(b, &env)
	if resp.StatusCode != 503 || env.Error.Code != api.CodeTooManyWaiters {
		t.Fatalf("past the bound: %d %s", resp.StatusCode, b)
	}
	// Without wait the watch is answered as ever.
	if resp, b := call(t, app, "", "GET", "/api/v1/watches/"+w.ID.String(), ""); resp.StatusCode != 200 {
		t.Fatalf("without wait: %d %s", resp.StatusCode, b)
	}
}

// The version moves with each thing a waiter waits for, and only then.
func TestWatchVersion(t *testing.T) {
	next := t0.Add(time.Hour)
	base := store.Watch{ID: store.ID{1}, Kind: "slow", State: store.Pending, Receipt: store.ReceiptNone, CreatedAt: t0}
	v := toWatch(base).Version
	if again := toWatch(base).Version; again != v {
		t.Fatal("the same watch has two versions")
	}
	settled := t0.Add(time.Minute)
	changes := map[string]func(w *store.Watch){
		"state":      func(w *store.Watch) { w.State = store.Cancelled },
		"receipt":    func(w *store.Watch) { w.Receipt = store.ReceiptDelivered },
		"attempts":   func(w *store.Watch) { w.Attempts = 1 },
		"note":       func(w *store.Watch) { w.LastNote = "x" },
		"fault":      func(w *store.Watch) { w.LastFault = &store.Fault{Reason: "timeout"} },
		"next check": func(w *store.Watch) { w.NextCheck = next },
		"settled_at": func(w *store.Watch) { w.SettledAt = &settled },
		"outcome":    func(w *store.Watch) { w.Outcome = &store.Outcome{Result: "success"} },
	}
	for name, change := range changes {
		w := base
		change(&w)
		if toWatch(w).Version == v {
			t.Errorf("a change of %s keeps the version", name)
		}
	}
	// What the scheduler holds in memory counts too.
	if withSeen(base, scheduler.Seen{Attempts: 3}).Version == v {
		t.Error("probes counted in memory keep the version")
	}
	if withSeen(base, scheduler.Seen{LastProbe: t0}).Version == v {
		t.Error("a last probe's time keeps the version")
	}
	// A note and a fault's reason do not run into each other.
	a, b := base, base
	a.LastNote, a.LastFault = "ab", &store.Fault{Reason: "c"}
	b.LastNote, b.LastFault = "a", &store.Fault{Reason: "bc"}
	if toWatch(a).Version == toWatch(b).Version {
		t.Error("two different observations share a version")
	}
}

// A wait on a watch ends, 401, when its token is revoked while it waits.
func TestWaitEndsOnRevocation(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: slowKinds(), Clock: fakeclock.At(t0)})
	w, err := st.Scheduler.Register(context.Background(), scheduler.Registration{Kind: "slow", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "agent-1"}})
	if err != nil {
		t.Fatal(err)
	}
	policy, err := authz.Compile(grantTokens())
	if err != nil {
		t.Fatal(err)
	}
	guard := authz.NewGuard(policy)
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins()}, Options{Auth: guard})
	own := grantPrincipals[0].token
	resp, b := call(t, app, own, "GET", "/api/v1/watches/"+w.ID.String(), "")
	var cur api.Watch
	if err := json.Unmarshal(b, &cur); err != nil || resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	done := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest("GET", "/api/v1/watches/"+w.ID.String()+"?wait=60s&since="+cur.Version, nil)
		req.Header.Set("Authorization", "Bearer "+own)
		resp, err := app.Test(req, 10_000)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	for st.Scheduler.Waiters() == 0 { // parked before the reload
		time.Sleep(time.Millisecond)
	}
	if _, err := guard.Swap(mustCompile(t, slices.Delete(grantTokens(), 0, 1))); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r == nil || r.StatusCode != 401 {
		t.Fatalf("the revoked wait: %v", r)
	}
}

func mustCompile(t *testing.T, tokens []authz.Token) *authz.Policy {
	t.Helper()
	p, err := authz.Compile(tokens)
	if err != nil {
		t.Fatal(err)
	}
	return p
}
