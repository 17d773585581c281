package reminder

import (
	"context"
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
)

type recordStore map[string]store.RecipientRecord

func (s recordStore) GetRecipient(_ context.Context, id string) (store.RecipientRecord, error) {
	r, ok := s[id]
	if !ok {
		return store.RecipientRecord{}, store.ErrNotFound
	}
	return r, nil
}

// A call for another kind, or without the watch's recipient, is a routing
// bug and an error, never a quiet pending; params out of bounds are
// refused at admission even from the reconciler.
func TestKindRefusesWhatIsNotItsOwn(t *testing.T) {
	k := New(recordStore{})
	ctx := kind.WithRecipient(context.Background(), "w")
	params := ParamsFor(10 * time.Minute)
	if _, err := k.Observe(ctx, abi.ObserveRequest{Kind: "ticket", Params: params, Now: t0}); !errors.Is(err, kind.ErrRaised) {
		t.Fatalf("another kind: %v", err)
	}
	if _, err := k.Observe(context.Background(), abi.ObserveRequest{Kind: Name, Params: params, Now: t0}); err == nil {
		t.Fatal("no recipient: no error")
	}
	for _, p := range []string{`{"every":"30s"}`, `{"every":"25h"}`, `{}`, `{"every":"10m","x":1}`} {
		_, err := k.Admit(WithReconciler(context.Background()), kind.AdmitRequest{Params: json.RawMessage(p)})
		var ae *api.Error
		if !errors.As(err, &ae) || ae.Code != api.CodeInvalidParams {
			t.Errorf("%s: %v", p, err)
		}
	}
	if _, err := k.Admit(WithReconciler(context.Background()), kind.AdmitRequest{Params: params}); err != nil {
		t.Fatal(err)
	}
	// A recipient whose record is gone is not running: pending, and the
	// first check's baseline.
	obs, err := k.Observe(ctx, abi.ObserveRequest{Kind: Name, Params: params, Now: t0, Baseline: json.RawMessage(`{"replies":0,"tool_calls":0}`)})
	if err != nil || obs.Status != abi.StatusPending || obs.Note != WhyNotRunning {
		t.Fatalf("%+v %v", obs, err)
	}
}
