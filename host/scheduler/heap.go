package scheduler

import "github.com/vigilhq/vigil/store"

// entry is one pending watch as the scheduler holds it: what deciding when
// to probe it needs, and nothing of its params or recipient, which are read
// from the store when it is due. 48 bytes.
type entry struct {
	id       store.ID
	due      int64 // unix nanoseconds
	every    int64 // nanoseconds
	deadline int64 // unix nanoseconds; 0 for a standing watch
	index    int32 // position in the heap; -1 while being probed, pokedWhileProbed if poked meanwhile
	attempts int32
}

// pokedWhileProbed marks an entry whose subject changed while it was out of
// the heap being probed: it is re-armed due at once.
const pokedWhileProbed = -2

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
	e.index = -1
	return e
}
