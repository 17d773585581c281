package store

import (
	"errors"
	"reflect"
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
