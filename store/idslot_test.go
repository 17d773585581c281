package store

import (
	"bytes"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// An id made in a slot keeps its instant, its slot through its text form,
// and its partition among any count.
func TestIDInSlot(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		at := time.UnixMilli(rapid.Int64Range(0, 1<<47).Draw(t, "ms"))
		slot := rapid.Uint16().Draw(t, "slot")
		n := rapid.IntRange(1, MaxPartitions).Draw(t, "partitions")
		id, err := NewIDInSlot(at, bytes.NewReader(rapid.SliceOfN(rapid.Byte(), 10, 10).Draw(t, "random")), slot)
		if err != nil {
			t.Fatal(err)
		}
		back, err := ParseID(id.String())
		if err != nil || back != id {
			t.Fatalf("%s read back as %s (%v)", id, back, err)
		}
		if back.Slot() != slot || !back.Time().Equal(at) {
			t.Fatalf("slot %d at %s read back as %d at %s", slot, at, back.Slot(), back.Time())
		}
		if p := id.Partition(n); p < 0 || p >= n || p != int(slot)%n {
			t.Fatalf("partition %d of %d for slot %d", p, n, slot)
		}
	})
}

func TestSlotOfIsStableAndSpreads(t *testing.T) {
	if SlotOf("ticket-1") != SlotOf("ticket-1") {
		t.Fatal("SlotOf is not a function of its key")
	}
	seen := map[int]bool{}
	for i := range 256 {
		seen[int(SlotOf(string(rune('a'+i%26))+string(rune('0'+i/26))))%16] = true
	}
	if len(seen) < 14 {
		t.Fatalf("256 keys fill %d of 16 partitions", len(seen))
	}
}
