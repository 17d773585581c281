package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
)

// hostKind is a built-in kind, as the observer registers observe.thread.
type hostKind struct{ name string }

func (k hostKind) Info() kind.Info { return kind.Info{Kind: k.name, Pushed: true} }
func (hostKind) Admit(context.Context, kind.AdmitRequest) (kind.Admission, error) {
	return kind.Admission{}, nil
}
func (hostKind) Observe(context.Context, abi.ObserveRequest) (kind.Observation, error) {
	return kind.Observation{Status: abi.StatusPending}, nil
}

// The runtime registers one kind per loaded plugin in its registry, serves
// the calls made through it, leaves a kind the host serves itself to the
// host, explains a kind whose plugin did not load, and takes its kinds
// away on Close.
func TestRuntimeRegistersItsKinds(t *testing.T) {
	ctx := context.Background()
	reg := kind.NewRegistry()
	if err := reg.Register("host", hostKind{"timer"}); err != nil {
		t.Fatal(err)
	}
	dir := pluginDir(t, "", "trap", "badschema")
	r := newRuntime(t, Config{Dir: dir, Kinds: reg})

	if info, ok := reg.Lookup("timer"); !ok || !info.Pushed {
		t.Fatalf("the host's own timer kind was displaced: %+v %v", info, ok)
	}
	for _, p := range r.Plugins() {
		if p.Kind == "timer" {
			continue
		}
		got, ok := reg.Lookup(p.Kind)
		if !ok || got.SHA256 != p.SHA256 {
			t.Errorf("%s: registered %+v, %v", p.Kind, got, ok)
		}
	}
	if _, ok := reg.Lookup("test.trap"); !ok {
		t.Fatal("test.trap is not registered")
	}
	obs, err := reg.Observe(ctx, abi.ObserveRequest{Kind: "test.trap", WatchID: "w", Now: t0, Params: json.RawMessage(`{}`)})
	if err != nil || obs.Fault == nil || obs.Fault.Reason != kind.FaultTrap {
		t.Fatalf("an observe through the registry: %+v, %v", obs, err)
	}
	// A plugin that did not load is explained, as the runtime explains it.
	var ref *api.Error
	if _, err := reg.Admit(ctx, "test.badschema", kind.AdmitRequest{Params: json.RawMessage(`{}`)}); !errors.As(err, &ref) || ref.Code != api.CodeWatchUnobservable {
		t.Fatalf("admit of a kind that did not load: %v", err)
	}
	want := r.unknownKind(r.set.Load(), "test.badschema").Error()
	if ref.Error() != want {
		t.Fatalf("refusal %q, want the runtime's %q", ref.Error(), want)
	}

	if err := r.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got := reg.Infos(); len(got) != 1 || got[0].Kind != "timer" {
		t.Fatalf("after Close the registry serves %+v, want only the host's kind", got)
	}
}

// A plugin whose kind the host serves itself is not served, and not
// silently so: it is in Problems (and so in GET /api/v1/plugins) under
// kind.host, on the first load and on every reload, and the runtime does
// not list it as loaded.
func TestAPluginOfAHostKindIsReported(t *testing.T) {
	reg := kind.NewRegistry()
	if err := reg.Register("host", hostKind{"timer"}); err != nil {
		t.Fatal(err)
	}
	r := newRuntime(t, Config{Kinds: reg})
	check := func(when string, ps []*LoadError) {
		t.Helper()
		if len(ps) != 1 || ps[0].Rule != RuleKindHost || ps[0].Kind != "timer" || ps[0].File != "bundled:timer/timer.wasm" {
			t.Fatalf("%s: problems %v, want one %s for the bundled timer", when, ps, RuleKindHost)
		}
		if _, ok := r.Lookup("timer"); ok {
			t.Fatalf("%s: the runtime lists a timer plugin the host does not serve", when)
		}
		if info, ok := reg.Lookup("timer"); !ok || !info.Pushed {
			t.Fatalf("%s: the host's own timer kind was displaced: %+v %v", when, info, ok)
		}
	}
	check("at load", r.Problems())
	rep, err := r.Reload(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	check("on reload", rep.Problems)
	for _, in := range rep.Loaded {
		if in.Kind == "timer" {
			t.Fatalf("the reload reports timer loaded: %+v", in)
		}
	}
}
