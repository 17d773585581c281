package host_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/api/client"
	"github.com/vigilhq/vigil/internal/kind"
	"github.com/vigilhq/vigil/internal/natstest"
	"github.com/vigilhq/vigil/internal/observe"
)

// TestAnyNodeServesAnyRequest: two nodes of one cluster, built as serve
// builds them, answer each request made through the other as one host
// would: a watch registered through A is shown, listed and cancelled
// through B, and a second cancel through A is refused with the code B
// gives; the mailbox B reads holds what A's registrations fired, and a
// stream through A resumes after B's cursor; an item recorded through A
// is a duplicate when recorded again through B, and its thread becomes
// Work listed through either node (the router runs on one node, under
// its job lease).
func TestAnyNodeServesAnyRequest(t *testing.T) {
	if testing.Short() {
		t.Skip("two vigil nodes on a JetStream server")
	}
	srv := natstest.Start(t)
	scopes := map[string]observe.Scope{"support": {
		Observe: []observe.Entry{{Sources: []observe.Source{{Name: "help", Reporters: []string{kind.LocalPrincipal}}}}},
		Routes:  []observe.Route{{Source: "help"}},
	}}
	a := startVigilNodeWith(t, "a", []*server.Server{srv}, 1, scopes)
	b := startVigilNodeWith(t, "b", []*server.Server{srv}, 1, scopes)
	natstest.WaitFor(t, settleWithin, "the partitions split between a and b", func() bool {
		ha, hb := a.holds(), b.holds()
		return len(ha)+len(hb) == failoverPartitions && len(ha) > 0 && len(hb) > 0
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*settleWithin) // the test's own bound, not a wait
	defer cancel()
	timer := func(at time.Time) api.WatchRequest {
		return api.WatchRequest{Kind: "timer", Params: json.RawMessage(fmt.Sprintf(`{"at":%q}`, at.UTC().Format(time.RFC3339Nano))),
			Recipient: api.RecipientRef{ID: "agent-1"}}
	}

	// Registration, show, list and cancel, across the nodes.
	w, err := a.cl.CreateWatch(ctx, timer(time.Now().Add(time.Hour)))
	if err != nil {
		t.Fatal(err)
	}
	if got, err := b.cl.GetWatch(ctx, w.ID); err != nil || got.ID != w.ID || got.State != "pending" {
		t.Fatalf("show through b: %+v %v", got, err)
	}
	if l, err := b.cl.ListWatches(ctx, client.WatchQuery{Recipient: "agent-1"}); err != nil || len(l.Watches) != 1 || l.Watches[0].ID != w.ID {
		t.Fatalf("list through b: %+v %v", l, err)
	}
	if c, err := b.cl.CancelWatch(ctx, w.ID); err != nil || c.State != "cancelled" {
		t.Fatalf("cancel through b: %+v %v", c, err)
	}
	_, errA := a.cl.CancelWatch(ctx, w.ID)
	_, errB := b.cl.CancelWatch(ctx, w.ID)
	var ea, eb *api.Error
	if !errors.As(errA, &ea) || !errors.As(errB, &eb) || ea.Code != eb.Code || ea.Code == "" {
		t.Fatalf("a second cancel: through a %v, through b %v; want one error code", errA, errB)
	}
	if _, err := a.cl.GetWatch(ctx, "01m8taen4qtjsph6azp7mm2gwt"); !errors.As(err, &ea) || ea.Code != api.CodeNotFound {
		t.Fatalf("an unknown watch through a: %v, want not_found", err)
	}

	// The mailbox: fired through either node's registrations, read
	// through b, streamed through a from b's cursor.
	due := time.Now().Add(500 * time.Millisecond)
	for _, n := range []*vigilNode{a, b} {
		if _, err := n.cl.CreateWatch(ctx, timer(due)); err != nil {
			t.Fatal(err)
		}
	}
	var msgs []api.Message
	var after uint64
	for len(msgs) < 2 {
		mb, err := b.cl.ReadMailbox(ctx, "agent-1", after, 5*time.Second, 10)
		if err != nil {
			t.Fatal(err)
		}
		msgs, after = append(msgs, mb.Messages...), mb.Next
	}
	if len(msgs) != 2 || msgs[0].Seq != 1 || msgs[1].Seq != 2 || msgs[0].WatchID == msgs[1].WatchID {
		t.Fatalf("the mailbox through b: %+v", msgs)
	}
	sctx, stop := context.WithCancel(ctx)
	var streamed []api.Message
	err = a.cl.StreamMailbox(sctx, "agent-1", msgs[0].Seq, func(m api.Message) error {
		streamed = append(streamed, m)
		stop()
		return nil
	})
	stop()
	if len(streamed) != 1 || streamed[0].Seq != 2 || streamed[0].ID != msgs[1].ID {
		t.Fatalf("the stream through a after seq 1: %+v (%v)", streamed, err)
	}

	// A stream through b resumed with Last-Event-ID, as a browser's
	// EventSource reconnects, from a's cursor.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, b.base+"/api/v1/recipients/agent-1/mailbox/stream", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "text/event-stream")
	req.Header.Set("Last-Event-ID", fmt.Sprint(msgs[0].Seq))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	firstID := ""
	for sc := bufio.NewScanner(resp.Body); firstID == "" && sc.Scan(); {
		firstID, _ = strings.CutPrefix(sc.Text(), "id: ")
		if firstID == sc.Text() {
			firstID = ""
		}
	}
	_ = resp.Body.Close()
	if resp.StatusCode != http.StatusOK || firstID != fmt.Sprint(msgs[1].Seq) {
		t.Fatalf("the stream through b after Last-Event-ID %d: %d, first id %q, want %d", msgs[0].Seq, resp.StatusCode, firstID, msgs[1].Seq)
	}

	// Observe records and Work.
	rec := api.ObserveRequest{Item: "m1", Thread: "t1", Source: "help", Text: "printer on fire"}
	first, err := a.cl.Record(ctx, "support", rec)
	if err != nil || first.Duplicate {
		t.Fatalf("record through a: %+v %v", first, err)
	}
	again, err := b.cl.Record(ctx, "support", rec)
	if err != nil || !again.Duplicate || again.Event.Seq != first.Event.Seq {
		t.Fatalf("the same record through b: %+v %v, want the duplicate of seq %d", again, err, first.Event.Seq)
	}
	natstest.WaitFor(t, settleWithin, "the thread's Work listed through a and b", func() bool {
		la, errA := a.cl.ListWork(ctx, "support", "")
		lb, errB := b.cl.ListWork(ctx, "support", "")
		return errA == nil && errB == nil && len(la.Work) == 1 && len(lb.Work) == 1 && la.Work[0].ID == lb.Work[0].ID
	})
}
