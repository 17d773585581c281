package scheduler

import (
	"container/heap"
	"slices"

	"github.com/vigilhq/vigil/store"
)

// readyQueue is the due work: entries whose time has come, waiting for a
// worker. The heap moves an entry here when it is due; a worker reads its
// row (which the probe needs anyway) and so learns its kind and recipient,
// and files it under them; then a free worker takes the oldest due watch
// of the kind, and within it of the recipient, with the fewest probes in
// flight, never one whose kind or recipient already holds the cap.
//
// Every operation costs O(log n) or O(1) in the due work, O(kinds) for the
// choice of kind (kinds are few: one per loaded plugin), and never
// anything in the pending watches. All of it is guarded by the
// scheduler's mu.
type readyQueue struct {
	// fresh holds the entries not yet read, in due order, from head on.
	fresh []*entry
	head  int
	// kinds and recips hold a lane for each kind and recipient with work
	// filed or in flight, and none other.
	kinds  map[string]*kindLane
	recips map[string]*recipLane
	// n is the entries in fresh and filed.
	n   int
	seq uint64
}

// job is one due watch: its entry, the row read for it, and once filed
// the lanes it counts against while it is in flight.
type job struct {
	e    *entry
	w    store.Watch
	seq  uint64
	kind *kindLane
	rec  *recipLane
}

// kindLane is one kind's filed work: a flow per recipient, in a heap by
// each flow's oldest due watch.
type kindLane struct {
	name     string
	inFlight int
	flows    flowHeap
	byRecip  map[string]*flow
}

// recipLane is one recipient's probes in flight, and how many kinds hold
// filed work of it.
type recipLane struct {
	id       string
	inFlight int
	flows    int
}

// flow is the filed work of one kind for one recipient, oldest due first.
type flow struct {
	kind  *kindLane
	rec   *recipLane
	jobs  jobHeap
	index int
}

func newReadyQueue() readyQueue {
	return readyQueue{kinds: map[string]*kindLane{}, recips: map[string]*recipLane{}}
}

// len is how many entries are due and not yet taken.
func (q *readyQueue) len() int { return q.n }

// filed is how many entries have been read and filed, and not yet taken.
func (q *readyQueue) filed() int { return q.n - (len(q.fresh) - q.head) }

// push adds entries that came due, in due order, to be read.
func (q *readyQueue) push(e *entry) {
	e.index = inReady
	q.fresh = append(q.fresh, e)
	q.n++
}

// unread takes up to max entries that have not been read yet.
func (q *readyQueue) unread(max int) []*entry {
	end := min(q.head+max, len(q.fresh))
	batch := append([]*entry(nil), q.fresh[q.head:end]...)
	clear(q.fresh[q.head:end])
	q.head = end
	if q.head == len(q.fresh) {
		q.fresh, q.head = q.fresh[:0], 0
	} else if q.head > 1024 && q.head > len(q.fresh)/2 {
		q.fresh = append(q.fresh[:0], q.fresh[q.head:]...)
		q.head = 0
	}
	q.n -= len(batch)
	return batch
}

// file puts a read entry under its kind and recipient.
func (q *readyQueue) file(e *entry, w store.Watch) {
	e.index = inReady
	k := q.kinds[w.Kind]
	if k == nil {
		k = &kindLane{name: w.Kind, byRecip: map[string]*flow{}}
		q.kinds[w.Kind] = k
	}
	q.seq++
	j := &job{e: e, w: w, seq: q.seq}
	q.n++
	if f := k.byRecip[w.Recipient.ID]; f != nil {
		heap.Push(&f.jobs, j)
		heap.Fix(&k.flows, f.index) // its oldest may be the new one
		return
	}
	r := q.recips[w.Recipient.ID]
	if r == nil {
		r = &recipLane{id: w.Recipient.ID}
		q.recips[w.Recipient.ID] = r
	}
	r.flows++
	f := &flow{kind: k, rec: r, jobs: jobHeap{j}}
	k.byRecip[w.Recipient.ID] = f
	heap.Push(&k.flows, f)
}

// take removes and returns the filed job a free worker should probe: of
// the kinds under cap, the one with the fewest probes in flight (then the
// oldest due); in it, of the recipients under cap, the one with the
// fewest in flight (then the oldest due); its oldest due watch. It counts
// the job in flight against its kind and recipient; done uncounts it.
// nil when nothing filed may be taken.
func (q *readyQueue) take(limit int) *job {
	var tried []*kindLane
	for {
		var k *kindLane
		for _, c := range q.kinds {
			if len(c.flows) == 0 || c.inFlight >= limit || slices.Contains(tried, c) {
				continue
			}
			if k == nil || c.inFlight < k.inFlight ||
				c.inFlight == k.inFlight && c.flows[0].jobs[0].before(k.flows[0].jobs[0]) {
				k = c
			}
		}
		if k == nil {
			return nil
		}
		if f := k.pick(limit); f != nil {
			j := heap.Pop(&f.jobs).(*job)
			if len(f.jobs) == 0 {
				heap.Remove(&k.flows, f.index)
				delete(k.byRecip, f.rec.id)
				f.rec.flows--
			} else {
				heap.Fix(&k.flows, f.index)
			}
			j.kind, j.rec = k, f.rec
			k.inFlight++
			f.rec.inFlight++
			q.n--
			return j
		}
		tried = append(tried, k)
	}
}

// pick is the flow of k to take from: the oldest whose recipient has
// nothing in flight, else the one under limit with the fewest in flight.
// It steps over at most one flow per recipient with probes in flight, so
// at most the workers' count.
func (k *kindLane) pick(limit int) *flow {
	var aside []*flow
	var pick *flow
	for len(k.flows) > 0 {
		f := k.flows[0]
		if f.rec.inFlight == 0 {
			pick = f
			break
		}
		aside = append(aside, heap.Pop(&k.flows).(*flow))
	}
	if pick == nil {
		for _, f := range aside {
			if f.rec.inFlight < limit && (pick == nil || f.rec.inFlight < pick.rec.inFlight ||
				f.rec.inFlight == pick.rec.inFlight && f.jobs[0].before(pick.jobs[0])) {
				pick = f
			}
		}
	}
	for _, f := range aside {
		heap.Push(&k.flows, f)
	}
	return pick
}

// done uncounts a taken job and drops the lanes nothing uses any more.
func (q *readyQueue) done(j *job) {
	if j.kind == nil {
		return
	}
	j.kind.inFlight--
	j.rec.inFlight--
	if j.kind.inFlight == 0 && len(j.kind.flows) == 0 && q.kinds[j.kind.name] == j.kind {
		delete(q.kinds, j.kind.name)
	}
	if j.rec.inFlight == 0 && j.rec.flows == 0 && q.recips[j.rec.id] == j.rec {
		delete(q.recips, j.rec.id)
	}
	j.kind, j.rec = nil, nil
}

// drain removes every entry not taken yet, read or not, and calls fn with
// each; the lanes of jobs in flight stay.
func (q *readyQueue) drain(fn func(*entry)) {
	for _, e := range q.fresh[q.head:] {
		fn(e)
	}
	q.fresh, q.head = nil, 0
	for name, k := range q.kinds {
		for _, f := range k.flows {
			for _, j := range f.jobs {
				fn(j.e)
			}
			f.rec.flows--
		}
		k.flows, k.byRecip = nil, map[string]*flow{}
		if k.inFlight == 0 {
			delete(q.kinds, name)
		}
	}
	for id, r := range q.recips {
		if r.inFlight == 0 && r.flows == 0 {
			delete(q.recips, id)
		}
	}
	q.n = 0
}

// before orders jobs: the oldest due first, then the first filed.
func (j *job) before(o *job) bool {
	if j.e.due != o.e.due {
		return j.e.due < o.e.due
	}
	return j.seq < o.seq
}

type jobHeap []*job

func (h jobHeap) Len() int           { return len(h) }
func (h jobHeap) Less(i, j int) bool { return h[i].before(h[j]) }
func (h jobHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *jobHeap) Push(x any)        { *h = append(*h, x.(*job)) }

func (h *jobHeap) Pop() any {
	old := *h
	n := len(old)
	j := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	return j
}

type flowHeap []*flow

func (h flowHeap) Len() int           { return len(h) }
func (h flowHeap) Less(i, j int) bool { return h[i].jobs[0].before(h[j].jobs[0]) }

func (h flowHeap) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].index = i
	h[j].index = j
}

func (h *flowHeap) Push(x any) {
	f := x.(*flow)
	f.index = len(*h)
	*h = append(*h, f)
}

func (h *flowHeap) Pop() any {
	old := *h
	n := len(old)
	f := old[n-1]
	old[n-1] = nil
	*h = old[:n-1]
	f.index = -1
	return f
}
