package crashtest

import (
	"time"
)

// watchRec is what the ledger knows of one acknowledged registration.
type watchRec struct {
	id        string
	recipient string
	at        time.Time // the timer's instant
	sent      time.Time // when the registration went out
	epoch     int       // the host's start it was acknowledged by

	cancelSent    bool // a DELETE went out (answered or not)
	cancelAcked   bool // ... and was answered 200: the watch must be cancelled
	cancelRefused bool // ... and was answered 409 already_settled

	verified bool   // seen in a final state consistent with its history
	state    string // as last read
}

// window is one pause request: from when it went out until its answer
// (zero while none came, or if none ever will).
type window struct {
	sent, done time.Time
}

// recipRec is one recipient of the load and its status history.
type recipRec struct {
	id       string
	hook     bool // has the webhook to the receiver
	pausable bool

	busy bool // a PUT is in flight: one at a time, so their order is known
	puts int  // PUTs sent so far
	// running is the last acknowledged status; uncertain is set while a
	// PUT went out that was never answered (it may or may not have landed).
	running   bool
	uncertain bool
	pauses    []window
}

// pausedSince reports whether a pause of r may have applied at or after
// t: a pause answered at or after t, or one never answered.
func (r *recipRec) pausedSince(t time.Time) bool {
	for _, p := range r.pauses {
		if p.done.IsZero() || !p.done.Before(t) {
			return true
		}
	}
	return false
}

// itemRec is one observe record the host acknowledged (or, with acked
// false, one whose answer never came yet).
type itemRec struct {
	item, thread, text string
	acked              bool
	seq                uint64 // the event's seq and key, as first answered
	key                string
	threadKey          string
	idem               string // its Idempotency-Key
}

// unansweredReg is a registration whose answer never came (the host was
// killed): sent again under its Idempotency-Key after the next start.
type unansweredReg struct {
	idem      string
	req       any // the request body, as first sent
	recipient string
	at        time.Time
	sent      time.Time
}

// mailCopy is the checker's verified copy of one recipient's mailbox:
// msgs[i] is seq i+1.
type mailCopy struct {
	ids     []string
	watches []string
	byWatch map[string]uint64
	// pushFrom is the lowest seq whose push state may still change (the
	// hook recipient's only).
	pushFrom uint64
}
