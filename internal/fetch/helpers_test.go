package fetch

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/internal/syncbuf"
	"github.com/vigilhq/vigil/sdk/abi"
	"github.com/vigilhq/vigil/store"
	"github.com/vigilhq/vigil/store/badger"
)

// newFakeClock is the issuer's clock in tests: it moves when the test
// moves it, or by the time a pacing wait asks for.
func newFakeClock() *fakeclock.Clock {
	return fakeclock.At(time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)).AdvanceOnSleep()
}

// fakeResolver answers from a function of the host and the call count.
type fakeResolver struct {
	calls  atomic.Int64
	answer func(host string, call int64) ([]netip.Addr, error)
}

func (r *fakeResolver) LookupNetIP(_ context.Context, _, host string) ([]netip.Addr, error) {
	n := r.calls.Add(1)
	return r.answer(host, n)
}

// staticResolver answers one fixed address per name.
func staticResolver(names map[string]string) *fakeResolver {
	return &fakeResolver{answer: func(host string, _ int64) ([]netip.Addr, error) {
		a, ok := names[host]
		if !ok {
			return nil, errors.New("no such host")
		}
		return []netip.Addr{netip.MustParseAddr(a)}, nil
	}}
}

// origin is an httptest server on 127.0.0.1 that counts requests and
// keeps each one's headers.
type origin struct {
	*httptest.Server
	count   atomic.Int64
	mu      sync.Mutex
	headers []http.Header
}

func newOrigin(t *testing.T, h http.HandlerFunc) *origin {
	t.Helper()
	o := &origin{}
	o.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		o.count.Add(1)
		o.mu.Lock()
		o.headers = append(o.headers, r.Header.Clone())
		o.mu.Unlock()
		if h == nil {
			_, _ = w.Write([]byte("hello"))
			return
		}
		h(w, r)
	}))
	t.Cleanup(o.Close)
	return o
}

func (o *origin) last() http.Header {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(o.headers) == 0 {
		return nil
	}
	return o.headers[len(o.headers)-1]
}

// harness is an issuer on a fake clock, a real event log and a captured
// logger.
type harness struct {
	*Issuer
	clock *fakeclock.Clock
	log   *store.Store
	out   *syncbuf.Buffer
}

func mustOpenStore(tb testing.TB) *store.Store {
	tb.Helper()
	st, err := badger.OpenStore(tb.TempDir(), badger.Options{})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = st.Close() })
	return st
}

// newHarness builds an issuer; cfg's zero Clock, Log and Logger are
// filled with the harness's own.
func newHarness(t *testing.T, cfg Config) *harness {
	t.Helper()
	h := &harness{clock: newFakeClock(), out: &syncbuf.Buffer{}}
	if cfg.Clock == nil {
		cfg.Clock = h.clock
	}
	if cfg.Log == nil {
		h.log = mustOpenStore(t)
		cfg.Log = h.log
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.NewTextHandler(h.out, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	i, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(i.CloseIdleConnections)
	h.Issuer = i
	return h
}

// events returns every event of stream.
func (h *harness) events(t *testing.T, stream string) []store.Event {
	t.Helper()
	evs, err := h.log.ReadEvents(context.Background(), stream, 0, 100000)
	if err != nil {
		t.Fatal(err)
	}
	return evs
}

// everything is all the harness recorded, as text: both streams and the
// log.
func (h *harness) everything(t *testing.T) string {
	t.Helper()
	var b strings.Builder
	for _, s := range []string{StreamFacts, StreamDeadLetters} {
		for _, e := range h.events(t, s) {
			j, _ := json.Marshal(e)
			b.Write(j)
			b.WriteByte('\n')
		}
	}
	b.WriteString(h.out.String())
	return b.String()
}

// loopback is an entry that may reach the test servers on 127.0.0.1.
func loopback() plugin.Entry {
	return plugin.Entry{
		Capabilities:  []string{abi.CapabilityFetch},
		FetchHosts:    []string{"127.0.0.1"},
		PrivateRanges: []string{"127.0.0.1/32"},
	}
}

func get(url string) plugin.FetchCall {
	return plugin.FetchCall{Kind: "probe", Entry: loopback(), Request: abi.FetchRequest{Method: "GET", URL: url}}
}

func reason(r abi.FetchResponse) string {
	if r.Failure == nil {
		return ""
	}
	return r.Failure.Reason
}
