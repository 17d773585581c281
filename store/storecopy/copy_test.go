package storecopy_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
	"github.com/vigilhq/vigil/store/natsstore"
	"github.com/vigilhq/vigil/store/storecopy"
)

var t0 = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

// fixture fills a badger store through its own methods: rows in every
// state, recipients (one with a webhook, a phase, activity and a
// reminder), a mailbox with a pruned gap, live and final pushes, events
// with keys, Work routed and claimed, and a held-aside row.
type fixture struct {
	t   *testing.T
	ctx context.Context
	ids *rand.ChaCha8
	// recipients and streams the observations read.
	recipients []string
	streams    []string
	workIDs    []store.ID
	rowIDs     []store.ID
	held       store.ID
	// exports counts writingDuringCopy's exports.
	exports int
}

func (f *fixture) id(at time.Time) store.ID {
	id, err := store.NewID(at, f.ids)
	if err != nil {
		f.t.Fatal(err)
	}
	return id
}

func must[T any](t *testing.T, v T, err error) T {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// longName is a name whose natsstore token is a hash, not the name.
var longName = "agent-" + strings.Repeat("x", 200)

func fill(t *testing.T, s *store.Store) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{t: t, ctx: ctx, ids: rand.NewChaCha8([32]byte{7})}
	f.recipients = []string{"a", "b", longName}
	f.streams = []string{"observe", "audit/x", longName}
	for _, rid := range f.recipients {
		r := store.RecipientRecord{ID: rid, Status: store.StatusRunning, CreatedAt: t0, UpdatedAt: t0}
		if rid == "a" {
			r.Webhook = &store.Webhook{URL: "https://example.org/hook", Secret: "whsec_x"}
			r.Phase = &store.Phase{Name: "review", Text: "looking"}
			r.ReminderEvery = store.Duration(time.Hour)
		}
		must(t, 0, func() error { _, _, err := s.PutRecipient(ctx, r); return err }())
	}
	watch := func(rid string, at time.Time) store.Watch {
		exp := at.Add(15 * time.Minute)
		w := store.Watch{
			ID: f.id(at), Kind: "timer", Params: json.RawMessage(`{"at":"2026-11-30T13:00:00Z"}`),
			Recipient: store.Recipient{ID: rid}, State: store.Pending, Receipt: store.ReceiptNone,
			Every: store.Duration(time.Minute), CreatedAt: at, ExpiresAt: &exp,
		}
		f.rowIDs = append(f.rowIDs, w.ID)
		return w
	}
	// Pending rows: one plain, one with a durable next check and a probe,
	// one of another kind waiting on a subject.
	for i := range 3 {
		w := watch(f.recipients[i%3], t0.Add(time.Duration(i)*time.Second))
		if i == 2 {
			w.Kind, w.Subject = "work_done", "work/"+longName
		}
		must(t, 0, func() error { return s.CreateIfRunning(ctx, w, 0) }())
		if i == 1 {
			must(t, 0, func() error {
				return s.RecordProbe(ctx, w.ID, store.Probe{Attempts: 3, Note: "still red", NextCheck: t0.Add(5 * time.Minute)})
			}())
		}
	}
	// Registrations under idempotency keys: a short one, and a long
	// principal's long key (their natsstore tokens are hashes).
	for _, k := range [][2]string{{"p", "key-1"}, {longName, strings.Repeat("k", api.MaxIdempotencyKey)}} {
		idem := &store.Idem{Principal: k[0], Key: k[1], Fingerprint: store.FingerprintOf("POST", "/w", []byte(k[1])), At: t0,
			Answer: func(v any) (store.Answer, error) {
				return store.Answer{Status: 201, Location: "/w/1", Body: []byte(`{"id":1}`)}, nil
			}}
		must(t, 0, func() error { return s.CreateIfRunning(store.WithIdem(ctx, idem), watch("a", t0), 0) }())
	}
	// Settled rows: fired and mailed (with pushes), expired, cancelled.
	mail := func(rid string, at time.Time) store.Mailed {
		w := watch(rid, at)
		must(t, 0, func() error { return s.Create(ctx, w) }())
		m := store.Message{ID: f.id(at), Kind: "timer", Type: store.MessageFired, Outcome: store.Outcome{Result: "fired"}, At: at}
		_, mailed, err := s.SettleAndMail(ctx, w.ID, store.Settlement{State: store.Fired, Outcome: &m.Outcome, SettledAt: at, Attempts: 2}, m)
		if err != nil {
			t.Fatal(err)
		}
		return mailed
	}
	// Mailbox a: seq 1..4; seq 2 is the oldest by time and is pruned, a
	// gap in the middle.
	var seqs []uint64
	for i, at := range []time.Time{t0.Add(2 * time.Hour), t0, t0.Add(3 * time.Hour), t0.Add(4 * time.Hour)} {
		mailed := mail("a", at)
		if mailed.Message.Seq != uint64(i+1) {
			t.Fatalf("seq %d, want %d", mailed.Message.Seq, i+1)
		}
		seqs = append(seqs, mailed.Message.Seq)
	}
	mail(longName, t0.Add(time.Hour))
	if n, err := s.PruneOldest(ctx, store.RetainedMessages, t0.Add(time.Minute), 10); err != nil || n != 1 {
		t.Fatalf("prune: %d %v", n, err)
	}
	// Pushes: seq 1 delivered (final), seq 3 sending, 4 pending.
	p, _, _, err := s.BeginPush(ctx, "a", seqs[0], t0)
	if err != nil {
		t.Fatal(err)
	}
	p.State, p.UpdatedAt = store.PushDelivered, t0.Add(time.Second)
	must(t, 0, func() error { return s.FinishPush(ctx, p) }())
	must(t, 0, func() error { _, _, _, err := s.BeginPush(ctx, "a", seqs[2], t0); return err }())
	// A message without a watch.
	must(t, 0, func() error {
		_, _, err := s.AppendIfRunning(ctx, "b", store.Message{ID: f.id(t0), Kind: "note", Type: store.MessageFired, At: t0})
		return err
	}())
	exp := watch("b", t0)
	must(t, 0, func() error { return s.Create(ctx, exp) }())
	must(t, 0, func() error {
		_, err := s.Settle(ctx, exp.ID, store.Settlement{State: store.Expired, Receipt: store.ReceiptNone, SettledAt: t0.Add(time.Minute)})
		return err
	}())
	can := watch("b", t0)
	must(t, 0, func() error { return s.Create(ctx, can) }())
	must(t, 0, func() error {
		_, err := s.Settle(ctx, can.ID, store.Settlement{State: store.Cancelled, Receipt: store.ReceiptNone, SettledAt: t0.Add(2 * time.Minute)})
		return err
	}())
	// Events with keys, a long stream name and a long key.
	for i, stream := range []string{"observe", "observe", "audit/x", longName, "observe"} {
		key := fmt.Sprint(i)
		if i == 3 {
			key = longName
		}
		_, _, err := s.AppendEvent(ctx, store.Event{Stream: stream, Key: key, Type: "t", OccurredAt: t0, Payload: []byte(`{"n":1}`)})
		if err != nil {
			t.Fatal(err)
		}
	}
	// Work: two threads routed, one claimed.
	for seq, thread := range []string{"T1", "T2", "T1"} {
		id := f.id(t0)
		res, err := s.RouteBatch(ctx, []store.RouteStep{{
			Cursor: "observe", Seq: uint64(seq + 1), ThreadKey: "observe/s/src/" + thread, OwnerKind: "observe.thread",
			New:   store.Work{ID: id, Scope: "s", Kind: "observe.thread", Title: "t-" + thread, CreatedAt: t0},
			Input: store.WorkInput{EventSeq: uint64(seq + 1), Source: "src", Item: fmt.Sprint(seq), Thread: thread, Text: "x", RecordedAt: t0},
		}})
		if err != nil {
			t.Fatal(err)
		}
		if res[0].Action == store.RouteCreated {
			f.workIDs = append(f.workIDs, res[0].Work.ID)
		}
	}
	must(t, 0, func() error { _, err := s.ClaimWork(ctx, f.workIDs[0], "agent-1", t0.Add(time.Minute)); return err }())
	// A held-aside row: what a newer release would write, as records.
	f.held = f.id(t0)
	row := []byte(`{"v":2,"id":"` + f.held.String() + `","kind":"phase_nudge","state":"snoozed","recipient":{"id":"a"}}`)
	must(t, 0, func() error {
		return s.ImportRecords(ctx, []store.KeyValue{
			{Key: store.Key{Fam: store.FamRow, ID: f.held}, Value: row},
			{Key: store.Key{Fam: store.FamState, Sub: "snoozed", ID: f.held}},
			{Key: store.Key{Fam: store.FamRecipientIndex, Name: "a", ID: f.held}},
		})
	}())
	return f
}

// backend is what the observations read, on either store.
type backend interface {
	storecopy.Destination
	Get(ctx context.Context, id store.ID) (store.Watch, error)
	List(ctx context.Context, f store.Filter) ([]store.Watch, int, error)
	ForEachPending(ctx context.Context, fn func(store.Schedule) error) (int, error)
	CountPendingByKind(ctx context.Context) (map[string]int, error)
	PendingBySubject(ctx context.Context, subject string) ([]store.ID, error)
	ListRecipients(ctx context.Context) ([]store.RecipientRecord, error)
	ReadMailbox(ctx context.Context, rid string, after uint64, limit int) ([]store.Message, error)
	LivePushes(ctx context.Context, fn func(store.Push) error) error
	ReadEvents(ctx context.Context, stream string, after uint64, limit int) ([]store.Event, error)
	EventByKey(ctx context.Context, stream, key string) (store.Event, error)
	GetWork(ctx context.Context, id store.ID) (store.Work, error)
	WorkInputs(ctx context.Context, id store.ID, after int) ([]store.WorkInput, error)
	ListWork(ctx context.Context, scope string, st store.WorkState) ([]store.Work, error)
	RouterCursor(ctx context.Context, name string) (uint64, error)
	CountPending(ctx context.Context, recipient string, upTo int) (int, error)
	Oldest(ctx context.Context, c store.Retained) (time.Time, bool, error)
	PruneOldest(ctx context.Context, c store.Retained, cutoff time.Time, limit int) (int, error)
	AppendIfRunning(ctx context.Context, rid string, m store.Message) (store.Message, store.RecipientRecord, error)
	AppendEvent(ctx context.Context, e store.Event) (store.Event, bool, error)
	GetIdem(ctx context.Context, principal, key string) (store.IdemRecord, error)
	Close() error
}

// observe is every answer a recipient or operator can get, as text.
func observe(t *testing.T, f *fixture, b backend) map[string]any {
	t.Helper()
	ctx := f.ctx
	o := map[string]any{}
	for _, id := range append(slices.Clone(f.rowIDs), f.held) {
		w, err := b.Get(ctx, id)
		if err != nil && strings.Contains(err.Error(), "held aside") {
			o["get "+id.String()] = "held aside"
			continue
		}
		o["get "+id.String()] = js(w, err)
	}
	ws, n, err := b.List(ctx, store.Filter{})
	o["list"] = js(ws, n, err)
	var sch []store.Schedule
	_, err = b.ForEachPending(ctx, func(s store.Schedule) error { sch = append(sch, s); return nil })
	slices.SortFunc(sch, func(a, b store.Schedule) int { return bytes.Compare(a.ID[:], b.ID[:]) })
	o["pending"] = js(sch, err)
	kinds, err := b.CountPendingByKind(ctx)
	o["kinds"] = js(kinds, err)
	subj, err := b.PendingBySubject(ctx, "work/"+longName)
	o["subject"] = js(subj, err)
	recs, err := b.ListRecipients(ctx)
	o["recipients"] = js(recs, err)
	for _, rid := range f.recipients {
		ms, err := b.ReadMailbox(ctx, rid, 0, 100)
		o["mailbox "+rid] = js(ms, err)
		n, err := b.CountPending(ctx, rid, 100)
		o["pending of "+rid] = js(n, err)
	}
	for _, k := range [][2]string{{"p", "key-1"}, {longName, strings.Repeat("k", api.MaxIdempotencyKey)}} {
		r, err := b.GetIdem(ctx, k[0], k[1])
		o["idempotency key "+k[1]] = js(r, err)
	}
	for _, c := range []store.Retained{store.RetainedSettled, store.RetainedMessages, store.RetainedPushes, store.RetainedIdem} {
		at, ok, err := b.Oldest(ctx, c)
		o["oldest "+string(c)] = js(at, ok, err)
	}
	var live []store.Push
	err = b.LivePushes(ctx, func(p store.Push) error { live = append(live, p); return nil })
	o["live"] = js(live, err)
	for _, st := range f.streams {
		evs, err := b.ReadEvents(ctx, st, 0, 100)
		o["events "+st] = js(evs, err)
	}
	ev, err := b.EventByKey(ctx, longName, longName)
	o["event by key"] = js(ev, err)
	for _, id := range f.workIDs {
		w, err := b.GetWork(ctx, id)
		in, err2 := b.WorkInputs(ctx, id, 0)
		o["work "+id.String()] = js(w, err, in, err2)
	}
	lw, err := b.ListWork(ctx, "s", store.WorkOpen)
	o["list work"] = js(lw, err)
	cur, err := b.RouterCursor(ctx, "observe")
	o["cursor"] = js(cur, err)
	return o
}

// js is vs as JSON (an error as its text), so pointers compare by what
// they point to.
func js(vs ...any) string {
	var b strings.Builder
	for _, v := range vs {
		if err, ok := v.(error); ok {
			v = err.Error()
		}
		j, err := json.Marshal(v)
		if err != nil {
			j = []byte(err.Error())
		}
		b.Write(j)
		b.WriteByte(' ')
	}
	return b.String()
}

// continues checks that appends carry on where the source left off.
func continues(t *testing.T, f *fixture, b backend, mailSeq, eventSeq uint64) {
	t.Helper()
	m, _, err := b.AppendIfRunning(f.ctx, "a", store.Message{ID: f.id(t0), Kind: "note", Type: store.MessageFired, At: t0})
	if err != nil || m.Seq != mailSeq {
		t.Fatalf("the next message: seq %d %v, want %d", m.Seq, err, mailSeq)
	}
	e, dup, err := b.AppendEvent(f.ctx, store.Event{Stream: "observe", Key: "next", Type: "t", OccurredAt: t0, Payload: []byte(`{}`)})
	if err != nil || dup || e.Seq != eventSeq {
		t.Fatalf("the next event: seq %d dup=%v %v, want %d", e.Seq, dup, err, eventSeq)
	}
	if _, dup, _ := b.AppendEvent(f.ctx, store.Event{Stream: "observe", Key: "0", Type: "t", OccurredAt: t0, Payload: []byte(`{"n":1}`)}); !dup {
		t.Fatal("an idempotency key the source held is not known to the copy")
	}
}

func openBadger(t *testing.T, dir string) *store.Store {
	t.Helper()
	s, err := badger.OpenStore(dir, badger.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func openNATS(t *testing.T, url, bucket string) *store.Store {
	t.Helper()
	s, err := natsstore.OpenStore(context.Background(), natsstore.Config{URLs: []string{url}, Bucket: bucket})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func diff(t *testing.T, what string, want, got map[string]any) {
	t.Helper()
	for k, w := range want {
		if !reflect.DeepEqual(w, got[k]) {
			t.Errorf("%s: %s:\n source %.600v\n copy   %.600v", what, k, w, got[k])
		}
	}
}

// A badger store copied into JetStream and back answers every read as
// the source did, and its seqs continue where the source's stopped.
func TestCopyRoundTrip(t *testing.T) {
	ctx := context.Background()
	srcDir := t.TempDir()
	src := openBadger(t, srcDir)
	f := fill(t, src)
	want := observe(t, f, src)
	for k, v := range want {
		if strings.HasPrefix(k, "idempotency key") && strings.Contains(v.(string), "not found") {
			t.Fatalf("the source: %s: %s", k, v)
		}
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	src = openBadger(t, srcDir)
	srv := natstest.Start(t)
	dst := openNATS(t, srv.ClientURL(), "copy")
	var progress bytes.Buffer
	sum, err := storecopy.Copy(ctx, src, dst, storecopy.Options{Batch: 7, Progress: &progress})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Copied[store.FamRow] != len(f.rowIDs)+1 || sum.Copied[store.FamMessage] != 5 {
		t.Fatalf("copied %v", sum.Copied)
	}
	if !strings.Contains(progress.String(), fmt.Sprintf("/%d records", sum.Copied.Total())) {
		t.Fatalf("progress:\n%s", progress.String())
	}
	diff(t, "dir→nats", want, observe(t, f, dst))

	back := t.TempDir()
	bs := openBadger(t, back)
	if _, err := storecopy.Copy(ctx, dst, bs, storecopy.Options{Batch: 5}); err != nil {
		t.Fatal(err)
	}
	if err := bs.Close(); err != nil {
		t.Fatal(err)
	}
	bs = openBadger(t, back)
	defer bs.Close()
	diff(t, "nats→dir", want, observe(t, f, bs))
	// Each copy continues the source's seqs: mailbox a is at 4, stream
	// observe at 3.
	continues(t, f, bs, 5, 4)
	continues(t, f, dst, 5, 4)
	// Retention finds the copied records by their time indexes: the
	// messages before t0+90m (a's seq 5 and b's note, at t0, and the long
	// recipient's, at t0+1h) go, on each.
	for name, b := range map[string]backend{"nats": dst, "dir": bs} {
		if n, err := b.PruneOldest(ctx, store.RetainedMessages, t0.Add(90*time.Minute), 10); err != nil || n != 3 {
			t.Fatalf("%s: pruning the messages before t0+90m: %d %v, want 3", name, n, err)
		}
		if ms, _ := b.ReadMailbox(ctx, longName, 0, 10); len(ms) != 0 {
			t.Fatalf("%s: %s's message at t0+1h outlived the prune: %+v", name, longName, ms)
		}
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
}

// A destination holding anything is refused, naming what it holds, and
// nothing is written; Resume copies into it.
func TestCopyRefusesNonEmptyDestination(t *testing.T) {
	ctx := context.Background()
	src := openBadger(t, t.TempDir())
	defer src.Close()
	fill(t, src)
	dst := openBadger(t, t.TempDir())
	defer dst.Close()
	if _, _, err := dst.PutRecipient(ctx, store.RecipientRecord{ID: "z", Status: store.StatusRunning, CreatedAt: t0, UpdatedAt: t0}); err != nil {
		t.Fatal(err)
	}
	_, err := storecopy.Copy(ctx, src, dst, storecopy.Options{})
	var ne *storecopy.NotEmptyError
	if !errors.As(err, &ne) || !errors.Is(err, storecopy.ErrNotEmpty) || ne.Holds[store.FamRecipient] != 1 || !strings.Contains(err.Error(), "recipients 1") {
		t.Fatalf("copy into a non-empty store: %v", err)
	}
	if recs, _ := dst.ListRecipients(ctx); len(recs) != 1 {
		t.Fatalf("a refused copy wrote %d recipients", len(recs))
	}
	// Resume: the extra recipient is not the source's, and the check
	// says so.
	_, err = storecopy.Copy(ctx, src, dst, storecopy.Options{Resume: true})
	var ve *storecopy.VerifyError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "recipients: source 3, destination 4") {
		t.Fatalf("resume into a store with a record of its own: %v", err)
	}
}

// A copy stopped half-way is finished by running it again with Resume.
func TestCopyResumes(t *testing.T) {
	ctx := context.Background()
	src := openBadger(t, t.TempDir())
	defer src.Close()
	f := fill(t, src)
	want := observe(t, f, src)
	dst := openBadger(t, t.TempDir())
	defer dst.Close()
	stop := errors.New("stopped")
	_, err := storecopy.Copy(ctx, src, failingAfter{dst, new(int), 2, stop}, storecopy.Options{Batch: 4})
	if !errors.Is(err, stop) {
		t.Fatalf("the interrupted copy: %v", err)
	}
	if _, err := storecopy.Copy(ctx, src, dst, storecopy.Options{}); !errors.Is(err, storecopy.ErrNotEmpty) {
		t.Fatalf("a second copy without Resume: %v", err)
	}
	if _, err := storecopy.Copy(ctx, src, dst, storecopy.Options{Resume: true}); err != nil {
		t.Fatal(err)
	}
	diff(t, "resumed", want, observe(t, f, dst))
}

// failingAfter imports n batches, then fails.
type failingAfter struct {
	*store.Store
	done *int
	n    int
	err  error
}

func (f failingAfter) ImportRecords(ctx context.Context, recs []store.KeyValue) error {
	if *f.done >= f.n {
		return f.err
	}
	*f.done++
	return f.Store.ImportRecords(ctx, recs)
}

// The verification catches a destination that did not keep a record.
func TestCopyVerifies(t *testing.T) {
	ctx := context.Background()
	src := openBadger(t, t.TempDir())
	defer src.Close()
	fill(t, src)
	dst := openBadger(t, t.TempDir())
	defer dst.Close()
	_, err := storecopy.Copy(ctx, src, droppingValues{dst}, storecopy.Options{})
	var ve *storecopy.VerifyError
	if !errors.As(err, &ve) || !strings.Contains(err.Error(), "mailbox_messages: 5 records each, not the same ones") {
		t.Fatalf("a copy that changed values: %v", err)
	}
}

// droppingValues writes every mailbox message with its value cut short.
type droppingValues struct{ *store.Store }

func (d droppingValues) ImportRecords(ctx context.Context, recs []store.KeyValue) error {
	out := slices.Clone(recs)
	for i, r := range out {
		if r.Key.Fam == store.FamMessage {
			out[i].Value = r.Value[:len(r.Value)-1]
		}
	}
	return d.Store.ImportRecords(ctx, out)
}

// A source written while it is copied (a host serving it) fails the
// copy: the second read of the source differs from what was copied.
func TestCopyRefusesASourceThatChanged(t *testing.T) {
	ctx := context.Background()
	src := openBadger(t, t.TempDir())
	defer src.Close()
	f := fill(t, src)
	dst := openBadger(t, t.TempDir())
	defer dst.Close()
	_, err := storecopy.Copy(ctx, writingDuringCopy{src, f}, dst, storecopy.Options{})
	var sc *storecopy.SourceChangedError
	if !errors.As(err, &sc) || !errors.Is(err, storecopy.ErrSourceChanged) || !strings.Contains(err.Error(), "mailbox_messages: copied 5, now 6") {
		t.Fatalf("a copy of a source written meanwhile: %v", err)
	}
}

// writingDuringCopy appends a message to the source once its second
// export (the copy's own pass) has finished.
type writingDuringCopy struct {
	*store.Store
	f *fixture
}

func (w writingDuringCopy) ExportRecords(ctx context.Context, fn func(store.KeyValue) error) error {
	if err := w.Store.ExportRecords(ctx, fn); err != nil {
		return err
	}
	w.f.exports++
	if w.f.exports == 2 {
		_, _, err := w.AppendIfRunning(ctx, "b", store.Message{ID: w.f.id(t0), Kind: "note", Type: store.MessageFired, At: t0})
		return err
	}
	return nil
}

// A source holding nothing is refused: a wrong directory or bucket.
func TestCopyRefusesAnEmptySource(t *testing.T) {
	src := openBadger(t, t.TempDir())
	defer src.Close()
	dst := openBadger(t, t.TempDir())
	defer dst.Close()
	if _, err := storecopy.Copy(context.Background(), src, dst, storecopy.Options{}); !errors.Is(err, storecopy.ErrSourceEmpty) {
		t.Fatalf("a copy of an empty store: %v", err)
	}
}
