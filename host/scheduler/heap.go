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
	due      int64 // unix nanoseconds
	deadline int64 // unix nanoseconds; 0 for a standing watch
	// every is the cadence in milliseconds, saturating at about 49 days
	// (a longer cadence is probed every 49 days).
	every    uint32
	attempts int32
	// index is the position in the heap, or where the entry is when it is
	// not in the heap: inFlight, pokedWhileProbed, inReady.
	index int32
	// faults counts the probes in a row that faulted or raised: the
	// exponent of the backoff. Touched only under the scheduler's lock.
	faults uint8
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
