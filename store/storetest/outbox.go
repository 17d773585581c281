package storetest

import (
	"errors"
	"time"

	"github.com/vigilhq/vigil/store"
)

func outboxCases() []testCase {
	return []testCase{
		{"PushLifecycle", testPushLifecycle},
		{"DisableWebhook", testDisableWebhook},
		{"PushesOfSomeRecipients", testPushesOf},
	}
}

// A push moves pending → sending (BeginPush, which reads its message and
// recipient) → final (FinishPush), each step only from the state before
// it (ErrPushState); RecoverPushes turns what was left sending into
// unknown; LivePushes lists the pushes not final; PrunePushes deletes
// final ones older than its cutoff and never a live one.
func testPushLifecycle(e *env) {
	e.running("a", "https://example.org/hook")
	var seqs []uint64
	for range 3 {
		_, mailed := e.settleMailed("a", t0)
		seqs = append(seqs, mailed.Push.Seq)
	}
	p, m, rec, err := e.b.BeginPush(e.ctx, "a", seqs[0], t0)
	if err != nil || p.State != store.PushSending || p.Attempts != 1 || m.Seq != seqs[0] || rec.ID != "a" || rec.Webhook == nil || rec.Webhook.URL == "" {
		e.Fatalf("begin: %+v %+v %+v %v", p, m, rec, err)
	}
	if _, _, _, err := e.b.BeginPush(e.ctx, "a", seqs[0], t0); !errors.Is(err, store.ErrPushState) {
		e.Fatalf("begin twice: %v, want ErrPushState", err)
	}
	if _, _, _, err := e.b.BeginPush(e.ctx, "a", 99, t0); err == nil {
		e.Fatal("began a push that does not exist")
	}
	p.State, p.UpdatedAt = store.PushDelivered, t0.Add(time.Second)
	if err := e.b.FinishPush(e.ctx, p); err != nil {
		e.Fatal(err)
	}
	if err := e.b.FinishPush(e.ctx, p); !errors.Is(err, store.ErrPushState) {
		e.Fatalf("finish twice: %v, want ErrPushState", err)
	}
	if _, _, _, err := e.b.BeginPush(e.ctx, "a", seqs[1], t0); err != nil {
		e.Fatal(err)
	}
	for _, bad := range []store.PushState{store.PushSending, "bogus"} {
		q := p
		q.Seq, q.State = seqs[1], bad
		if err := e.b.FinishPush(e.ctx, q); err == nil {
			e.Fatalf("finished a push as %q", bad)
		}
	}
	recovered, err := e.b.RecoverPushes(e.ctx, t0.Add(time.Minute))
	if err != nil || len(recovered) != 1 || recovered[0].Seq != seqs[1] || recovered[0].State != store.PushUnknown {
		e.Fatalf("recover: %+v %v", recovered, err)
	}
	if again, err := e.b.RecoverPushes(e.ctx, t0.Add(time.Minute)); err != nil || len(again) != 0 {
		e.Fatalf("a second recover: %+v %v", again, err)
	}
	if live := e.live(); len(live) != 1 || live[0].Seq != seqs[2] || live[0].State != store.PushPending {
		e.Fatalf("live %+v", live)
	}
	msgs := e.mailbox("a")
	want := []store.PushState{store.PushDelivered, store.PushUnknown, store.PushPending}
	if len(msgs) != 3 {
		e.Fatalf("%d messages", len(msgs))
	}
	for i, m := range msgs {
		if m.Push == nil || m.Push.State != want[i] {
			e.Fatalf("message %d push %+v, want %s", m.Seq, m.Push, want[i])
		}
	}
	n, err := e.b.PrunePushes(e.ctx, t0.Add(time.Hour))
	if err != nil || n != 2 {
		e.Fatalf("prune: %d %v, want the 2 final pushes", n, err)
	}
	msgs = e.mailbox("a")
	if len(msgs) != 3 || msgs[0].Push != nil || msgs[1].Push != nil || msgs[2].Push == nil {
		e.Fatalf("after the prune: %+v", msgs)
	}
	if live := e.live(); len(live) != 1 || live[0].Seq != seqs[2] {
		e.Fatalf("live after the prune %+v", live)
	}
}

// DisableWebhook disables the webhook only if it is still the URL named.
func testDisableWebhook(e *env) {
	e.running("a", "https://example.org/hook")
	if done, err := e.b.DisableWebhook(e.ctx, "a", "https://example.org/other", "gone", t0); err != nil || done {
		e.Fatalf("another URL: %v %v", done, err)
	}
	if rec, _ := e.b.GetRecipient(e.ctx, "a"); !rec.Webhook.Active() {
		e.Fatal("another URL's 410 disabled the webhook")
	}
	if done, err := e.b.DisableWebhook(e.ctx, "a", "https://example.org/hook", "gone", t0); err != nil || !done {
		e.Fatalf("disable: %v %v", done, err)
	}
	rec, _ := e.b.GetRecipient(e.ctx, "a")
	if rec.Webhook.Active() || rec.Webhook.DisabledReason != "gone" || !rec.Webhook.DisabledAt.Equal(t0) {
		e.Fatalf("webhook %+v", rec.Webhook)
	}
}

// RecoverPushesOf and LivePushesOf touch only the recipients their keep
// accepts: a cluster node recovering the pushes of a partition it gained
// leaves another node's pushes sending, as that node left them.
func testPushesOf(e *env) {
	e.running("a", "https://example.org/a")
	e.running("b", "https://example.org/b")
	seqs := map[string][]uint64{}
	for range 2 {
		for _, rid := range []string{"a", "b"} {
			_, mailed := e.settleMailed(rid, t0)
			seqs[rid] = append(seqs[rid], mailed.Push.Seq)
		}
	}
	for _, rid := range []string{"a", "b"} {
		if _, _, _, err := e.b.BeginPush(e.ctx, rid, seqs[rid][0], t0); err != nil {
			e.Fatal(err)
		}
	}
	onlyA := func(rid string) bool { return rid == "a" }
	recovered, err := e.b.RecoverPushesOf(e.ctx, t0.Add(time.Minute), onlyA)
	if err != nil || len(recovered) != 1 || recovered[0].Recipient != "a" || recovered[0].State != store.PushUnknown {
		e.Fatalf("recover a's: %+v %v", recovered, err)
	}
	var live []store.Push
	if err := e.b.LivePushesOf(e.ctx, onlyA, func(p store.Push) error { live = append(live, p); return nil }); err != nil {
		e.Fatal(err)
	}
	if len(live) != 1 || live[0].Recipient != "a" || live[0].Seq != seqs["a"][1] || live[0].State != store.PushPending {
		e.Fatalf("a's live pushes %+v", live)
	}
	// b's push is still sending, as its sender left it, and b's live
	// pushes are both still there.
	all := e.live()
	var bs []store.PushState
	for _, p := range all {
		if p.Recipient == "b" {
			bs = append(bs, p.State)
		}
	}
	if len(bs) != 2 || bs[0] != store.PushSending || bs[1] != store.PushPending {
		e.Fatalf("b's pushes after recovering a's: %v", bs)
	}
	if got, err := e.b.RecoverPushesOf(e.ctx, t0.Add(time.Minute), nil); err != nil || len(got) != 1 || got[0].Recipient != "b" {
		e.Fatalf("recover every other: %+v %v", got, err)
	}
}
