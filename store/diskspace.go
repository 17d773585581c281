package store

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// ErrStorageFull: the write was refused, and nothing of it written,
// because the store's disk has no room for it: on badger, the data
// directory's free space is under what badger may still write on its own
// plus the write's margin (see "A full disk" in store/badger's package doc); on
// JetStream, the server refused the message for its stream's or its own
// storage limits. Reads go on, and the same write succeeds once space is
// freed, without a restart. The badger store's error is a
// *StorageFullError. The API answers it 507 insufficient_storage with
// Retry-After.
var ErrStorageFull = errors.New("store: storage full")

// StorageFullError is a write the badger store refused for its disk:
// Free is what the data directory Dir had free when it was last
// measured, Need what the write needed free (the reserve and the
// write's margin).
type StorageFullError struct {
	Dir        string
	Free, Need int64
	// Opening is set when Open refused: opening the store needs Need.
	Opening bool
}

func (e *StorageFullError) Error() string {
	free, need := FormatBytesPair(e.Free, e.Need)
	if e.Opening {
		return fmt.Sprintf("store: storage full: %s has %s free, opening the store needs %s (badger writes memory-mapped files as it opens); free space there and start again", e.Dir, free, need)
	}
	return fmt.Sprintf("store: storage full: %s has %s free, a write needs %s (free space there, and writes resume without a restart)", e.Dir, free, need)
}

// Is makes errors.Is(err, ErrStorageFull) true.
func (e *StorageFullError) Is(target error) bool { return target == ErrStorageFull }

// The margins above the reserve. A write from a client (ClientWrite) is
// refused while the free space is under Reserve + ClientMargin; any
// other (a settlement and its mail, a push's state, a probe's record, a
// prune) only under Reserve + CommitMargin. So once clients are refused,
// the watches they registered still settle and mail, for about a
// thousand settlements, and a client can never take the room the host
// needs to answer what it acknowledged.
const (
	ClientMargin int64 = 1 << 20
	CommitMargin int64 = 256 << 10
)

// DiskSpace is the room on the badger store's filesystem as the store
// last measured it.
type DiskSpace struct {
	// Dir is the data directory measured.
	Dir string
	// Free is what its filesystem has free for vigil (statfs: the blocks
	// available to an unprivileged writer, times their size).
	Free int64
	// Reserve is what badger may still write with no further commit:
	// its write-ahead logs flushed to tables, the largest compactions its
	// tables allow, and the first pages of the files it creates.
	Reserve int64
	// Need is the free space under which writes from clients are
	// refused: Reserve + ClientMargin.
	Need int64
	// Full is set while writes from clients are refused (Free < Need).
	Full bool
	// At is when it was measured.
	At time.Time
}

// FormatBytes formats a byte count for an operator (the storage-full
// errors, an adapter's log): KiB with one decimal, MiB or GiB with two
// (so a refusal near its bound reads as two numbers that differ).
func FormatBytes(n int64) string {
	switch {
	case n >= 1<<30 || n <= -1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20 || n <= -1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
}

// FormatBytesPair formats two byte counts an operator compares (what is
// free, what is needed) as FormatBytes does, each with its exact count of
// bytes beside it when the rounding would print two different counts
// alike: a refusal never reads "1.00 MiB free, needs 1.00 MiB".
func FormatBytesPair(a, b int64) (string, string) {
	fa, fb := FormatBytes(a), FormatBytes(b)
	if fa == fb && a != b {
		fa = fmt.Sprintf("%s (%d bytes)", fa, a)
		fb = fmt.Sprintf("%s (%d bytes)", fb, b)
	}
	return fa, fb
}

// clientWrite is the context key ClientWrite sets.
type clientWrite struct{}

// ClientWrite marks ctx as carrying a write a client asked for (the
// API's writing routes): the store refuses it with the larger margin,
// ClientMargin, so that the host's own writes keep room after clients
// are refused.
func ClientWrite(ctx context.Context) context.Context {
	return context.WithValue(ctx, clientWrite{}, true)
}

// HostWrite is ctx for the host's own writes that follow a client's
// request (the reconciliation of a recipient's standing watches after
// its PUT): without the client's mark (ClientWrite), so they are refused
// only as the host's own are, past CommitMargin, and without the
// request's idempotency key (WithIdem), which names the request's one
// write and no other.
func HostWrite(ctx context.Context) context.Context {
	if IsClientWrite(ctx) {
		ctx = context.WithValue(ctx, clientWrite{}, false)
	}
	if IdemOf(ctx) != nil {
		ctx = WithIdem(ctx, nil)
	}
	return ctx
}

// IsClientWrite says whether ctx was marked by ClientWrite.
func IsClientWrite(ctx context.Context) bool {
	v, _ := ctx.Value(clientWrite{}).(bool)
	return v
}
