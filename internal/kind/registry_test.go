package kind

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// fakeKind answers with its name; settled counts Settled calls when it is
// a settler.
type fakeKind struct {
	name    string
	settled *int
}

func (k fakeKind) Info() Info { return Info{Kind: k.name} }
func (k fakeKind) Admit(context.Context, AdmitRequest) (Admission, error) {
	return Admission{Subject: k.name}, nil
}
func (k fakeKind) Observe(context.Context, abi.ObserveRequest) (Observation, error) {
	return Observation{Status: abi.StatusPending, Note: k.name}, nil
}

type settlingKind struct{ fakeKind }

func (k settlingKind) Settled(context.Context, store.Watch) { *k.settled++ }

func TestRegistryServesEachSourcesKinds(t *testing.T) {
	ctx := context.Background()
	r := NewRegistry()
	if err := r.Replace("plugins", []Kind{fakeKind{name: "timer"}, fakeKind{name: "http"}}); err != nil {
		t.Fatal(err)
	}
	if err := r.Register("host", fakeKind{name: "observe.thread"}); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"timer", "http", "observe.thread"} {
		if adm, err := r.Admit(ctx, name, AdmitRequest{}); err != nil || adm.Subject != name {
			t.Errorf("admit %s: %+v, %v", name, adm, err)
		}
		if obs, err := r.Observe(ctx, abi.ObserveRequest{Kind: name}); err != nil || obs.Note != name {
			t.Errorf("observe %s: %+v, %v", name, obs, err)
		}
	}
	// A reload replaces only its own source's kinds.
	if err := r.Replace("plugins", []Kind{fakeKind{name: "timer"}}); err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("http"); ok {
		t.Error("a kind its source no longer serves is still served")
	}
	if _, ok := r.Lookup("observe.thread"); !ok {
		t.Error("another source's kind went with the reload")
	}
	if got := r.Infos(); len(got) != 2 || got[0].Kind != "observe.thread" || got[1].Kind != "timer" {
		t.Errorf("infos: %+v", got)
	}
}

// A name another source serves is refused whole: nothing changes.
func TestRegistryRefusesAKindTwoSourcesClaim(t *testing.T) {
	r := NewRegistry()
	if err := r.Register("host", fakeKind{name: "observe.thread"}); err != nil {
		t.Fatal(err)
	}
	err := r.Replace("plugins", []Kind{fakeKind{name: "timer"}, fakeKind{name: "observe.thread"}})
	var ce *ConflictError
	if !errors.As(err, &ce) || ce.Kind != "observe.thread" || ce.Holder != "host" || ce.Source != "plugins" {
		t.Fatalf("err = %v", err)
	}
	if _, ok := r.Lookup("timer"); ok {
		t.Error("a refused Replace changed the registry")
	}
	if err := r.Replace("plugins", []Kind{fakeKind{name: "a"}, fakeKind{name: "a"}}); !errors.As(err, &ce) {
		t.Errorf("one source serving a name twice: %v", err)
	}
}

// An unknown kind: admit is a refusal (a source's explanation when it has
// one), observe is ErrUnknownKind.
func TestRegistryUnknownKinds(t *testing.T) {
	ctx := context.Background()
	r := NewRegistry()
	_, err := r.Admit(ctx, "nope", AdmitRequest{})
	var ref *api.Error
	if !errors.As(err, &ref) || ref.Code != api.CodeWatchUnobservable || ref.Setting != "kinds.nope.wasm" {
		t.Fatalf("admit of an unknown kind: %v", err)
	}
	r.Explain("plugins", func(name string) error {
		if name == "broken" {
			return &api.Error{Code: api.CodeWatchUnobservable, Message: "the plugin for kind \"broken\" did not load"}
		}
		return nil
	})
	if _, err := r.Admit(ctx, "broken", AdmitRequest{}); !errors.As(err, &ref) || ref.Message != `the plugin for kind "broken" did not load` {
		t.Fatalf("explained: %v", err)
	}
	if _, err := r.Admit(ctx, "nope", AdmitRequest{}); !errors.As(err, &ref) || ref.Setting != "kinds.nope.wasm" {
		t.Fatalf("a name no source explains: %v", err)
	}
	r.Explain("plugins", nil)
	if _, err := r.Admit(ctx, "broken", AdmitRequest{}); !errors.As(err, &ref) || ref.Setting != "kinds.broken.wasm" {
		t.Fatalf("after the explanation was removed: %v", err)
	}
	if _, err := r.Observe(ctx, abi.ObserveRequest{Kind: "nope"}); !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("observe of an unknown kind: %v", err)
	}
}

// Settled reaches a kind that is a Settler, and only that kind.
func TestRegistrySettledReachesOnlySettlers(t *testing.T) {
	n := 0
	r := NewRegistry()
	if err := r.Replace("host", []Kind{settlingKind{fakeKind{name: "a", settled: &n}}, fakeKind{name: "b"}}); err != nil {
		t.Fatal(err)
	}
	r.Settled(context.Background(), store.Watch{Kind: "a"})
	r.Settled(context.Background(), store.Watch{Kind: "b"})
	r.Settled(context.Background(), store.Watch{Kind: "gone"})
	if n != 1 {
		t.Fatalf("settled %d times, want 1", n)
	}
}

// fakeMulti serves one kind, x, as the plugin runtime serves many: its
// admission answers with the params it was given.
type fakeMulti struct{}

func (fakeMulti) Lookup(name string) (Info, bool) { return Info{Kind: name}, name == "x" }
func (fakeMulti) Admit(_ context.Context, name string, params json.RawMessage) (Admission, error) {
	return Admission{Subject: name, Params: params}, nil
}
func (fakeMulti) Observe(context.Context, abi.ObserveRequest) (Observation, error) {
	return Observation{Status: abi.StatusPending}, nil
}

// Of serves one kind of a multi-kind value under its name, handing it the
// request's params.
func TestOf(t *testing.T) {
	r := fakeMulti{}
	k, ok := Of(r, "x")
	if !ok || k.Info().Kind != "x" {
		t.Fatalf("Of: %v %v", k, ok)
	}
	if adm, err := k.Admit(context.Background(), AdmitRequest{Params: json.RawMessage(`{"a":1}`)}); err != nil || adm.Subject != "x" || string(adm.Params) != `{"a":1}` {
		t.Fatalf("admit through Of: %+v %v", adm, err)
	}
	if _, ok := Of(r, "y"); ok {
		t.Fatal("Of an unknown name")
	}
}

// Registers of one source that run at once each add their kind: none is
// lost to another that read the source's kinds before it wrote.
func TestRegistryRegisterHammer(t *testing.T) {
	const n = 64
	for range 200 {
		r := NewRegistry()
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				if err := r.Register("host", fakeKind{name: fmt.Sprintf("k%d", i)}); err != nil {
					t.Error(err)
				}
			}()
		}
		close(start)
		wg.Wait()
		if got := len(r.Infos()); got != n {
			t.Fatalf("%d kinds served after %d Registers", got, n)
		}
	}
}

// Changed is closed by the next write, not before, and a refused write
// (a conflict) leaves it open: a waiter wakes only when the kinds did.
func TestRegistryChangedClosesOnWrite(t *testing.T) {
	r := NewRegistry()
	ch := r.Changed()
	closed := func(c <-chan struct{}) bool {
		select {
		case <-c:
			return true
		default:
			return false
		}
	}
	if closed(ch) {
		t.Fatal("Changed is closed before any write")
	}
	if err := r.Register("host", fakeKind{name: "observe.thread"}); err != nil {
		t.Fatal(err)
	}
	if !closed(ch) {
		t.Fatal("a write did not close Changed")
	}
	next := r.Changed()
	if closed(next) {
		t.Fatal("the next Changed is closed already")
	}
	var conflict *ConflictError
	if err := r.Replace("plugins", []Kind{fakeKind{name: "observe.thread"}}); !errors.As(err, &conflict) {
		t.Fatalf("a kind the host serves: %v, want a conflict", err)
	}
	if closed(next) {
		t.Error("a refused write closed Changed")
	}
	if err := r.Replace("plugins", []Kind{fakeKind{name: "timer"}}); err != nil {
		t.Fatal(err)
	}
	if !closed(next) {
		t.Error("a reload did not close Changed")
	}
}
