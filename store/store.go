package store

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors.
var (
	// ErrNotFound: no such watch or recipient (or it is held aside).
	ErrNotFound = errors.New("not found")
	// ErrNotPending: the transition needs a pending row and the row has
	// already settled (or was cancelled).
	ErrNotPending = errors.New("store: watch is not pending")
	// ErrExists: Create with an id already used.
	ErrExists = errors.New("store: watch id already exists")
	// ErrInUse: another process holds the data directory.
	ErrInUse = errors.New("store: data directory is in use by another process")
	// ErrStoreTooNew: the store was written by a newer release.
	ErrStoreTooNew = errors.New("store: written by a newer release of vigil")
	// ErrCorrupt: the store's files cannot be read.
	ErrCorrupt = errors.New("store: files are corrupt")
	// ErrBusy: a transition lost the race for its records to other
	// writers more times in a row than the backend retries (badger's
	// conflict retry, JetStream's revision fence); nothing of it was
	// written, and the same call may succeed a moment later. Both
	// backends wrap it with %w; the API answers it 503 store_busy with
	// Retry-After.
	ErrBusy = errors.New("store: busy: the records kept changing under the transition")
	// ErrNotOwner: an owner's transition (a probe's record, a settlement,
	// a baseline) refused because the partition of its row has passed to
	// another node since this one gained it (a cluster backend's fence);
	// nothing of it was written. The caller has lost the partition: it
	// drops the watch and does not retry. A single host never returns it.
	ErrNotOwner = errors.New("store: the partition has another owner now")
	// ErrUnavailable: the store could not be reached (no server answered,
	// the cluster has no leader or no quorum), or a commit was sent and
	// no answer came back. The error is an *UnavailableError, which says
	// whether the write may have happened; the API answers it 503
	// store_unavailable with Retry-After. A write sent again with its
	// idempotency key is safe either way.
	ErrUnavailable = errors.New("store: unavailable")
)

// UnavailableError is ErrUnavailable with what is known of the write:
// MayHaveWritten when a commit was sent and its answer never came (a
// timeout, a leader lost mid-commit), so it may have been stored; false
// when nothing was sent or the servers refused it (a read failed, no
// responders, a cluster that said it is unavailable).
type UnavailableError struct {
	Op             string
	MayHaveWritten bool
	Err            error
}

func (e *UnavailableError) Error() string {
	if e.MayHaveWritten {
		return fmt.Sprintf("store: unavailable: %s: no answer to a commit, which may have been written: %v", e.Op, e.Err)
	}
	return fmt.Sprintf("store: unavailable: %s: nothing was written: %v", e.Op, e.Err)
}

// Is makes errors.Is(err, ErrUnavailable) true.
func (e *UnavailableError) Is(target error) bool { return target == ErrUnavailable }

func (e *UnavailableError) Unwrap() error { return e.Err }

// Settlement is a pending row's final transition.
type Settlement struct {
	State     State // anything but Pending
	Receipt   Receipt
	Outcome   *Outcome
	SettledAt time.Time
	Attempts  int
	LastNote  string
	// LastFault is the final probe's fault, if it had one.
	LastFault *Fault
}

// Probe is what a pending row's probes have seen, as RecordProbe keeps
// it. The scheduler records it only when the note, the fault or the next
// check changes, so writes follow changes, not probes.
type Probe struct {
	Attempts  int
	Note      string
	Fault     *Fault
	NextCheck time.Time // zero: none
}

// Filter selects rows for List. Empty fields select all.
type Filter struct {
	Recipient string
	State     State
	Kind      string
	// RegisteredBy keeps the rows that principal registered. Like Kind,
	// it has no index; it is checked on the decoded row.
	RegisteredBy string
}
