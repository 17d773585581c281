package storetest

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/vigilhq/vigil/store"
)

func mailCases() []testCase {
	return []testCase{
		{"SettleAndMail", testSettleAndMail},
		{"SettleAndMailNotRunningIsUndeliverable", testSettleAndMailNotRunning},
		{"SettleAndMailIsOneTransaction", testSettleAndMailAtomic},
		{"CarryAndMail", testCarryAndMail},
		{"CarryAndMailIsOneTransaction", testCarryAndMailAtomic},
		{"AppendIfRunningAndSequence", testMailboxSequence},
		{"SequenceUnderConcurrency", testMailboxConcurrency},
		{"OversizedOutcomeSettlesBounded", testOversizedOutcome},
		{"AnswerAndMail", testAnswerAndMail},
	}
}

// An answer given from outside settles fired and mails, as SettleAndMail
// does, with its then told of the mail; once the row is settled (by it or
// by anything else) it writes and mails nothing; it settles fired only.
func testAnswerAndMail(e *env) {
	e.running("a", "https://example.org/hook")
	w := e.created("a", t0)
	m := e.fired()
	var told store.Mailed
	got, mailed, err := e.b.AnswerAndMailThen(e.ctx, w.ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m, func(md store.Mailed) { told = md })
	if err != nil || got.State != store.Fired || got.Receipt != store.ReceiptDelivered || mailed.Message == nil || told.Message == nil || told.Message.Seq != mailed.Message.Seq {
		e.Fatalf("answered %+v %+v %v (told %+v)", got, mailed, err, told)
	}
	if msgs := e.mailbox("a"); len(msgs) != 1 || msgs[0].WatchID != w.ID || len(e.live()) != 1 {
		e.Fatalf("mailbox %+v, live pushes %d", msgs, len(e.live()))
	}
	if _, _, err := e.b.AnswerAndMailThen(e.ctx, w.ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m, nil); !errors.Is(err, store.ErrNotPending) {
		e.Fatalf("a second answer: %v, want ErrNotPending", err)
	}
	if msgs := e.mailbox("a"); len(msgs) != 1 {
		e.Fatalf("a second answer mailed: %+v", msgs)
	}
	other := e.created("a", t0)
	if _, _, err := e.b.AnswerAndMailThen(e.ctx, other.ID, store.Settlement{State: store.Expired, SettledAt: t0}, m, nil); err == nil {
		e.Fatal("an answer settled a watch expired")
	}
	if cur, _ := e.b.Get(e.ctx, other.ID); cur.State != store.Pending {
		e.Fatalf("the refused answer wrote %s", cur.State)
	}
}

// A settlement, and a standing watch's change, whose outcome is over the
// store's bound (store.MaxOutcome: 1.5 MiB of detail, more than a
// JetStream message holds) commits, the row and the message keeping the
// outcome Bounded (its detail replaced by its size): the watch is
// answered, never a commit refused forever.
func testOversizedOutcome(e *env) {
	e.running("a", "https://example.org/hook")
	big := store.Outcome{Result: "fired", Summary: "large", Detail: json.RawMessage(`"` + strings.Repeat("d", 3*store.MaxValue/2) + `"`)}
	want := big.Bounded()
	if string(want.Detail) != fmt.Sprintf(`{"dropped_bytes":%d}`, len(big.Detail)) {
		e.Fatalf("the bounded outcome's detail %s", want.Detail)
	}
	w := e.created("a", t0)
	m := e.fired()
	m.Outcome = big
	got, mailed, err := e.b.SettleAndMail(e.ctx, w.ID, store.Settlement{State: store.Fired, Outcome: &big, SettledAt: t0}, m)
	if err != nil {
		e.Fatalf("settling with a %d-byte outcome: %v, want it settled", len(big.Detail), err)
	}
	if got.Outcome == nil || !reflect.DeepEqual(*got.Outcome, want) || mailed.Message == nil || !reflect.DeepEqual(mailed.Message.Outcome, want) {
		e.Fatalf("settled %+v, mailed %+v: want the outcome bounded, %+v", got.Outcome, mailed.Message, want)
	}
	if row, err := e.b.Get(e.ctx, w.ID); err != nil || row.State != store.Fired || !reflect.DeepEqual(*row.Outcome, want) {
		e.Fatalf("the row as read: %+v %v", row, err)
	}
	msgs := e.mailbox("a")
	if len(msgs) != 1 || !reflect.DeepEqual(msgs[0].Outcome, want) {
		e.Fatalf("the mailbox: %+v", msgs)
	}

	s := e.created("a", t0)
	change := e.fired()
	change.Type, change.Outcome = store.MessageChanged, big
	if _, err := e.b.CarryAndMail(e.ctx, s.ID, json.RawMessage(`{"v":1}`), 1, "", &change); err != nil {
		e.Fatalf("a change with a %d-byte outcome: %v, want it mailed", len(big.Detail), err)
	}
	if msgs := e.mailbox("a"); len(msgs) != 2 || !reflect.DeepEqual(msgs[1].Outcome, want) {
		e.Fatalf("the mailbox after the change: %+v", msgs)
	}
}

// A settlement for a running recipient with an active webhook writes the
// row, its message (seq 1) and its outbox record together; a second
// settlement of the row writes nothing.
func testSettleAndMail(e *env) {
	e.running("a", "https://example.org/hook")
	w := e.created("a", t0)
	m := e.fired()
	// Only a fired, expired or unwatchable row carries a message.
	for _, bad := range []store.State{store.Pending, store.Cancelled} {
		if _, _, err := e.b.SettleAndMail(e.ctx, w.ID, store.Settlement{State: bad, SettledAt: t0}, m); err == nil {
			e.Fatalf("settled and mailed as %q", bad)
		}
	}
	got, mailed, err := e.b.SettleAndMail(e.ctx, w.ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0, Attempts: 2}, m)
	if err != nil || got.State != store.Fired || got.Receipt != store.ReceiptDelivered || got.Attempts != 2 {
		e.Fatalf("settle: %+v %v", got, err)
	}
	if mailed.Recipient != "a" || mailed.Message == nil || mailed.Message.Seq != 1 || mailed.Message.WatchID != w.ID {
		e.Fatalf("mailed %+v", mailed)
	}
	if p := mailed.Push; p == nil || p.State != store.PushPending || p.Seq != 1 || p.MessageID != m.ID || p.Recipient != "a" {
		e.Fatalf("push %+v", mailed.Push)
	}
	msgs := e.mailbox("a")
	if len(msgs) != 1 || msgs[0].ID != m.ID || msgs[0].Push == nil || msgs[0].Push.State != store.PushPending {
		e.Fatalf("mailbox %+v", msgs)
	}
	if live := e.live(); len(live) != 1 || live[0].Seq != 1 {
		e.Fatalf("live pushes %+v", live)
	}
	if _, _, err := e.b.SettleAndMail(e.ctx, w.ID, store.Settlement{State: store.Fired, SettledAt: t0}, e.fired()); !errors.Is(err, store.ErrNotPending) {
		e.Fatalf("a second settle: %v, want ErrNotPending", err)
	}
	if msgs := e.mailbox("a"); len(msgs) != 1 {
		e.Fatalf("mailbox after a second settle: %+v", msgs)
	}
	if live := e.live(); len(live) != 1 {
		e.Fatalf("live pushes after a second settle: %+v", live)
	}
	// A disabled webhook gets the message and no push.
	if done, err := e.b.DisableWebhook(e.ctx, "a", "https://example.org/hook", "gone", t0); err != nil || !done {
		e.Fatalf("disable: %v %v", done, err)
	}
	_, mailed = e.settleMailed("a", t0)
	if mailed.Message == nil || mailed.Message.Seq != 2 || mailed.Push != nil {
		e.Fatalf("with the webhook disabled: %+v", mailed)
	}
	if _, _, err := e.b.SettleAndMail(e.ctx, e.id(t0), store.Settlement{State: store.Fired, SettledAt: t0}, e.fired()); !errors.Is(err, store.ErrNotFound) {
		e.Fatalf("settling an absent id: %v, want ErrNotFound", err)
	}
}

// A recipient that is not running (paused, or absent) settles the row
// undeliverable, rejected, and mails nothing.
func testSettleAndMailNotRunning(e *env) {
	if _, _, err := e.b.PutRecipient(e.ctx, store.RecipientRecord{ID: "p", Status: store.StatusPaused, CreatedAt: t0, UpdatedAt: t0,
		Webhook: &store.Webhook{URL: "https://example.org/hook", Secret: "whsec_x"}}); err != nil {
		e.Fatal(err)
	}
	for _, rid := range []string{"p", "nobody"} {
		w := e.created(rid, t0)
		m := e.fired()
		got, mailed, err := e.b.SettleAndMail(e.ctx, w.ID, store.Settlement{State: store.Expired, Outcome: &m.Outcome, SettledAt: t0}, m)
		if err != nil || got.State != store.Undeliverable || got.Receipt != store.ReceiptRejected || mailed.Message != nil || mailed.Push != nil {
			e.Fatalf("%s: %+v %+v %v", rid, got, mailed, err)
		}
		if row, _ := e.b.Get(e.ctx, w.ID); row.State != store.Undeliverable {
			e.Fatalf("%s: the row is %s", rid, row.State)
		}
	}
	if msgs := e.mailbox("p"); len(msgs) != 0 {
		e.Fatalf("mailbox %+v", msgs)
	}
	if live := e.live(); len(live) != 0 {
		e.Fatalf("live pushes %+v", live)
	}
}

func (e *env) failpoint(fn func(at string) error) {
	e.Helper()
	if e.o.Failpoint == nil {
		e.Skip("the backend gives no Failpoint hook")
	}
	e.o.Failpoint(e.b, fn)
}

// A failure between the settlement and its mail leaves neither: the row
// is still pending, the mailbox and the outbox empty; without it the
// mailbox numbers from 1.
func testSettleAndMailAtomic(e *env) {
	e.running("a", "https://example.org/hook")
	w := e.created("a", t0)
	injected := errors.New("injected")
	e.failpoint(func(at string) error {
		if at == "settled" || at == "settle-and-mail" {
			return injected
		}
		return nil
	})
	m := e.fired()
	if _, _, err := e.b.SettleAndMail(e.ctx, w.ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m); !errors.Is(err, injected) {
		e.Fatalf("settle: %v, want the injected failure", err)
	}
	if got, _ := e.b.Get(e.ctx, w.ID); got.State != store.Pending || got.Receipt != store.ReceiptNone {
		e.Fatalf("the row after the failure: %+v", got)
	}
	if _, ok := e.schedules()[w.ID]; !ok {
		e.Fatal("the row left the pending schedule")
	}
	if msgs := e.mailbox("a"); len(msgs) != 0 {
		e.Fatalf("mailbox after the failure: %+v", msgs)
	}
	if live := e.live(); len(live) != 0 {
		e.Fatalf("%d pushes after the failure", len(live))
	}
	e.o.Failpoint(e.b, nil)
	if _, mailed, err := e.b.SettleAndMail(e.ctx, w.ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: t0}, m); err != nil || mailed.Message.Seq != 1 || mailed.Push == nil {
		e.Fatalf("settle: %+v %v", mailed, err)
	}
}

// A baseline and its change mail are one transition: for a running
// recipient the change is mailed with a notice push; a paused one gets
// the baseline and no mail; a settled row refuses both.
func testCarryAndMail(e *env) {
	e.running("a", "https://example.org/hook")
	w := e.created("a", t0)
	m := e.fired()
	m.Type = store.MessageChanged
	mailed, err := e.b.CarryAndMail(e.ctx, w.ID, []byte(`{"v":1}`), 3, "moved", &m)
	if err != nil || mailed.Message == nil || mailed.Message.Seq != 1 || mailed.Push == nil || !mailed.Push.Notice {
		e.Fatalf("carry: %+v %v", mailed, err)
	}
	if got, _ := e.b.Get(e.ctx, w.ID); got.State != store.Pending || string(got.Baseline) != `{"v":1}` || got.Attempts != 3 || got.LastNote != "moved" {
		e.Fatalf("row %+v", got)
	}
	// No change: the baseline moves, nothing is mailed.
	if mailed, err := e.b.CarryAndMail(e.ctx, w.ID, []byte(`{"v":1}`), 4, "same", nil); err != nil || mailed.Message != nil {
		e.Fatalf("carry without a change: %+v %v", mailed, err)
	}
	e.setStatus("a", store.StatusPaused)
	if mailed, err := e.b.CarryAndMail(e.ctx, w.ID, []byte(`{"v":2}`), 5, "", &m); err != nil || mailed.Message != nil || mailed.Push != nil {
		e.Fatalf("carry while paused: %+v %v", mailed, err)
	}
	if got, _ := e.b.Get(e.ctx, w.ID); string(got.Baseline) != `{"v":2}` || got.State != store.Pending {
		e.Fatalf("row %+v", got)
	}
	if msgs := e.mailbox("a"); len(msgs) != 1 {
		e.Fatalf("mailbox %+v", msgs)
	}
	if _, err := e.b.Settle(e.ctx, w.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0}); err != nil {
		e.Fatal(err)
	}
	if _, err := e.b.CarryAndMail(e.ctx, w.ID, []byte(`{"v":3}`), 6, "", &m); !errors.Is(err, store.ErrNotPending) {
		e.Fatalf("carry after a cancel: %v, want ErrNotPending", err)
	}
	if got, _ := e.b.Get(e.ctx, w.ID); string(got.Baseline) != `{"v":2}` {
		e.Fatalf("a refused carry moved the baseline: %+v", got)
	}
}

// A failure between a baseline and its change mail leaves neither.
func testCarryAndMailAtomic(e *env) {
	e.running("a", "https://example.org/hook")
	w := e.created("a", t0)
	injected := errors.New("injected")
	e.failpoint(func(at string) error {
		if at == "carried" || at == "carry-and-mail" {
			return injected
		}
		return nil
	})
	m := e.fired()
	m.Type = store.MessageChanged
	if _, err := e.b.CarryAndMail(e.ctx, w.ID, []byte(`{"v":1}`), 3, "moved", &m); !errors.Is(err, injected) {
		e.Fatalf("carry: %v, want the injected failure", err)
	}
	if got, _ := e.b.Get(e.ctx, w.ID); got.Baseline != nil || got.Attempts != 0 {
		e.Fatalf("the row after the failure: %+v", got)
	}
	if msgs := e.mailbox("a"); len(msgs) != 0 {
		e.Fatalf("mailbox after the failure: %+v", msgs)
	}
	if live := e.live(); len(live) != 0 {
		e.Fatalf("%d pushes after the failure", len(live))
	}
	e.o.Failpoint(e.b, nil)
}

// AppendIfRunning appends only for a running recipient; each recipient's
// sequence is its own, dense from 1 (an id that extends another's too);
// a read after N returns what follows N, up to its limit.
func testMailboxSequence(e *env) {
	msg := func(typ store.MessageType) store.Message {
		return store.Message{ID: e.id(t0), Kind: "timer", Type: typ, Outcome: store.Outcome{Result: string(typ)}, At: t0}
	}
	if _, _, err := e.b.AppendIfRunning(e.ctx, "a", msg(store.MessageFired)); !errors.Is(err, store.ErrNotRunning) {
		e.Fatalf("an unknown recipient: %v, want ErrNotRunning", err)
	}
	for _, id := range []string{"a", "ab"} {
		if _, err := e.b.EnsureRecipient(e.ctx, id, t0); err != nil {
			e.Fatal(err)
		}
	}
	for i, typ := range []store.MessageType{store.MessageFired, store.MessageExpired, store.MessageChanged} {
		m, rec, err := e.b.AppendIfRunning(e.ctx, "a", msg(typ))
		if err != nil || m.Seq != uint64(i+1) || rec.ID != "a" {
			e.Fatalf("append %d: %+v %v", i, m, err)
		}
	}
	if m, _, _ := e.b.AppendIfRunning(e.ctx, "ab", msg(store.MessageFired)); m.Seq != 1 {
		e.Fatalf("ab's first message has seq %d, want 1", m.Seq)
	}
	got, err := e.b.ReadMailbox(e.ctx, "a", 0, 100)
	if err != nil || len(got) != 3 || got[0].Type != store.MessageFired || got[2].Seq != 3 {
		e.Fatalf("read all: %+v %v", got, err)
	}
	if got, _ = e.b.ReadMailbox(e.ctx, "a", 1, 1); len(got) != 1 || got[0].Seq != 2 {
		e.Fatalf("read after 1, limit 1: %+v", got)
	}
	if got, _ = e.b.ReadMailbox(e.ctx, "a", 3, 10); len(got) != 0 {
		e.Fatalf("read past the end: %+v", got)
	}
	// A settlement's message takes the next seq of the same sequence.
	if _, mailed := e.settleMailed("a", t0); mailed.Message == nil || mailed.Message.Seq != 4 {
		e.Fatalf("a settlement after three appends: %+v", mailed)
	}
	e.setStatus("a", store.StatusPaused)
	if _, _, err := e.b.AppendIfRunning(e.ctx, "a", msg(store.MessageFired)); !errors.Is(err, store.ErrNotRunning) {
		e.Fatalf("paused: %v, want ErrNotRunning", err)
	}
	if got := e.mailbox("a"); len(got) != 4 {
		e.Fatalf("a refused append was written: %d messages", len(got))
	}
}

// Concurrent appends, settlements among them, never share or skip a
// sequence number.
func testMailboxConcurrency(e *env) {
	e.running("a", "")
	const n = 200
	rows := make([]store.Watch, n/4)
	for i := range rows {
		rows[i] = e.created("a", t0)
	}
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range n / 4 {
				var err error
				if g == 0 {
					m := store.Message{Kind: "timer", Type: store.MessageFired, At: t0, WatchID: rows[i].ID}
					_, _, err = e.b.SettleAndMail(e.ctx, rows[i].ID, store.Settlement{State: store.Fired, SettledAt: t0}, m)
				} else {
					_, _, err = e.b.AppendIfRunning(e.ctx, "a", store.Message{Kind: "k", Type: store.MessageFired, At: t0})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		e.Fatal(err)
	}
	got, err := e.b.ReadMailbox(e.ctx, "a", 0, 2*n)
	if err != nil || len(got) != n {
		e.Fatalf("%d messages, want %d: %v", len(got), n, err)
	}
	for i, m := range got {
		if m.Seq != uint64(i+1) {
			e.Fatalf("seq %d at %d", m.Seq, i)
		}
	}
}
