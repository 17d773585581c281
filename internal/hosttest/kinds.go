package hosttest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"strings"
	"sync"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// CI is the wait kind most tests register: "ci", probed every 30 s.
func CI() kind.Info {
	return kind.Info{Kind: "ci", Version: "1.0.0", DefaultEvery: 30 * time.Second, Observable: true,
		File: "ci.wasm", Source: "bundled", SHA256: strings.Repeat("c", 64)}
}

// Ticket is a standing kind, "ticket", probed every minute.
func Ticket() kind.Info {
	return kind.Info{Kind: "ticket", Version: "1.0.0", Standing: true, DefaultEvery: time.Minute, Observable: true,
		File: "ticket.wasm", Source: "/plugins", SHA256: strings.Repeat("7", 64)}
}

// FakeKinds serves the kinds it is given, for tests only. By default Admit
// refuses an unknown kind (watch_unobservable, naming its registry
// setting) and params holding "bad" (invalid_params, params.bad), and
// Observe settles a watch with the result its params name ({"result":…},
// default success), summary "<kind> says <result>"; an unknown kind's
// probe is kind.ErrUnknownKind. OnAdmit and OnObserve script other
// answers. Safe for concurrent use.
type FakeKinds struct {
	// mu guards every field below.
	mu         sync.Mutex
	infos      map[string]kind.Info
	order      []string
	admit      func(name string, req kind.AdmitRequest) (kind.Admission, error)
	observe    func(req abi.ObserveRequest) (kind.Observation, error)
	observeCtx func(ctx context.Context)
	probes     int
	admitted   []kind.AdmitRequest
}

// NewFakeKinds serves infos.
func NewFakeKinds(infos ...kind.Info) *FakeKinds {
	k := &FakeKinds{infos: map[string]kind.Info{}}
	for _, i := range infos {
		k.Add(i)
	}
	return k
}

// Add serves info, in place of a kind of its name.
func (k *FakeKinds) Add(info kind.Info) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.infos[info.Kind]; !ok {
		k.order = append(k.order, info.Kind)
	}
	k.infos[info.Kind] = info
}

// Remove stops serving the kind name, as a plugin removed.
func (k *FakeKinds) Remove(name string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	delete(k.infos, name)
}

// OnAdmit makes f answer every admission of a known kind; it returns k.
func (k *FakeKinds) OnAdmit(f func(name string, req kind.AdmitRequest) (kind.Admission, error)) *FakeKinds {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.admit = f
	return k
}

// OnObserve makes f answer every probe of a known kind; it returns k.
func (k *FakeKinds) OnObserve(f func(req abi.ObserveRequest) (kind.Observation, error)) *FakeKinds {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.observe = f
	return k
}

// OnObserveCtx makes f see each probe's context first; it returns k.
func (k *FakeKinds) OnObserveCtx(f func(ctx context.Context)) *FakeKinds {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.observeCtx = f
	return k
}

// Lookup implements scheduler.Kinds.
func (k *FakeKinds) Lookup(name string) (kind.Info, bool) {
	k.mu.Lock()
	defer k.mu.Unlock()
	i, ok := k.infos[name]
	return i, ok
}

// Infos are the kinds served, in the order they were first added.
func (k *FakeKinds) Infos() []kind.Info {
	k.mu.Lock()
	defer k.mu.Unlock()
	var out []kind.Info
	for _, name := range k.order {
		if i, ok := k.infos[name]; ok {
			out = append(out, i)
		}
	}
	return out
}

// Admit implements scheduler.Kinds.
func (k *FakeKinds) Admit(_ context.Context, name string, req kind.AdmitRequest) (kind.Admission, error) {
	k.mu.Lock()
	_, ok := k.infos[name]
	k.admitted = append(k.admitted, req)
	admit := k.admit
	k.mu.Unlock()
	if !ok {
		return kind.Admission{}, &api.Error{Code: api.CodeWatchUnobservable, Setting: "kinds." + name + ".wasm", Message: "no plugin serves " + name}
	}
	if admit != nil {
		return admit(name, req)
	}
	if strings.Contains(string(req.Params), `"bad"`) {
		return kind.Admission{}, &api.Error{Code: api.CodeInvalidParams, Field: "params.bad", Message: "bad"}
	}
	return kind.Admission{}, nil
}

// Observe implements scheduler.Kinds.
func (k *FakeKinds) Observe(ctx context.Context, req abi.ObserveRequest) (kind.Observation, error) {
	k.mu.Lock()
	seeCtx := k.observeCtx
	k.mu.Unlock()
	if seeCtx != nil {
		seeCtx(ctx)
	}
	k.mu.Lock()
	k.probes++
	_, ok := k.infos[req.Kind]
	observe := k.observe
	k.mu.Unlock()
	if !ok {
		return kind.Observation{}, fmt.Errorf("%w %q", kind.ErrUnknownKind, req.Kind)
	}
	if observe != nil {
		return observe(req)
	}
	return Settles(req)
}

// Settles is Observe's default answer: settled with the result req's
// params name ({"result":…}, default success), summary "<kind> says
// <result>".
func Settles(req abi.ObserveRequest) (kind.Observation, error) {
	var p struct{ Result string }
	_ = json.Unmarshal(req.Params, &p)
	if p.Result == "" {
		p.Result = "success"
	}
	return kind.Observation{Status: abi.StatusSettled, Outcome: &abi.Outcome{Result: p.Result, Summary: req.Kind + " says " + p.Result}}, nil
}

// Settled implements scheduler.Kinds: it does nothing.
func (k *FakeKinds) Settled(context.Context, store.Watch) {}

// Probes is how many probes Observe has answered.
func (k *FakeKinds) Probes() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.probes
}

// Admitted are the admission requests Admit was asked, in order.
func (k *FakeKinds) Admitted() []kind.AdmitRequest {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]kind.AdmitRequest(nil), k.admitted...)
}

// Pending is a pending answer with note.
func Pending(note string) (kind.Observation, error) {
	return kind.Observation{Status: abi.StatusPending, Note: note}, nil
}

// Settled is a settled answer with result.
func Settled(result string) (kind.Observation, error) {
	return kind.Observation{Status: abi.StatusSettled, Outcome: &abi.Outcome{Result: result}}, nil
}

// IDs is a source of watch ids seeded with seed, the same on every run;
// for one goroutine at a time.
func IDs(seed byte) io.Reader { return seededIDs{rand.NewChaCha8([32]byte{seed})} }

type seededIDs struct{ r *rand.ChaCha8 }

func (s seededIDs) Read(p []byte) (int, error) { return s.r.Read(p) }
