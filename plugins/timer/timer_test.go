package main

import (
	"encoding/json"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/sdk"
	"github.com/vigilhq/vigil/sdk/abi"
)

var at = time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)

func TestObserve(t *testing.T) {
	tests := []struct {
		name   string
		now    time.Time
		status string
	}{
		{"an hour early", at.Add(-time.Hour), abi.StatusPending},
		{"a nanosecond early", at.Add(-time.Nanosecond), abi.StatusPending},
		{"on time", at, abi.StatusSettled},
		{"late", at.Add(time.Hour), abi.StatusSettled},
	}
	h := sdk.NewHarness(Plugin)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := h.Observe(abi.ObserveRequest{Kind: "timer", Now: tt.now, Params: json.RawMessage(`{"at":"2026-11-30T15:00:00+01:00"}`)}, nil)
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
	for params, ok := range map[string]bool{
		`{"at":"2026-11-30T14:00:00Z"}`:       true,
		`{}`:                                  false,
		`{"at":"0001-01-01T00:00:00Z"}`:       false,
		`{"at":"noon"}`:                       false,
		`{"at":"2026-11-30T14:00:00Z","x":1}`: false,
		`{"at":"9999-12-31T23:58:00Z"}`:       true,
		`{"at":"9999-12-31T23:59:00Z"}`:       false, // its deadline is in year 10000
		`{"at":"9999-12-31T20:00:00-05:00"}`:  false, // 10000-01-01T01:00:00Z
	} {
		got, err := h.Admit(abi.AdmitRequest{Kind: "timer", Params: json.RawMessage(params)})
		if err != nil {
			t.Fatal(err)
		}
		if got.OK != ok || (!ok && got.Code != abi.CodeInvalidParams) {
			t.Errorf("%s: %+v", params, got)
		}
	}
}

// Admit's fast params path names the field it refuses, as encoding/json
// would.
func TestAdmitNamesTheField(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	for params, field := range map[string]string{
		`{"at":"2026-11-30T14:00:00Z","every":1}`: "every",
		`{"at":"9999-12-31T23:59:59Z"}`:           "at",
		`{"at":5}`:                                "at",
		`{"at":"noon"}`:                           "at",
	} {
		got, err := h.Admit(abi.AdmitRequest{Kind: "timer", Params: json.RawMessage(params)})
		if err != nil || got.OK || got.Field != field || got.Code != abi.CodeInvalidParams {
			t.Errorf("%s: %+v %v", params, got, err)
		}
	}
}

func TestDescribe(t *testing.T) {
	d, err := sdk.NewHarness(Plugin).Describe()
	if err != nil {
		t.Fatal(err)
	}
	if d.Kind != "timer" || d.Standing || len(d.Capabilities) != 0 || !json.Valid(d.ParamsSchema) {
		t.Fatalf("describe = %+v", d)
	}
}

// UnmarshalParams is observe's fast path; it must read every params value
// exactly as admit's encoding/json does.
func TestUnmarshalParamsAgrees(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		offset := rapid.IntRange(-12*60, 14*60).Draw(t, "tz")
		want := Params{At: time.Unix(rapid.Int64Range(-1<<33, 1<<35).Draw(t, "sec"), rapid.Int64Range(0, 999_999_999).Draw(t, "ns")).
			In(time.FixedZone("", offset*60))}
		b, err := json.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		var viaJSON, fast Params
		if err := json.Unmarshal(b, &viaJSON); err != nil {
			t.Fatal(err)
		}
		if err := fast.UnmarshalParams(b); err != nil {
			t.Fatalf("%s: %v", b, err)
		}
		if !fast.At.Equal(viaJSON.At) {
			t.Fatalf("%s: fast %v, json %v", b, fast.At, viaJSON.At)
		}
	})
	for _, bad := range []string{`{"at":1}`, `{"when":"2026-11-30T14:00:00Z"}`, `[]`, `{"at":"2026-11-30"}`} {
		var p Params
		if err := p.UnmarshalParams([]byte(bad)); err == nil {
			t.Errorf("accepted %s", bad)
		}
	}
}

// Admit names the instant as the watch's first check, so the host arms
// the watch there instead of probing it at registration; an instant
// before the Unix epoch (which the host takes as no first check) names
// none, and is probed at once.
func TestAdmitNamesTheInstantAsTheFirstCheck(t *testing.T) {
	h := sdk.NewHarness(Plugin)
	for params, want := range map[string]time.Time{
		`{"at":"2026-11-30T15:00:00+01:00"}`: at,
		`{"at":"1970-01-01T00:00:00Z"}`:      time.Unix(0, 0),
		`{"at":"1969-12-31T23:59:59Z"}`:      {},
		`{"at":"0001-06-01T00:00:00Z"}`:      {},
	} {
		got, err := h.Admit(abi.AdmitRequest{Kind: "timer", Params: json.RawMessage(params)})
		if err != nil || !got.OK {
			t.Fatalf("%s: %+v, %v", params, got, err)
		}
		switch {
		case want.IsZero() && got.NextCheck != nil:
			t.Errorf("%s: next_check %s, want none", params, got.NextCheck)
		case !want.IsZero() && (got.NextCheck == nil || !got.NextCheck.Equal(want)):
			t.Errorf("%s: next_check %v, want %s", params, got.NextCheck, want)
		case got.NextCheck != nil && got.NextCheck.After(*got.Deadline):
			t.Errorf("%s: next_check %s after the deadline %s", params, got.NextCheck, got.Deadline)
		}
	}
}
