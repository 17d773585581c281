package store

import (
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"
)

func genIdemRecord(t *rapid.T) IdemRecord {
	r := IdemRecord{
		Principal: rapid.StringMatching(`[a-z0-9:@._-]{1,20}`).Draw(t, "principal"),
		Key:       rapid.StringMatching(`[!-~]{1,255}`).Draw(t, "key"),
		At:        time.Unix(0, rapid.Int64Range(0, 1<<62).Draw(t, "at")).UTC(),
		Answer: Answer{
			Status:   rapid.IntRange(200, 299).Draw(t, "status"),
			Location: rapid.StringMatching(`(/api/v1/watches/[0-9a-z]{26})?`).Draw(t, "location"),
			Body:     rapid.SliceOfN(rapid.Byte(), 0, 200).Draw(t, "body"),
		},
	}
	if rapid.Bool().Draw(t, "json") {
		// An answer as the API renders it: JSON, HTML's characters too.
		b, _ := json.Marshal(map[string]any{"text": rapid.String().Draw(t, "text"), "n": rapid.Int().Draw(t, "n")})
		r.Answer.Body = b
	}
	if rapid.IntRange(0, 9).Draw(t, "unkept") == 0 {
		r.Answer.Body, r.Answer.Unkept = nil, rapid.IntRange(1, 1<<30).Draw(t, "unkept size")
	}
	copy(r.Fingerprint[:], rapid.SliceOfN(rapid.Byte(), 32, 32).Draw(t, "fingerprint"))
	return r
}

// A record reads back as it was written, every byte of its answer kept.
func TestIdemRecordRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		r := genIdemRecord(t)
		b, err := EncodeIdem(r)
		if err != nil {
			t.Fatal(err)
		}
		got, err := DecodeIdem(b)
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Answer.Body) == 0 && len(r.Answer.Body) == 0 {
			got.Answer.Body, r.Answer.Body = nil, nil
		}
		if !reflect.DeepEqual(got, r) {
			t.Fatalf("%+v reads back as %+v", r, got)
		}
	})
}

// Any bytes decode as a record or are refused as ErrCorrupt; never a
// panic, never a record without a principal or a valid key.
func TestDecodeIdemRefusesAnything(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		b := rapid.SliceOfN(rapid.Byte(), 0, 300).Draw(t, "bytes")
		r, err := DecodeIdem(b)
		if err != nil && !errors.Is(err, ErrCorrupt) {
			t.Fatalf("%q: %v", b, err)
		}
		if err == nil && (r.Principal == "" || r.Key == "") {
			t.Fatalf("%q read as %+v", b, r)
		}
	})
}

// The key's decision: nothing under the key lets the write go on; the
// same principal, key and request is a Replay of the record as kept;
// any other request (another method, target or body), or a record of
// another principal or key under it, is ErrIdemReused.
func TestIdemCheckDecides(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		method := rapid.SampledFrom([]string{"POST", "PUT"}).Draw(t, "method")
		target := rapid.StringMatching(`/api/v1/[a-z/]{0,20}`).Draw(t, "target")
		body := rapid.SliceOfN(rapid.Byte(), 0, 100).Draw(t, "body")
		rec := genIdemRecord(t)
		rec.Fingerprint = FingerprintOf(method, target, body)
		stored, err := EncodeIdem(rec)
		if err != nil {
			t.Fatal(err)
		}
		same := &Idem{Principal: rec.Principal, Key: rec.Key, Fingerprint: FingerprintOf(method, target, body)}
		if err := same.Check(nil); err != nil {
			t.Fatalf("nothing under the key: %v", err)
		}
		var rp *Replay
		if err := same.Check(stored); !errors.As(err, &rp) || string(rp.Record.Answer.Body) != string(rec.Answer.Body) || rp.Record.Answer.Status != rec.Answer.Status {
			t.Fatalf("the same request: %v, want a Replay of %+v", err, rec)
		}
		other := *same
		switch rapid.IntRange(0, 4).Draw(t, "change") {
		case 0:
			other.Fingerprint = FingerprintOf(map[string]string{"POST": "PUT", "PUT": "POST"}[method], target, body)
		case 1:
			other.Fingerprint = FingerprintOf(method, target+"x", body)
		case 2:
			other.Fingerprint = FingerprintOf(method, target, append(append([]byte(nil), body...), ' '))
		case 3:
			other.Principal += "x"
		case 4:
			// Moving bytes from the target into the body is another
			// request too: the parts are length-prefixed.
			if len(target) == 0 {
				t.Skip()
			}
			other.Fingerprint = FingerprintOf(method, target[:len(target)-1], append([]byte(target[len(target)-1:]), body...))
		}
		if err := other.Check(stored); !errors.Is(err, ErrIdemReused) {
			t.Fatalf("another request under the key: %v, want ErrIdemReused", err)
		}
	})
}

// A JSON answer is kept as JSON inside the record, not as base64 (a
// third larger), and reads back byte for byte; a record an older build
// wrote, its body in base64, still reads.
func TestIdemKeepsAJSONAnswerAsJSON(t *testing.T) {
	body := []byte(`{"id":"w1","title":"<b> & \u2028","inputs":[` + strings.Repeat(`{"text":"xxxxxxxxxxxxxxxx"},`, 1000) + `{}]}`)
	b, err := EncodeIdem(IdemRecord{Principal: "p", Key: "k", At: time.Unix(0, 0).UTC(), Answer: Answer{Status: 200, Body: body}})
	if err != nil {
		t.Fatal(err)
	}
	if len(b) > len(body)+300 {
		t.Fatalf("a record of a %d-byte JSON answer is %d bytes: want the body as JSON, not base64", len(body), len(b))
	}
	r, err := DecodeIdem(b)
	if err != nil || string(r.Answer.Body) != string(body) {
		t.Fatalf("read back %q %v, want %q", r.Answer.Body, err, body)
	}
	old := `{"v":1,"principal":"p","key":"k","fingerprint":"` + strings.Repeat("A", 43) + `=","at":"1970-01-01T00:00:00Z","answer":{"status":201,"location":"/x/1","body":"eyJpZCI6MX0="}}`
	r, err = DecodeIdem([]byte(old))
	if err != nil || string(r.Answer.Body) != `{"id":1}` || r.Answer.Location != "/x/1" {
		t.Fatalf("an older record read as %+v %v", r, err)
	}
}

// Record keeps a record within its limit: over it, the answer's body
// goes and its size is kept (Unkept); the status and Location stay.
func TestIdemRecordWithinItsLimit(t *testing.T) {
	body := []byte(`"` + strings.Repeat("x", 5000) + `"`)
	i := &Idem{Principal: "p", Key: "k", At: time.Unix(0, 0), Answer: func(any) (Answer, error) {
		return Answer{Status: 200, Location: "/w/1", Body: body}, nil
	}}
	for _, tc := range []struct {
		limit int
		kept  bool
	}{{10000, true}, {5000, false}} {
		b, err := i.Record(nil, tc.limit)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) > tc.limit {
			t.Fatalf("limit %d: a record of %d bytes", tc.limit, len(b))
		}
		r, err := DecodeIdem(b)
		if err != nil {
			t.Fatal(err)
		}
		if tc.kept && (string(r.Answer.Body) != string(body) || r.Answer.Unkept != 0) ||
			!tc.kept && (r.Answer.Body != nil || r.Answer.Unkept != len(body) || r.Answer.Status != 200 || r.Answer.Location != "/w/1") {
			t.Fatalf("limit %d: %+v", tc.limit, r.Answer)
		}
	}
}
