package kind

import (
	"context"
	"errors"
	"fmt"

	"github.com/vigilhq/vigil/sdk/abi"
)

// Waker is a Kind that maps an inbound event (a signed forge or Standard
// Webhooks POST the host verified) to the partition keys of the watches
// it concerns: exactly the strings its Admit answers as PartitionKey. The
// host makes every pending watch with one of them due now; Observe still
// decides, so an event changes when the host looks, never what it
// concludes. Info.Wakes says whether a kind's Wake can answer at all.
//
// Wake answers at most abi.MaxWakeKeys distinct keys, each 1 to
// abi.MaxPartitionKey bytes, or an error: ErrNoWake for a kind that
// does not wake, ErrUnknownKind for one no longer served, a *CallError
// (ErrFault, ErrRaised) for a plugin that could not answer on the
// contract. An error wakes nothing.
type Waker interface {
	Wake(ctx context.Context, ev abi.WakeRequest) ([]string, error)
}

// ErrNoWake is Wake's answer for a kind that does not wake (Info.Wakes is
// false: its plugin exports no wake).
var ErrNoWake = errors.New("the kind does not wake on events")

// Wake asks the kind named name which watches ev concerns (Waker). The
// error is ErrUnknownKind when no kind has the name, ErrNoWake when the
// kind does not wake (it is no Waker, or its Info says it does not), or
// the kind's own.
func (r *Registry) Wake(ctx context.Context, name string, ev abi.WakeRequest) ([]string, error) {
	k, ok := r.Get(name)
	if !ok {
		return nil, fmt.Errorf("kind %q: %w", name, ErrUnknownKind)
	}
	w, ok := k.(Waker)
	if !ok || !k.Info().Wakes {
		return nil, fmt.Errorf("kind %q: %w", name, ErrNoWake)
	}
	return w.Wake(ctx, ev)
}
