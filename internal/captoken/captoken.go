package captoken

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"
)

// Size is a token's randomness in bytes (128 bits); Len is its length as
// written.
const (
	Size = 16
	Len  = 22
)

// ErrMalformed is a string that is not a token's form.
var ErrMalformed = errors.New("captoken: not a capability token")

// New makes a token from r's randomness.
func New(r io.Reader) (string, error) {
	var b [Size]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", fmt.Errorf("captoken: randomness: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b[:]), nil
}

// Parse checks that s has a token's form (Len characters of base64url
// that decode to Size bytes, written canonically) and answers it.
func Parse(s string) (string, error) {
	if len(s) != Len {
		return "", ErrMalformed
	}
	b, err := base64.RawURLEncoding.Strict().DecodeString(s)
	if err != nil || len(b) != Size {
		return "", ErrMalformed
	}
	return s, nil
}
