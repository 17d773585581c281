package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/hosttest"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// A kind that runs commands runs them in the workspace of the recipient
// named like the principal that registered the watch (seed 002): the
// registration is refused, naming that setting, when it declares none,
// and the probe carries the registrant so vigil_exec finds it.
func TestCommandsRunWhereTheyWereRegistered(t *testing.T) {
	ctx := context.Background()
	st, err := badger.OpenStore(t.TempDir(), badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	var registrants []string
	plugins := hosttest.NewFakeKinds(kind.Info{Kind: "command", DefaultEvery: time.Minute, Capabilities: []string{abi.CapabilityExec}}).
		OnObserve(func(abi.ObserveRequest) (kind.Observation, error) { return hosttest.Pending("not yet") }).
		OnObserveCtx(func(ctx context.Context) {
			registrants = append(registrants, kind.WorkspaceOwner(kind.RecipientFrom(ctx), kind.RegistrantFrom(ctx)))
		})
	s, err := New(Config{Store: st, Plugins: plugins, Deliver: &recordingDeliverer{st: st}, Clock: fakeclock.At(t0), Recipients: st,
		Jitter: rand.New(rand.NewPCG(1, 2)), IDs: hosttest.IDs(7)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range []store.RecipientRecord{
		{ID: "orch", Status: store.StatusRunning, Workspace: "/srv/orch"},
		{ID: "worker", Status: store.StatusRunning}, // no workspace
		{ID: "builder", Status: store.StatusRunning, Workspace: "/srv/builder"},
	} {
		if _, _, err := st.PutRecipient(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	register := func(recipient, by string) error {
		_, err := s.Register(ctx, Registration{Kind: "command", Params: json.RawMessage(`{}`), Recipient: store.Recipient{ID: recipient}, RegisteredBy: by})
		return err
	}
	for _, c := range []struct {
		recipient, by, refusedSetting string
	}{
		{"worker", "orch", ""},                               // the orchestrator's tree
		{"worker", "worker", "recipients.worker.workspace"},  // its own, which it lacks
		{"builder", "ci-bot", "recipients.ci-bot.workspace"}, // a principal with no record
		{"builder", kind.LocalPrincipal, ""},                 // the local principal: the recipient's
		{"worker", "", "recipients.worker.workspace"},        // the host's own: the recipient's
	} {
		err := register(c.recipient, c.by)
		var ae *api.Error
		switch {
		case c.refusedSetting == "" && err != nil:
			t.Errorf("%s for %s: %v", c.by, c.recipient, err)
		case c.refusedSetting != "" && (!errors.As(err, &ae) || ae.Code != api.CodeWatchUnobservable || ae.Setting != c.refusedSetting):
			t.Errorf("%s for %s: %v, want watch_unobservable naming %s", c.by, c.recipient, err, c.refusedSetting)
		}
	}
	s.Tick(ctx, t0.Add(time.Hour))
	if len(registrants) != 2 || registrants[0] == registrants[1] {
		t.Fatalf("the probes' workspace owners: %v", registrants)
	}
	for _, w := range registrants {
		if w != "orch" && w != "builder" {
			t.Fatalf("a probe ran for %q", w)
		}
	}
}
