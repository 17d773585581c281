package kind

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/vigilhq/vigil/sdk/abi"
)

// wakingKind is a fakeKind that is a Waker; wakes is what its Info says.
type wakingKind struct {
	fakeKind
	wakes bool
}

func (k wakingKind) Info() Info { return Info{Kind: k.name, Wakes: k.wakes} }
func (k wakingKind) Wake(_ context.Context, ev abi.WakeRequest) ([]string, error) {
	return []string{k.name + "/" + ev.Event}, nil
}

// The registry hands an event to the kind that wakes, and answers
// ErrNoWake for one that does not (no Waker, or a Waker whose Info says
// it does not wake) and ErrUnknownKind for no kind at all.
func TestRegistryWake(t *testing.T) {
	ctx := context.Background()
	r := NewRegistry()
	if err := r.Replace("plugins", []Kind{wakingKind{fakeKind{name: "ci"}, true}, wakingKind{fakeKind{name: "quiet"}, false}, fakeKind{name: "timer"}}); err != nil {
		t.Fatal(err)
	}
	ev := abi.WakeRequest{Event: "check_suite", Source: abi.SourceGitHub}
	if keys, err := r.Wake(ctx, "ci", ev); err != nil || !slices.Equal(keys, []string{"ci/check_suite"}) {
		t.Fatalf("ci: %q, %v", keys, err)
	}
	for _, name := range []string{"quiet", "timer"} {
		if _, err := r.Wake(ctx, name, ev); !errors.Is(err, ErrNoWake) {
			t.Errorf("%s: %v, want ErrNoWake", name, err)
		}
	}
	if _, err := r.Wake(ctx, "none", ev); !errors.Is(err, ErrUnknownKind) {
		t.Fatalf("none: %v, want ErrUnknownKind", err)
	}
}
