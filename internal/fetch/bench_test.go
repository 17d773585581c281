package fetch

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/vigilhq/vigil/internal/fakeclock"
	"github.com/vigilhq/vigil/internal/plugin"
	"github.com/vigilhq/vigil/sdk/abi"
)

// BenchmarkScreen: a typical command of four headers. The goal is under
// 5 µs per command.
func BenchmarkScreen(b *testing.B) {
	req := abi.FetchRequest{
		Method: "GET",
		URL:    "https://api.github.com/repos/vigilhq/vigil/actions/runs?branch=main&per_page=1",
		Headers: map[string]string{
			"Accept":               "application/vnd.github+json",
			"X-GitHub-Api-Version": "2022-11-28",
			"User-Agent":           "vigil-ci/1.0",
			"If-None-Match":        `W/"6d82cbb050ddc7fa9cbb659014546e59"`,
		},
		TimeoutSeconds: 10,
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Screen(req, 0); err != nil {
			b.Fatal(err)
		}
	}
}

// benchIssuer is an issuer on a fake clock with no event log, reaching
// loopback servers.
func benchIssuer(b *testing.B) (*Issuer, *fakeclock.Clock) {
	b.Helper()
	clock := newFakeClock()
	i, err := New(Config{Clock: clock})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(i.CloseIdleConnections)
	return i, clock
}

func benchCall(url string) plugin.FetchCall {
	return plugin.FetchCall{Kind: "bench", Entry: plugin.Entry{FetchHosts: []string{"127.0.0.1"}, PrivateRanges: []string{"127.0.0.1/32"}},
		Request: abi.FetchRequest{Method: "GET", URL: url}}
}

// BenchmarkCoalescing: a thousand watches ask for one URL at once, each
// iteration a fresh interval; reports how many watches one origin request
// answered.
func BenchmarkCoalescing(b *testing.B) {
	const watches = 1000
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		_, _ = io.WriteString(w, "shared")
	}))
	defer srv.Close()
	i, clock := benchIssuer(b)
	call := benchCall(srv.URL + "/one")
	ctx := context.Background()
	for b.Loop() {
		clock.Add(2 * time.Second)
		var wg sync.WaitGroup
		for range watches {
			wg.Go(func() {
				if r := i.Fetch(ctx, call); r.Failure != nil {
					b.Error(r.Failure)
				}
			})
		}
		wg.Wait()
	}
	b.ReportMetric(float64(b.N*watches)/float64(requests.Load()), "watches/origin-request")
}

// BenchmarkFetchVsPlainGET: one GET of a small body from a loopback
// server, plainly with net/http and through the issuer (screen, grant,
// guard, pacing, coalescing, hold; no event log), in one run. The clock
// moves past the interval every iteration, so every issuer fetch is a
// request to the origin, not an answer from the hold.
func BenchmarkFetchVsPlainGET(b *testing.B) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.WriteString(w, `{"status":"completed","conclusion":"success"}`)
	}))
	defer srv.Close()
	url := srv.URL + "/runs/1"

	plain := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4}}
	defer plain.CloseIdleConnections()
	i, clock := benchIssuer(b)
	call := benchCall(url)
	ctx := context.Background()

	var plainTime, issuerTime time.Duration
	for b.Loop() {
		start := time.Now()
		resp, err := plain.Get(url)
		if err != nil {
			b.Fatal(err)
		}
		_, _ = io.ReadAll(resp.Body)
		_ = resp.Body.Close()
		plainTime += time.Since(start)

		clock.Add(2 * time.Second)
		start = time.Now()
		if r := i.Fetch(ctx, call); r.Failure != nil || r.FromCache {
			b.Fatalf("issuer: %+v", r)
		}
		issuerTime += time.Since(start)
	}
	n := float64(b.N)
	b.ReportMetric(float64(plainTime.Nanoseconds())/n, "plain-ns/op")
	b.ReportMetric(float64(issuerTime.Nanoseconds())/n, "issuer-ns/op")
	b.ReportMetric(float64(issuerTime)/float64(plainTime), "ratio")
}
