package httpapi

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/gofiber/fiber/v2"
	"pgregory.net/rapid"

	"github.com/vigilhq/vigil/internal/apitest"
)

// bridgeOp is one step of a net/http handler behind serveMCP.
type bridgeOp struct {
	Write string `json:"write,omitempty"`
	Flush bool   `json:"flush,omitempty"`
}

// bridgeApp serves at /bridge a net/http handler, through serveMCP, that
// sets the status and a header and then does the ops its request body
// lists; at /wait one that flushes a first event and waits for the
// request's context to end, then records that it ended.
func bridgeApp(t *testing.T, ended chan<- struct{}) string {
	t.Helper()
	base, stop := context.WithCancel(context.Background())
	s := &server{d: Deps{Base: base}, o: Options{StreamWait: 20 * time.Millisecond}}
	app := fiber.New(fiber.Config{DisableStartupMessage: true})
	ops := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var steps []bridgeOp
		if err := json.NewDecoder(r.Body).Decode(&steps); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("X-Steps", "yes")
		w.WriteHeader(http.StatusAccepted)
		for _, op := range steps {
			if op.Write != "" {
				_, _ = io.WriteString(w, op.Write)
			}
			if op.Flush {
				w.(http.Flusher).Flush()
			}
		}
	})
	wait := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "event: message\ndata: first\n\n")
		w.(http.Flusher).Flush()
		<-r.Context().Done()
		ended <- struct{}{}
	})
	app.Post("/bridge", s.serveMCP(func(*fiber.Ctx) http.Handler { return ops }))
	app.Get("/wait", s.serveMCP(func(*fiber.Ctx) http.Handler { return wait }))
	url := apitest.Serve(t, app)
	t.Cleanup(stop)
	return url
}

// Whatever a handler writes and flushes, in whatever steps, the client
// reads the same bytes in the same order, with the handler's status and
// header, streamed or not.
func TestMCPBridgeKeepsEveryByteInOrder(t *testing.T) {
	url := bridgeApp(t, make(chan struct{}, 1))
	tr := &http.Transport{DisableKeepAlives: true}
	t.Cleanup(tr.CloseIdleConnections)
	rapid.Check(t, func(rt *rapid.T) {
		steps := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) bridgeOp {
			return bridgeOp{Write: rapid.StringMatching(`[a-z\n]{0,40}`).Draw(rt, "write"), Flush: rapid.Bool().Draw(rt, "flush")}
		}), 0, 12).Draw(rt, "steps")
		var want strings.Builder
		for _, op := range steps {
			want.WriteString(op.Write)
		}
		body, _ := json.Marshal(steps)
		req, _ := http.NewRequest(http.MethodPost, url+"/bridge", bytes.NewReader(body))
		resp, err := tr.RoundTrip(req)
		if err != nil {
			rt.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		if err != nil {
			rt.Fatal(err)
		}
		if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-Steps") != "yes" || string(got) != want.String() {
			rt.Fatalf("%s: got %d %q %q, want 202 yes %q", body, resp.StatusCode, resp.Header.Get("X-Steps"), got, want.String())
		}
	})
}

// A stream's first event reaches the client while the handler still
// runs, and a client that goes away ends the handler's context: the
// keep-alive write notices it.
func TestMCPBridgeStreamsAndNoticesTheClientGone(t *testing.T) {
	ended := make(chan struct{}, 1)
	url := bridgeApp(t, ended)
	tr := &http.Transport{DisableKeepAlives: true}
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodGet, url+"/wait", nil)
	resp, err := tr.RoundTrip(req)
	if err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || line != "event: message\n" {
		t.Fatalf("the stream's first line: %q, %v", line, err)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Errorf("content type %q", ct)
	}
	cancel()
	_ = resp.Body.Close()
	select {
	case <-ended:
	case <-time.After(30 * time.Second): // a bound on noticing, not a pause
		t.Fatal("the handler's context did not end after its client went away")
	}
}

// The writer alone, with serveMCP's read of the head at any point after
// the commit (it runs beside the handler, which writes on): the start of
// the body is what was written up to the commit, the chunks the rest in
// order, whenever the head was read.
func TestMCPBridgeWriterSplitsAtTheCommit(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		steps := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) bridgeOp {
			return bridgeOp{Write: rapid.StringMatching(`[a-z]{0,8}`).Draw(rt, "write"), Flush: rapid.Bool().Draw(rt, "flush")}
		}), 0, 12).Draw(rt, "steps") // fewer flushes than chunks holds: nothing blocks
		at := rapid.IntRange(0, len(steps)).Draw(rt, "head read after step")
		w := newBridgeWriter()
		var (
			want, got strings.Builder
			read      bool
			streaming bool
		)
		readHead := func() {
			_, _, body, s := w.head()
			got.Write(body)
			read, streaming = true, s
		}
		for i, op := range steps {
			_, _ = io.WriteString(w, op.Write)
			want.WriteString(op.Write)
			if op.Flush {
				w.Flush()
			}
			if !read && i+1 >= at && isClosed(w.committed) {
				readHead()
			}
		}
		w.finish()
		close(w.done)
		if !read {
			readHead()
		}
		for c := range w.chunks {
			got.Write(c)
		}
		if got.String() != want.String() || streaming != isClosed(w.committed) {
			rt.Fatalf("got %q (streaming %v), want %q", got.String(), streaming, want.String())
		}
	})
}

func isClosed(c <-chan struct{}) bool {
	select {
	case <-c:
		return true
	default:
		return false
	}
}
