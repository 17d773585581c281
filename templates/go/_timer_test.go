package main

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

var at = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

func TestObserve(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	for _, tt := range []struct {
		name   string
		now    time.Time
		status string
	}{
		{"an hour early", at.Add(-time.Hour), abi.StatusPending},
		{"a nanosecond early", at.Add(-time.Nanosecond), abi.StatusPending},
		{"on time", at, abi.StatusSettled},
		{"late", at.Add(time.Hour), abi.StatusSettled},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h.Observe(abi.ObserveRequest{Kind: Kind, Now: tt.now, Params: json.RawMessage(`{"at":"2026-11-30T15:00:00+01:00"}`)}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if got.Status != tt.status {
				t.Fatalf("status %s, want %s", got.Status, tt.status)
			}
			switch got.Status {
			case abi.StatusPending:
				// The hint is the instant itself: probed once, not every interval.
				if got.NextCheck == nil || !got.NextCheck.Equal(at) {
					t.Fatalf("next_check = %v, want %v", got.NextCheck, at)
				}
			case abi.StatusSettled:
				if got.Outcome.Result != "fired" || got.Outcome.Summary != "reached 2026-11-30T14:00:00Z" {
					t.Fatalf("outcome = %+v", got.Outcome)
				}
			}
		})
	}
}

func TestAdmit(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	for _, tt := range []struct {
		params string
		ok     bool
		field  string // the field a refusal names
	}{
		{`{"at":"2026-11-30T14:00:00Z"}`, true, ""},
		{`{"at":"9999-12-31T23:58:00Z"}`, true, ""},
		{`{}`, false, "at"},
		{`{"at":"9999-12-31T23:59:00Z"}`, false, "at"}, // its deadline is in year 10000
		{`{"at":"2026-11-30T14:00:00Z","x":1}`, false, "x"},
		{`{"at":"noon"}`, false, ""}, // the host's schema refuses it first, naming "at"
	} {
		got, err := h.Admit(abi.AdmitRequest{Kind: Kind, Params: json.RawMessage(tt.params)})
		if err != nil {
			t.Fatal(err)
		}
		if got.OK != tt.ok || (!got.OK && (got.Code != abi.CodeInvalidParams || got.Field != tt.field)) {
			t.Errorf("%s: %+v", tt.params, got)
		}
		if got.OK && (got.Deadline == nil || !got.Deadline.After(time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC))) {
			t.Errorf("%s: no natural deadline after the instant: %+v", tt.params, got)
		}
	}
}

// A call for another kind is an error, never pending: a routing bug.
func TestWrongKindIsAnError(t *testing.T) {
	_, err := sdk.NewHarness(Plugin).Observe(abi.ObserveRequest{Kind: "another.kind", Now: at, Params: json.RawMessage(`{"at":"2026-11-30T14:00:00Z"}`)}, nil)
	if err == nil {
		t.Fatal("a call for another kind answered")
	}
}
