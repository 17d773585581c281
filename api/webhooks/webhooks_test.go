package webhooks

import (
	"bytes"
	"encoding/base64"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The vigil test vector, also printed in docs/webhooks.md. It was computed
// once (and cross-checked with an independent HMAC implementation) and is
// hard-coded so a change to the algorithm cannot pass unnoticed.
const (
	vectorSecret    = "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX" // key bytes 0x00..0x17
	vectorID        = "01jdx3m5z8a8w0q6v4f1r2n3p4"
	vectorTimestamp = 1767225601 // 2026-01-01T00:00:01Z
	vectorBody      = `{"seq":1,"id":"01jdx3m5z8a8w0q6v4f1r2n3p4","watch_id":"01jdx3kqv0d3f7m2a9c8e6b4t1","kind":"timer","type":"fired","outcome":{"result":"fired","summary":"reached 2026-01-01T00:00:00Z","detail":{"at":"2026-01-01T00:00:00Z"}},"at":"2026-01-01T00:00:01Z"}`
	vectorSignature = "v1,+aNyJsAHrvQfhWg6mQTD13UXz1qQ0g4kS2vFMZfXFUY="
)

var vectorTime = time.Unix(vectorTimestamp, 0)

func TestVigilTestVector(t *testing.T) {
	sig, err := Sign(vectorSecret, vectorID, vectorTime, []byte(vectorBody))
	if err != nil || sig != vectorSignature {
		t.Fatalf("Sign = %q, %v; want %q", sig, err, vectorSignature)
	}
	h, err := Headers(vectorSecret, vectorID, vectorTime, []byte(vectorBody))
	if err != nil {
		t.Fatal(err)
	}
	if h.Get(HeaderID) != vectorID || h.Get(HeaderTimestamp) != "1767225601" || h.Get(HeaderSignature) != vectorSignature || len(h) != 3 {
		t.Fatalf("Headers = %v", h)
	}
	if err := Verify(vectorSecret, h, []byte(vectorBody), vectorTime.Add(time.Minute), 0); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

// The Standard Webhooks specification's own vector: reproducing it is
// what says any Standard Webhooks library verifies what vigil sends.
func TestStandardWebhooksTestVector(t *testing.T) {
	const (
		secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		id     = "msg_p5jXN8AQM9LWM0D4loKWxJek"
		body   = `{"test": 2432232314}`
		want   = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
	)
	ts := time.Unix(1614265330, 0)
	sig, err := Sign(secret, id, ts, []byte(body))
	if err != nil || sig != want {
		t.Fatalf("Sign = %q, %v; want %q", sig, err, want)
	}
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", "1614265330")
	h.Set("webhook-signature", want)
	if err := Verify(secret, h, []byte(body), ts, 0); err != nil {
		t.Fatalf("Verify: %v", err)
	}
}

func signed(t *testing.T) (http.Header, []byte) {
	t.Helper()
	h, err := Headers(vectorSecret, vectorID, vectorTime, []byte(vectorBody))
	if err != nil {
		t.Fatal(err)
	}
	return h, []byte(vectorBody)
}

func TestRoundTrip(t *testing.T) {
	secret, err := NewSecret(nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range [][]byte{nil, {}, []byte("{}"), bytes.Repeat([]byte{0, 0xff, '.'}, 1000)} {
		for _, ts := range []time.Time{time.Unix(0, 0), time.Unix(1767225600, 999_999_999), time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC)} {
			h, err := Headers(secret, "msg_1-A", ts, body)
			if err != nil {
				t.Fatal(err)
			}
			if err := Verify(secret, h, body, ts, time.Second); err != nil {
				t.Fatalf("round trip at %v of %d bytes: %v", ts, len(body), err)
			}
		}
	}
}

func TestTamperingFails(t *testing.T) {
	now := vectorTime
	for name, tamper := range map[string]func(h http.Header, body []byte) []byte{
		"body": func(_ http.Header, body []byte) []byte {
			return append(bytes.Clone(body[:len(body)-1]), ' ', '}')
		},
		"body truncated": func(_ http.Header, body []byte) []byte { return body[:len(body)-1] },
		"body empty":     func(http.Header, []byte) []byte { return nil },
		"id": func(h http.Header, body []byte) []byte {
			h.Set(HeaderID, "01jdx3m5z8a8w0q6v4f1r2n3p5")
			return body
		},
		"timestamp": func(h http.Header, body []byte) []byte {
			h.Set(HeaderTimestamp, strconv.Itoa(vectorTimestamp+1))
			return body
		},
		"signature bit": func(h http.Header, body []byte) []byte {
			h.Set(HeaderSignature, "v1,/aNyJsAHrvQfhWg6mQTD13UXz1qQ0g4kS2vFMZfXFUY=")
			return body
		},
		// The same 32 bytes, spelled with a non-zero padding bit.
		"signature spelling": func(h http.Header, body []byte) []byte {
			h.Set(HeaderSignature, "v1,+aNyJsAHrvQfhWg6mQTD13UXz1qQ0g4kS2vFMZfXFUZ=")
			return body
		},
		"signature version": func(h http.Header, body []byte) []byte {
			h.Set(HeaderSignature, "v2,"+strings.TrimPrefix(vectorSignature, "v1,"))
			return body
		},
		"signature truncated": func(h http.Header, body []byte) []byte {
			h.Set(HeaderSignature, vectorSignature[:20])
			return body
		},
		"signature empty": func(h http.Header, body []byte) []byte {
			h.Set(HeaderSignature, " ")
			return body
		},
	} {
		t.Run(name, func(t *testing.T) {
			h, body := signed(t)
			body = tamper(h, body)
			err := Verify(vectorSecret, h, body, now, 0)
			if err == nil {
				t.Fatal("a tampered request verified")
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("%T %v", err, err)
			}
		})
	}

	h, body := signed(t)
	other, _ := NewSecret(bytes.NewReader(bytes.Repeat([]byte{7}, 24)))
	if err := Verify(other, h, body, now, 0); !errors.Is(err, ErrSignature) {
		t.Fatalf("another secret: %v", err)
	}
}

// The signed string is id "." timestamp "." body, so a dot in an id
// could move the boundary: a message signed long ago as id "msg",
// timestamp 1000, body "1767225601.{}" signs the same string as id
// "msg.1000", timestamp 1767225601 (now), body "{}". The id grammar is
// what refuses the second reading.
func TestIDGrammarKeepsTheSignedStringUnambiguous(t *testing.T) {
	sig, err := Sign(vectorSecret, "msg", time.Unix(1000, 0), []byte("1767225601.{}"))
	if err != nil {
		t.Fatal(err)
	}
	h := http.Header{}
	h.Set(HeaderID, "msg.1000")
	h.Set(HeaderTimestamp, "1767225601")
	h.Set(HeaderSignature, sig)
	if err := Verify(vectorSecret, h, []byte("{}"), vectorTime, 0); !errors.Is(err, ErrMissingHeaders) {
		t.Fatalf("the shifted reading: %v", err)
	}
	if _, err := Sign(vectorSecret, "msg.1000", vectorTime, []byte("{}")); !errors.Is(err, ErrMissingHeaders) {
		t.Fatalf("Sign with a dotted id: %v", err)
	}
}

func TestOneValidSignatureAmongSeveralPasses(t *testing.T) {
	h, body := signed(t)
	for _, value := range []string{
		"v1,bm9wZQ== " + vectorSignature,
		vectorSignature + " v1,AAAA",
		"v1a,c2lnbmF0dXJl v2,xyz garbage " + vectorSignature + " v1,!!!",
		"  " + vectorSignature + "\t",
	} {
		h.Set(HeaderSignature, value)
		if err := Verify(vectorSecret, h, body, vectorTime, 0); err != nil {
			t.Errorf("%q: %v", value, err)
		}
	}
	// The same entries split across two header lines.
	h.Del(HeaderSignature)
	h.Add(HeaderSignature, "v1,bm9wZQ==")
	h.Add(HeaderSignature, vectorSignature)
	if err := Verify(vectorSecret, h, body, vectorTime, 0); err != nil {
		t.Errorf("two lines: %v", err)
	}
	// None valid.
	h.Set(HeaderSignature, "v1,bm9wZQ== v1,AAAA v2,"+strings.TrimPrefix(vectorSignature, "v1,"))
	if err := Verify(vectorSecret, h, body, vectorTime, 0); !errors.Is(err, ErrSignature) {
		t.Errorf("none valid: %v", err)
	}
}

func TestTimestampTolerance(t *testing.T) {
	h, body := signed(t)
	for _, c := range []struct {
		name      string
		now       time.Time
		tolerance time.Duration
		ok        bool
	}{
		{"now", vectorTime, 0, true},
		{"default, just inside", vectorTime.Add(5 * time.Minute), 0, true},
		{"default, just expired", vectorTime.Add(5*time.Minute + time.Nanosecond), 0, false},
		{"default, future inside", vectorTime.Add(-5 * time.Minute), 0, true},
		{"default, too far in the future", vectorTime.Add(-5*time.Minute - time.Nanosecond), 0, false},
		{"an hour late", vectorTime.Add(time.Hour), 0, false},
		{"an hour late, tolerance 2h", vectorTime.Add(time.Hour), 2 * time.Hour, true},
		{"a minute late, tolerance 30s", vectorTime.Add(time.Minute), 30 * time.Second, false},
		{"negative tolerance is the default", vectorTime.Add(4 * time.Minute), -time.Second, true},
		{"negative tolerance is not zero", vectorTime.Add(6 * time.Minute), -time.Second, false},
		{"the zero time", time.Time{}, 0, false},
	} {
		err := Verify(vectorSecret, h, body, c.now, c.tolerance)
		if c.ok != (err == nil) || (err != nil && !errors.Is(err, ErrTimestamp)) {
			t.Errorf("%s: %v", c.name, err)
		}
	}

	// A valid signature over a malformed timestamp is still refused.
	for _, ts := range []string{"+1767225601", "01767225601", "1767225601.0", "-1", " 1767225601", "0x6955b901", "", "1234567890123456789"} {
		h := http.Header{}
		h.Set(HeaderID, vectorID)
		h.Set(HeaderTimestamp, ts)
		h.Set(HeaderSignature, "v1,"+b64(signature(mustKey(t), vectorID, ts, body)))
		err := Verify(vectorSecret, h, body, vectorTime, 0)
		if ts == "" {
			if !errors.Is(err, ErrMissingHeaders) {
				t.Errorf("empty timestamp: %v", err)
			}
			continue
		}
		if !errors.Is(err, ErrTimestamp) {
			t.Errorf("timestamp %q: %v", ts, err)
		}
	}
}

func TestMissingAndRepeatedHeaders(t *testing.T) {
	for name, edit := range map[string]func(h http.Header){
		"no id":                       func(h http.Header) { h.Del(HeaderID) },
		"no timestamp":                func(h http.Header) { h.Del(HeaderTimestamp) },
		"no signature":                func(h http.Header) { h.Del(HeaderSignature) },
		"empty id":                    func(h http.Header) { h.Set(HeaderID, "") },
		"two ids":                     func(h http.Header) { h.Add(HeaderID, "other") },
		"two timestamps":              func(h http.Header) { h.Add(HeaderTimestamp, "1767225601") },
		"id with a space":             func(h http.Header) { h.Set(HeaderID, "a b") },
		"id too long":                 func(h http.Header) { h.Set(HeaderID, strings.Repeat("a", MaxIDLen+1)) },
		"id under a raw spelling too": func(h http.Header) { h["webhook-id"] = []string{vectorID} },
	} {
		t.Run(name, func(t *testing.T) {
			h, body := signed(t)
			edit(h)
			if err := Verify(vectorSecret, h, body, vectorTime, 0); !errors.Is(err, ErrMissingHeaders) {
				t.Fatalf("%v", err)
			}
		})
	}
	if err := Verify(vectorSecret, nil, nil, vectorTime, 0); !errors.Is(err, ErrMissingHeaders) {
		t.Fatalf("nil headers: %v", err)
	}

	// A header map built by hand, with lower-case keys, verifies.
	raw := http.Header{
		"webhook-id":        {vectorID},
		"WEBHOOK-TIMESTAMP": {"1767225601"},
		"webhook-signature": {vectorSignature},
	}
	if err := Verify(vectorSecret, raw, []byte(vectorBody), vectorTime, 0); err != nil {
		t.Fatalf("non-canonical keys: %v", err)
	}
}

func TestSecrets(t *testing.T) {
	s, err := NewSecret(bytes.NewReader(make([]byte, 64)))
	if err != nil || s != "whsec_AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA" {
		t.Fatalf("NewSecret = %q, %v", s, err)
	}
	if key, err := ParseSecret(s); err != nil || len(key) != SecretBytes {
		t.Fatalf("ParseSecret(NewSecret) = %x, %v", key, err)
	}
	if _, err := NewSecret(bytes.NewReader(make([]byte, 10))); err == nil {
		t.Fatal("NewSecret from a short reader succeeded")
	}
	a, _ := NewSecret(nil)
	b, _ := NewSecret(nil)
	if a == b || !strings.HasPrefix(a, SecretPrefix) {
		t.Fatalf("NewSecret(nil): %q %q", a, b)
	}

	key, err := ParseSecret(vectorSecret)
	if err != nil || !bytes.Equal(key, []byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23}) {
		t.Fatalf("ParseSecret(vector) = %x, %v", key, err)
	}
	if key, err := ParseSecret("whsec_AAAAAAAAAAAAAAAAAAAAAA=="); err != nil || len(key) != 16 {
		t.Fatalf("16-byte key: %x %v", key, err)
	}
	for name, bad := range map[string]string{
		"empty":              "",
		"prefix only":        "whsec_",
		"no prefix":          "AAECAwQFBgcICQoLDA0ODxAREhMUFRYX",
		"upper-case prefix":  "WHSEC_AAECAwQFBgcICQoLDA0ODxAREhMUFRYX",
		"bad base64":         "whsec_AAECAwQFBgcICQoLDA0ODxAREhMUFRY!",
		"url alphabet":       "whsec_-_8AAAAAAAAAAAAAAAAAAAAAAAAAAAAA",
		"15 bytes":           "whsec_AAAAAAAAAAAAAAAAAAAA",
		"missing padding":    "whsec_AAAAAAAAAAAAAAAAAAAAAA",
		"trailing newline":   vectorSecret + "\n",
		"embedded newline":   "whsec_AAECAwQFBgcICQoL\nDA0ODxAREhMUFRYX",
		"surrounding spaces": " " + vectorSecret + " ",
		"non-zero pad bits":  "whsec_AAAAAAAAAAAAAAAAAAAAAB==",
	} {
		t.Run(name, func(t *testing.T) {
			_, err := ParseSecret(bad)
			if !errors.Is(err, ErrSecret) {
				t.Fatalf("ParseSecret(%q) = %v", bad, err)
			}
			if len(bad) > len(SecretPrefix)+4 && strings.Contains(err.Error(), strings.TrimSpace(bad)[len(SecretPrefix):]) {
				t.Fatalf("the error repeats the secret: %v", err)
			}
			if _, err := Sign(bad, vectorID, vectorTime, nil); !errors.Is(err, ErrSecret) {
				t.Fatalf("Sign with %q: %v", bad, err)
			}
			h, body := signed(t)
			if err := Verify(bad, h, body, vectorTime, 0); !errors.Is(err, ErrSecret) {
				t.Fatalf("Verify with %q: %v", bad, err)
			}
		})
	}
}

// CheckSecret takes a key of the specification's sizes, 24 to 64 bytes,
// and refuses what ParseSecret refuses and any key outside them, a long
// secret by its length alone; ParseSecret still reads the shorter keys a
// store may hold from before the bound.
func TestCheckSecret(t *testing.T) {
	key := func(n int) string { return SecretPrefix + b64(bytes.Repeat([]byte{7}, n)) }
	for _, n := range []int{MinNewSecretBytes, 32, MaxSecretBytes} {
		if err := CheckSecret(key(n)); err != nil {
			t.Errorf("%d-byte key: %v", n, err)
		}
	}
	for name, bad := range map[string]string{
		"16 bytes":              key(16),
		"23 bytes":              key(MinNewSecretBytes - 1),
		"65 bytes":              key(MaxSecretBytes + 1),
		"700 KB":                key(700 << 10),
		"long and not base64":   SecretPrefix + strings.Repeat("!", 4<<10),
		"no prefix":             b64(bytes.Repeat([]byte{7}, 32)),
		"missing padding":       strings.TrimRight(key(32), "="),
		"ParseSecret's refusal": vectorSecret + "\n",
	} {
		t.Run(name, func(t *testing.T) {
			if err := CheckSecret(bad); !errors.Is(err, ErrSecret) {
				t.Fatalf("CheckSecret: %v", err)
			}
		})
	}
	if _, err := ParseSecret(key(16)); err != nil {
		t.Fatalf("ParseSecret no longer reads a 16-byte key: %v", err)
	}
}

func TestSignRefuses(t *testing.T) {
	for _, id := range []string{"", "a.b", "a b", "é", strings.Repeat("x", MaxIDLen+1), "a\nb"} {
		if _, err := Sign(vectorSecret, id, vectorTime, nil); !errors.Is(err, ErrMissingHeaders) {
			t.Errorf("Sign id %q: %v", id, err)
		}
	}
	if _, err := Sign(vectorSecret, strings.Repeat("x", MaxIDLen), vectorTime, nil); err != nil {
		t.Errorf("a %d-character id: %v", MaxIDLen, err)
	}
	if _, err := Headers(vectorSecret, vectorID, time.Unix(-1, 0), nil); !errors.Is(err, ErrTimestamp) {
		t.Errorf("a time before the epoch: %v", err)
	}
}

func TestErrorsNeverCarryTheExpectedSignature(t *testing.T) {
	h, body := signed(t)
	h.Set(HeaderSignature, "v1,AAAA")
	err := Verify(vectorSecret, h, body, vectorTime, 0)
	if err == nil || strings.Contains(err.Error(), strings.TrimPrefix(vectorSignature, "v1,")) || strings.Contains(err.Error(), vectorSecret) {
		t.Fatalf("%v", err)
	}
}

func mustKey(t *testing.T) []byte {
	t.Helper()
	key, err := ParseSecret(vectorSecret)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

func b64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
