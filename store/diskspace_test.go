package store

import (
	"context"
	"strings"
	"testing"
)

// TestStorageFullErrorShowsFreeUnderNeed: a refusal's message never
// prints what is free and what is needed alike, however close the two
// are; where the rounded counts would read the same, the exact bytes
// tell them apart.
func TestStorageFullErrorShowsFreeUnderNeed(t *testing.T) {
	for _, tc := range []struct {
		name       string
		free, need int64
		opening    bool
		free2      string // what the message says is free
		need2      string // and what is needed
	}{
		{name: "apart", free: 900 << 10, need: 3 << 20, free2: "900.0 KiB", need2: "3.00 MiB"},
		{name: "one byte under a MiB", free: 1<<20 - 1, need: 1 << 20, free2: "1024.0 KiB", need2: "1.00 MiB"},
		{name: "within a MiB's rounding", free: 1<<20 + 1000, need: 1<<20 + 2000, free2: "1.00 MiB (1049576 bytes)", need2: "1.00 MiB (1050576 bytes)"},
		{name: "within a KiB's rounding", free: 500 << 10, need: 500<<10 + 10, free2: "500.0 KiB (512000 bytes)", need2: "500.0 KiB (512010 bytes)"},
		{name: "within a GiB's rounding", free: 2 << 30, need: 2<<30 + 1<<20, free2: "2.00 GiB (2147483648 bytes)", need2: "2.00 GiB (2148532224 bytes)"},
		{name: "opening", free: 3<<20 - 5, need: 3 << 20, opening: true, free2: "3.00 MiB (3145723 bytes)", need2: "3.00 MiB (3145728 bytes)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			msg := (&StorageFullError{Dir: "/d", Free: tc.free, Need: tc.need, Opening: tc.opening}).Error()
			if !strings.Contains(msg, "has "+tc.free2+" free") || !strings.Contains(msg, "needs "+tc.need2) {
				t.Fatalf("message %q: want %q free and %q needed", msg, tc.free2, tc.need2)
			}
			if tc.free2 == tc.need2 {
				t.Fatalf("the table's free and need read alike: %q", tc.free2)
			}
		})
	}
}

// TestHostWriteDropsTheClientsMarks: the host's writes that follow a
// client's request carry neither its mark nor its idempotency key.
func TestHostWriteDropsTheClientsMarks(t *testing.T) {
	ctx := WithIdem(ClientWrite(context.Background()), &Idem{Principal: "p", Key: "k"})
	if !IsClientWrite(ctx) || IdemOf(ctx) == nil {
		t.Fatal("the client's context lost its marks")
	}
	h := HostWrite(ctx)
	if IsClientWrite(h) {
		t.Error("a host's write after a client's request is marked as the client's")
	}
	if IdemOf(h) != nil {
		t.Error("a host's write after a client's request carries the request's idempotency key")
	}
	if !IsClientWrite(ctx) || IdemOf(ctx) == nil {
		t.Error("HostWrite changed the client's context")
	}
}
