package recipients

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"strings"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/netguard"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

func wantError(t *testing.T, err error, code, field, setting string) {
	t.Helper()
	var e *api.Error
	if !errors.As(err, &e) || e.Code != code || e.Field != field || e.Setting != setting || e.Message == "" {
		t.Fatalf("%v, want %s on %s naming %s", err, code, field, setting)
	}
}

func TestRefsAreBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	svc := f.svc.WithLimits(Limits{MaxRefs: 2})
	refs := func(n int) []store.Ref {
		var out []store.Ref
		for i := range n {
			out = append(out, store.Ref{Kind: "ticket", Params: json.RawMessage(fmt.Sprintf(`{"n":%d}`, i))})
		}
		return out
	}
	_, err := svc.Put(ctx, Update{ID: "a", Status: store.StatusRunning, Refs: refs(3)})
	wantError(t, err, api.CodeTooManyRefs, "refs", SettingMaxRefs)
	if _, err := svc.Get(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused put stored the recipient: %v", err)
	}
	if _, err := svc.Put(ctx, Update{ID: "a", Status: store.StatusRunning, Refs: refs(2)}); err != nil {
		t.Fatal(err)
	}
	if n := len(f.pending(t, "a")); n != 2 {
		t.Fatalf("%d standing watches", n)
	}
	if got := f.svc.Limits(); got.MaxRefs != DefaultMaxRefs || got.MaxPending != DefaultMaxPending {
		t.Fatalf("WithLimits changed the original: %+v", got)
	}
}

func TestPendingWatchesAreBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	svc := f.svc.WithLimits(Limits{MaxPending: 3})
	var ids []store.ID
	for range 3 {
		if err := svc.CheckPending(ctx, "a"); err != nil {
			t.Fatal(err)
		}
		w, err := f.sched.Register(ctx, scheduler.Registration{Kind: "ci", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: "a"}})
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, w.ID)
	}
	wantError(t, svc.CheckPending(ctx, "a"), api.CodeTooManyPending, "recipient.id", SettingMaxPending)
	if err := svc.CheckPending(ctx, "b"); err != nil {
		t.Fatalf("another recipient: %v", err)
	}
	// A settled watch no longer counts.
	if _, err := f.sched.Cancel(ctx, ids[0], "test"); err != nil {
		t.Fatal(err)
	}
	if err := svc.CheckPending(ctx, "a"); err != nil {
		t.Fatalf("after a cancel: %v", err)
	}
}

// A webhook whose literal destination the delivery guard always refuses
// is refused when it is set, naming the allow list; a name is left to the
// dial, and an allowed range passes.
func TestWebhookDestinationIsCheckedAtPut(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	strict := f.svc.WithDestinations(netguard.New(nil))
	loop := f.svc.WithDestinations(netguard.New([]netip.Prefix{netip.MustParsePrefix("127.0.0.0/8")}))
	loop6 := f.svc.WithDestinations(netguard.New([]netip.Prefix{netip.MustParsePrefix("::1/128")}))
	for _, tt := range []struct {
		svc     *Service
		url     string
		refused bool
	}{
		{strict, "http://127.0.0.1:8080/hook", true},
		{strict, "http://localhost:8080/hook", true},
		{strict, "http://LocalHost.:8080/hook", true},
		{strict, "http://app.localhost/hook", true},
		{strict, "http://2130706433/hook", true},
		{strict, "http://0x7f.1/hook", true},
		{strict, "http://[::1]:9/hook", true},
		{strict, "http://[::ffff:169.254.169.254]/latest", true},
		{strict, "http://169.254.169.254/latest", true},
		{strict, "https://10.1.2.3/hook", true},
		{strict, "https://192.168.0.10/hook", true},
		{strict, "http://[fe80::1%25eth0]/hook", true},
		{strict, "https://hooks.example.com/vigil", false},
		{strict, "https://8.8.8.8/hook", false},
		{loop, "http://127.0.0.1:8080/hook", false},
		{loop, "http://localhost:8080/hook", false},  // 127.0.0.1 is let through: delivery can dial it
		{loop6, "http://localhost:8080/hook", false}, // and so is ::1
		{loop6, "http://127.0.0.1:8080/hook", true},
		{loop, "http://10.0.0.1/hook", true},
		{f.svc, "http://127.0.0.1:8080/hook", false}, // no guard configured: nothing to check against
	} {
		_, err := tt.svc.Put(ctx, Update{ID: "hooked", Status: store.StatusRunning, Webhook: &store.Webhook{URL: tt.url, Secret: secret}})
		if tt.refused {
			wantError(t, err, api.CodeDestinationRefused, "webhook.url", SettingWebhookAllow)
			continue
		}
		if err != nil {
			t.Errorf("%s: %v", tt.url, err)
		}
	}
}

// A record whose refs' params come to more than the store keeps in one
// record (its bound on a value, less room for the recipient's reports)
// is refused, 422 invalid_field on refs, and nothing is written; within
// it, the record is kept and a phase report still fits.
func TestRecordSizeIsBounded(t *testing.T) {
	f := newFixture(t)
	ctx := context.Background()
	refs := func(n int) []store.Ref {
		var out []store.Ref
		for i := range n {
			out = append(out, store.Ref{Kind: "ticket", Params: json.RawMessage(fmt.Sprintf(`{"n":%d,"pad":"%s"}`, i, strings.Repeat("p", 60<<10)))})
		}
		return out
	}
	over := f.st.MaxValue()/(60<<10) + 1
	_, err := f.svc.Put(ctx, Update{ID: "a", Status: store.StatusRunning, Refs: refs(over)})
	wantError(t, err, api.CodeInvalidField, "refs", "")
	if _, err := f.svc.Get(ctx, "a"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused put stored the recipient: %v", err)
	}
	// Within the bound on a value, but within a phase report of it: the
	// report would be refused, so the record is.
	near := refs(over - 2)
	b, err := store.EncodeRecipient(store.RecipientRecord{ID: "a", Status: store.StatusRunning, Refs: near, CreatedAt: t0, UpdatedAt: t0})
	if err != nil {
		t.Fatal(err)
	}
	pad := f.st.MaxValue() - len(b) - 1<<10 - len(`,{"kind":"ticket","params":{"pad":""}}`)
	_, err = f.svc.Put(ctx, Update{ID: "a", Status: store.StatusRunning,
		Refs: append(near, store.Ref{Kind: "ticket", Params: json.RawMessage(`{"pad":"` + strings.Repeat("q", pad) + `"}`)})})
	wantError(t, err, api.CodeInvalidField, "refs", "")
	if _, err := f.svc.Put(ctx, Update{ID: "a", Status: store.StatusRunning, Refs: near}); err != nil {
		t.Fatalf("a record within the bound: %v", err)
	}
	if _, err := f.st.ReportPhase(ctx, "a", store.Phase{Name: "build", Text: strings.Repeat("t", MaxPhaseText), ReportedBy: "a", ReportedAt: t0}); err != nil {
		t.Fatalf("a phase report on a record near the bound: %v", err)
	}
}
