package hooks

import "time"

// window is a Standard Webhooks source's replay window: the webhook-ids
// accepted, each until its timestamp leaves the tolerance (after which
// Verify refuses the timestamp anyway), at most max of them. Full, it
// lets go of the id that expires first, counted: a replay of that id is
// then one extra look, never a wrong conclusion.
type window struct {
	max   int
	until map[string]time.Time
	order []entry // a min-heap on until
}

type entry struct {
	id    string
	until time.Time
}

func newWindow(max int) *window {
	return &window{max: max, until: make(map[string]time.Time)}
}

// add records id until until and reports whether it was fresh (not held),
// and how many unexpired ids it let go of to stay within max.
func (w *window) add(id string, until, now time.Time) (fresh bool, forgot int) {
	for len(w.order) > 0 && !w.order[0].until.After(now) {
		w.pop()
	}
	if _, ok := w.until[id]; ok {
		return false, 0
	}
	for len(w.order) >= w.max && len(w.order) > 0 {
		w.pop()
		forgot++
	}
	w.until[id] = until
	w.push(entry{id, until})
	return true, forgot
}

func (w *window) push(e entry) {
	w.order = append(w.order, e)
	i := len(w.order) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !w.order[i].until.Before(w.order[p].until) {
			break
		}
		w.order[i], w.order[p] = w.order[p], w.order[i]
		i = p
	}
}

func (w *window) pop() {
	top := w.order[0]
	delete(w.until, top.id)
	n := len(w.order) - 1
	w.order[0] = w.order[n]
	w.order = w.order[:n]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < n && w.order[l].until.Before(w.order[m].until) {
			m = l
		}
		if r < n && w.order[r].until.Before(w.order[m].until) {
			m = r
		}
		if m == i {
			return
		}
		w.order[i], w.order[m] = w.order[m], w.order[i]
		i = m
	}
}
