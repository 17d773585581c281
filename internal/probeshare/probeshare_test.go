package probeshare

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"

	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/scheduler"
	"github.com/vigilhq/vigil/store"
)

// fakeSeer holds a fixed Seen per watch.
type fakeSeer map[store.ID]scheduler.Seen

func (f fakeSeer) Seen(id store.ID) (scheduler.Seen, bool) {
	v, ok := f[id]
	return v, ok
}

// heard records the watches a share was told another node changed, and
// signals each.
type heard struct {
	mu  sync.Mutex
	ids []store.ID
	ch  chan store.ID
}

func newHeard() *heard { return &heard{ch: make(chan store.ID, 64)} }

func (h *heard) changed(id store.ID) {
	h.mu.Lock()
	h.ids = append(h.ids, id)
	h.mu.Unlock()
	h.ch <- id
}

func (h *heard) all() []store.ID {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]store.ID(nil), h.ids...)
}

// next waits for the next watch heard of; the test fails after a while.
func (h *heard) next(t *testing.T) store.ID {
	t.Helper()
	select {
	case id := <-h.ch:
		return id
	case <-time.After(30 * time.Second):
		t.Fatal("no change heard of")
		return store.ID{}
	}
}

func wid(b byte) store.ID { return store.ID{15: b} }

// start runs a share for node in namespace ns on nc until the test ends.
func start(t *testing.T, nc *nats.Conn, ns, node string, seer Seer, h *heard, timeout time.Duration) *Share {
	t.Helper()
	s, err := Listen(Config{Conn: nc, Namespace: ns, Node: node, Seen: seer, Changed: h.changed, Timeout: timeout})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	// The subscriptions are in place once the server has them.
	if err := nc.Flush(); err != nil {
		t.Fatal(err)
	}
	return s
}

func conn(t *testing.T, srv *server.Server) *nats.Conn {
	t.Helper()
	nc, _ := natstest.Connect(t, srv)
	return nc
}

// A node asked for watches answers what its scheduler holds of each, and
// nothing of the ones it does not hold.
func TestAskAnswersWhatTheOwnerHolds(t *testing.T) {
	srv := natstest.Start(t)
	at := time.Date(2026, 12, 2, 1, 2, 3, 456_000_000, time.UTC)
	a := start(t, conn(t, srv), "vigil", "a", fakeSeer{}, newHeard(), 0)
	start(t, conn(t, srv), "vigil", "b", fakeSeer{wid(1): {Attempts: 7, LastProbe: at}, wid(2): {Attempts: 1}}, newHeard(), 0)
	got, err := a.Ask(context.Background(), "b", []store.ID{wid(1), wid(2), wid(3)})
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[wid(1)] != (scheduler.Seen{Attempts: 7, LastProbe: at}) || got[wid(2)] != (scheduler.Seen{Attempts: 1}) {
		t.Fatalf("b answered %+v", got)
	}
}

// A node that stopped answering (its share closed) is no answer at once:
// no responder, no wait for the bound.
func TestAskAStoppedNodeIsNoAnswer(t *testing.T) {
	srv := natstest.Start(t)
	a := start(t, conn(t, srv), "vigil", "a", fakeSeer{}, newHeard(), time.Hour)
	b := start(t, conn(t, srv), "vigil", "b", fakeSeer{wid(1): {Attempts: 2}}, newHeard(), 0)
	subs := srv.NumSubscriptions()
	b.Close()
	if n := srv.NumSubscriptions(); n != subs-2 {
		t.Fatalf("the server holds %d subscriptions once b closed, want %d", n, subs-2)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := a.Ask(ctx, "b", []store.ID{wid(1)})
	if !errors.Is(err, ErrNoAnswer) || !errors.Is(err, nats.ErrNoResponders) {
		t.Fatalf("asking a stopped node: %v, want ErrNoAnswer for no responders", err)
	}
}

// A node that hears the request and never answers costs the asker its
// bound, not the caller's whole context.
func TestAskIsBoundedWhenTheOwnerHangs(t *testing.T) {
	srv := natstest.Start(t)
	a := start(t, conn(t, srv), "vigil", "a", fakeSeer{}, newHeard(), 100*time.Millisecond)
	hung := conn(t, srv)
	sub, err := hung.SubscribeSync("vigil.vigil.seen.b")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := hung.Flush(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err = a.Ask(ctx, "b", []store.ID{wid(1)})
	if !errors.Is(err, ErrNoAnswer) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("asking a node that hangs: %v, want ErrNoAnswer at the deadline", err)
	}
	if ctx.Err() != nil {
		t.Fatal("the ask waited out the caller's context, not its own bound")
	}
}

// A change a node publishes reaches every other node's waiters; the node
// itself skips its own (its scheduler woke its waiters already).
func TestChangesReachTheOtherNodesNotTheSender(t *testing.T) {
	srv := natstest.Start(t)
	ha, hb := newHeard(), newHeard()
	a := start(t, conn(t, srv), "vigil", "a", fakeSeer{}, ha, 0)
	b := start(t, conn(t, srv), "vigil", "b", fakeSeer{}, hb, 0)
	a.Publish(wid(1))
	if id := hb.next(t); id != wid(1) {
		t.Fatalf("b heard of %s, want %s", id, wid(1))
	}
	// a's own message reached a's connection before b's, which b sent
	// only after hearing a's.
	b.Publish(wid(2))
	if id := ha.next(t); id != wid(2) {
		t.Fatalf("a heard of %s first, want b's %s (a heard its own change)", id, wid(2))
	}
	if got := ha.all(); len(got) != 1 {
		t.Fatalf("a heard of %v", got)
	}
}

// An event's poke reaches every other node, not the sender; a node
// without Poked subscribes to none.
func TestPokesReachTheOtherNodesNotTheSender(t *testing.T) {
	srv := natstest.Start(t)
	type got struct {
		kind string
		keys []string
	}
	pa, pb := make(chan got, 4), make(chan got, 4)
	startPoked := func(node string, ch chan got) *Share {
		nc := conn(t, srv)
		s, err := Listen(Config{Conn: nc, Namespace: "vigil", Node: node, Seen: fakeSeer{}, Changed: func(store.ID) {},
			Poked: func(kind string, keys []string) { ch <- got{kind, keys} }})
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); s.Run(ctx) }()
		t.Cleanup(func() { cancel(); <-done })
		if err := nc.Flush(); err != nil {
			t.Fatal(err)
		}
		return s
	}
	a, b := startPoked("a", pa), startPoked("b", pb)
	a.PublishPoke("ci", []string{"https://forge/repos/o/r/commits/abc"})
	select {
	case g := <-pb:
		if g.kind != "ci" || len(g.keys) != 1 || g.keys[0] != "https://forge/repos/o/r/commits/abc" {
			t.Fatalf("b was poked with %+v", g)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("b heard of no poke")
	}
	b.PublishPoke("ticket", []string{"k"})
	select {
	case g := <-pa:
		if g.kind != "ticket" {
			t.Fatalf("a heard %+v first, want b's (a heard its own poke)", g)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("a heard of no poke")
	}
	if len(pa) != 0 || len(pb) != 0 {
		t.Fatalf("a node heard its own poke: a %d, b %d left", len(pa), len(pb))
	}
}

// Two clusters on one server (two buckets) never hear each other: a
// request reaches the node of its own namespace, a change only its own
// namespace's nodes.
func TestNamespacesDoNotCross(t *testing.T) {
	srv := natstest.Start(t)
	hx, hy := newHeard(), newHeard()
	ax := start(t, conn(t, srv), "x", "a", fakeSeer{}, hx, 0)
	start(t, conn(t, srv), "y", "a", fakeSeer{}, hy, 0)
	// Node b of each namespace, on one connection, so the server handles
	// their publishes in order.
	shared := conn(t, srv)
	bx := start(t, shared, "x", "b", fakeSeer{wid(1): {Attempts: 1}}, newHeard(), 0)
	by := start(t, shared, "y", "b", fakeSeer{wid(1): {Attempts: 99}}, newHeard(), 0)
	for range 20 {
		got, err := ax.Ask(context.Background(), "b", []store.ID{wid(1)})
		if err != nil {
			t.Fatal(err)
		}
		if got[wid(1)].Attempts != 1 {
			t.Fatalf("x's a asked b and got %+v, y's b's answer", got)
		}
	}
	by.Publish(wid(9))
	bx.Publish(wid(1))
	if id := hx.next(t); id != wid(1) {
		t.Fatalf("x's a heard of %s first: y's change", id)
	}
	if id := hy.next(t); id != wid(9) {
		t.Fatalf("y's a heard of %s first", id)
	}
}

// A malformed request is answered with its named error code, never
// guessed at; the asker reads that back as a refusal.
func TestAMalformedRequestIsAnsweredWithItsCode(t *testing.T) {
	srv := natstest.Start(t)
	start(t, conn(t, srv), "vigil", "b", fakeSeer{}, newHeard(), 0)
	nc := conn(t, srv)
	for _, tc := range []struct{ body, code string }{
		{`{"ids":`, CodeMalformed},
		{`{"ids":["nope"]}`, CodeBadID},
		{`{"ids":[],"extra":1}`, CodeMalformed},
	} {
		m, err := nc.Request("vigil.vigil.seen.b", []byte(tc.body), 10*time.Second)
		if err != nil {
			t.Fatal(err)
		}
		_, err = parseReply(m.Data)
		var re *RequestError
		if !errors.As(err, &re) || re.Code != tc.code || !errors.Is(err, ErrBadRequest) {
			t.Fatalf("%s answered %s: %v, want code %s", tc.body, m.Data, err, tc.code)
		}
	}
}

// Listen refuses a subject token that is not a name: a dot or a wildcard
// would reach other nodes' subjects.
func TestListenRefusesNamesThatAreNotTokens(t *testing.T) {
	srv := natstest.Start(t)
	nc := conn(t, srv)
	for _, c := range []struct{ ns, node string }{{"a.b", "n"}, {"ns", "*"}, {"", "n"}, {"ns", "a>"}} {
		if _, err := Listen(Config{Conn: nc, Namespace: c.ns, Node: c.node, Seen: fakeSeer{}, Changed: func(store.ID) {}}); err == nil {
			t.Fatalf("Listen took namespace %q node %q", c.ns, c.node)
		}
	}
	a := start(t, nc, "ns", "a", fakeSeer{}, newHeard(), 0)
	if _, err := a.Ask(context.Background(), "b.c", []store.ID{wid(1)}); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("asking node b.c: %v", err)
	}
	many := make([]store.ID, MaxIDs+1)
	if _, err := a.Ask(context.Background(), "b", many); !errors.Is(err, ErrBadRequest) {
		t.Fatalf("asking for %d ids: %v", len(many), err)
	}
}

func TestParseRequestBounds(t *testing.T) {
	ids := make([]string, MaxIDs+1)
	for i := range ids {
		ids[i] = wid(byte(i)).String()
	}
	tooMany, _ := json.Marshal(request{IDs: ids})
	tooLarge := append([]byte(`{"ids":[]`), make([]byte, MaxRequestBytes)...)
	for name, tc := range map[string]struct {
		body []byte
		code string
	}{
		"too many ids": {tooMany, CodeTooManyIDs},
		"too large":    {tooLarge, CodeTooLarge},
		"trailing":     {[]byte(`{"ids":[]} {}`), CodeMalformed},
		"bad id":       {[]byte(`{"ids":["` + wid(1).String() + `","x"]}`), CodeBadID},
	} {
		_, err := parseRequest(tc.body)
		var re *RequestError
		if !errors.As(err, &re) || re.Code != tc.code {
			t.Errorf("%s: %v, want code %s", name, err, tc.code)
		}
	}
	got, err := parseRequest(encodeRequest([]store.ID{wid(1), wid(2)}))
	if err != nil || len(got) != 2 || got[0] != wid(1) || got[1] != wid(2) {
		t.Fatalf("a good request: %v %v", got, err)
	}
}

func TestParseReplyRefuses(t *testing.T) {
	full := map[store.ID]scheduler.Seen{}
	for i := range MaxIDs + 1 {
		full[store.ID{14: byte(i >> 8), 15: byte(i)}] = scheduler.Seen{Attempts: 1}
	}
	for name, body := range map[string]string{
		"too many":          string(encodeReply(full)),
		"malformed":         `{"seen":`,
		"bad id":            `{"seen":[{"id":"x","attempts":1}]}`,
		"negative attempts": `{"seen":[{"id":"` + wid(1).String() + `","attempts":-1}]}`,
		"too large":         `{"seen":[]}` + strings.Repeat(" ", MaxReplyBytes),
	} {
		if _, err := parseReply([]byte(body)); err == nil {
			t.Errorf("%s: parsed", name)
		}
	}
}
