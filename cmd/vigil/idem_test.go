package main

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"

	"github.com/vigilhq/vigil/api"
	"github.com/vigilhq/vigil/internal/httpapi"
)

// An agent's `vigil watch add` through a store that stored the watch and
// lost the commit's answer (a leader election: 503 store_unavailable,
// "may have been written") is sent again under its idempotency key and
// answered the first answer: exit 0, the watch printed, one watch made.
func TestWatchAddThroughAnUnansweredCommitMakesOneWatch(t *testing.T) {
	f := newCLIFixture(t, httpapi.Options{})
	var mu sync.Mutex
	var keys []string
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), r.Method, f.url+r.URL.RequestURI(), r.Body)
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			w.WriteHeader(http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		mu.Lock()
		first := false
		if r.Method == http.MethodPost {
			keys = append(keys, r.Header.Get(api.HeaderIdempotencyKey))
			first = len(keys) == 1
		}
		mu.Unlock()
		if first {
			// Written, and answered as a commit whose answer was lost.
			w.Header().Set("Retry-After", "0")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprint(w, `{"error":{"code":"store_unavailable","message":"the store did not answer this write's commit: it may have been written"}}`)
			return
		}
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		_, _ = io.Copy(w, resp.Body)
	}))
	defer front.Close()
	out, errOut, err := run(t, t.Context(), "watch", "add", "slow", "--for", "agent-1", "--json", "--server", front.URL)
	if err != nil {
		t.Fatalf("%v\n%s", err, errOut)
	}
	w := decodeJSON[api.Watch](t, out)
	mu.Lock()
	if len(keys) != 2 || keys[0] == "" || keys[0] != keys[1] {
		t.Fatalf("keys %q: want the registration sent twice under one key", keys)
	}
	mu.Unlock()
	list := decodeJSON[api.WatchList](t, f.mustVigil(t, "watch", "ls", "--for", "agent-1", "--json"))
	if len(list.Watches) != 1 || list.Watches[0].ID != w.ID {
		t.Fatalf("watches %+v, want the one %s printed", list.Watches, w.ID)
	}
}
