package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/store"
)

// A registration's own fields are bounded before anything is written or
// any kind is asked: a cadence no longer than the longest deadline, a
// kind name of the grammar, params within the host's size and depth.
// Each refusal is the caller's 422 naming the field.
func TestRegistrationBounds(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	admitted := 0
	h.plugins.OnAdmit(func(string, kind.AdmitRequest) (kind.Admission, error) {
		admitted++
		return kind.Admission{}, nil
	})
	dur := func(d time.Duration) *time.Duration { return &d }
	deep := `{"expect":{"json_path":{"path":"a","equals":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}}}`
	for _, tt := range []struct {
		name        string
		reg         Registration
		code, field string
	}{
		{"every of 2562047h", Registration{Kind: "ci", Every: dur(2562047 * time.Hour)}, api.CodeInvalidField, "every"},
		{"every past the longest deadline", Registration{Kind: "ci", Every: dur(7*24*time.Hour + time.Millisecond)}, api.CodeInvalidField, "every"},
		{"a standing kind's every past it", Registration{Kind: "ticket", Every: dur(8 * 24 * time.Hour)}, api.CodeInvalidField, "every"},
		{"a kind outside the grammar", Registration{Kind: "CI"}, api.CodeInvalidField, "kind"},
		{"a kind name of 100,000 bytes", Registration{Kind: strings.Repeat("k", 100_000)}, api.CodeInvalidField, "kind"},
		{"params 500 deep", Registration{Kind: "ci", Params: json.RawMessage(deep)}, api.CodeInvalidParams,
			"params.expect.json_path.equals." + strings.TrimSuffix(strings.Repeat("0.", kind.MaxParamsDepth-3), ".")},
		{"params over the size", Registration{Kind: "ci", Params: json.RawMessage(`"` + strings.Repeat("x", kind.MaxParamsBytes) + `"`)}, api.CodeInvalidParams, "params"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.reg.Recipient.ID = "agent-1"
			_, err := h.s.Register(ctx, tt.reg)
			var se *api.Error
			if !errors.As(err, &se) || se.Code != tt.code || se.Field != tt.field {
				t.Fatalf("err = %v, want %s naming %s", err, tt.code, tt.field)
			}
		})
	}
	if admitted != 0 {
		t.Fatalf("the kind was asked %d times about a registration over the bounds", admitted)
	}
	// At the bounds: accepted.
	w, err := h.s.Register(ctx, Registration{Kind: "ci", Recipient: store.Recipient{ID: "agent-1"}, Every: dur(7 * 24 * time.Hour),
		Params: json.RawMessage(strings.Repeat("[", kind.MaxParamsDepth) + strings.Repeat("]", kind.MaxParamsDepth))})
	if err != nil || time.Duration(w.Every) != 7*24*time.Hour {
		t.Fatalf("at the bounds: %+v %v", w, err)
	}
}

// An expires_at before the kind's natural deadline (a timer's instant
// plus a minute) is refused: the watch could only expire. At or after
// it, up to the longest deadline, it stands; a natural deadline already
// past (a timer due before its registration) refuses no future one.
func TestExpiresAtBeforeTheNaturalDeadline(t *testing.T) {
	h := newHarness(t)
	ctx := context.Background()
	natural := t0.Add(time.Hour + time.Minute) // a timer at t0+1h
	h.plugins.OnAdmit(func(string, kind.AdmitRequest) (kind.Admission, error) {
		return kind.Admission{Deadline: natural}, nil
	})
	register := func(expires time.Time) (store.Watch, error) {
		return h.s.Register(ctx, Registration{Kind: "ci", Recipient: store.Recipient{ID: "agent-1"}, ExpiresAt: &expires})
	}
	for _, early := range []time.Time{t0.Add(time.Minute), t0.Add(time.Hour), natural.Add(-time.Nanosecond)} {
		_, err := register(early)
		var se *api.Error
		if !errors.As(err, &se) || se.Code != api.CodeInvalidField || se.Field != "expires_at" || !strings.Contains(se.Message, "natural deadline") {
			t.Fatalf("expires_at %s: %v", early, err)
		}
	}
	for _, ok := range []time.Time{natural, natural.Add(time.Hour)} {
		if w, err := register(ok); err != nil || !w.ExpiresAt.Equal(ok) {
			t.Fatalf("expires_at %s: %+v %v", ok, w, err)
		}
	}
	natural = t0.Add(-time.Hour)
	if w, err := register(t0.Add(time.Minute)); err != nil || !w.ExpiresAt.Equal(t0.Add(time.Minute)) {
		t.Fatalf("past natural deadline: %+v %v", w, err)
	}
	// A kind that names no natural deadline takes any future one.
	h.plugins.OnAdmit(nil)
	if _, err := register(t0.Add(time.Second)); err != nil {
		t.Fatalf("no natural deadline: %v", err)
	}
}
