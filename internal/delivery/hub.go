package delivery

import "sync"

// hub wakes long-poll readers. Each recipient with readers waiting has one
// channel; an append closes it (waking every reader at once) and the next
// reader makes a new one.
type hub struct {
	mu sync.Mutex
	ch map[string]chan struct{}
}

func newHub() *hub { return &hub{ch: map[string]chan struct{}{}} }

// wait returns the channel the next append for rid closes. Take it before
// reading the mailbox, so an append between the read and the wait is not
// missed.
func (h *hub) wait(rid string) <-chan struct{} {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.ch[rid]
	if !ok {
		c = make(chan struct{})
		h.ch[rid] = c
	}
	return c
}

// wake wakes rid's readers.
func (h *hub) wake(rid string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if c, ok := h.ch[rid]; ok {
		close(c)
		delete(h.ch, rid)
	}
}
