package scheduler

import (
	"math"
	"time"

	"github.com/vigilhq/vigil/store"
)

// entry is one pending watch as the scheduler holds it: what deciding when
// to probe it needs, and nothing of its params, kind or recipient, which
// are read from the store when it is due. 48 bytes, no pointers: a Go size
// class the garbage collector never scans inside.
type entry struct {
	id       store.ID
	due      int64 // unix nanoseconds; change it with setDue
	deadline int64 // unix nanoseconds; 0 for a standing watch
	// every is the cadence in milliseconds, saturating at about 49 days
	// (a longer cadence is probed every 49 days).
	every uint32
	// tries packs the probes so far (the low 27 bits, saturating) and the
	// probes in a row that faulted or raised, the exponent of the backoff
	// (the high 5 bits). Touched only under the scheduler's lock.
	tries uint32
	// index is the position in the heap, or where the entry is when it is
	// not in the heap: inFlight, pokedWhileProbed, inReady.
	index int32
	// seen is when this scheduler last probed the watch, as 1 + the
	// milliseconds from that probe to due; 0 when it has not (since a
	// restart), or when the probe is more than about 49 days before due.
	seen uint32
}

// The bits of entry.tries.
const (
	attemptsBits = 27
	attemptsMask = 1<<attemptsBits - 1
)

// attempts is how many probes the watch has had.
func (e *entry) attempts() int { return int(e.tries & attemptsMask) }

// faults is how many probes in a row faulted or raised.
func (e *entry) faults() uint8 { return uint8(e.tries >> attemptsBits) }

// setTries sets the attempts (saturating) and the faults in a row (at
// most maxFaults).
func (e *entry) setTries(attempts int, faults uint8) {
	a := uint32(min(max(attempts, 0), attemptsMask))
	e.tries = uint32(min(faults, maxFaults))<<attemptsBits | a
}

// lastProbe is when this scheduler last probed the watch; false if it has
// not.
func (e *entry) lastProbe() (time.Time, bool) {
	if e.seen == 0 {
		return time.Time{}, false
	}
	return time.Unix(0, e.due-int64(e.seen-1)*int64(time.Millisecond)), true
}

// setDue moves e's due time, keeping when it was last probed.
func (e *entry) setDue(due int64) {
	last, ok := e.lastProbe()
	e.due = due
	if ok {
		e.probedAt(last)
	}
}

// probedAt records that e was probed at t, relative to its due time.
func (e *entry) probedAt(t time.Time) {
	d := max(e.due-t.UnixNano(), 0) / int64(time.Millisecond)
	if d >= math.MaxUint32 {
		e.seen = 0
		return
	}
	e.seen = uint32(d) + 1
}

// Where an entry is when it is not in the heap.
const (
	// inFlight: being classified or probed, by one worker.
	inFlight = -1
	// pokedWhileProbed marks an entry whose subject changed while it was
	// in flight: it is re-armed due at once.
	pokedWhileProbed = -2
	// inReady: due, in the ready queue, waiting for a worker.
	inReady = -3
)

// everyMillis is d as an entry's cadence.
func everyMillis(d time.Duration) uint32 {
	ms := d.Milliseconds()
	switch {
	case ms < 0:
		return 0
	case ms > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(ms)
}

// interval is e's cadence.
func (e *entry) interval() time.Duration { return time.Duration(e.every) * time.Millisecond }

// dueHeap is a min-heap of entries by due time, for container/heap.
type dueHeap []*entry

func (h dueHeap) Len() int           { return len(h) }
func (h dueHeap) Less(i, j int) bool { return h[i].due < h[j].due }

func (h dueHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = int32(i)
	h[j].index = int32(j)
}

func (h *dueHeap) Push(x any) {
	e := x.(*entry)
	e.index = int32(len(*h))
	*h = append(*h, e)
}

func (h *dueHeap) Pop() any {
	old := *h
	n := len(old)
	e := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	e.index = inFlight
	return e
}
