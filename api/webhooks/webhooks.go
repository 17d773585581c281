package webhooks

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The header names, as the Standard Webhooks specification writes them.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

const (
	// SecretPrefix starts every secret.
	SecretPrefix = "whsec_"
	// SecretBytes is the key length NewSecret makes.
	SecretBytes = 24
	// MinSecretBytes is the shortest key ParseSecret accepts.
	MinSecretBytes = 16
	// MinNewSecretBytes and MaxSecretBytes bound the key of a secret
	// CheckSecret accepts for a new endpoint: the Standard Webhooks
	// specification's sizes for a symmetric signing secret, "at least 24
	// bytes (192 bits, 512 maximum)" (spec/standard-webhooks.md,
	// Signature scheme). ParseSecret, which signs and verifies, still
	// reads any key from MinSecretBytes up, so a secret stored before the
	// bound keeps signing.
	MinNewSecretBytes = 24
	MaxSecretBytes    = 64
	// DefaultTolerance is how far a timestamp may be from now, either way,
	// when Verify is given a tolerance of zero.
	DefaultTolerance = 5 * time.Minute
	// MaxIDLen is the longest webhook-id Sign and Verify accept.
	MaxIDLen = 256

	version = "v1"
)

// Sentinel errors; *Error answers errors.Is with one of them.
var (
	// ErrSecret: the secret is not "whsec_" and canonical base64 of at
	// least MinSecretBytes bytes (for CheckSecret, of MinNewSecretBytes to
	// MaxSecretBytes bytes).
	ErrSecret = errors.New("invalid webhook secret")
	// ErrMissingHeaders: webhook-id, webhook-timestamp or
	// webhook-signature is absent, repeated or malformed.
	ErrMissingHeaders = errors.New("missing or malformed webhook headers")
	// ErrTimestamp: the timestamp is not a Unix time within the tolerance
	// of now.
	ErrTimestamp = errors.New("webhook timestamp out of tolerance")
	// ErrSignature: no v1 signature in webhook-signature matches.
	ErrSignature = errors.New("webhook signature does not match")
)

// Error is a secret, a message or a request that cannot be signed or
// verified. Err is one of the sentinels; Reason says what was wrong,
// never with the secret or a signature in it.
type Error struct {
	Err    error
	Reason string
}

func (e *Error) Error() string { return "webhooks: " + e.Err.Error() + ": " + e.Reason }

func (e *Error) Unwrap() error { return e.Err }

// NewSecret makes a secret of SecretBytes random bytes read from r
// (crypto/rand when r is nil).
func NewSecret(r io.Reader) (string, error) {
	if r == nil {
		r = rand.Reader
	}
	key := make([]byte, SecretBytes)
	if _, err := io.ReadFull(r, key); err != nil {
		return "", err
	}
	return SecretPrefix + base64.StdEncoding.EncodeToString(key), nil
}

// ParseSecret returns the key bytes of a secret. It refuses a secret
// without the whsec_ prefix, one whose base64 is invalid or not canonical
// (padding, stray bytes, line breaks), and a key shorter than
// MinSecretBytes.
func ParseSecret(s string) ([]byte, error) {
	enc, ok := strings.CutPrefix(s, SecretPrefix)
	if !ok {
		return nil, &Error{ErrSecret, "missing the " + SecretPrefix + " prefix"}
	}
	key, err := base64.StdEncoding.DecodeString(enc)
	// The decoder skips \r and \n; a secret is refused rather than read
	// differently from how it is written.
	if err != nil || base64.StdEncoding.EncodeToString(key) != enc {
		return nil, &Error{ErrSecret, "not canonical standard base64 after the prefix"}
	}
	if len(key) < MinSecretBytes {
		return nil, &Error{ErrSecret, "key shorter than " + strconv.Itoa(MinSecretBytes) + " bytes"}
	}
	return key, nil
}

// CheckSecret refuses a secret a sender should not take for a new
// endpoint: one ParseSecret refuses, or whose key is shorter than
// MinNewSecretBytes or longer than MaxSecretBytes. A secret too long to
// hold such a key is refused by its length, before it is decoded.
func CheckSecret(s string) error {
	if len(s) > len(SecretPrefix)+base64.StdEncoding.EncodedLen(MaxSecretBytes) {
		return &Error{ErrSecret, "longer than a " + strconv.Itoa(MaxSecretBytes) + "-byte key"}
	}
	key, err := ParseSecret(s)
	if err != nil {
		return err
	}
	if len(key) < MinNewSecretBytes || len(key) > MaxSecretBytes {
		return &Error{ErrSecret, "a " + strconv.Itoa(len(key)) + "-byte key; want " +
			strconv.Itoa(MinNewSecretBytes) + " to " + strconv.Itoa(MaxSecretBytes) + " bytes"}
	}
	return nil
}

// Sign returns the webhook-signature value for a message:
// "v1," and the standard base64 of HMAC-SHA256(key, id "." unix seconds "." body).
func Sign(secret, id string, ts time.Time, body []byte) (string, error) {
	key, err := ParseSecret(secret)
	if err != nil {
		return "", err
	}
	if !validID(id) {
		return "", &Error{ErrMissingHeaders, "webhook-id must be 1 to 256 characters of [A-Za-z0-9_-]"}
	}
	unix := ts.Unix()
	if unix < 0 {
		return "", &Error{ErrTimestamp, "timestamp before the Unix epoch"}
	}
	mac := signature(key, id, strconv.FormatInt(unix, 10), body)
	return version + "," + base64.StdEncoding.EncodeToString(mac), nil
}

// Headers returns the three headers for a message: webhook-id,
// webhook-timestamp (Unix seconds) and webhook-signature.
func Headers(secret, id string, ts time.Time, body []byte) (http.Header, error) {
	sig, err := Sign(secret, id, ts, body)
	if err != nil {
		return nil, err
	}
	h := make(http.Header, 3)
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return h, nil
}

// Verify checks a received webhook: h its headers (matched without regard
// to case), body its raw bytes as received, before any parsing. It
// succeeds when webhook-timestamp is within tolerance of now, either way
// (DefaultTolerance when tolerance is zero or negative), and one of the
// space-separated "v1,<signature>" entries of webhook-signature is the
// signature of id, timestamp and body. Entries of other versions are
// ignored.
func Verify(secret string, h http.Header, body []byte, now time.Time, tolerance time.Duration) error {
	key, err := ParseSecret(secret)
	if err != nil {
		return err
	}
	id, err := single(h, HeaderID)
	if err != nil {
		return err
	}
	if !validID(id) {
		return &Error{ErrMissingHeaders, "webhook-id is not 1 to 256 characters of [A-Za-z0-9_-]"}
	}
	tsText, err := single(h, HeaderTimestamp)
	if err != nil {
		return err
	}
	sigs := values(h, HeaderSignature)
	if len(sigs) == 0 {
		return &Error{ErrMissingHeaders, "no " + HeaderSignature + " header"}
	}

	ts, ok := parseUnix(tsText)
	if !ok {
		return &Error{ErrTimestamp, "webhook-timestamp is not Unix seconds in decimal"}
	}
	if tolerance <= 0 {
		tolerance = DefaultTolerance
	}
	if d := now.Sub(time.Unix(ts, 0)); d > tolerance {
		return &Error{ErrTimestamp, "webhook-timestamp is older than the tolerance"}
	} else if d < -tolerance {
		return &Error{ErrTimestamp, "webhook-timestamp is further in the future than the tolerance"}
	}

	want := signature(key, id, tsText, body)
	seen := 0
	for _, v := range sigs {
		for _, entry := range strings.Fields(v) {
			enc, ok := strings.CutPrefix(entry, version+",")
			if !ok {
				continue
			}
			seen++
			// Strict: a signature has one spelling (no stray padding bits).
			got, err := base64.StdEncoding.Strict().DecodeString(enc)
			if err == nil && hmac.Equal(got, want) {
				return nil
			}
		}
	}
	if seen == 0 {
		return &Error{ErrSignature, "no v1 signature in webhook-signature"}
	}
	return &Error{ErrSignature, "no v1 signature matches"}
}

func signature(key []byte, id, ts string, body []byte) []byte {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id))
	mac.Write([]byte{'.'})
	mac.Write([]byte(ts))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return mac.Sum(nil)
}

// values collects a header's values under every spelling of its name: a
// header map built by hand (not by net/http) need not be canonical.
func values(h http.Header, name string) []string {
	var out []string
	for k, vs := range h {
		if strings.EqualFold(k, name) {
			out = append(out, vs...)
		}
	}
	return out
}

// single is a header that must appear exactly once: two ids or two
// timestamps leave the reader to pick one, and the signature covers only
// one of them.
func single(h http.Header, name string) (string, error) {
	vs := values(h, name)
	switch {
	case len(vs) == 0 || (len(vs) == 1 && vs[0] == ""):
		return "", &Error{ErrMissingHeaders, "no " + name + " header"}
	case len(vs) > 1:
		return "", &Error{ErrMissingHeaders, name + " appears more than once"}
	}
	return vs[0], nil
}

func validID(id string) bool {
	if len(id) == 0 || len(id) > MaxIDLen {
		return false
	}
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return false
		}
	}
	return true
}

// parseUnix reads decimal Unix seconds with no sign and no leading zero,
// so the text is the one formatting of its value (and the signed string
// the one Sign would make). Eighteen digits keeps time.Unix far from
// overflow.
func parseUnix(s string) (int64, bool) {
	if len(s) == 0 || len(s) > 18 || (len(s) > 1 && s[0] == '0') {
		return 0, false
	}
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}
