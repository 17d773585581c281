package abi

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// The instants of the contract as the host reads them (next_check,
// admit's deadline) and writes them (observe's now): docs/abi.md's table
// of RFC 3339, pinned. The host decodes with StrictUnmarshal, as here.
func TestRFC3339AsTheHostReadsIt(t *testing.T) {
	for _, tt := range []struct {
		in   string
		ok   bool
		want time.Time // in UTC, when ok
	}{
		{"2026-11-30T14:00:00Z", true, time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)},
		{"2026-11-30T15:00:00+01:00", true, time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)},
		{"2026-11-30T09:30:00-04:30", true, time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)},
		{"2026-11-30T14:00:00-00:00", true, time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC)},
		{"2026-11-30T14:00:00.5Z", true, time.Date(2026, 11, 30, 14, 0, 0, 500_000_000, time.UTC)},
		{"2026-11-30T14:00:00.123456789Z", true, time.Date(2026, 11, 30, 14, 0, 0, 123456789, time.UTC)},
		// Digits past the ninth are read and dropped.
		{"2026-11-30T14:00:00.1234567891Z", true, time.Date(2026, 11, 30, 14, 0, 0, 123456789, time.UTC)},
		{"0000-01-01T00:00:00Z", true, time.Date(0, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"9999-12-31T23:59:59Z", true, time.Date(9999, 12, 31, 23, 59, 59, 0, time.UTC)},
		// Beyond RFC 3339, read all the same: a comma before the fraction,
		// and an offset of 24 hours. Write neither.
		{"2026-11-30T14:00:00,5Z", true, time.Date(2026, 11, 30, 14, 0, 0, 500_000_000, time.UTC)},
		{"2026-11-30T14:00:00+24:00", true, time.Date(2026, 11, 29, 14, 0, 0, 0, time.UTC)},

		{"2026-11-30t14:00:00Z", false, time.Time{}},     // lower-case t
		{"2026-11-30T14:00:00z", false, time.Time{}},     // lower-case z
		{"2026-11-30 14:00:00Z", false, time.Time{}},     // a space for T
		{"2026-11-30T14:00Z", false, time.Time{}},        // no seconds
		{"2026-11-30T14:00:00", false, time.Time{}},      // no zone
		{"2026-11-30T14:00:00+0100", false, time.Time{}}, // offset without a colon
		{"2026-11-30T14:00:00.Z", false, time.Time{}},    // an empty fraction
		{"2026-11-30T14:00:60Z", false, time.Time{}},     // no leap second
		{"2026-02-30T14:00:00Z", false, time.Time{}},     // no such day
		{"2026-11-30T24:00:00Z", false, time.Time{}},     // no hour 24
		{"10000-01-01T00:00:00Z", false, time.Time{}},    // five-digit year
		{"-0001-01-01T00:00:00Z", false, time.Time{}},    // negative year
		{"2026-11-30", false, time.Time{}},               // a date alone
		{"1764511200", false, time.Time{}},               // a Unix time, as a string
	} {
		var r ObserveResponse
		err := StrictUnmarshal([]byte(`{"status":"pending","next_check":"`+tt.in+`"}`), &r)
		if (err == nil) != tt.ok {
			t.Errorf("%s: accepted = %v, want %v (%v)", tt.in, err == nil, tt.ok, err)
			continue
		}
		if tt.ok && (r.NextCheck == nil || !r.NextCheck.Equal(tt.want)) {
			t.Errorf("%s: read as %v, want %v", tt.in, r.NextCheck, tt.want)
		}
		var a AdmitResponse
		if err := StrictUnmarshal([]byte(`{"ok":true,"deadline":"`+tt.in+`"}`), &a); (err == nil) != tt.ok {
			t.Errorf("deadline %s: accepted = %v, want %v", tt.in, err == nil, tt.ok)
		}
	}
	// A number is no instant.
	var r ObserveResponse
	if err := StrictUnmarshal([]byte(`{"status":"pending","next_check":1764511200}`), &r); err == nil {
		t.Error("a number read as an instant")
	}
}

// The host writes now in UTC, with "Z", seconds always, and a fraction
// only when the instant has one, its trailing zeros trimmed.
func TestRFC3339AsTheHostWritesIt(t *testing.T) {
	for _, tt := range []struct {
		at   time.Time
		want string
	}{
		{time.Date(2026, 11, 30, 14, 0, 0, 0, time.UTC), "2026-11-30T14:00:00Z"},
		{time.Date(2026, 11, 30, 14, 0, 0, 120_000_000, time.UTC), "2026-11-30T14:00:00.12Z"},
		{time.Date(2026, 11, 30, 14, 0, 0, 1, time.UTC), "2026-11-30T14:00:00.000000001Z"},
		{time.Date(26, 1, 2, 3, 4, 5, 0, time.UTC), "0026-01-02T03:04:05Z"},
		// The scheduler passes now.UTC(): a local clock's zone never shows.
		{time.Date(2026, 11, 30, 15, 0, 0, 0, time.FixedZone("CET", 3600)).UTC(), "2026-11-30T14:00:00Z"},
	} {
		b, err := json.Marshal(ObserveRequest{Kind: "k", WatchID: "w", Params: json.RawMessage(`{}`), Now: tt.at, Attempt: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), `"now":"`+tt.want+`"`) {
			t.Errorf("%v written as %s, want now %s", tt.at, b, tt.want)
		}
	}
	// Outside years 0000-9999 there is nothing to write: encoding fails.
	if _, err := json.Marshal(ObserveRequest{Now: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}); err == nil {
		t.Error("year 10000 written")
	}
}
