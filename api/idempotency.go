package api

import (
	"errors"
	"fmt"
	"strings"
)

// HeaderIdempotencyKey names a creating request's idempotency key
// (draft-ietf-httpapi-idempotency-key-header): the same request sent
// again under the same key, by the same principal, within 24 hours, is
// answered the first answer and writes nothing.
const HeaderIdempotencyKey = "Idempotency-Key"

// HeaderIdempotentReplayed marks an answer given again under an
// idempotency key (its value "true"): the request was written before, and
// this is that first answer, byte for byte.
const HeaderIdempotentReplayed = "Idempotent-Replayed"

// MaxIdempotencyKey bounds an idempotency key: 1 to 255 bytes.
const MaxIdempotencyKey = 255

// ValidIdempotencyKey reports whether k is an idempotency key: 1 to
// MaxIdempotencyKey bytes of visible ASCII (0x21 to 0x7e).
func ValidIdempotencyKey(k string) bool {
	if len(k) == 0 || len(k) > MaxIdempotencyKey {
		return false
	}
	for i := 0; i < len(k); i++ {
		if k[i] < 0x21 || k[i] > 0x7e {
			return false
		}
	}
	return true
}

// ErrIdempotencyKey: a header value ParseIdempotencyKey refuses.
var ErrIdempotencyKey = errors.New("api: not an idempotency key")

// ParseIdempotencyKey reads an Idempotency-Key header's value: the
// draft's form, a Structured Field string ("…", with \" and \\ the only
// escapes), or the bare key most clients send; either way the key is 1
// to MaxIdempotencyKey bytes of visible ASCII, and "k" and k are the same
// key. Space around the value is ignored, as HTTP ignores it.
func ParseIdempotencyKey(v string) (string, error) {
	v = strings.Trim(v, " \t")
	key := v
	if strings.HasPrefix(v, `"`) {
		var b strings.Builder
		closed := false
		for i := 1; i < len(v); i++ {
			c := v[i]
			switch {
			case closed:
				return "", fmt.Errorf("%w: bytes after the closing quote", ErrIdempotencyKey)
			case c == '\\':
				if i+1 == len(v) || (v[i+1] != '"' && v[i+1] != '\\') {
					return "", fmt.Errorf("%w: a backslash escapes only \" and \\", ErrIdempotencyKey)
				}
				i++
				b.WriteByte(v[i])
			case c == '"':
				closed = true
			default:
				b.WriteByte(c)
			}
		}
		if !closed {
			return "", fmt.Errorf("%w: an opening quote without its closing one", ErrIdempotencyKey)
		}
		key = b.String()
	}
	if !ValidIdempotencyKey(key) {
		return "", fmt.Errorf("%w: want 1 to %d bytes of visible ASCII (a quoted string or a bare token), got %d bytes", ErrIdempotencyKey, MaxIdempotencyKey, len(key))
	}
	return key, nil
}

// FormatIdempotencyKey is key as the header's value: a Structured Field
// string, which ParseIdempotencyKey reads back as key.
func FormatIdempotencyKey(key string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(key) + `"`
}
