package store

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestOutcomeBounded: an outcome within MaxOutcome is kept as it is; one
// over it keeps its result and summary (cut at a character, when long)
// and says how much detail it dropped, and always fits.
func TestOutcomeBounded(t *testing.T) {
	long := strings.Repeat("é", MaxOutcome) // 2 bytes a character
	for _, tc := range []struct {
		name string
		o    Outcome
		same bool
	}{
		{"small", Outcome{Result: "fired", Summary: "s", Detail: json.RawMessage(`{"a":1}`)}, true},
		{"at the bound", Outcome{Result: "r", Detail: json.RawMessage(`"` + strings.Repeat("x", MaxOutcome-3) + `"`)}, true},
		{"detail over", Outcome{Result: "r", Summary: "s", Detail: json.RawMessage(`"` + strings.Repeat("x", MaxOutcome) + `"`)}, false},
		{"summary over", Outcome{Result: "r", Summary: long}, false},
		{"result over, odd cut", Outcome{Result: "a" + long}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := tc.o.Bounded()
			if n := len(b.Result) + len(b.Summary) + len(b.Detail); n > MaxOutcome {
				t.Fatalf("bounded to %d bytes, over %d", n, MaxOutcome)
			}
			if tc.same {
				if b.Result != tc.o.Result || b.Summary != tc.o.Summary || string(b.Detail) != string(tc.o.Detail) {
					t.Fatal("an outcome within the bound was changed")
				}
				return
			}
			if !utf8.ValidString(b.Result) || !utf8.ValidString(b.Summary) || !strings.HasPrefix(tc.o.Result, b.Result) || !strings.HasPrefix(tc.o.Summary, b.Summary) {
				t.Fatalf("result %.20q summary %.20q: want whole characters of the first", b.Result, b.Summary)
			}
			if len(tc.o.Detail) > 0 {
				var d OutcomeDropped
				if err := json.Unmarshal(b.Detail, &d); err != nil || d.DroppedBytes != len(tc.o.Detail) {
					t.Fatalf("detail %s, want the dropped size %d", b.Detail, len(tc.o.Detail))
				}
			}
		})
	}
}
