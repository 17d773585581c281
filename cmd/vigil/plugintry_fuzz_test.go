package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// readParams reads what it is given as the params, byte for byte, when it
// is JSON of at most 1 MiB, from the flag's value or standard input
// alike, and refuses anything else with an error naming --params.
func FuzzReadParams(f *testing.F) {
	for _, s := range []string{`{"at":"2030-01-01T14:00:00Z"}`, `null`, `[1,2`, ``, `@`, `-`, `"x"`, " {} ", "\xff"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		fromStdin, err := readParams("-", strings.NewReader(s))
		if valid := json.Valid([]byte(s)); valid != (err == nil) {
			t.Fatalf("stdin %q: valid %v, err %v", s, valid, err)
		}
		if err != nil {
			if !strings.Contains(err.Error(), "--params") {
				t.Fatalf("stdin %q: the error does not name --params: %v", s, err)
			}
			return
		}
		if !bytes.Equal(fromStdin, []byte(s)) {
			t.Fatalf("stdin %q read as %q", s, fromStdin)
		}
		if s == "" || s == "-" || strings.HasPrefix(s, "@") {
			return // not JSON given on the flag: the flag's own forms
		}
		fromFlag, err := readParams(s, strings.NewReader(""))
		if err != nil || !bytes.Equal(fromFlag, []byte(s)) {
			t.Fatalf("flag %q: %q, %v", s, fromFlag, err)
		}
	})
}
