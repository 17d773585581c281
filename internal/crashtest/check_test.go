package crashtest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
)

// settled states a timer can end in, and whether a message goes with it.
func mailed(state string) bool { return state == "fired" || state == "expired" }

// judge says whether w is a state rec's history allows; "" when it is.
// A timer due before overdue must have settled, unless a cancel or a pause
// of its recipient went out (a pause cancels it).
func (h *harness) judge(rec *watchRec, w api.Watch, overdue time.Time) string {
	r := h.byRecip[rec.recipient]
	paused := r.pausedSince(rec.sent)
	switch w.State {
	case "pending":
		if rec.cancelAcked {
			return "pending after its cancel was answered 200"
		}
		if rec.at.Before(overdue) && !paused && !r.uncertain && !rec.cancelSent {
			return fmt.Sprintf("still pending, due %v before %v", overdue.Sub(rec.at).Round(time.Millisecond), overdue.Format(time.StampMilli))
		}
	case "fired":
		if rec.cancelAcked {
			return "fired after its cancel was answered 200"
		}
		if w.SettledAt == nil || w.SettledAt.Before(rec.at) {
			return fmt.Sprintf("fired at %v, before its instant %v", w.SettledAt, rec.at)
		}
		if w.Receipt != "delivered" {
			return "fired with receipt " + w.Receipt
		}
	case "expired":
		if rec.cancelAcked {
			return "expired after its cancel was answered 200"
		}
		if w.ExpiresAt == nil || w.SettledAt == nil || w.SettledAt.Before(*w.ExpiresAt) {
			return "expired before its deadline"
		}
	case "cancelled":
		if !rec.cancelSent && !paused {
			return "cancelled, but no cancel and no pause of its recipient was sent"
		}
		if rec.cancelRefused && !paused {
			return "cancelled, but its cancel was answered already_settled"
		}
	case "undeliverable":
		if !paused {
			return "undeliverable, but its recipient was never paused after it was registered"
		}
	default:
		return "unknown state " + w.State
	}
	return ""
}

// timeDowntimeFirings waits for the timers due while the host was down
// (from the kill to readiness) to settle, and records how long after
// readiness each did.
func (h *harness) timeDowntimeFirings(t *testing.T, n int, killAt, readyAt time.Time) {
	t.Helper()
	h.mu.Lock()
	var due []*watchRec
	for i := len(h.order) - 1; i >= 0 && i >= len(h.order)-2000; i-- {
		rec := h.order[i]
		r := h.byRecip[rec.recipient]
		if !rec.at.Before(killAt) && rec.at.Before(readyAt) && !rec.cancelSent && !r.pausedSince(rec.sent) && !r.uncertain {
			due = append(due, rec)
		}
	}
	h.mu.Unlock()
	deadline := readyAt.Add(5 * time.Second)
	for _, rec := range due {
		for {
			var w api.Watch
			if h.must(t, http.MethodGet, "/api/v1/watches/"+rec.id, nil, &w, 200, 404) == 404 {
				h.problem("LOST", "watch %s (acknowledged, due %v) is gone after restart %d", rec.id, rec.at, n)
				break
			}
			if w.State != "pending" {
				if w.State == "fired" && w.SettledAt != nil {
					d := w.SettledAt.Sub(readyAt)
					h.mu.Lock()
					h.firing = append(h.firing, d)
					h.mu.Unlock()
					if d > h.b.fireBound {
						h.problem("LATE", "watch %s, due %v before readiness %d, fired %v after it (bound %v)",
							rec.id, readyAt.Sub(rec.at).Round(time.Millisecond), n, d.Round(time.Millisecond), h.b.fireBound)
					}
				}
				break
			}
			if time.Now().After(deadline) {
				h.problem("LATE", "watch %s, due %v before readiness %d, still pending 5s after it",
					rec.id, readyAt.Sub(rec.at).Round(time.Millisecond), n)
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// check runs after a restart, before the load resumes: the watches not yet
// verified final (and a sample of those that are), every mailbox from the
// verified cursor on, the webhook rules, and, when full, every Work.
func (h *harness) check(t *testing.T, n int, readyAt time.Time, full bool) {
	t.Helper()
	// By the bound after readiness, every timer due before readiness has
	// fired: wait that long, and none may be pending.
	time.Sleep(time.Until(readyAt.Add(h.b.fireBound + 200*time.Millisecond)))
	h.mu.Lock()
	var todo []*watchRec
	var final []*watchRec
	for _, rec := range h.order {
		if rec.verified {
			final = append(final, rec)
		} else {
			todo = append(todo, rec)
		}
	}
	h.mu.Unlock()
	rng := rand.New(rand.NewPCG(h.b.seed, uint64(n)))
	for range min(20, len(final)) {
		todo = append(todo, final[rng.IntN(len(final))])
	}
	got := map[string]api.Watch{}
	for _, rec := range todo {
		var w api.Watch
		if h.must(t, http.MethodGet, "/api/v1/watches/"+rec.id, nil, &w, 200, 404) == 404 {
			h.problem("LOST", "watch %s (acknowledged in start %d) is gone after restart %d", rec.id, rec.epoch, n)
			continue
		}
		got[rec.id] = w
	}
	h.judgeAll(t, n, got, readyAt)
	h.checkMail(t, n)
	h.checkPushes(n)
	if full {
		h.checkWork(t, n, false)
	}
}

// judgeAll judges each read watch against its ledger entry and its mail.
// The watches are read before the mailboxes, so a watch read settled has
// its message in the mailbox read after it (they are one transaction).
func (h *harness) judgeAll(t *testing.T, n int, got map[string]api.Watch, overdue time.Time) {
	t.Helper()
	h.mu.Lock()
	defer h.mu.Unlock()
	for id, w := range got {
		rec := h.watches[id]
		rec.state = w.State
		if why := h.judge(rec, w, overdue); why != "" {
			h.problemLocked("STATE", "watch %s after restart %d: %s", id, n, why)
			continue
		}
		if w.State != "pending" {
			rec.verified = true
		}
	}
}

// checkMail reads each mailbox on from the checker's verified copy and
// checks it against the ledger: seq from 1 without gaps, one message per
// settled watch of that recipient, none for any other; and re-reads a
// window already verified to see it unchanged.
func (h *harness) checkMail(t *testing.T, n int) {
	t.Helper()
	for _, r := range h.recips {
		mc := h.mail[r.id]
		for {
			var mb api.Mailbox
			h.must(t, http.MethodGet, fmt.Sprintf("/api/v1/recipients/%s/mailbox?after=%d&limit=1000", r.id, len(mc.ids)), nil, &mb, 200)
			if len(mb.Messages) == 0 {
				break
			}
			for _, m := range mb.Messages {
				h.takeMessage(n, r.id, mc, m)
			}
		}
		if len(mc.ids) > 50 {
			from := rand.N(len(mc.ids) - 50)
			var mb api.Mailbox
			h.must(t, http.MethodGet, fmt.Sprintf("/api/v1/recipients/%s/mailbox?after=%d&limit=50", r.id, from), nil, &mb, 200)
			for i, m := range mb.Messages {
				if want := uint64(from + i + 1); m.Seq != want || m.ID != mc.ids[want-1] {
					h.problem("LOST", "mailbox %s after restart %d: seq %d is now %d %s, was %s", r.id, n, want, m.Seq, m.ID, mc.ids[want-1])
				}
			}
			if len(mb.Messages) != 50 {
				h.problem("LOST", "mailbox %s after restart %d: %d messages after %d, want 50", r.id, n, len(mb.Messages), from)
			}
		}
	}
	// Every watch read settled with mail has its one message.
	h.mu.Lock()
	defer h.mu.Unlock()
	h.messages = 0
	for _, r := range h.recips {
		h.messages += len(h.mail[r.id].ids)
	}
	for _, rec := range h.order {
		if mailed(rec.state) {
			if _, ok := h.mail[rec.recipient].byWatch[rec.id]; !ok {
				h.problemLocked("LOST", "watch %s is %s but %s's mailbox has no message for it (restart %d)", rec.id, rec.state, rec.recipient, n)
			}
		}
	}
}

// takeMessage adds m, the next message of recipient id's mailbox, to the
// verified copy.
func (h *harness) takeMessage(n int, id string, mc *mailCopy, m api.Message) {
	want := uint64(len(mc.ids) + 1)
	if m.Seq != want {
		h.problem("ORDER", "mailbox %s after restart %d: seq %d where %d was next", id, n, m.Seq, want)
	}
	mc.ids = append(mc.ids, m.ID)
	mc.watches = append(mc.watches, m.WatchID)
	if prev, ok := mc.byWatch[m.WatchID]; ok {
		h.problem("DUPLICATED", "mailbox %s: watch %s has messages at seq %d and %d", id, m.WatchID, prev, m.Seq)
	}
	mc.byWatch[m.WatchID] = m.Seq
	h.mu.Lock()
	rec, ok := h.watches[m.WatchID]
	if !ok {
		h.orphans[m.WatchID] = id
	}
	h.mu.Unlock()
	switch {
	case !ok:
	case rec.recipient != id:
		h.problem("STATE", "watch %s of %s mailed to %s", m.WatchID, rec.recipient, id)
	case rec.cancelAcked:
		h.problem("STATE", "watch %s mailed (%s) although its cancel was answered 200", m.WatchID, m.Type)
	case !mailed(m.Type):
		h.problem("STATE", "watch %s mailed a %s message", m.WatchID, m.Type)
	}
}

// checkPushes applies the webhook rules: a message is sent again only
// after the receiver answered a 5xx; a message whose push is unknown is
// never sent again; a push the host calls delivered was answered 2xx.
func (h *harness) checkPushes(n int) {
	h.mu.Lock()
	defer h.mu.Unlock()
	mc := h.mail["hook"]
	// Re-read the hook mailbox from the lowest push that may still change.
	var msgs []api.Message
	after := mc.pushFrom - 1
	for {
		var mb api.Mailbox
		h.mu.Unlock()
		status, _ := h.do(context.Background(), h.client, http.MethodGet, fmt.Sprintf("/api/v1/recipients/hook/mailbox?after=%d&limit=1000", after), nil, &mb)
		h.mu.Lock()
		if status != 200 {
			h.problemLocked("API", "hook mailbox read after restart %d: %d", n, status)
			return
		}
		if len(mb.Messages) == 0 {
			break
		}
		msgs = append(msgs, mb.Messages...)
		after = mb.Messages[len(mb.Messages)-1].Seq
	}
	receipts, bad, _ := h.recv.receipts()
	for _, b := range bad {
		h.problemLocked("WEBHOOK", "%s", b)
	}
	now := time.Now()
	moved := true
	for _, m := range msgs {
		state := "none"
		if m.Push != nil {
			state = m.Push.State
		}
		switch state {
		case "unknown":
			if _, ok := h.unknownSince[m.ID]; !ok {
				h.unknownSince[m.ID] = now
			}
		case "delivered":
			ok := false
			for _, rc := range receipts[m.ID] {
				ok = ok || (rc.answer != answerRetry && rc.finished)
			}
			if !ok {
				h.problemLocked("WEBHOOK", "message %s (seq %d) is delivered, but the receiver never answered it 2xx", m.ID, m.Seq)
			}
		}
		final := state == "unknown" || state == "delivered" || state == "failed" || state == "none"
		if moved && final {
			mc.pushFrom = m.Seq + 1
		} else {
			moved = false
		}
	}
	for id, rs := range receipts {
		for i := 1; i < len(rs); i++ {
			if rs[i-1].answer != answerRetry {
				h.problemLocked("DUPLICATED", "webhook %s (seq %d) sent again at %v after an attempt answered %s",
					id, rs[i].seq, rs[i].started.Format(time.StampMilli), answerName(rs[i-1]))
			}
		}
		if since, ok := h.unknownSince[id]; ok {
			for _, rc := range rs {
				if rc.started.After(since) {
					h.problemLocked("DUPLICATED", "webhook %s (seq %d) sent at %v although its push was unknown by %v",
						id, rc.seq, rc.started.Format(time.StampMilli), since.Format(time.StampMilli))
				}
			}
		}
	}
}

func answerName(rc receipt) string {
	switch {
	case rc.answer == answerRetry:
		return "503"
	case !rc.finished:
		return "nothing (the host was killed first)"
	case rc.answer == answerSlow:
		return "204 after a pause"
	}
	return "204"
}

// checkWork reads every Work of the scope and checks each acknowledged
// observe record is an input exactly once, of its thread's Work; an
// unanswered one at most once. With final, it waits (bounded) for the
// router to take every acknowledged record.
func (h *harness) checkWork(t *testing.T, n int, final bool) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		var list api.WorkList
		h.must(t, http.MethodGet, "/api/v1/scopes/crash/work", nil, &list, 200)
		count := map[string]int{}
		inWork := map[string]string{}
		for _, wk := range list.Work {
			var full api.Work
			h.must(t, http.MethodGet, "/api/v1/work/"+url.PathEscape(wk.ID), nil, &full, 200)
			for _, in := range full.Inputs {
				count[in.Item]++
				inWork[in.Item] = full.ThreadKey
			}
		}
		h.mu.Lock()
		items := append([]*itemRec(nil), h.items...)
		h.mu.Unlock()
		missing := 0
		for _, it := range items {
			switch c := count[it.item]; {
			case c > 1:
				h.problem("DUPLICATED", "observe item %s is an input %d times (restart %d)", it.item, c, n)
			case c == 1 && it.acked && inWork[it.item] != it.threadKey:
				h.problem("STATE", "observe item %s is in the Work of thread %s, not %s", it.item, inWork[it.item], it.threadKey)
			case c == 0 && it.acked:
				missing++
			}
		}
		if !final || missing == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, it := range items {
				if it.acked && count[it.item] == 0 {
					h.problem("LOST", "observe item %s (event %d, acknowledged) is in no Work 15s after the last start", it.item, it.seq)
				}
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// finish is the last start: no more kills. It lets every timer come due
// and settle, then checks everything in full: every acknowledged watch
// from the listing, every mailbox from seq 1, the webhook rules, and every
// observe record in its Work.
func (h *harness) finish(t *testing.T) {
	t.Helper()
	h.mu.Lock()
	var last time.Time
	for _, rec := range h.order {
		if rec.at.After(last) {
			last = rec.at
		}
	}
	h.mu.Unlock()
	if d := time.Until(last.Add(2 * time.Second)); d > 0 {
		time.Sleep(d)
	}
	// Pushes answered 503 are retried 5 s later; give them that once.
	time.Sleep(6 * time.Second)
	n := len(h.readiness) - 1
	now := time.Now()
	listed := map[string]api.Watch{}
	for _, r := range h.recips {
		after := ""
		for {
			var page api.WatchList
			h.must(t, http.MethodGet, "/api/v1/watches?recipient="+r.id+"&limit=1000&after="+url.QueryEscape(after), nil, &page, 200)
			for _, w := range page.Watches {
				listed[w.ID] = w
			}
			if page.Next == "" {
				break
			}
			after = page.Next
		}
	}
	h.mu.Lock()
	got := map[string]api.Watch{}
	for _, rec := range h.order {
		if w, ok := listed[rec.id]; ok {
			got[rec.id] = w
		} else {
			h.problemLocked("LOST", "watch %s (acknowledged in start %d) is not listed at the end", rec.id, rec.epoch)
		}
	}
	counts := map[string]int{}
	unacked := 0
	for id, w := range listed {
		counts[w.State]++
		if _, ok := h.watches[id]; !ok {
			// Every registration went out under a key, and every one
			// whose answer was lost was sent again under it: a watch no
			// answer names was written twice for one key.
			unacked++
			h.problemLocked("DUPLICATED", "watch %s (%s, params %s) is listed, and no registration was answered it", id, w.State, w.Params)
		}
	}
	h.stateCounts = counts
	h.mu.Unlock()
	// Every timer has been due for seconds: none may be pending.
	h.judgeAll(t, n, got, now.Add(-h.b.fireBound))
	// Re-read every mailbox from 1 and compare it with the verified copy.
	whole := map[string][]api.Message{}
	for _, r := range h.recips {
		mc := h.mail[r.id]
		var all []api.Message
		for after := uint64(0); ; {
			var mb api.Mailbox
			h.must(t, http.MethodGet, fmt.Sprintf("/api/v1/recipients/%s/mailbox?after=%d&limit=1000", r.id, after), nil, &mb, 200)
			if len(mb.Messages) == 0 {
				break
			}
			all = append(all, mb.Messages...)
			after = mb.Messages[len(mb.Messages)-1].Seq
		}
		for i, m := range all {
			if i < len(mc.ids) && (m.Seq != uint64(i+1) || m.ID != mc.ids[i]) {
				h.problem("LOST", "mailbox %s at the end: position %d is seq %d %s, was %s", r.id, i+1, m.Seq, m.ID, mc.ids[i])
			}
			if i >= len(mc.ids) {
				h.takeMessage(n, r.id, mc, m)
			}
		}
		if len(all) < len(mc.ids) {
			h.problem("LOST", "mailbox %s at the end has %d messages; %d were read before", r.id, len(all), len(mc.ids))
		}
		whole[r.id] = all
	}
	// The whole mailboxes against the whole listing, as the cluster's
	// failover test checks them too.
	for _, p := range CheckMail(whole, listed) {
		h.problem(p.Kind, "at the end: %s", p.Detail)
	}
	h.checkMail(t, n)
	h.checkPushes(n)
	h.checkWork(t, n, true)
	// A message for a watch whose registration was never answered: that
	// registration committed; it must be a real, settled watch.
	h.mu.Lock()
	orphans := 0
	for id := range h.orphans {
		if _, ok := h.watches[id]; !ok {
			orphans++
		}
		if w, ok := listed[id]; !ok || !mailed(w.State) {
			h.problemLocked("STATE", "watch %s was mailed, but is %q at the end", id, w.State)
		}
	}
	push := map[string]int{}
	h.mu.Unlock()
	for after := uint64(0); ; {
		var mb api.Mailbox
		h.must(t, http.MethodGet, fmt.Sprintf("/api/v1/recipients/hook/mailbox?after=%d&limit=1000", after), nil, &mb, 200)
		if len(mb.Messages) == 0 {
			break
		}
		for _, m := range mb.Messages {
			if m.Push != nil {
				push[m.Push.State]++
			}
		}
		after = mb.Messages[len(mb.Messages)-1].Seq
	}
	h.mu.Lock()
	h.pushCounts = push
	h.mu.Unlock()
	t.Logf("watches listed whose registration was never answered: %d (%d mailed)", unacked, orphans)
}
