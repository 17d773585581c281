package kind

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"sync/atomic"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

// HostSource is the registry source of the host's built-in kinds
// (observe.thread, recipient.reminder): one source, so a plugin claiming
// one of their kinds is refused as a conflict with the host.
const HostSource = "host"

// Registry holds the kinds the host serves, by source. Lookups read one
// immutable map through an atomic pointer; Register and Replace build a
// new one. The zero value is not usable: call NewRegistry.
type Registry struct {
	mu      sync.Mutex        // serializes writers
	sources map[string][]Kind // by source, as registered
	byName  atomic.Pointer[map[string]Kind]
	// explain, by source, says why a name is not served (a plugin that
	// did not load), for the refusal of an unknown kind.
	explain atomic.Pointer[map[string]func(name string) error]
	// changed is closed by the next write of the kinds and then dropped
	// (nil until Changed asks for one); guarded by mu.
	changed chan struct{}
}

// Changed is a channel closed when the registered kinds are next written
// (a plugin reload replaces its source's kinds, changed or not): a waiter
// reads the kinds again and asks for the next one. It costs nothing while
// nobody waits, and never polls.
func (r *Registry) Changed() <-chan struct{} {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.changed == nil {
		r.changed = make(chan struct{})
	}
	return r.changed
}

// NewRegistry returns an empty registry.
func NewRegistry() *Registry {
	r := &Registry{sources: map[string][]Kind{}}
	r.byName.Store(&map[string]Kind{})
	r.explain.Store(&map[string]func(string) error{})
	return r
}

// Explain has source say why a name is not served: f returns the refusal
// Admit gives for it (an *api.Error), or nil when source knows nothing of the
// name. Nil f removes source's.
func (r *Registry) Explain(source string, f func(name string) error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	next := map[string]func(string) error{}
	for src, g := range *r.explain.Load() {
		next[src] = g
	}
	if f == nil {
		delete(next, source)
	} else {
		next[source] = f
	}
	r.explain.Store(&next)
}

// ConflictError is a kind name two sources both serve.
type ConflictError struct {
	Kind           string
	Source, Holder string
}

func (e *ConflictError) Error() string {
	return fmt.Sprintf("kind %q from %s is already served by %s", e.Kind, e.Source, e.Holder)
}

// Replace makes kinds the whole of what source serves (none: the source
// serves nothing any more). A name another source already serves is a
// *ConflictError and changes nothing.
func (r *Registry) Replace(source string, kinds []Kind) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replace(source, kinds)
}

// replace is Replace with mu held.
func (r *Registry) replace(source string, kinds []Kind) error {
	next := map[string]Kind{}
	owner := map[string]string{}
	for src, ks := range r.sources {
		if src == source {
			continue
		}
		for _, k := range ks {
			next[k.Info().Kind] = k
			owner[k.Info().Kind] = src
		}
	}
	for _, k := range kinds {
		name := k.Info().Kind
		if holder, taken := owner[name]; taken {
			return &ConflictError{Kind: name, Source: source, Holder: holder}
		}
		if _, dup := next[name]; dup {
			return &ConflictError{Kind: name, Source: source, Holder: source}
		}
		next[name] = k
		owner[name] = source
	}
	if len(kinds) == 0 {
		delete(r.sources, source)
	} else {
		r.sources[source] = append([]Kind(nil), kinds...)
	}
	r.byName.Store(&next)
	if r.changed != nil {
		close(r.changed)
		r.changed = nil
	}
	return nil
}

// Register adds one kind to source, beside what it already serves. It
// reads what the source serves and replaces it under one lock, so two
// Registers of one source never lose either kind.
func (r *Registry) Register(source string, k Kind) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.replace(source, append(append([]Kind(nil), r.sources[source]...), k))
}

// Get is the kind named name.
func (r *Registry) Get(name string) (Kind, bool) {
	k, ok := (*r.byName.Load())[name]
	return k, ok
}

// Infos describes every registered kind, by name.
func (r *Registry) Infos() []Info {
	m := *r.byName.Load()
	out := make([]Info, 0, len(m))
	for _, k := range m {
		out = append(out, k.Info())
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Kind < out[j].Kind })
	return out
}

// Lookup describes the kind named name.
func (r *Registry) Lookup(name string) (Info, bool) {
	k, ok := r.Get(name)
	if !ok {
		return Info{}, false
	}
	return k.Info(), true
}

// Admit asks the kind named name. An unknown name is an *api.Error: a
// source's explanation (the plugin for it did not load), or that nothing
// serves it.
func (r *Registry) Admit(ctx context.Context, name string, req AdmitRequest) (Admission, error) {
	k, ok := r.Get(name)
	if !ok {
		explain := *r.explain.Load()
		srcs := make([]string, 0, len(explain))
		for src := range explain {
			srcs = append(srcs, src)
		}
		sort.Strings(srcs)
		for _, src := range srcs {
			if err := explain[src](name); err != nil {
				return Admission{}, err
			}
		}
		return Admission{}, &api.Error{Code: api.CodeWatchUnobservable, Message: fmt.Sprintf("no plugin serves kind %q", name),
			Setting: fmt.Sprintf("kinds.%s.wasm", name)}
	}
	return k.Admit(ctx, req)
}

// Observe asks the kind req names; an unknown one is ErrUnknownKind.
func (r *Registry) Observe(ctx context.Context, req abi.ObserveRequest) (Observation, error) {
	k, ok := r.Get(req.Kind)
	if !ok {
		return Observation{}, fmt.Errorf("kind %q: %w", req.Kind, ErrUnknownKind)
	}
	return k.Observe(ctx, req)
}

// Settled tells w's kind of its settlement, when the kind is a Settler.
func (r *Registry) Settled(ctx context.Context, w store.Watch) {
	if k, ok := r.Get(w.Kind); ok {
		if s, ok := k.(Settler); ok {
			s.Settled(ctx, w)
		}
	}
}
