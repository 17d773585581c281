package kvtest

import (
	"encoding/hex"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/store"
)

// Golden reads a file of keys as a release wrote them, for an adapter's
// test that its layout is unchanged: one a line, tab-separated, the
// family, the id in hex, the name and sub quoted, the seq, the at, and
// the key as the adapter keeps it (its bytes in hex, or its subject).
func Golden(tb testing.TB, path string) (keys []store.Key, written []string) {
	tb.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		tb.Fatal(err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		f := strings.Split(line, "\t")
		if len(f) != 7 {
			tb.Fatalf("%s: %q has %d fields, want 7", path, line, len(f))
		}
		k := store.Key{Fam: store.Family(f[0])}
		id, err := hex.DecodeString(f[1])
		if err != nil || len(id) != len(k.ID) {
			tb.Fatalf("%s: id %q", path, f[1])
		}
		copy(k.ID[:], id)
		k.Name, _ = strconv.Unquote(f[2])
		k.Sub, _ = strconv.Unquote(f[3])
		k.Seq, _ = strconv.ParseUint(f[4], 10, 64)
		k.At, _ = strconv.ParseInt(f[5], 10, 64)
		keys, written = append(keys, k), append(written, f[6])
	}
	return keys, written
}

// AnyKey draws a key of any family, with the parts its family has: names
// of any bytes but the NUL a layout may split on (and, with long, now and
// then one longer than an adapter keeps as it is), a state where the
// family holds one, a kind of the kinds' grammar.
func AnyKey(t *rapid.T, long bool) store.Key {
	fam := rapid.SampledFrom(append(append([]store.Family{}, store.Families...), store.FamPendingCount, store.FamRecipientPending, store.FamDue)).Draw(t, "family")
	k := store.Key{Fam: fam}
	names := rapid.StringN(0, 40, -1).Filter(func(s string) bool { return !strings.ContainsRune(s, 0) })
	if long {
		names = rapid.OneOf(names, rapid.Just(strings.Repeat("n", 200)))
	}
	copy(k.ID[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "id"))
	for _, p := range fam.Parts() {
		switch p {
		case store.PartName:
			k.Name = names.Draw(t, "name")
		case store.PartSub:
			k.Sub = rapid.StringMatching(`[!-~]{1,255}`).Draw(t, "sub")
		case store.PartSeq:
			k.Seq = rapid.Uint64().Draw(t, "seq")
			if fam == store.FamWorkInput {
				k.Seq = uint64(rapid.Uint32().Draw(t, "n"))
			}
		case store.PartAt:
			k.At = rapid.Int64().Draw(t, "at")
		}
	}
	if !hasPart(fam, store.PartID) {
		k.ID = store.ID{}
	}
	switch fam {
	case store.FamState, store.FamWorkScope:
		k.Sub = rapid.SampledFrom([]string{"pending", "fired", "snoozed", "open", "completed"}).Draw(t, "state")
	case store.FamPendingKind:
		k.Name = rapid.StringMatching(`[a-z0-9._-]{1,64}`).Draw(t, "kind")
	}
	return k
}

func hasPart(f store.Family, p store.Part) bool {
	for _, q := range f.Parts() {
		if q == p {
			return true
		}
	}
	return false
}

// Places is how an adapter's tests open it at the places its data lives
// (a directory, a bucket), for Run and store/storetest's Run: Open opens
// a fresh place, Reopen closes an adapter and opens its place again, as
// a restart would.
type Places struct {
	// Fresh names a new place; OpenAt opens the adapter at a place,
	// closing it when the test ends (and accepting one closed already).
	Fresh  func(t *testing.T) string
	OpenAt func(t *testing.T, place string) store.KV

	mu sync.Mutex
	at map[store.KV]string // guarded by mu
}

// Open opens the adapter at a fresh place.
func (p *Places) Open(t *testing.T) store.KV {
	t.Helper()
	place := p.Fresh(t)
	kv := p.OpenAt(t, place)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.at == nil {
		p.at = map[store.KV]string{}
	}
	p.at[kv] = place
	return kv
}

// Reopen closes kv and opens its place again.
func (p *Places) Reopen(t *testing.T, kv store.KV) store.KV {
	t.Helper()
	if err := kv.Close(); err != nil {
		t.Fatal(err)
	}
	p.mu.Lock()
	place := p.at[kv]
	p.mu.Unlock()
	again := p.OpenAt(t, place)
	p.mu.Lock()
	p.at[again] = place
	p.mu.Unlock()
	return again
}
