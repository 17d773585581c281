package httpapi

import (
	"context"
	"encoding/json"
	"net/http"
	"slices"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/apitest"
	"github.com/vigilhq/vigil/internal/authz"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/kind"
)

// fakeKindSource is a KindSource the test writes: set replaces the
// kinds and closes the change signal, as a plugin reload does; each call
// of Changed is told on asked, so the test knows a wait has parked.
type fakeKindSource struct {
	mu      sync.Mutex // guards infos and changed
	infos   []kind.Info
	changed chan struct{}
	asked   chan struct{}
}

func newFakeKindSource(names ...string) *fakeKindSource {
	k := &fakeKindSource{changed: make(chan struct{}), asked: make(chan struct{}, 16)}
	k.set(names...)
	return k
}

func (k *fakeKindSource) Infos() []kind.Info {
	k.mu.Lock()
	defer k.mu.Unlock()
	return slices.Clone(k.infos)
}

func (k *fakeKindSource) Changed() <-chan struct{} {
	k.mu.Lock()
	defer k.mu.Unlock()
	select {
	case k.asked <- struct{}{}:
	default:
	}
	return k.changed
}

func (k *fakeKindSource) set(names ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.infos = nil
	for _, n := range names {
		k.infos = append(k.infos, kind.Info{Kind: n, Summary: "the " + n + " kind"})
	}
	close(k.changed)
	k.changed = make(chan struct{})
}

var _ KindSource = (*fakeKindSource)(nil)

func kindsCall(t *testing.T, do func() (*http.Response, []byte)) (int, api.KindList) {
	t.Helper()
	resp, b := do()
	var l api.KindList
	if resp.StatusCode == 200 {
		if err := json.Unmarshal(b, &l); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
	}
	return resp.StatusCode, l
}

// GET /kinds?wait= is a long poll on the list's version: at once on a
// version the caller has not seen, at the end of the wait on the same
// one, woken by a change of the kinds and not by a write of the same
// kinds again; a wait outside 0s..60s is invalid_field.
func TestKindsWait(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: slowKinds(), Clock: fakeclock.At(t0)})
	src := newFakeKindSource("ci", "timer")
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins(), Kinds: src}, Options{})
	get := func(path string) func() (*http.Response, []byte) {
		return func() (*http.Response, []byte) { return call(t, app, "", "GET", path, "") }
	}

	code, first := kindsCall(t, get("/api/v1/kinds"))
	if code != 200 || first.Version == "" || len(first.Kinds) != 2 {
		t.Fatalf("GET /kinds: %d %+v", code, first)
	}
	if _, l := kindsCall(t, get("/api/v1/kinds?wait=60s&since=not-it")); l.Version != first.Version {
		t.Errorf("a wait on a version not seen: %+v, want the list at once", l)
	}
	if _, l := kindsCall(t, get("/api/v1/kinds?wait=10ms&since="+first.Version)); l.Version != first.Version {
		t.Errorf("a wait that ran out: %+v, want the list unchanged", l)
	}
	for _, bad := range []string{"2m", "-1s", "soon"} {
		resp, b := call(t, app, "", "GET", "/api/v1/kinds?wait="+bad, "")
		var env api.ErrorEnvelope
		_ = json.Unmarshal(b, &env)
		if resp.StatusCode != 422 || env.Error.Code != api.CodeInvalidField || env.Error.Field != "wait" {
			t.Errorf("wait=%s: %d %s, want 422 invalid_field naming wait", bad, resp.StatusCode, b)
		}
	}

	for len(src.asked) > 0 {
		<-src.asked
	}
	done := make(chan api.KindList, 1)
	go func() {
		req, _ := http.NewRequest("GET", "/api/v1/kinds?wait=60s&since="+first.Version, nil)
		resp, err := app.Test(req, 10_000) // far short of the wait: only a wake answers in time
		if err != nil {
			t.Error(err)
			done <- api.KindList{}
			return
		}
		var l api.KindList
		_ = json.NewDecoder(resp.Body).Decode(&l)
		done <- l
	}()
	<-src.asked            // the wait took the signal, then reads the kinds
	src.set("ci", "timer") // the same kinds written again
	<-src.asked            // woken, it found the same version and waits again
	src.set("ci", "timer", "http")
	l := <-done
	if l.Version == first.Version || len(l.Kinds) != 3 {
		t.Fatalf("the wait across a reload that added http: %+v", l)
	}
}

// A wait on the kinds ends, 401, when its token is revoked while it
// waits.
func TestKindsWaitEndsOnRevocation(t *testing.T) {
	st := apitest.NewStack(t, apitest.Config{Plugins: slowKinds(), Clock: fakeclock.At(t0)})
	src := newFakeKindSource("ci")
	guard := authz.NewGuard(mustCompile(t, grantTokens()))
	app := New(Deps{Scheduler: st.Scheduler, Watches: st.Store, Mailboxes: st.Delivery, Recipients: st.Recipients, Plugins: fakePlugins(), Kinds: src, Base: context.Background()}, Options{Auth: guard})
	own := grantPrincipals[0].token
	_, cur := kindsCall(t, func() (*http.Response, []byte) { return call(t, app, own, "GET", "/api/v1/kinds", "") })
	for len(src.asked) > 0 {
		<-src.asked
	}
	done := make(chan *http.Response, 1)
	go func() {
		req, _ := http.NewRequest("GET", "/api/v1/kinds?wait=60s&since="+cur.Version, nil)
		req.Header.Set("Authorization", "Bearer "+own)
		resp, err := app.Test(req, 10_000)
		if err != nil {
			t.Error(err)
		}
		done <- resp
	}()
	<-src.asked // parked (or about to)
	if _, err := guard.Swap(mustCompile(t, slices.Delete(grantTokens(), 0, 1))); err != nil {
		t.Fatal(err)
	}
	r := <-done
	if r == nil || r.StatusCode != 401 {
		t.Fatalf("the revoked wait: %v", r)
	}
}
