package store

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"
)

// ID identifies a watch: 48 bits of milliseconds since the Unix epoch, then
// 80 random bits. IDs sort by creation time, so a listing in key order is a
// listing in registration order. Its text form is 26 characters of
// Crockford base32 (0-9 A-Z without I, L, O, U), lower case.
type ID [16]byte

const crockford = "0123456789abcdefghjkmnpqrstvwxyz"

// NewID makes an ID for an instant, with randomness from r (crypto/rand in
// the product, a seeded source in tests).
func NewID(at time.Time, r io.Reader) (ID, error) {
	var id ID
	ms := uint64(at.UnixMilli())
	var ts [8]byte
	binary.BigEndian.PutUint64(ts[:], ms)
	copy(id[:6], ts[2:])
	if _, err := io.ReadFull(r, id[6:]); err != nil {
		return id, fmt.Errorf("store: new id: %w", err)
	}
	return id, nil
}

// String is the 26-character text form.
func (id ID) String() string {
	var out [26]byte
	// 128 bits as 26 5-bit groups, the first group holding the top 3 bits.
	hi := binary.BigEndian.Uint64(id[:8])
	lo := binary.BigEndian.Uint64(id[8:])
	for i := 25; i >= 0; i-- {
		out[i] = crockford[lo&31]
		lo = lo>>5 | hi<<59
		hi >>= 5
	}
	return string(out[:])
}

// ErrBadID is the error of ParseID.
var ErrBadID = errors.New("not a watch id: want 26 characters of Crockford base32")

// ParseID reads the text form, in either case.
func ParseID(s string) (ID, error) {
	var id ID
	if len(s) != 26 {
		return id, ErrBadID
	}
	var hi, lo uint64
	for i := 0; i < 26; i++ {
		v := decodeCrockford(s[i])
		if v < 0 || (i == 0 && v > 7) {
			return id, ErrBadID
		}
		hi = hi<<5 | lo>>59
		lo = lo<<5 | uint64(v)
	}
	binary.BigEndian.PutUint64(id[:8], hi)
	binary.BigEndian.PutUint64(id[8:], lo)
	return id, nil
}

func decodeCrockford(c byte) int {
	if c >= 'A' && c <= 'Z' {
		c += 'a' - 'A'
	}
	for i := 0; i < len(crockford); i++ {
		if crockford[i] == c {
			return i
		}
	}
	return -1
}

// Time is the instant encoded in the ID, to the millisecond.
func (id ID) Time() time.Time {
	var ts [8]byte
	copy(ts[2:], id[:6])
	return time.UnixMilli(int64(binary.BigEndian.Uint64(ts[:]))).UTC()
}

// MarshalText writes the text form.
func (id ID) MarshalText() ([]byte, error) { return []byte(id.String()), nil }

// UnmarshalText reads the text form.
func (id *ID) UnmarshalText(b []byte) error {
	v, err := ParseID(string(b))
	if err != nil {
		return err
	}
	*id = v
	return nil
}
