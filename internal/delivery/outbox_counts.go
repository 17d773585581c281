package delivery

// Counts is how many pushes the outbox holds now (first attempts queued,
// retries waiting and pushes in flight) and how many of them wait for a
// retry, from its memory: nothing is read from the store.
func (o *Outbox) Counts() (held, retrying int) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return len(o.known), len(o.retries)
}
