package sdk

import (
	"math"
	"math/rand/v2"
	"os"
	"strconv"
	"strings"
	"testing"
)

// The SDK's module depends on the standard library only, its tests
// included (a require in its go.mod, even one only tests use, is one more
// module every plugin's go.sum must name). So its property tests draw
// their values from math/rand/v2 through prop instead of a property
// library: each case has its own seed, a failure names it, and
// VIGIL_PROP_SEED=N replays case N alone. The fuzz targets beside them
// search further.

// propCases is how many cases one property runs.
const propCases = 200

// prop is one case of a property: a testing.T and the values it draws.
type prop struct {
	*testing.T
	r *rand.Rand
}

// check runs f over propCases seeded cases, stopping at the first that
// fails.
func check(t *testing.T, f func(t *prop)) {
	t.Helper()
	seeds := make([]uint64, propCases)
	for i := range seeds {
		seeds[i] = uint64(i)
	}
	if s := os.Getenv("VIGIL_PROP_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("VIGIL_PROP_SEED=%q: want a case number", s)
		}
		seeds = []uint64{n}
	}
	for _, seed := range seeds {
		ok := t.Run("seed="+strconv.FormatUint(seed, 10), func(t *testing.T) {
			f(&prop{T: t, r: rand.New(rand.NewPCG(seed, 0x5eed))})
		})
		if !ok {
			t.Fatalf("replay with VIGIL_PROP_SEED=%d", seed)
		}
	}
}

func (t *prop) bool() bool { return t.r.IntN(2) == 1 }

func (t *prop) intRange(lo, hi int) int { return lo + t.r.IntN(hi-lo+1) }

func (t *prop) int64Range(lo, hi int64) int64 { return lo + t.r.Int64N(hi-lo+1) }

// float is a finite float64: small, large, negative, fractional.
func (t *prop) float() float64 {
	switch t.r.IntN(4) {
	case 0:
		return float64(t.intRange(-1000, 1000))
	case 1:
		return t.r.NormFloat64() * 1e6
	case 2:
		return math.Float64frombits(t.r.Uint64()&^(0x7ff<<52) | uint64(t.intRange(1, 0x7fe))<<52)
	default:
		return t.r.Float64()
	}
}

// runes are the characters string draws from: ASCII, what JSON escapes,
// and multi-byte characters up to the astral planes.
var runes = []rune("aZ09 _-.:/\"\\\x00\x01\x1f\x7f\u00e9\u2028\u2029\ufffd\u4e16\U0001f600\U00010000")

// string is a valid UTF-8 string of up to 16 characters.
func (t *prop) string() string {
	var b strings.Builder
	for n := t.r.IntN(17); n > 0; n-- {
		if t.r.IntN(3) == 0 {
			b.WriteRune(runes[t.r.IntN(len(runes))])
		} else {
			b.WriteRune(rune(t.intRange(0x20, 0x7e)))
		}
	}
	return b.String()
}

// strings is a slice of up to 4 strings, nil or empty sometimes.
func (t *prop) strings() []string {
	switch t.r.IntN(5) {
	case 0:
		return nil
	case 1:
		return []string{}
	}
	out := make([]string, t.intRange(1, 4))
	for i := range out {
		out[i] = t.string()
	}
	return out
}

// kind is a kind name: 1-64 of a-z 0-9 . _ -.
func (t *prop) kind() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz0123456789._-"
	b := make([]byte, t.intRange(1, 64))
	for i := range b {
		b[i] = alphabet[t.r.IntN(len(alphabet))]
	}
	return string(b)
}

func (t *prop) oneOf(s ...string) string { return s[t.r.IntN(len(s))] }
