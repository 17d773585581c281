package webhooks

import (
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"
)

// FuzzVerify: over arbitrary header values and bodies, Verify never
// panics, every error is one of the package's typed errors, and anything
// it accepts is a request whose own signature is among the entries.
func FuzzVerify(f *testing.F) {
	f.Add(vectorID, "1767225601", vectorSignature, []byte(vectorBody), int64(0))
	f.Add(vectorID, "1767225601", "v1,bm9wZQ== "+vectorSignature, []byte(vectorBody), int64(60))
	f.Add("a.b", "+1", "v1,", []byte{}, int64(-1))
	f.Add("", "", "", []byte(nil), int64(1<<40))
	f.Add("x", "999999999999999999", "v1,!!! v2,x  v1,AAAA====", []byte("{}"), int64(-1<<40))
	f.Fuzz(func(t *testing.T, id, ts, sig string, body []byte, skew int64) {
		h := http.Header{}
		h.Set(HeaderID, id)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, sig)
		now := time.Unix(vectorTimestamp, 0).Add(time.Duration(skew))
		err := Verify(vectorSecret, h, body, now, 0)
		if err != nil {
			if !errors.Is(err, ErrMissingHeaders) && !errors.Is(err, ErrTimestamp) && !errors.Is(err, ErrSignature) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		// Accepted: the timestamp parses, and signing the same message
		// at that instant gives an entry of the header.
		want, serr := Sign(vectorSecret, id, time.Unix(mustUnix(t, ts), 0), body)
		if serr != nil || !strings.Contains(" "+strings.Join(strings.Fields(sig), " ")+" ", " "+want+" ") {
			t.Fatalf("accepted id %q ts %q sig %q, whose signature is %q (%v)", id, ts, sig, want, serr)
		}
	})
}

func mustUnix(t *testing.T, s string) int64 {
	t.Helper()
	n, ok := parseUnix(s)
	if !ok {
		t.Fatalf("accepted timestamp %q does not parse", s)
	}
	return n
}

// FuzzParseSecret: ParseSecret never panics, refuses with ErrSecret, and
// accepts only a secret that NewSecret's encoding would write back
// byte for byte; CheckSecret accepts exactly those of them whose key is
// of the specification's sizes.
func FuzzParseSecret(f *testing.F) {
	f.Add(vectorSecret)
	f.Add("whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	f.Add("whsec_")
	f.Add("whsec_AAAAAAAAAAAAAAAAAAAAAB==")
	f.Add(vectorSecret + "\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		key, err := ParseSecret(s)
		if err != nil {
			if !errors.Is(err, ErrSecret) {
				t.Fatalf("untyped error: %v", err)
			}
			return
		}
		if len(key) < MinSecretBytes {
			t.Fatalf("accepted a %d-byte key", len(key))
		}
		if back := SecretPrefix + b64(key); back != s {
			t.Fatalf("accepted %q, which re-encodes as %q", s, back)
		}
		if err := CheckSecret(s); (err == nil) != (len(key) >= MinNewSecretBytes && len(key) <= MaxSecretBytes) {
			t.Fatalf("CheckSecret of a %d-byte key: %v", len(key), err)
		}
	})
}
