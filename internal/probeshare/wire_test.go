package probeshare

import (
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// What one node encodes another reads back as it was: every id, its
// attempts and its last probe time to the nanosecond.
func TestWireRoundTrips(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(0, MaxIDs).Draw(t, "n")
		seen := map[store.ID]scheduler.Seen{}
		var ids []store.ID
		for range n {
			var id store.ID
			copy(id[:], rapid.SliceOfN(rapid.Byte(), 16, 16).Draw(t, "id"))
			ids = append(ids, id)
			v := scheduler.Seen{Attempts: rapid.IntRange(0, 1<<40).Draw(t, "attempts")}
			if rapid.Bool().Draw(t, "probed") {
				v.LastProbe = time.Unix(0, rapid.Int64Range(0, 1<<62).Draw(t, "at")).UTC()
			}
			seen[id] = v
		}
		got, err := parseRequest(encodeRequest(ids))
		if err != nil {
			t.Fatalf("a request of %d ids: %v", len(ids), err)
		}
		for i := range ids {
			if got[i] != ids[i] {
				t.Fatalf("id %d came back %s, sent %s", i, got[i], ids[i])
			}
		}
		back, err := parseReply(encodeReply(seen))
		if err != nil {
			t.Fatalf("a reply of %d: %v", len(seen), err)
		}
		if len(back) != len(seen) {
			t.Fatalf("%d came back of %d", len(back), len(seen))
		}
		for id, v := range seen {
			if !back[id].LastProbe.Equal(v.LastProbe) || back[id].Attempts != v.Attempts {
				t.Fatalf("%s came back %+v, sent %+v", id, back[id], v)
			}
		}
	})
}

// Whatever another node sends, the parsers answer within their bounds or
// refuse; they never panic.
func FuzzParseRequest(f *testing.F) {
	f.Add([]byte(`{"ids":["` + wid(1).String() + `"]}`))
	f.Add([]byte(`{"ids":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ids, err := parseRequest(b)
		if err != nil {
			return
		}
		if len(ids) > MaxIDs || len(b) > MaxRequestBytes {
			t.Fatalf("took %d ids in %d bytes", len(ids), len(b))
		}
		again, err := parseRequest(encodeRequest(ids))
		if err != nil || len(again) != len(ids) {
			t.Fatalf("re-encoded: %v %v", again, err)
		}
	})
}

func FuzzParseReply(f *testing.F) {
	f.Add([]byte(`{"seen":[{"id":"` + wid(1).String() + `","attempts":3,"last_probe":"2026-12-02T01:02:03Z"}]}`))
	f.Add([]byte(`{"error":{"code":"too_many_ids","message":"x"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		seen, err := parseReply(b)
		if err != nil {
			return
		}
		if len(seen) > MaxIDs {
			t.Fatalf("took %d watches", len(seen))
		}
		for id, v := range seen {
			if v.Attempts < 0 {
				t.Fatalf("%s: %d attempts", id, v.Attempts)
			}
		}
	})
}
