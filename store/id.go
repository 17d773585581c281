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

// MaxPartitions is the most partitions a cluster may have: a watch's
// partition is its id's slot (16 bits) modulo the count.
const MaxPartitions = 1 << 16

// Slot is the id's 16 bits after its instant: random for a watch
// registered with no partition key, the key's hash (SlotOf) for one
// registered with one. A watch's partition is its slot modulo the
// cluster's partition count, so any node finds a watch's partition from
// its id alone, and the scheduler keeps no field for it.
func (id ID) Slot() uint16 { return binary.BigEndian.Uint16(id[6:8]) }

// Partition is the id's partition among n (1 to MaxPartitions).
func (id ID) Partition(n int) int {
	if n <= 1 {
		return 0
	}
	return int(id.Slot()) % n
}

// SlotOf is the slot of a partition key (FNV-1a, 32 bits folded to 16):
// every watch on one key (one ticket, one URL) shares a slot, so a
// partition, so the one node that reads the resource for all of them.
func SlotOf(key string) uint16 {
	h := uint32(2166136261)
	for i := 0; i < len(key); i++ {
		h ^= uint32(key[i])
		h *= 16777619
	}
	return uint16(h>>16) ^ uint16(h)
}

// NewIDInSlot is NewID with the slot set: the id of a watch whose
// partition key hashes to slot.
func NewIDInSlot(at time.Time, r io.Reader, slot uint16) (ID, error) {
	id, err := NewID(at, r)
	if err != nil {
		return id, err
	}
	binary.BigEndian.PutUint16(id[6:8], slot)
	return id, nil
}
