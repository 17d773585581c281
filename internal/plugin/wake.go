package plugin

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
)

// ErrBadWake: wake's answer is off the contract (not its JSON, more than
// abi.MaxWakeKeys keys, an empty key or one over abi.MaxPartitionKey
// bytes). It is the plugin's fault, inside a *CallError: the event wakes
// nothing.
var ErrBadWake = errors.New("wake's answer is off the contract")

// ErrBadEvent: the event handed to Wake is off the contract the host
// promises a plugin (an unknown source, an event name over
// abi.MaxWakeEvent bytes or not printable ASCII, a body that is not
// JSON). It is the caller's bug, and no plugin sees the event.
var ErrBadEvent = errors.New("the event is off the wake contract")

var _ kind.Waker = runtimeKind{}

// Wake asks the plugin through the runtime, as every call of a runtime
// kind does, so it reaches the generation in force when it is made.
func (k runtimeKind) Wake(ctx context.Context, ev abi.WakeRequest) ([]string, error) {
	return k.r.Wake(ctx, k.info.Kind, ev)
}

// Wake hands one inbound event to the wake export of kind's plugin and
// returns the partition keys it answered, distinct, in its order: the
// watches the event concerns. The call is bounded as admit is (the call
// timeout, the memory and output caps). The error is
// kind.ErrUnknownKind for a kind no plugin serves, kind.ErrNoWake for a
// plugin that exports no wake (Info.Wakes false), ErrBadEvent for an
// event off the contract, or a *CallError for a plugin that could not
// answer (a fault: timeout, trap, memory, output over the cap, an answer
// off the contract (ErrBadWake); or an error it raised). Any error wakes
// nothing.
func (r *Runtime) Wake(ctx context.Context, kindName string, ev abi.WakeRequest) ([]string, error) {
	set := r.set.Load()
	l, ok := set.kinds[kindName]
	if !ok {
		return nil, fmt.Errorf("%w %q", kind.ErrUnknownKind, kindName)
	}
	if !l.info.Wakes {
		return nil, fmt.Errorf("%w: the plugin for kind %s exports no %s", kind.ErrNoWake, kindName, abi.ExportWake)
	}
	if err := checkEvent(ev); err != nil {
		return nil, err
	}
	if len(ev.Body) == 0 {
		ev.Body = []byte("null")
	}
	in, err := json.Marshal(ev)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadEvent, err)
	}
	var keys []string
	_, err = r.invoke(ctx, l, abi.ExportWake, in, r.rc.limits.CallTimeout, func(out []byte) error {
		var err error
		keys, err = checkWakeKeys(out)
		return err
	})
	if err != nil {
		return nil, err
	}
	return keys, nil
}

// checkEvent holds an event to what the wake input promises a plugin.
func checkEvent(ev abi.WakeRequest) error {
	if !slices.Contains(abi.KnownSources(), ev.Source) {
		return fmt.Errorf("%w: source %q, want one of %v", ErrBadEvent, ev.Source, abi.KnownSources())
	}
	if len(ev.Event) > abi.MaxWakeEvent {
		return fmt.Errorf("%w: an event name of %d bytes, at most %d", ErrBadEvent, len(ev.Event), abi.MaxWakeEvent)
	}
	for i := 0; i < len(ev.Event); i++ {
		if c := ev.Event[i]; c < '!' || c > '~' {
			return fmt.Errorf("%w: the event name holds byte %#x, want printable ASCII", ErrBadEvent, c)
		}
	}
	return nil
}

// checkWakeKeys decodes wake's output strictly and holds it to the
// contract: at most abi.MaxWakeKeys keys, each 1 to abi.MaxPartitionKey
// bytes. Repeats are dropped, the first of each kept.
func checkWakeKeys(out []byte) ([]string, error) {
	var resp abi.WakeResponse
	if err := abi.StrictUnmarshal(out, &resp); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadWake, err)
	}
	if n := len(resp.Keys); n > abi.MaxWakeKeys {
		return nil, fmt.Errorf("%w: %d keys, at most %d", ErrBadWake, n, abi.MaxWakeKeys)
	}
	keys := make([]string, 0, len(resp.Keys))
	for i, k := range resp.Keys {
		switch {
		case k == "":
			return nil, fmt.Errorf("%w: key %d is empty", ErrBadWake, i)
		case len(k) > abi.MaxPartitionKey:
			return nil, fmt.Errorf("%w: key %d is %d bytes, at most %d", ErrBadWake, i, len(k), abi.MaxPartitionKey)
		case slices.Contains(keys, k):
			continue
		}
		keys = append(keys, k)
	}
	return keys, nil
}
