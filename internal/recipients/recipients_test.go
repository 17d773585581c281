package recipients

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/webhooks"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fakePlugins serves a wait kind "ci" and a standing kind "ticket", each
// settling on its first probe; params naming a Work are admitted only for
// a caller that may read it.
func fakePlugins() *hosttest.FakeKinds {
	return hosttest.NewFakeKinds(
		kind.Info{Kind: "ci", DefaultEvery: 30 * time.Second},
		kind.Info{Kind: "ticket", Standing: true, DefaultEvery: time.Minute},
	).OnObserve(func(abi.ObserveRequest) (kind.Observation, error) {
		return hosttest.Settled("success")
	}).OnAdmit(func(_ string, req kind.AdmitRequest) (kind.Admission, error) {
		if strings.Contains(string(req.Params), `"work"`) {
			// Params naming a record: admitted only for a caller that may
			// read it, hidden as an unknown id otherwise.
			if err := kind.MayRead(req.Caller, kind.Object{Class: kind.ObjectWork, ID: "w1", Scope: "support"}); err != nil {
				return kind.Admission{}, &kind.HiddenError{NotFound: &api.Error{Code: api.CodeNotFound, Message: `no work item "w1"`}, Reason: err}
			}
		}
		if strings.Contains(string(req.Params), `"bad"`) {
			return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "params.bad", Message: "bad"}
		}
		return kind.Admission{}, nil
	})
}

// countingDeliverer settles and carries on the store, and counts what it
// mailed.
type countingDeliverer struct {
	st *store.Store
	mu sync.Mutex
	n  int
}

func (d *countingDeliverer) Settle(ctx context.Context, id store.ID, s store.Settlement, m store.Message) (store.Watch, error) {
	w, mailed, err := d.st.SettleAndMail(ctx, id, s, m)
	d.count(mailed)
	return w, err
}

func (d *countingDeliverer) Carry(ctx context.Context, id store.ID, b json.RawMessage, a int, note string, change *store.Message) (bool, error) {
	mailed, err := d.st.CarryAndMail(ctx, id, b, a, note, change)
	d.count(mailed)
	return mailed.Message != nil, err
}

func (d *countingDeliverer) count(m store.Mailed) {
	if m.Message == nil {
		return
	}
	d.mu.Lock()
	d.n++
	d.mu.Unlock()
}

type fixture struct {
	st      *store.Store
	sched   *scheduler.Scheduler
	svc     *Service
	plugins *hosttest.FakeKinds
	mail    *countingDeliverer
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	st, err := badger.OpenStore(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	f := &fixture{st: st, plugins: fakePlugins(), mail: &countingDeliverer{st: st}}
	f.sched, err = scheduler.New(scheduler.Config{Store: st, Plugins: f.plugins, Deliver: f.mail, Recipients: st, Clock: fakeclock.At(t0)})
	if err != nil {
		t.Fatal(err)
	}
	f.svc = New(st, f.sched, f.plugins, fakeclock.At(t0), nil)
	return f
}

func (f *fixture) pending(t *testing.T, rid string) []store.Watch {
	t.Helper()
	ws, _, err := f.st.List(context.Background(), store.Filter{Recipient: rid, State: store.Pending})
	if err != nil {
		t.Fatal(err)
	}
	return ws
}

// Pausing a recipient with 100 pending watches cancels all 100 and mails
// nothing; probes after that find nothing to do.
func TestPausingCancelsEveryWatchOfTheRecipient(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	for range 100 {
		if _, err := f.sched.Register(ctx, scheduler.Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "worker"}}); err != nil {
			t.Fatal(err)
		}
	}
	// Another recipient's watch is not touched.
	other, _ := f.sched.Register(ctx, scheduler.Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "orchestrator"}})

	if _, err := f.svc.Put(ctx, Update{ID: "worker", Status: store.StatusPaused}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.pending(t, "worker")); n != 0 {
		t.Fatalf("%d watches still pending", n)
	}
	cancelled, _, _ := f.st.List(ctx, store.Filter{Recipient: "worker", State: store.Cancelled})
	if len(cancelled) != 100 || cancelled[0].LastNote != "recipient paused" {
		t.Fatalf("%d cancelled, note %q", len(cancelled), cancelled[0].LastNote)
	}
	f.sched.Tick(ctx, t0)
	if f.mail.n != 1 || f.plugins.Probes() != 1 {
		t.Fatalf("mailed %d, probed %d: only the other recipient's watch may run", f.mail.n, f.plugins.Probes())
	}
	if got, _ := f.st.Get(ctx, other.ID); got.State != store.Fired {
		t.Fatalf("other recipient's watch: %+v", got)
	}
}

func TestRefsKeepOneStandingWatchEach(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	refA := store.Ref{Kind: "ticket", Params: json.RawMessage(`{"repo":"a/b","number":1}`)}
	refB := store.Ref{Kind: "ticket", Params: json.RawMessage(`{"number":2,"repo":"a/b"}`)}
	if _, err := f.svc.Put(ctx, Update{ID: "w", Status: store.StatusRunning, Refs: []store.Ref{refA, refB}}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.pending(t, "w")); n != 2 {
		t.Fatalf("%d standing watches, want 2", n)
	}
	// Idempotent, and insensitive to key order in params.
	refA2 := store.Ref{Kind: "ticket", Params: json.RawMessage(`{"number":1, "repo":"a/b"}`)}
	for range 3 {
		if _, err := f.svc.Put(ctx, Update{ID: "w", Status: store.StatusRunning, Refs: []store.Ref{refA2, refB}}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(f.pending(t, "w")); n != 2 {
		t.Fatalf("%d standing watches after repeats", n)
	}
	// Detaching removes only that one.
	if _, err := f.svc.Put(ctx, Update{ID: "w", Status: store.StatusRunning, Refs: []store.Ref{refB}}); err != nil {
		t.Fatal(err)
	}
	ws := f.pending(t, "w")
	if len(ws) != 1 || string(ws[0].Params) != string(refB.Params) {
		t.Fatalf("after detach: %+v", ws)
	}
	// Stopping ends them; running again brings them back.
	_, _ = f.svc.Put(ctx, Update{ID: "w", Status: store.StatusStopped, Refs: []store.Ref{refB}})
	if n := len(f.pending(t, "w")); n != 0 {
		t.Fatalf("stopped recipient keeps %d", n)
	}
	_, _ = f.svc.Put(ctx, Update{ID: "w", Status: store.StatusRunning, Refs: []store.Ref{refB}})
	if n := len(f.pending(t, "w")); n != 1 {
		t.Fatalf("running again: %d", n)
	}
}

// A ref is admitted as the principal putting the record asks it (its
// Caller, for the recipient put): a ref naming a record that caller may
// not read is refused as the kind refused it, an unknown id's answer that
// names no field of the record, and nothing is stored. The reconciler
// registers the standing watch as the host, which the kind admits.
func TestRefsAreAdmittedWithTheCallersGrant(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	ref := store.Ref{Kind: "ticket", Params: json.RawMessage(`{"work":"w1"}`)}
	_, err := f.svc.Put(ctx, Update{ID: "w", Status: store.StatusRunning, Refs: []store.Ref{ref}})
	var (
		hidden *kind.HiddenError
		ae     *api.Error
	)
	if !errors.As(err, &hidden) || !errors.As(err, &ae) || ae.Code != api.CodeNotFound || ae.Field != "" {
		t.Fatalf("a ref its caller may not read: %v, want the kind's hidden not_found", err)
	}
	if _, err := f.st.GetRecipient(ctx, "w"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused record was stored: %v", err)
	}
	before := len(f.plugins.Admitted())
	if _, err := f.svc.Put(ctx, Update{ID: "w", Status: store.StatusRunning, Refs: []store.Ref{ref}, Caller: readsAll{}}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.pending(t, "w")); n != 1 {
		t.Fatalf("%d standing watches, want the ref's", n)
	}
	got := f.plugins.Admitted()[before:]
	if len(got) != 2 || got[0].Recipient != "w" || got[0].Caller != kind.Caller(readsAll{}) || got[1].Recipient != "w" || got[1].Caller != kind.Caller(kind.HostCaller{}) {
		t.Fatalf("admitted %+v: want the put's as its caller, then the reconciler's as the host", got)
	}
}

// readsAll is a caller whose grant reads every record.
type readsAll struct{}

func (readsAll) MayRead(kind.Object) error { return nil }

// A lost event (the record changed, reconciliation never ran) is repaired
// by the pass at start.
func TestReconcileAllRepairs(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, _ = f.sched.Register(ctx, scheduler.Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "gone"}})
	rec, _ := f.st.GetRecipient(ctx, "gone")
	rec.Status = store.StatusStopped
	_, _, _ = f.st.PutRecipient(ctx, rec) // behind the service's back
	_, _, _ = f.st.PutRecipient(ctx, store.RecipientRecord{ID: "fresh", Status: store.StatusRunning,
		Refs: []store.Ref{{Kind: "ticket", Params: json.RawMessage(`{"n":1}`)}}})

	if err := f.svc.ReconcileAll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(f.pending(t, "gone")); n != 0 {
		t.Fatalf("stopped recipient keeps %d", n)
	}
	if n := len(f.pending(t, "fresh")); n != 1 {
		t.Fatalf("running recipient has %d standing watches", n)
	}
	if err := f.svc.ReconcileAll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(f.pending(t, "fresh")); n != 1 {
		t.Fatalf("a second pass made %d", n)
	}
}

// listCounter is the store, counting List's calls and the rows it gives.
type listCounter struct {
	*store.Store
	calls, rows int
}

func (l *listCounter) List(ctx context.Context, f store.Filter) ([]store.Watch, int, error) {
	ws, held, err := l.Store.List(ctx, f)
	l.calls++
	l.rows += len(ws)
	return ws, held, err
}

// ReconcileAll reads no pending row it has no work for: a running
// recipient's watches that are not standing are never listed, nor a
// stopped recipient's when it has none; yet a recipient that pending rows
// name without a record has them cancelled, and a running one's standing
// watch is kept once.
func TestReconcileAllReadsNoRowItDoesNotAct(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	_, _, _ = f.st.PutRecipient(ctx, store.RecipientRecord{ID: "busy", Status: store.StatusRunning,
		Refs: []store.Ref{{Kind: "ticket", Params: json.RawMessage(`{"n":1}`)}}})
	for range 50 {
		if _, err := f.sched.Register(ctx, scheduler.Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "busy"}}); err != nil {
			t.Fatal(err)
		}
	}
	_, _, _ = f.st.PutRecipient(ctx, store.RecipientRecord{ID: "idle", Status: store.StatusStopped})
	if _, err := f.sched.Register(ctx, scheduler.Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "orphan"}}); err != nil {
		t.Fatal(err)
	}
	if err := f.st.DeleteRecipient(ctx, "orphan"); err != nil { // the record gone behind the service's back
		t.Fatal(err)
	}
	lc := &listCounter{Store: f.st}
	svc := New(lc, f.sched, f.plugins, fakeclock.At(t0), nil)
	if err := svc.ReconcileAll(ctx); err != nil {
		t.Fatal(err)
	}
	if n := len(f.pending(t, "orphan")); n != 0 {
		t.Fatalf("a recipient with no record keeps %d pending", n)
	}
	if got := f.pending(t, "busy"); len(got) != 51 {
		t.Fatalf("the running recipient has %d pending, want its 50 and its ref's one", len(got))
	}
	if lc.calls != 1 || lc.rows != 1 {
		t.Fatalf("ReconcileAll listed %d times, %d rows; want the orphan's one row alone", lc.calls, lc.rows)
	}
	if err := svc.ReconcileAll(ctx); err != nil {
		t.Fatal(err)
	}
	if got := f.pending(t, "busy"); len(got) != 51 {
		t.Fatalf("a second pass left %d pending", len(got))
	}
}

func TestWorkspaceIsKept(t *testing.T) {
	f := newFixture(t)
	rec, err := f.svc.Put(context.Background(), Update{ID: "a", Status: store.StatusRunning, Workspace: "/srv/work/a"})
	if err != nil || rec.Workspace != "/srv/work/a" {
		t.Fatalf("%+v %v", rec, err)
	}
}

// secretOf is a secret of an n-byte key.
func secretOf(n int) string {
	return webhooks.SecretPrefix + base64.StdEncoding.EncodeToString(bytes.Repeat([]byte{7}, n))
}

// A webhook at the bounds is taken: a 2,048-byte URL, a key of 24 or 64
// bytes.
func TestWebhookAtTheBounds(t *testing.T) {
	f := newFixture(t)
	for _, w := range []store.Webhook{
		{URL: "https://x/" + strings.Repeat("a", MaxWebhookURL-10), Secret: secretOf(webhooks.MinNewSecretBytes)},
		{URL: "https://x/", Secret: secretOf(webhooks.MaxSecretBytes)},
	} {
		if _, err := f.svc.Put(context.Background(), Update{ID: "a", Status: store.StatusRunning, Webhook: &w}); err != nil {
			t.Fatalf("%d-byte URL, %d-byte secret: %v", len(w.URL), len(w.Secret), err)
		}
	}
}

func TestPutValidates(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	tests := []struct {
		name  string
		u     Update
		field string
	}{
		{"bad id", Update{ID: "a b", Status: store.StatusRunning}, "id"},
		{"empty id", Update{ID: "", Status: store.StatusRunning}, "id"},
		{"bad status", Update{ID: "a", Status: "asleep"}, "status"},
		{"webhook scheme", Update{ID: "a", Status: store.StatusRunning, Webhook: &store.Webhook{URL: "ftp://x/", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}, "webhook.url"},
		{"webhook credentials", Update{ID: "a", Status: store.StatusRunning, Webhook: &store.Webhook{URL: "https://u:p@x/", Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}, "webhook.url"},
		{"webhook secret", Update{ID: "a", Status: store.StatusRunning, Webhook: &store.Webhook{URL: "https://x/", Secret: "hunter2"}}, "webhook.secret"},
		{"ref not standing", Update{ID: "a", Status: store.StatusRunning, Refs: []store.Ref{{Kind: "ci", Params: json.RawMessage(`{}`)}}}, "refs[0].kind"},
		{"ref params", Update{ID: "a", Status: store.StatusRunning, Refs: []store.Ref{{Kind: "ticket", Params: json.RawMessage(`{`)}}}, "refs[0].params"},
		{"relative workspace", Update{ID: "a", Status: store.StatusRunning, Workspace: "work/here"}, "workspace"},
		{"unclean workspace", Update{ID: "a", Status: store.StatusRunning, Workspace: "/work/../etc"}, "workspace"},
		{"workspace with a NUL", Update{ID: "a", Status: store.StatusRunning, Workspace: "/work/a\x00b"}, "workspace"},
		{"ref refused by admit", Update{ID: "a", Status: store.StatusRunning, Refs: []store.Ref{{Kind: "ticket", Params: json.RawMessage(`{"bad":1}`)}}}, "refs[0].params.bad"},
		{"webhook URL over 2,048 bytes", Update{ID: "a", Status: store.StatusRunning, Webhook: &store.Webhook{URL: "https://x/" + strings.Repeat("a", MaxWebhookURL-9), Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}, "webhook.url"},
		{"webhook URL of 200,000 bytes", Update{ID: "a", Status: store.StatusRunning, Webhook: &store.Webhook{URL: "https://x/" + strings.Repeat("a", 200_000), Secret: "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"}}, "webhook.url"},
		{"webhook secret of a 16-byte key", Update{ID: "a", Status: store.StatusRunning, Webhook: &store.Webhook{URL: "https://x/", Secret: "whsec_AAAAAAAAAAAAAAAAAAAAAA=="}}, "webhook.secret"},
		{"webhook secret of a 65-byte key", Update{ID: "a", Status: store.StatusRunning, Webhook: &store.Webhook{URL: "https://x/", Secret: secretOf(65)}}, "webhook.secret"},
		{"webhook secret of 700 KB", Update{ID: "a", Status: store.StatusRunning, Webhook: &store.Webhook{URL: "https://x/", Secret: secretOf(700 << 10)}}, "webhook.secret"},
		{"workspace over 4,096 bytes", Update{ID: "a", Status: store.StatusRunning, Workspace: "/" + strings.Repeat("w", MaxWorkspace)}, "workspace"},
		{"ref kind outside the grammar", Update{ID: "a", Status: store.StatusRunning, Refs: []store.Ref{{Kind: strings.Repeat("K", 100_000), Params: json.RawMessage(`{}`)}}}, "refs[0].kind"},
		{"ref params too deep", Update{ID: "a", Status: store.StatusRunning, Refs: []store.Ref{{Kind: "ticket", Params: json.RawMessage(`{}`)}, {Kind: "ticket", Params: json.RawMessage(`{"n":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}`)}}},
			"refs[1].params.n." + strings.TrimSuffix(strings.Repeat("0.", kind.MaxParamsDepth-1), ".")},
		{"ref params too large", Update{ID: "a", Status: store.StatusRunning, Refs: []store.Ref{{Kind: "ticket", Params: json.RawMessage(`"` + strings.Repeat("x", kind.MaxParamsBytes) + `"`)}}}, "refs[0].params"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := f.svc.Put(ctx, tt.u)
			var e *api.Error
			if !errors.As(err, &e) || e.Field != tt.field {
				t.Fatalf("err = %v", err)
			}
			// A refused update stores nothing.
			if _, err := f.st.GetRecipient(ctx, tt.u.ID); tt.u.ID == "a" && err == nil {
				t.Fatal("a refused update was stored")
			}
		})
	}
}
