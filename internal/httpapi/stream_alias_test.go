package httpapi

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/apitest"
)

// A stream outlives its request. The recipient id it reads must be its
// own copy, not a view of a request buffer that later requests reuse: with
// views, agent-1's stream was seen delivering another recipient's mail.
func TestStreamReadsItsOwnRecipient(t *testing.T) {
	f := newFixture(t)
	base := apitest.Serve(t, f.app)
	_, _ = f.do(t, "PUT", "/api/v1/recipients/agent-1", `{"status":"running"}`)
	_, _ = f.do(t, "PUT", "/api/v1/recipients/zzzzzzz", `{"status":"running"}`)
	resp, err := http.Get(base + "/api/v1/recipients/agent-1/mailbox/stream")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	// Requests over the network that reuse the server's buffers.
	for range 20 {
		if r, err := http.Get(base + "/api/v1/recipients/zzzzzzz/mailbox"); err == nil {
			r.Body.Close()
		}
	}
	// Mail for zzzzzzz only: agent-1's stream must show nothing. Nothing
	// can arrive while the code is right, so this wait only ever times out
	// then; with the old views, zzzzzzz's message came within a poll.
	_, _ = f.do(t, "POST", "/api/v1/watches", `{"kind":"ci","params":{},"recipient":{"id":"zzzzzzz"}}`)
	f.sched.Tick(context.Background(), t0)
	got := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
				got <- data
				return
			}
		}
	}()
	select {
	case d := <-got:
		t.Fatalf("agent-1's stream delivered another recipient's message: %s", d)
	case <-time.After(500 * time.Millisecond):
	}
}
