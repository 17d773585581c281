package observe

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/vigilhq/vigil/api"
)

// FuzzDecodeRecord: the record endpoint's decoder and validators never
// panic, and whatever they accept is within every bound, valid UTF-8, and
// reads back the same after encoding.
func FuzzDecodeRecord(f *testing.F) {
	for _, seed := range []string{
		`{"item":"m1","thread":"T","text":"hi","revision":"r1","source":"slack-help"}`,
		`{"item":"m1","thread":"T","run":"nightly@2026-12-01T20:00:00+00:00"}`,
		`{"item":"m1","thread":"T","run":""}`,
		`{"item":"m1","thread":"T","run":"a b"}`,
		`{"item":"m","thread":"T","text":"\ud83d\ude00"}`,
		`{"item":"m","thread":"T","text":"\udc00"}`,
		`{"item":"m","thread":"T","text":"\\ud800"}`,
		`{"item":"","thread":"T"}`,
		`{"item":"m","thread":"T","x":1}`,
		`{"item":"m","item":"n","thread":"T"}`,
		"{\"item\":\"\xff\",\"thread\":\"T\"}",
		`[]`, `null`, `{}`, ``,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := DecodeRecord(body)
		if err != nil {
			if _, ok := err.(*api.Error); !ok {
				t.Fatalf("untyped error %T: %v", err, err)
			}
			return
		}
		if err := r.Validate(); err != nil {
			t.Fatalf("accepted an invalid record: %v", err)
		}
		if r.Run != "" && !validRun(r.Run) {
			t.Fatalf("accepted run %q", r.Run)
		}
		for _, s := range []string{r.Item, r.Thread, r.Text, r.Revision, r.Source, r.Run} {
			if !utf8.ValidString(s) {
				t.Fatalf("accepted invalid UTF-8: %q", s)
			}
		}
		enc, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		back, err := DecodeRecord(enc)
		if err != nil || back != r {
			t.Fatalf("round trip: %+v -> %s -> %+v, %v", r, enc, back, err)
		}
	})
}
