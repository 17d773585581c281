package crashtest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
)

// harness is one run: the host's spec, the load's ledger, and the
// checker's copies of what it has verified.
type harness struct {
	b      budget
	spec   hostSpec
	recv   *receiver
	secret string
	client *http.Client // the load and the checks
	poll   *http.Client // the mailbox readers' long polls

	mu sync.Mutex // guards everything below
	// The ledger.
	watches map[string]*watchRec
	order   []*watchRec
	recips  []*recipRec
	byRecip map[string]*recipRec
	items   []*itemRec
	acks    struct{ regs, cancels, puts, records, repeats, unanswered int }
	// The keyed writes whose answer never came, to send again under
	// their keys after the next start, and what those retries found.
	unansweredRegs []*unansweredReg
	retried        struct{ regs, records, replayed int }
	// The checker's copies and the figures.
	mail         map[string]*mailCopy
	unknownSince map[string]time.Time // message id -> when first seen unknown
	orphans      map[string]string    // watch id -> recipient: mailed, registration unanswered
	readiness    []time.Duration
	firing       []time.Duration
	kills        int
	messages     int
	stateCounts  map[string]int
	pushCounts   map[string]int
	// Problems, each once.
	problems   []string
	seen       map[string]bool
	lost       int
	duplicated int
}

func newHarness(t *testing.T, b budget, spec hostSpec, recv *receiver, secret string) *harness {
	t.Helper()
	h := &harness{b: b, spec: spec, recv: recv, secret: secret,
		client:       &http.Client{Timeout: 10 * time.Second},
		poll:         &http.Client{Timeout: 10 * time.Second},
		watches:      map[string]*watchRec{},
		byRecip:      map[string]*recipRec{},
		mail:         map[string]*mailCopy{},
		unknownSince: map[string]time.Time{},
		orphans:      map[string]string{},
		seen:         map[string]bool{},
	}
	for _, r := range []*recipRec{
		{id: "r0"}, {id: "r1"}, {id: "r2"},
		{id: "p0", pausable: true}, {id: "p1", pausable: true},
		{id: "hook", hook: true, pausable: true},
	} {
		r.running = true
		h.recips = append(h.recips, r)
		h.byRecip[r.id] = r
		h.mail[r.id] = &mailCopy{byWatch: map[string]uint64{}, pushFrom: 1}
	}
	return h
}

// problem records a failed check, once per distinct text.
func (h *harness) problem(kind, format string, args ...any) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.problemLocked(kind, format, args...)
}

// problemLocked is problem with h.mu held.
func (h *harness) problemLocked(kind, format string, args ...any) {
	msg := kind + ": " + fmt.Sprintf(format, args...)
	if h.seen[msg] {
		return
	}
	h.seen[msg] = true
	switch kind {
	case "LOST":
		h.lost++
	case "DUPLICATED":
		h.duplicated++
	}
	h.problems = append(h.problems, msg)
}

func (h *harness) failed() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.problems) > 0
}

func (h *harness) problemList() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.problems...)
}

// do sends one request; status is 0 when no answer came.
func (h *harness) do(ctx context.Context, c *http.Client, method, path string, body any, out any) (int, []byte) {
	status, b, _ := h.doKeyed(ctx, c, method, path, "", body, out)
	return status, b
}

// doKeyed is do with the Idempotency-Key key (none when it is ""), and
// says whether the answer was a replay of the key's first answer.
func (h *harness) doKeyed(ctx context.Context, c *http.Client, method, path, key string, body any, out any) (int, []byte, bool) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			panic(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, h.spec.base()+path, rd)
	if err != nil {
		panic(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set(api.HeaderIdempotencyKey, api.FormatIdempotencyKey(key))
	}
	resp, err := c.Do(req)
	if err != nil {
		return 0, nil, false
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, false
	}
	if out != nil && resp.StatusCode/100 == 2 {
		if err := json.Unmarshal(b, out); err != nil {
			return 0, nil, false
		}
	}
	return resp.StatusCode, b, resp.Header.Get(api.HeaderIdempotentReplayed) == "true"
}

// idemKey is a fresh Idempotency-Key from the load's random source (so a
// seed replays the keys too): 128 bits as hex.
func idemKey(rng *rand.Rand) string { return fmt.Sprintf("%016x%016x", rng.Uint64(), rng.Uint64()) }

// must is do for the checker, which runs only while the host is up: no
// answer, or an unexpected status, fails the run.
func (h *harness) must(t *testing.T, method, path string, body, out any, want ...int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	status, b := h.do(ctx, h.client, method, path, body, out)
	for _, w := range want {
		if status == w {
			return status
		}
	}
	t.Fatalf("%s %s: %d %s (want %v)", method, path, status, b, want)
	return 0
}

func (h *harness) putBody(r *recipRec, running bool) api.RecipientRequest {
	req := api.RecipientRequest{Status: "paused"}
	if running {
		req.Status = "running"
	}
	if r.hook {
		req.Webhook = &api.WebhookRequest{URL: h.recv.url(), Secret: h.secret}
	}
	return req
}

// setUp creates the recipients on the first start.
func (h *harness) setUp(t *testing.T) {
	t.Helper()
	for _, r := range h.recips {
		h.must(t, http.MethodPut, "/api/v1/recipients/"+r.id, h.putBody(r, true), nil, 200, 201)
	}
}

// load drives the mixed load until ctx ends (the host was killed).
func (h *harness) load(ctx context.Context, rng *rand.Rand, epoch int) {
	for ctx.Err() == nil {
		switch x := rng.IntN(100); {
		case x < 50:
			h.register(ctx, rng, epoch)
		case x < 62:
			h.cancel(ctx, rng)
		case x < 67:
			h.flip(ctx, rng)
		case x < 87:
			h.record(ctx, rng)
		default:
			h.repeat(ctx, rng)
		}
		select {
		case <-ctx.Done():
		case <-time.After(time.Duration(5+rng.IntN(20)) * time.Millisecond):
		}
	}
}

func (h *harness) unanswered() {
	h.mu.Lock()
	h.acks.unanswered++
	h.mu.Unlock()
}

func (h *harness) register(ctx context.Context, rng *rand.Rand, epoch int) {
	h.mu.Lock()
	// A third of the registrations go to the webhook's recipient, so
	// there are pushes in flight to catch.
	r := h.byRecip["hook"]
	if rng.IntN(3) > 0 {
		r = h.recips[rng.IntN(len(h.recips))]
	}
	certainRunning := r.running && !r.uncertain && !r.busy
	puts := r.puts
	h.mu.Unlock()
	sent := time.Now()
	at := sent.Add(time.Duration(200+rng.IntN(4800)) * time.Millisecond).UTC()
	params, _ := json.Marshal(map[string]string{"at": at.Format(time.RFC3339Nano)})
	var w api.Watch
	key := idemKey(rng)
	req := api.WatchRequest{Kind: "timer", Params: params, Recipient: api.RecipientRef{ID: r.id}, Every: h.b.every}
	status, body, _ := h.doKeyed(ctx, h.client, http.MethodPost, "/api/v1/watches", key, req, &w)
	switch {
	case status == 0:
		// Killed before its answer: it may have been written. Sent
		// again under its key after the next start.
		h.mu.Lock()
		h.acks.unanswered++
		h.unansweredRegs = append(h.unansweredRegs, &unansweredReg{idem: key, req: req, recipient: r.id, at: at, sent: sent})
		h.mu.Unlock()
	case status == http.StatusCreated:
		h.mu.Lock()
		rec := &watchRec{id: w.ID, recipient: r.id, at: at, sent: sent, epoch: epoch, state: w.State}
		h.watches[w.ID] = rec
		h.order = append(h.order, rec)
		h.acks.regs++
		h.mu.Unlock()
	case status == http.StatusConflict && certainRunning && h.samePuts(r, puts):
		// Only a pause this ledger does not know about could refuse it.
		h.problem("STATE", "registration for %s, running by every acknowledged PUT, refused: %d %s", r.id, status, body)
	case status == http.StatusConflict:
	default:
		h.problem("API", "registration for %s: %d %s", r.id, status, body)
	}
}

// samePuts reports whether no PUT of r went out since it had made puts.
func (h *harness) samePuts(r *recipRec, puts int) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return r.puts == puts
}

func (h *harness) cancel(ctx context.Context, rng *rand.Rand) {
	h.mu.Lock()
	if len(h.order) == 0 {
		h.mu.Unlock()
		return
	}
	recent := h.order[max(0, len(h.order)-200):]
	rec := recent[rng.IntN(len(recent))]
	if rec.cancelSent {
		h.mu.Unlock()
		return
	}
	rec.cancelSent = true
	h.mu.Unlock()
	status, body := h.do(ctx, h.client, http.MethodDelete, "/api/v1/watches/"+rec.id, nil, nil)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch status {
	case 0:
		h.acks.unanswered++
	case http.StatusOK:
		rec.cancelAcked = true
		h.acks.cancels++
	case http.StatusConflict:
		rec.cancelRefused = true
	case http.StatusNotFound:
		h.problemLocked("LOST", "watch %s (acknowledged) answered 404 to its cancel", rec.id)
	default:
		h.problemLocked("API", "cancel %s: %d %s", rec.id, status, body)
	}
}

// flip pauses a running recipient or resumes a paused one.
func (h *harness) flip(ctx context.Context, rng *rand.Rand) {
	h.mu.Lock()
	r := h.recips[rng.IntN(len(h.recips))]
	if !r.pausable || r.busy {
		h.mu.Unlock()
		return
	}
	r.busy = true
	r.puts++
	running := !r.running
	var pause *window
	if !running {
		r.pauses = append(r.pauses, window{sent: time.Now()})
		pause = &r.pauses[len(r.pauses)-1]
	}
	body := h.putBody(r, running)
	h.mu.Unlock()
	status, resp := h.do(ctx, h.client, http.MethodPut, "/api/v1/recipients/"+r.id, body, nil)
	h.mu.Lock()
	defer h.mu.Unlock()
	r.busy = false
	switch {
	case status == 0:
		h.acks.unanswered++
		r.uncertain = true
	case status/100 == 2:
		h.acks.puts++
		r.running, r.uncertain = running, false
		if pause != nil {
			pause.done = time.Now()
		}
	default:
		h.problemLocked("API", "PUT recipient %s: %d %s", r.id, status, resp)
	}
}

const threads = 12

// record reports a new item of one of a few threads.
func (h *harness) record(ctx context.Context, rng *rand.Rand) {
	h.mu.Lock()
	it := &itemRec{item: fmt.Sprintf("i%07d", len(h.items)), thread: fmt.Sprintf("t%02d", rng.IntN(threads)), idem: idemKey(rng)}
	it.text = "item " + it.item + " of " + it.thread
	h.items = append(h.items, it)
	h.mu.Unlock()
	var res api.ObserveResult
	status, body, _ := h.doKeyed(ctx, h.client, http.MethodPost, "/api/v1/scopes/crash/observe", it.idem,
		api.ObserveRequest{Item: it.item, Thread: it.thread, Text: it.text}, &res)
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case status == 0:
		h.acks.unanswered++
	case status == http.StatusCreated && !res.Duplicate:
		it.acked, it.seq, it.key, it.threadKey = true, res.Event.Seq, res.Event.Key, res.ThreadKey
		h.acks.records++
	default:
		h.problemLocked("OBSERVE", "a first record of %s answered %d %s", it.item, status, body)
	}
}

// repeat reports an acknowledged item again: it must be a duplicate of
// the first record's event, whatever crashes came between.
func (h *harness) repeat(ctx context.Context, rng *rand.Rand) {
	h.mu.Lock()
	if len(h.items) == 0 {
		h.mu.Unlock()
		return
	}
	it := h.items[rng.IntN(len(h.items))]
	if !it.acked {
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	var res api.ObserveResult
	status, body := h.do(ctx, h.client, http.MethodPost, "/api/v1/scopes/crash/observe",
		api.ObserveRequest{Item: it.item, Thread: it.thread, Text: it.text}, &res)
	switch {
	case status == 0:
		h.unanswered()
	case status == http.StatusOK && res.Duplicate && res.Event.Seq == it.seq && res.Event.Key == it.key:
		h.mu.Lock()
		h.acks.repeats++
		h.mu.Unlock()
	default:
		h.problem("DUPLICATED", "observe item %s (event %d) reported again: %d %s", it.item, it.seq, status, body)
	}
}

// read is one mailbox reader: it long-polls from its cursor across every
// restart, and checks that seqs arrive in order without gaps and that a
// seq, once read, always has the same message.
func (h *harness) read(ctx context.Context, id string) {
	var cursor uint64
	ids := map[uint64]string{}
	for ctx.Err() == nil {
		var mb api.Mailbox
		status, _ := h.do(ctx, h.poll, http.MethodGet,
			fmt.Sprintf("/api/v1/recipients/%s/mailbox?after=%d&wait=3s&limit=100", id, cursor), nil, &mb)
		if status != http.StatusOK {
			select {
			case <-ctx.Done():
			case <-time.After(100 * time.Millisecond):
			}
			continue
		}
		for _, m := range mb.Messages {
			if m.Seq != cursor+1 {
				h.problem("ORDER", "reader of %s after cursor %d got seq %d", id, cursor, m.Seq)
			}
			if old, ok := ids[m.Seq]; ok && old != m.ID {
				h.problem("DUPLICATED", "reader of %s: seq %d was %s, now %s", id, m.Seq, old, m.ID)
			}
			ids[m.Seq] = m.ID
			cursor = m.Seq
		}
	}
}

// retryUnanswered sends every keyed write whose answer never came again,
// under its key, now that the host is up (start n): a registration is
// answered 201, its first answer replayed when the killed attempt had
// committed, and then goes in the ledger; or 409 when its recipient was
// paused since and the killed attempt had not committed (nothing to
// acknowledge). An observe record is answered 201 as a first record,
// never a duplicate: its key was kept with its event, or the event was
// never written. Anything else is a problem.
func (h *harness) retryUnanswered(t *testing.T, n int) {
	t.Helper()
	h.mu.Lock()
	regs := h.unansweredRegs
	h.unansweredRegs = nil
	var items []*itemRec
	for _, it := range h.items {
		if !it.acked {
			items = append(items, it)
		}
	}
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, u := range regs {
		var w api.Watch
		status, body, replayed := h.doKeyed(ctx, h.client, http.MethodPost, "/api/v1/watches", u.idem, u.req, &w)
		h.mu.Lock()
		switch status {
		case http.StatusCreated:
			rec := &watchRec{id: w.ID, recipient: u.recipient, at: u.at, sent: u.sent, epoch: n, state: w.State}
			if _, dup := h.watches[w.ID]; dup {
				h.problemLocked("DUPLICATED", "registration under key %s answered %s, which another registration was answered", u.idem, w.ID)
			}
			h.watches[w.ID] = rec
			h.order = append(h.order, rec)
			h.acks.regs++
			h.retried.regs++
			if replayed {
				h.retried.replayed++
			}
		case http.StatusConflict:
			h.retried.regs++
		default:
			h.problemLocked("API", "registration under key %s sent again after start %d: %d %s", u.idem, n, status, body)
		}
		h.mu.Unlock()
	}
	for _, it := range items {
		var res api.ObserveResult
		status, body, replayed := h.doKeyed(ctx, h.client, http.MethodPost, "/api/v1/scopes/crash/observe", it.idem,
			api.ObserveRequest{Item: it.item, Thread: it.thread, Text: it.text}, &res)
		h.mu.Lock()
		switch {
		case status == http.StatusCreated && !res.Duplicate:
			it.acked, it.seq, it.key, it.threadKey = true, res.Event.Seq, res.Event.Key, res.ThreadKey
			h.acks.records++
			h.retried.records++
			if replayed {
				h.retried.replayed++
			}
		default:
			h.problemLocked("DUPLICATED", "observe item %s sent again under key %s after start %d: %d %s, want its first answer", it.item, it.idem, n, status, body)
		}
		h.mu.Unlock()
	}
}
