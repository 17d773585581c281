package abi

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// Absent is not zero: a decoded request says whether timeout_seconds was
// given, so the issuer can refuse a zero and default an absence.
func TestFetchRequestTimeoutGiven(t *testing.T) {
	for _, tc := range []struct {
		name  string
		in    string
		given bool
		secs  float64
	}{
		{"absent", `{"method":"GET","url":"https://a.example/"}`, false, 0},
		{"null", `{"method":"GET","url":"https://a.example/","timeout_seconds":null}`, false, 0},
		{"zero", `{"method":"GET","url":"https://a.example/","timeout_seconds":0}`, true, 0},
		{"negative zero", `{"method":"GET","url":"https://a.example/","timeout_seconds":-0.0}`, true, 0},
		{"four", `{"method":"GET","url":"https://a.example/","timeout_seconds":4}`, true, 4},
		{"fraction", `{"method":"GET","url":"https://a.example/","timeout_seconds":0.25}`, true, 0.25},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r FetchRequest
			if err := json.Unmarshal([]byte(tc.in), &r); err != nil {
				t.Fatal(err)
			}
			if r.TimeoutGiven() != tc.given || r.TimeoutSeconds != tc.secs || r.Method != "GET" || r.URL != "https://a.example/" {
				t.Fatalf("decoded %+v, given %v", r, r.TimeoutGiven())
			}
		})
	}
	// Built in Go, a non-zero timeout is given; zero is absent, and is
	// omitted on the wire.
	if !(FetchRequest{TimeoutSeconds: 2}).TimeoutGiven() || (FetchRequest{}).TimeoutGiven() {
		t.Fatal("a Go-built request")
	}
	b, _ := json.Marshal(FetchRequest{Method: "GET", URL: "https://a.example/"})
	if string(b) != `{"method":"GET","url":"https://a.example/"}` {
		t.Fatalf("marshalled %s", b)
	}
}

// Decoding stays strict with the custom decoder: an unknown field (a
// misspelt timeout among them) and trailing data are errors.
func TestFetchRequestDecodesStrictly(t *testing.T) {
	for _, in := range []string{
		`{"method":"GET","url":"https://a.example/","timeout":4}`,
		`{"method":"GET","url":"https://a.example/","timeout_seconds":"4"}`,
		`{"method":"GET","url":"https://a.example/"} {}`,
		`[]`,
	} {
		var r FetchRequest
		if err := json.Unmarshal([]byte(in), &r); err == nil {
			t.Errorf("%s decoded as %+v", in, r)
		}
		if err := StrictUnmarshal([]byte(in), &r); err == nil {
			t.Errorf("strict: %s decoded as %+v", in, r)
		}
	}
}

// FuzzFetchRequestJSON: whatever a plugin sends, decoding never panics; a
// request that decodes says timeout_seconds was given exactly when the
// object has that key with a number, and survives a round trip (a given
// zero aside, which Marshal omits like any Go zero).
func FuzzFetchRequestJSON(f *testing.F) {
	for _, s := range []string{
		`{"method":"GET","url":"https://a.example/"}`,
		`{"method":"GET","url":"u","timeout_seconds":0}`,
		`{"method":"HEAD","url":"u","timeout_seconds":1e308,"headers":{"a":"b"},"secret":"gh"}`,
		`{"timeout_seconds":null}`,
		`null`,
		`{"method":"GET","timeout_seconds":4,"timeout_seconds":0}`,
		`{"method":"GET","Timeout_Seconds":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var r FetchRequest
		if err := json.Unmarshal(data, &r); err != nil {
			return
		}
		var obj map[string]json.RawMessage
		if json.Unmarshal(data, &obj) == nil && obj != nil {
			// encoding/json matches a key without regard to case; with
			// two such keys the last wins, which a map cannot tell.
			var raws []json.RawMessage
			for k, v := range obj {
				if strings.EqualFold(k, "timeout_seconds") {
					raws = append(raws, v)
				}
			}
			if len(raws) <= 1 {
				var secs *float64
				if len(raws) == 1 {
					_ = json.Unmarshal(raws[0], &secs)
				}
				if want := secs != nil; r.TimeoutGiven() != want {
					t.Fatalf("%s: given %v, want %v", data, r.TimeoutGiven(), want)
				}
			}
		}
		if math.IsNaN(r.TimeoutSeconds) {
			t.Fatal("NaN from JSON")
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back FetchRequest
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatalf("%s: the re-marshalled %s does not decode: %v", data, b, err)
		}
		if back.Method != r.Method || back.URL != r.URL || back.Secret != r.Secret || back.TimeoutSeconds != r.TimeoutSeconds ||
			len(back.Headers) != len(r.Headers) || back.TimeoutGiven() != (r.TimeoutSeconds != 0) {
			t.Fatalf("%s: round trip %+v, was %+v", data, back, r)
		}
	})
}
